"""A recreated instance (new host key): still refused with both fingerprints; trusted again only through
the deliberate "replace" step that needs the new fingerprint typed or pasted (CLI and REST). Real sshd."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest

from ranktable.cli import main
from ranktable.remote.manager import default_manager
from tests.integration.fixtures.sshd import SshdProfile, SshServer, fingerprint_of_pub, keygen
from tests.integration.server_helpers import call, extension_with_state


@pytest.fixture(autouse=True)
def _fresh_manager(ranktable_home: Path) -> Any:
    yield
    default_manager().close()


def _stale_line(server: SshServer, tmp_path: Path) -> tuple[str, str]:
    """A known_hosts line recording another key for the server (as before the instance was recreated)."""
    old = keygen(tmp_path / "old_host_key")
    pub = Path(f"{old}.pub").read_text().split()
    return f"[{server.host}]:{server.port} {pub[0]} {pub[1]}\n", fingerprint_of_pub(" ".join(pub))


@pytest.mark.parametrize("stale_in", ["ours", "user"])
def test_changed_key_is_refused_then_replaced_only_with_the_typed_fingerprint(
    sshd_profile: SshdProfile, tmp_path: Path, capsys: pytest.CaptureFixture[str], stale_in: str
) -> None:
    server, home = sshd_profile.server, sshd_profile.home
    line, old_fp = _stale_line(server, tmp_path)
    ours = home / "known_hosts"
    if stale_in == "ours":
        ours.write_text(line)
    else:  # the stale line is in ~/.ssh/known_hosts, which we never write
        ours.unlink()
        (tmp_path / "user_known_hosts").write_text(line)
    before = ours.read_text() if ours.exists() else None

    assert main(["ssh", "test", "box"]) == 1
    err = capsys.readouterr().err
    assert "HOST KEY CHANGED" in err and old_fp in err and server.host_key_fingerprint in err
    assert "--replace-host-key" in err and "Traceback" not in err

    wrong = old_fp  # a fingerprint that is not the server's: refused, nothing saved
    assert main(["ssh", "test", "box", "--replace-host-key", wrong]) == 1
    assert "nothing was saved" in capsys.readouterr().err
    assert (ours.read_text() if ours.exists() else None) == before
    assert main(["ssh", "test", "box", "--replace-host-key", "not-a-fingerprint"]) == 1
    capsys.readouterr()

    assert main(["ssh", "test", "box", "--replace-host-key", server.host_key_fingerprint]) == 0
    out = capsys.readouterr().out
    assert f"was ssh-ed25519 {old_fp}" in out and server.host_key_fingerprint in out and "ok:" in out
    assert old_fp not in ours.read_text() or stale_in == "user"
    assert main(["ssh", "test", "box"]) == 0  # trusted from now on
    # Nothing left to replace: the step refuses rather than silently re-saving.
    assert main(["ssh", "test", "box", "--replace-host-key", server.host_key_fingerprint]) == 1
    assert "nothing to replace" in capsys.readouterr().err


def test_replace_never_applies_to_an_unknown_host(sshd_profile: SshdProfile, capsys: Any) -> None:
    (sshd_profile.home / "known_hosts").unlink()
    fp = sshd_profile.server.host_key_fingerprint
    assert main(["ssh", "test", "box", "--replace-host-key", fp]) == 1
    assert "--accept-host-key" in capsys.readouterr().err


@pytest.fixture
def jp_server_config(ranktable_home: Path) -> dict[str, Any]:
    return extension_with_state(ranktable_home)


async def test_rest_reports_both_fingerprints_and_replaces_on_request(
    jp_fetch: Any, sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    server = sshd_profile.server
    line, old_fp = _stale_line(server, tmp_path)
    (sshd_profile.home / "known_hosts").write_text(line)
    path = ("ranktable", "profiles", "box", "test")
    refused = await call(jp_fetch, *path, method="POST", body={})
    assert refused["status"] == "host-key-changed"
    assert refused["recorded"] == old_fp and refused["presented"] == server.host_key_fingerprint
    bad = await call(jp_fetch, *path, method="POST", body={"replace_host_key": old_fp}, expect=400)
    assert "nothing was saved" in bad["message"]
    ok = await call(jp_fetch, *path, method="POST", body={"replace_host_key": refused["presented"]})
    assert ok["status"] == "ok"


def test_magic_refuses_a_changed_key_then_replaces_it_only_with_the_typed_fingerprint(
    sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    from IPython.core.error import UsageError
    from IPython.core.interactiveshell import InteractiveShell

    server = sshd_profile.server
    line, old_fp = _stale_line(server, tmp_path)
    (sshd_profile.home / "known_hosts").write_text(line)
    shell = InteractiveShell.instance()
    shell.extension_manager.load_extension("ranktable")
    try:
        shell.magics_manager.registry["RanktableMagics"].manager = sshd_profile.manager
        shown = shell.run_line_magic("ranktable", "connect box")
        assert shown == "host-key-changed"
        text = shown._repr_html_()
        assert old_fp in text and server.host_key_fingerprint in text
        assert "--replace-host-key NEW_FINGERPRINT" in text  # the new one is never offered pre-filled
        with pytest.raises(UsageError, match="nothing was saved"):
            shell.run_line_magic("ranktable", f"connect box --replace-host-key {old_fp}")
        assert shell.run_line_magic("ranktable", "connect box") == "host-key-changed"  # still refused
        fp = server.host_key_fingerprint
        assert shell.run_line_magic("ranktable", f"connect box --replace-host-key {fp}") == "ok"
        assert shell.run_line_magic("ranktable", "connect box") == "ok"
        assert old_fp not in (sshd_profile.home / "known_hosts").read_text()
    finally:
        shell.extension_manager.unload_extension("ranktable")
        InteractiveShell.clear_instance()


# -- pinned per host, whatever the key type (#26.3) ------------------------------------------------------
@pytest.fixture
def ecdsa_profile(ranktable_home: Path, tmp_path: Path) -> Any:
    """Profile ``box`` for an sshd that now presents an ecdsa key while ed25519 is recorded."""
    from ranktable.remote import ConnectionManager, ProfileStore
    from tests.integration.fixtures.sshd import start_sshd

    server = start_sshd(tmp_path / "ecdsa-sshd", host_key_type="ecdsa")
    try:
        store = ProfileStore(ranktable_home)
        store.add(server.profile("box", tmp_path))
        line, old_fp = _stale_line(server, tmp_path)  # an ed25519 key: the one recorded before
        (ranktable_home / "known_hosts").write_text(line)
        yield server, old_fp, ConnectionManager(store, channel_wait=10, connect_timeout=10)
    finally:
        server.stop()


def test_a_key_of_another_type_is_a_change_not_a_new_host(
    ecdsa_profile: Any, ranktable_home: Path, capsys: pytest.CaptureFixture[str]
) -> None:
    server, old_fp, _ = ecdsa_profile
    ours = ranktable_home / "known_hosts"
    before = ours.read_text()
    assert server.host_key_type == "ecdsa-sha2-nistp256"
    assert main(["ssh", "test", "box"]) == 1
    assert "HOST KEY CHANGED" in capsys.readouterr().err
    # Accepting the other type beside the recorded one would bypass the replace step: refused.
    assert main(["ssh", "test", "box", "--accept-host-key", server.host_key_fingerprint]) == 1
    err = capsys.readouterr().err
    assert "--replace-host-key" in err and "nothing was saved" in err and old_fp in err
    assert ours.read_text() == before
    assert main(["ssh", "test", "box"]) == 1  # still refused
    capsys.readouterr()
    assert main(["ssh", "test", "box", "--replace-host-key", server.host_key_fingerprint]) == 0
    assert old_fp not in ours.read_text() and main(["ssh", "test", "box"]) == 0


async def test_rest_refuses_accepting_another_type_beside_the_recorded_key(
    jp_fetch: Any, ecdsa_profile: Any, ranktable_home: Path
) -> None:
    server, old_fp, _ = ecdsa_profile
    before = (ranktable_home / "known_hosts").read_text()
    path = ("ranktable", "profiles", "box", "test")
    body = {"accept_host_key": server.host_key_fingerprint}
    refused = await call(jp_fetch, *path, method="POST", body=body, expect=400)
    assert "--replace-host-key" in refused["fix"] and old_fp in refused["message"]
    assert (ranktable_home / "known_hosts").read_text() == before
    again = await call(jp_fetch, *path, method="POST", body={})
    assert again["status"] == "host-key-changed"


def test_a_cached_transport_is_dropped_when_its_hosts_record_changes(
    sshd_profile: SshdProfile, tmp_path: Path
) -> None:
    from ranktable.remote.errors import HostKeyChanged

    conn = sshd_profile.connection()
    assert conn.run("true").exit_status == 0
    line, old_fp = _stale_line(sshd_profile.server, tmp_path)
    (sshd_profile.home / "known_hosts").write_text(line)  # the record now names another key
    with pytest.raises(HostKeyChanged) as refused:
        conn.run("true")
    assert refused.value.expected.endswith(old_fp) and "--replace-host-key" in (refused.value.fix or "")
    sshd_profile.server.write_known_hosts(sshd_profile.home / "known_hosts")
    assert conn.run("true").exit_status == 0  # the record trusts it again: a fresh transport
