"""Profile validation: wrong types and invalid text are refused on create and patch, naming the field;
a damaged stored profile never breaks listing (CLI and REST) and is reported, not crashed on."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from ranktable.cli import main
from ranktable.errors import InputError
from ranktable.remote.profiles import Profile, ProfileStore, SyncSettings, patched_profile
from tests.integration.server_helpers import call, extension_with_state

BAD_FIELDS = [
    ({"host": "inst\ud800ance"}, "host"),
    ({"user": {"name": "ma-user"}}, "user"),
    ({"port": 22.5}, "port"),
    ({"port": True}, "port"),
    ({"remote_dir": ["/home/ma-user/work"]}, "remote_dir"),
    ({"key_file": 7}, "key_file"),
    ({"sync": {"ignore": "*.ckpt"}}, "sync.ignore"),
    ({"sync": {"ignore": ["ok", 3]}}, "sync.ignore[1]"),
    ({"sync": {"delete_remote": "false"}}, "sync.delete_remote"),
    ({"sync": "always"}, "sync"),
]


@pytest.mark.parametrize(("change", "field"), BAD_FIELDS)
def test_profile_fields_are_type_checked(change: dict[str, Any], field: str) -> None:
    data = {"name": "box", "host": "10.0.0.1", **change}
    with pytest.raises(InputError) as err:
        Profile.from_json(data, where="")
    assert err.value.where == field
    with pytest.raises(InputError) as err:
        patched_profile(Profile("box", "10.0.0.1"), change)
    assert err.value.where == field


def test_a_string_ignore_is_never_split_into_characters() -> None:
    with pytest.raises(InputError, match="list of patterns"):
        SyncSettings(ignore="*.ckpt")  # type: ignore[arg-type]
    assert SyncSettings(ignore=["*.ckpt"]).ignore == ("*.ckpt",)  # type: ignore[arg-type]


def _store_raw(home: Path, profiles: dict[str, Any]) -> None:
    home.mkdir(parents=True, exist_ok=True)
    (home / "profiles.json").write_text(json.dumps({"version": 1, "profiles": profiles}))


GOOD = {"name": "good", "host": "10.0.0.1", "port": 2222}
BROKEN = {"name": "broken", "host": "10.0.0.2", "port": 22.5, "user": {"x": 1}}


def test_a_bad_stored_profile_never_breaks_list(
    ranktable_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    _store_raw(ranktable_home, {"good": GOOD, "broken": BROKEN})
    assert main(["ssh", "list"]) == 0
    out = capsys.readouterr().out
    assert "good" in out and "10.0.0.1" in out
    assert "invalid stored profile 'broken'" in out and "port" in out
    assert main(["ssh", "test", "broken"]) == 1  # one clear line, no traceback
    err = capsys.readouterr().err
    assert "stored profile 'broken' is invalid" in err and "Traceback" not in err
    # Saving another profile keeps the damaged entry verbatim; removing it is the fix.
    ProfileStore(ranktable_home).add(Profile("other", "10.0.0.3"))
    stored = json.loads((ranktable_home / "profiles.json").read_text())["profiles"]
    assert stored["broken"] == BROKEN
    assert main(["ssh", "remove", "broken"]) == 0
    assert set(json.loads((ranktable_home / "profiles.json").read_text())["profiles"]) == {"good", "other"}


@pytest.fixture
def jp_server_config(ranktable_home: Path) -> dict[str, Any]:
    return extension_with_state(ranktable_home)


@pytest.mark.parametrize(("change", "field"), BAD_FIELDS)
async def test_api_refuses_bad_fields_on_create_and_patch(
    jp_fetch: Any, change: dict[str, Any], field: str
) -> None:
    body = {"name": "box", "host": "10.0.0.1", **change}
    data = await call(jp_fetch, "ranktable", "profiles", method="POST", body=body, expect=400)
    assert data["field"] == field
    await call(jp_fetch, "ranktable", "profiles", method="POST", body=GOOD, expect=201)
    data = await call(jp_fetch, "ranktable", "profiles", "good", method="PATCH", body=change, expect=400)
    assert data["field"] == field
    listed = await call(jp_fetch, "ranktable", "profiles")
    assert [p["port"] for p in listed["profiles"]] == [2222]  # the refused patch changed nothing


async def test_api_lists_around_a_bad_stored_profile(jp_fetch: Any, ranktable_home: Path) -> None:
    _store_raw(ranktable_home, {"good": GOOD, "broken": BROKEN})
    listed = await call(jp_fetch, "ranktable", "profiles")
    assert [p["name"] for p in listed["profiles"]] == ["good"]
    assert listed["invalid"][0]["name"] == "broken"
    data = await call(jp_fetch, "ranktable", "profiles", "broken", "test", method="POST", body={}, expect=400)
    assert "invalid" in data["message"]
    started = {"profile": "broken", "local_dir": "."}
    await call(jp_fetch, "ranktable", "sync", method="POST", body=started, expect=400)
