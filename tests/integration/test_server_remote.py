"""SSH profiles, host-key acceptance, sync/download/run operations, automatic upload and kernelspecs
through the REST API and the stream websocket, against a real OpenSSH sshd."""

from __future__ import annotations

import asyncio
import json
import time
from pathlib import Path
from typing import Any

import pytest

from tests.integration.fixtures.sshd import SshServer
from tests.integration.server_helpers import call, extension_with_state


@pytest.fixture
def jp_server_config(ranktable_home: Path) -> dict[str, Any]:
    return extension_with_state(ranktable_home)


async def follow(jp_ws_fetch: Any, operation: str) -> list[dict[str, Any]]:
    """Every event of an operation, through the stream websocket, until it ends."""
    ws = await jp_ws_fetch("ranktable", "stream")
    try:
        ws.write_message(
            json.dumps({"op": "subscribe", "id": "op", "channel": "operation", "operation": operation})
        )
        events = []
        while True:
            msg = json.loads(await asyncio.wait_for(ws.read_message(), 60))
            if msg["type"] == "end":
                return events
            assert msg["type"] == "data", msg
            events.append(msg["data"])
    finally:
        ws.close()


async def operate(jp_fetch: Any, jp_ws_fetch: Any, path: str, body: dict[str, Any]) -> list[dict[str, Any]]:
    """Start an operation (``POST /ranktable/<path>``, 202) and return every event up to its end."""
    started = await call(jp_fetch, "ranktable", path, method="POST", body=body, expect=202)
    return await follow(jp_ws_fetch, started["operation"])


def profile_body(sshd: SshServer, remote: Path, name: str = "box") -> dict[str, Any]:
    return {
        "name": name,
        "host": sshd.host,
        "port": sshd.port,
        "user": sshd.user,
        "key_file": str(sshd.client_key),
        "remote_dir": str(remote),
    }


async def try_box(jp_fetch: Any, body: dict[str, Any] | None = None, expect: int = 200) -> Any:
    """``POST profiles/box/test``: try the connection, optionally accepting a host key."""
    return await call(
        jp_fetch, "ranktable", "profiles", "box", "test", method="POST", body=body or {}, expect=expect
    )


async def add_trusted_profile(jp_fetch: Any, sshd: SshServer, remote: Path) -> None:
    await call(jp_fetch, "ranktable", "profiles", method="POST", body=profile_body(sshd, remote), expect=201)
    test = await try_box(jp_fetch)
    await try_box(jp_fetch, {"accept_host_key": test["fingerprint"]})


@pytest.fixture
def remote(tmp_path: Path) -> Path:
    """The SSH profile's remote folder (on the test's sshd, under the test's tmp_path)."""
    folder = tmp_path / "remote"
    folder.mkdir()
    return folder


async def test_add_test_accept_host_key_and_remove(jp_fetch: Any, sshd: SshServer, remote: Path) -> None:
    added = await call(
        jp_fetch, "ranktable", "profiles", method="POST", body=profile_body(sshd, remote), expect=201
    )
    assert added["name"] == "box" and "password" not in json.dumps(added)
    listed = await call(jp_fetch, "ranktable", "profiles")
    assert [p["name"] for p in listed["profiles"]] == ["box"]
    assert listed["profiles"][0]["connected"] is False  # "not tested" in the panel

    unknown = await try_box(jp_fetch)
    assert unknown["status"] == "unknown-host-key"
    assert unknown["fingerprint"] == sshd.host_key_fingerprint
    assert unknown["key_type"] == sshd.host_key_type

    wrong = await try_box(jp_fetch, {"accept_host_key": "SHA256:" + "A" * 43}, expect=400)
    assert "fingerprint" in wrong["message"].lower() or "match" in wrong["message"].lower()

    ok = await try_box(jp_fetch, {"accept_host_key": unknown["fingerprint"]})
    assert ok["status"] == "ok", ok
    [now] = (await call(jp_fetch, "ranktable", "profiles"))["profiles"]
    assert now["connected"] is True  # a reloaded panel says "connected", not "not tested"
    again = await try_box(jp_fetch)
    assert again["status"] == "ok"

    await call(jp_fetch, "ranktable", "profiles", "box", method="DELETE")
    assert (await call(jp_fetch, "ranktable", "profiles"))["profiles"] == []
    await call(jp_fetch, "ranktable", "profiles", "box", method="DELETE", expect=404)


async def test_the_listing_says_where_sync_goes(jp_fetch: Any, sshd: SshServer, tmp_path: Path) -> None:
    """The Sync section's "-> profile:folder": the shared folder of a profile that has one (#24), not
    ~/work; a remote_dir given by hand wins."""
    from ranktable.compose.spec import VolumeSpec
    from ranktable.compose.storage import SharedStorage

    body = {**profile_body(sshd, tmp_path), "remote_dir": "~/work"}
    await call(jp_fetch, "ranktable", "profiles", method="POST", body=body, expect=201)
    [plain] = (await call(jp_fetch, "ranktable", "profiles"))["profiles"]
    assert plain["working_dir"] == "~/work"
    shared = SharedStorage("/data/sfs", VolumeSpec("sfs", "hostPath", mount_path="/mnt/sfs", path="/mnt/sfs"))
    patch = {"shared": shared.to_json()}
    await call(jp_fetch, "ranktable", "profiles", "box", method="PATCH", body=patch)
    [listed] = (await call(jp_fetch, "ranktable", "profiles"))["profiles"]
    assert listed["working_dir"] == "/data/sfs" and listed["remote_dir"] == "~/work"
    await call(jp_fetch, "ranktable", "profiles", "box", method="PATCH", body={"remote_dir": "/srv/code"})
    [given] = (await call(jp_fetch, "ranktable", "profiles"))["profiles"]
    assert given["working_dir"] == "/srv/code"


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"name": "1bad", "host": "h"}, "profile name"),
        ({"name": "ok", "host": ""}, "host"),
        ({"name": "ok", "host": "h", "port": 70000}, "port"),
        ({"name": "ok", "host": "h", "password": "x"}, "password"),
    ],
)
async def test_bad_profiles_name_the_field(jp_fetch: Any, body: dict[str, Any], field: str) -> None:
    data = await call(jp_fetch, "ranktable", "profiles", method="POST", body=body, expect=400)
    assert data["field"] == field


async def test_a_wrong_key_is_reported_not_raised(jp_fetch: Any, sshd: SshServer, tmp_path: Path) -> None:
    from tests.integration.fixtures.sshd import keygen

    other = keygen(tmp_path / "other_key")
    body = {**profile_body(sshd, tmp_path), "key_file": str(other)}
    await call(jp_fetch, "ranktable", "profiles", method="POST", body=body, expect=201)
    unknown = await try_box(jp_fetch)
    result = await try_box(jp_fetch, {"accept_host_key": unknown["fingerprint"]})
    assert result["status"] == "error" and "key" in result["message"].lower()


async def test_profiles_list_the_folder_each_one_syncs(
    jp_fetch: Any, jp_ws_fetch: Any, jp_root_dir: Path, sshd: SshServer, remote: Path
) -> None:
    """The panel's Sync section shows the remembered folder (relative to the Jupyter root), not "."."""
    (jp_root_dir / "proj" / "bert").mkdir(parents=True)
    (jp_root_dir / "proj" / "bert" / "train.py").write_text("print(1)\n")
    await add_trusted_profile(jp_fetch, sshd, remote)
    other = {**profile_body(sshd, remote, "never-synced"), "sync": {"upload": "never"}}
    await call(jp_fetch, "ranktable", "profiles", method="POST", body=other, expect=201)

    def folders(listing: dict[str, Any]) -> dict[str, Any]:
        return {p["name"]: p["local_dir"] for p in listing["profiles"]}

    assert folders(await call(jp_fetch, "ranktable", "profiles")) == {"box": None, "never-synced": None}
    done = (await operate(jp_fetch, jp_ws_fetch, "sync", {"profile": "box", "local_dir": "proj/bert"}))[-1]
    assert done["error"] is None, done
    listed = await call(jp_fetch, "ranktable", "profiles")
    assert folders(listed) == {"box": "proj/bert", "never-synced": None}
    # choosing a folder with the automatic upload mode remembers it too; the root is "."
    body = {"sync": {"upload": "never"}, "local_dir": "."}
    await call(jp_fetch, "ranktable", "profiles", "never-synced", method="PATCH", body=body)
    listed = await call(jp_fetch, "ranktable", "profiles")
    assert folders(listed) == {"box": "proj/bert", "never-synced": "."}


async def test_sync_bulk_delete_needs_force_through_the_api(
    jp_fetch: Any, jp_ws_fetch: Any, jp_root_dir: Path, sshd: SshServer, remote: Path
) -> None:
    project = jp_root_dir / "proj"
    project.mkdir()
    for i in range(12):
        (project / f"m{i}.py").write_text(f"x = {i}\n")
    await add_trusted_profile(jp_fetch, sshd, remote)
    body = {"profile": "box", "local_dir": "proj"}
    assert (await operate(jp_fetch, jp_ws_fetch, "sync", body))[-1]["error"] is None
    for i in range(11):
        (project / f"m{i}.py").unlink()
    done = (await operate(jp_fetch, jp_ws_fetch, "sync", {**body, "delete": True}))[-1]
    assert done["error"] is not None and "would delete 11 of the 12" in str(done["error"]), done
    assert len(list(remote.iterdir())) == 12
    done = (await operate(jp_fetch, jp_ws_fetch, "sync", {**body, "delete": True, "force": True}))[-1]
    assert done["error"] is None and done["result"]["deleted"] == 11, done
    assert [p.name for p in remote.iterdir()] == ["m11.py"]


async def test_sync_conflict_force_download_and_run(
    jp_fetch: Any, jp_ws_fetch: Any, jp_root_dir: Path, sshd: SshServer, remote: Path
) -> None:
    project = jp_root_dir / "proj"
    (project / "pkg").mkdir(parents=True)
    (project / "train.py").write_text("print('v1')\n")
    (project / "pkg" / "util.py").write_text("X = 1\n")
    (project / "skip.pyc").write_bytes(b"\0")
    await add_trusted_profile(jp_fetch, sshd, remote)

    events = await operate(jp_fetch, jp_ws_fetch, "sync", {"profile": "box", "local_dir": "proj"})
    done = events[-1]
    assert done["type"] == "done" and done["error"] is None, done
    assert done["result"]["uploaded"] == 2 and done["result"]["conflicts"] == []
    assert any(e["type"] == "progress" and e["files_total"] == 2 for e in events)
    assert (remote / "train.py").read_text() == "print('v1')\n"
    assert not (remote / "skip.pyc").exists()

    # a remote edit is never overwritten silently: reported as a conflict, then forced
    time.sleep(1.1)
    (remote / "train.py").write_text("print('remote edit')\n")
    (project / "train.py").write_text("print('v2')\n")
    events = await operate(jp_fetch, jp_ws_fetch, "sync", {"profile": "box", "local_dir": "proj"})
    conflicts = [e for e in events if e["type"] == "conflict"]
    assert [c["path"] for c in conflicts] == ["train.py"]
    assert (remote / "train.py").read_text() == "print('remote edit')\n"
    events = await operate(
        jp_fetch, jp_ws_fetch, "sync", {"profile": "box", "local_dir": "proj", "force": ["train.py"]}
    )
    assert events[-1]["error"] is None
    assert (remote / "train.py").read_text() == "print('v2')\n"

    # or take the remote's version of a conflicting file; the next sync is then clean
    time.sleep(1.1)
    (remote / "pkg" / "util.py").write_text("X = 'remote'\n")
    (project / "pkg" / "util.py").write_text("X = 'local'\n")
    events = await operate(jp_fetch, jp_ws_fetch, "sync", {"profile": "box", "local_dir": "proj"})
    assert [e["path"] for e in events if e["type"] == "conflict"] == ["pkg/util.py"]
    events = await operate(
        jp_fetch, jp_ws_fetch, "download", {"profile": "box", "local_dir": "proj", "conflict": "pkg/util.py"}
    )
    assert events[-1]["error"] is None, events[-1]
    assert (project / "pkg" / "util.py").read_text() == "X = 'remote'\n"
    events = await operate(jp_fetch, jp_ws_fetch, "sync", {"profile": "box", "local_dir": "proj"})
    assert events[-1]["result"]["conflicts"] == [] and events[-1]["result"]["uploaded"] == 0

    # download a result folder into the Jupyter root
    (remote / "results").mkdir()
    (remote / "results" / "metrics.csv").write_text("step,loss\n1,0.5\n")
    events = await operate(
        jp_fetch,
        jp_ws_fetch,
        "download",
        {"profile": "box", "remote_path": "results", "local_path": "fetched"},
    )
    assert events[-1]["result"]["files"] == 1, events[-1]
    assert (jp_root_dir / "fetched" / "metrics.csv").read_text() == "step,loss\n1,0.5\n"

    # remote run: output streamed, exit status kept
    started = await call(
        jp_fetch,
        "ranktable",
        "run",
        method="POST",
        body={"profile": "box", "command": "cat train.py; echo oops >&2; exit 3"},
        expect=202,
    )
    events = await follow(jp_ws_fetch, started["operation"])
    out = "".join(e["text"] for e in events if e["type"] == "output" and e["stream"] == "stdout")
    err = "".join(e["text"] for e in events if e["type"] == "output" and e["stream"] == "stderr")
    assert "print('v2')" in out and "oops" in err
    assert events[-1]["result"] == {"exit_status": 3}
    state = await call(jp_fetch, "ranktable", "operations", started["operation"])
    assert state["done"] and state["result"] == {"exit_status": 3}


@pytest.mark.parametrize(
    ("path", "body", "field", "status"),
    [
        ("sync", {"profile": "box", "local_dir": "../outside"}, "local_dir", 403),  # outside the root
        ("sync", {"local_dir": "."}, "profile", 400),
        ("sync", {"profile": "box", "force": "yes"}, "force", 400),
        ("sync", {"profile": "box", "dry_run": {}}, "dry_run", 400),
        ("download", {"profile": "box"}, "remote_path", 400),
        ("download", {"profile": "box", "remote_path": "x", "local_path": "/etc/x"}, "local_path", 403),
        ("run", {"profile": "box", "command": " "}, "command", 400),
    ],
)
async def test_operation_bad_input_names_the_field(
    jp_fetch: Any, sshd: SshServer, tmp_path: Path, path: str, body: dict[str, Any], field: str, status: int
) -> None:
    await call(
        jp_fetch, "ranktable", "profiles", method="POST", body=profile_body(sshd, tmp_path), expect=201
    )
    data = await call(jp_fetch, "ranktable", path, method="POST", body=body, expect=status)
    assert data["field"] == field


async def test_unknown_profile_is_a_404(jp_fetch: Any) -> None:
    data = await call(jp_fetch, "ranktable", "sync", method="POST", body={"profile": "ghost"}, expect=404)
    assert "ghost" in data["message"]


async def test_automatic_upload_after_a_save_through_the_contents_api(
    jp_fetch: Any, jp_root_dir: Path, sshd: SshServer, remote: Path
) -> None:
    (jp_root_dir / "proj").mkdir()
    await add_trusted_profile(jp_fetch, sshd, remote)
    updated = await call(
        jp_fetch,
        "ranktable",
        "profiles",
        "box",
        method="PATCH",
        body={"sync": {"upload": "explicit"}, "local_dir": "proj"},
    )
    assert updated["sync"]["upload"] == "explicit"
    model = {"type": "file", "format": "text", "content": "print('saved in lab')\n"}
    await jp_fetch("api", "contents", "proj", "saved.py", method="PUT", body=json.dumps(model))
    deadline = time.monotonic() + 30
    while not (remote / "saved.py").exists():
        assert time.monotonic() < deadline, "the save was not uploaded"
        await asyncio.sleep(0.2)
    assert (remote / "saved.py").read_text() == "print('saved in lab')\n"


async def test_install_kernelspec_for_a_profile(jp_fetch: Any, sshd: SshServer, tmp_path: Path) -> None:
    from jupyter_client.kernelspec import KernelSpecManager

    await call(
        jp_fetch, "ranktable", "profiles", method="POST", body=profile_body(sshd, tmp_path), expect=201
    )
    data = await call(jp_fetch, "ranktable", "kernels", "box", method="POST", body={}, expect=201)
    assert data["display_name"] == "Python (box)"
    specs = KernelSpecManager().get_all_specs()
    assert data["kernel_name"] in specs
    assert specs[data["kernel_name"]]["spec"]["display_name"] == "Python (box)"
    missing = await call(jp_fetch, "ranktable", "kernels", "ghost", method="POST", body={}, expect=404)
    assert "ghost" in missing["message"]


async def test_upload_now_counts_as_the_folders_last_sync(
    jp_fetch: Any, jp_ws_fetch: Any, jp_serverapp: Any, jp_root_dir: Path, sshd: SshServer, remote: Path
) -> None:
    """The status bar follows the automatic uploader: an explicit sync of its folder ("Upload now") must
    turn it "Synced HH:MM", not leave "not synced yet" (seen in the first-hour browser journey, #24)."""
    (jp_root_dir / "proj").mkdir()
    (jp_root_dir / "proj" / "train.py").write_text("print(1)\n")
    await add_trusted_profile(jp_fetch, sshd, remote)
    body = {"sync": {"upload": "always"}, "local_dir": "proj"}
    await call(jp_fetch, "ranktable", "profiles", "box", method="PATCH", body=body)
    remote_service = jp_serverapp.web_app.settings["ranktable_services"].remote
    assert remote_service.upload_status()["box"]["last_sync"] is None
    before = time.time()
    done = (await operate(jp_fetch, jp_ws_fetch, "sync", {"profile": "box", "local_dir": "proj"}))[-1]
    assert done["error"] is None, done
    status = remote_service.upload_status()["box"]
    assert status["last_sync"] is not None and status["last_sync"] >= before, status
    assert status["last_error"] is None
