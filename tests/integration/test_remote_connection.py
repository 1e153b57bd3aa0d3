"""Connections against a real OpenSSH sshd: host keys, key files, errors, channel cap, liveness, reconnect."""

from __future__ import annotations

import socket
import threading
import time
from pathlib import Path

import pytest

from ranktable.remote import ConnectionManager, HostKeyStore, Profile, ProfileStore
from ranktable.remote.errors import (
    ConnectionRefused,
    HostKeyChanged,
    HostKeyError,
    HostNotResolved,
    KeyFileError,
    KeyNotAccepted,
    KeyPermissionsTooOpen,
    PassphraseRequired,
    TooManyConnections,
    UnknownHostKey,
    WrongPassphrase,
)
from ranktable.remote.keys import load_private_key
from tests.integration.fixtures.sshd import SshdProfile, SshServer, keygen


def _store_with(home: Path, sshd: SshServer, **overrides: object) -> ProfileStore:
    store = ProfileStore(home)
    fields: dict = dict(
        name="box",
        host=sshd.host,
        port=sshd.port,
        user=sshd.user,
        key_file=str(sshd.client_key),
        remote_dir="/tmp",
    )
    fields.update(overrides)
    store.add(Profile(**fields))
    return store


def test_unknown_host_key_reports_fingerprint_then_accept_saves_it(
    sshd: SshServer, ranktable_home: Path
) -> None:
    manager = ConnectionManager(_store_with(ranktable_home, sshd))
    with pytest.raises(UnknownHostKey) as info:
        manager.get("box").connect()
    assert info.value.fingerprint == sshd.host_key_fingerprint
    assert info.value.host_id == f"[127.0.0.1]:{sshd.port}"
    assert "--accept-host-key " + sshd.host_key_fingerprint in info.value.message
    assert not (ranktable_home / "known_hosts").exists()

    with pytest.raises(HostKeyError):  # a fingerprint that is not the server's saves nothing
        manager.accept_host_key("box", "SHA256:" + "A" * 43)
    assert not (ranktable_home / "known_hosts").exists()

    manager.accept_host_key("box", sshd.host_key_fingerprint)
    known = (ranktable_home / "known_hosts").read_text()
    assert known.startswith(f"[127.0.0.1]:{sshd.port} ssh-ed25519 ")
    assert (ranktable_home / "known_hosts").stat().st_mode & 0o777 == 0o600
    assert manager.get("box").run("echo ok").text() == "ok\n"
    manager.close()


def test_user_known_hosts_is_honoured(sshd: SshServer, ranktable_home: Path, tmp_path: Path) -> None:
    sshd.write_known_hosts(tmp_path / "user_known_hosts")  # the RANKTABLE_USER_KNOWN_HOSTS file
    manager = ConnectionManager(_store_with(ranktable_home, sshd))
    assert manager.get("box").run("true").exit_status == 0
    manager.close()


def test_changed_host_key_is_refused_loudly(sshd: SshServer, ranktable_home: Path, tmp_path: Path) -> None:
    other = keygen(tmp_path / "other_host", "ed25519")
    blob = Path(f"{other}.pub").read_text().split()[1]
    (ranktable_home / "known_hosts").write_text(f"[127.0.0.1]:{sshd.port} ssh-ed25519 {blob}\n")
    manager = ConnectionManager(_store_with(ranktable_home, sshd))
    with pytest.raises(HostKeyChanged) as info:
        manager.get("box").connect()
    assert info.value.presented == sshd.host_key_fingerprint
    assert info.value.expected != sshd.host_key_fingerprint
    assert "--replace-host-key" in info.value.message and "ssh-keygen -R" not in info.value.message
    with pytest.raises(HostKeyError):  # accepting on top of a changed key is refused too
        manager.accept_host_key("box", sshd.host_key_fingerprint)


def test_wrong_key_is_not_accepted(sshd: SshServer, ranktable_home: Path, tmp_path: Path) -> None:
    stranger = keygen(tmp_path / "stranger", "ed25519")
    sshd.write_known_hosts(ranktable_home / "known_hosts")
    manager = ConnectionManager(_store_with(ranktable_home, sshd, key_file=str(stranger)))
    with pytest.raises(KeyNotAccepted) as info:
        manager.get("box").connect()
    assert f"the instance's key pair is not {stranger}" in info.value.message


@pytest.mark.parametrize(
    ("key_type", "pem"), [("ecdsa", False), ("rsa", False), ("rsa", True), ("ed25519", False)]
)
def test_key_types_and_formats(
    sshd: SshServer, ranktable_home: Path, tmp_path: Path, key_type: str, pem: bool
) -> None:
    key = keygen(tmp_path / f"id_{key_type}", key_type, pem=pem)
    assert (b"BEGIN RSA PRIVATE KEY" in key.read_bytes()) == pem
    sshd.authorize(Path(f"{key}.pub"))
    sshd.write_known_hosts(ranktable_home / "known_hosts")
    manager = ConnectionManager(_store_with(ranktable_home, sshd, key_file=str(key)))
    assert manager.get("box").run("echo $0 >/dev/null; echo hi").text() == "hi\n"
    manager.close()


def test_passphrase_key_needs_passphrase_held_in_memory(
    sshd: SshServer, ranktable_home: Path, tmp_path: Path
) -> None:
    key = keygen(tmp_path / "id_locked", "ed25519", passphrase="s3cret phrase")
    sshd.authorize(Path(f"{key}.pub"))
    sshd.write_known_hosts(ranktable_home / "known_hosts")
    store = _store_with(ranktable_home, sshd, key_file=str(key))
    manager = ConnectionManager(store)
    with pytest.raises(PassphraseRequired):
        manager.get("box").connect()
    with pytest.raises(WrongPassphrase):
        load_private_key(key, "wrong")
    manager.set_passphrase(str(key), "s3cret phrase")
    assert manager.get("box").run("echo in").text() == "in\n"
    assert "s3cret" not in store.path.read_text()
    manager.close()


def test_key_readable_by_others_is_refused_with_chmod_fix(sshd: SshServer, ranktable_home: Path) -> None:
    sshd.client_key.chmod(0o644)
    sshd.write_known_hosts(ranktable_home / "known_hosts")
    manager = ConnectionManager(_store_with(ranktable_home, sshd))
    with pytest.raises(KeyPermissionsTooOpen) as info:
        manager.get("box").connect()
    assert f"chmod 600 {sshd.client_key}" in info.value.message


def test_refused_and_unresolved_hosts(ranktable_home: Path, tmp_path: Path) -> None:
    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        port = sock.getsockname()[1]
    store = ProfileStore(ranktable_home)
    store.add(Profile(name="closed", host="127.0.0.1", port=port, key_file=None))
    store.add(Profile(name="nowhere", host="no-such-host.invalid"))
    manager = ConnectionManager(store)
    with pytest.raises(ConnectionRefused) as refused:
        manager.get("closed").connect()
    assert "connection refused" in refused.value.message
    with pytest.raises(HostNotResolved) as unresolved:
        manager.get("nowhere").connect()
    assert "does not resolve" in unresolved.value.message
    store.add(Profile(name="empty_label", host=".F"))  # the resolver's idna codec raised UnicodeError: a 500
    with pytest.raises(HostNotResolved, match="empty or over-long label"):
        manager.get("empty_label").connect()


def test_channel_cap_waits_then_reports_too_many(sshd_profile: SshdProfile) -> None:
    conn = sshd_profile.manager.get("box")  # type: ignore[attr-defined]
    conn.max_channels = 3
    conn.channel_wait = 0.5
    conn.close()
    leases = [conn.open_session() for _ in range(3)]
    with pytest.raises(TooManyConnections) as info:
        conn.open_session()
    assert "all 3 SSH channels" in info.value.message
    # A slot freed while waiting is taken instead of failing.
    conn.channel_wait = 5
    threading.Timer(0.3, leases[0].close).start()
    started = time.monotonic()
    extra = conn.open_session()
    assert 0.2 < time.monotonic() - started < 4
    for lease in [*leases[1:], extra]:
        lease.close()
    assert conn.run("echo free").text() == "free\n"


def test_dead_connection_is_detected_by_probe_and_reconnected(sshd_profile: SshdProfile) -> None:
    conn = sshd_profile.manager.get("box")  # type: ignore[attr-defined]
    pid_before = conn.run("echo $PPID").text()
    assert conn.probe()
    assert sshd_profile.server.kill_connections() >= 1
    deadline = time.monotonic() + 5
    while conn.probe(timeout=1) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not conn.probe(timeout=1)
    assert conn.run("echo back").text() == "back\n"  # reconnected transparently
    assert conn.reconnects == 1
    assert conn.run("echo $PPID").text() != pid_before


def test_ssh_config_host_entries_are_honoured(sshd: SshServer, ranktable_home: Path, tmp_path: Path) -> None:
    (tmp_path / "ssh_config").write_text(
        f"Host devbox\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
        f"  IdentityFile {sshd.client_key}\n"
    )
    sshd.write_known_hosts(ranktable_home / "known_hosts")
    store = ProfileStore(ranktable_home)
    store.add(Profile(name="dev", host="devbox", remote_dir="/tmp"))
    endpoint = store.resolve("dev")
    assert (endpoint.host, endpoint.port, endpoint.user, endpoint.key_file) == (
        "127.0.0.1",
        sshd.port,
        sshd.user,
        str(sshd.client_key),
    )
    manager = ConnectionManager(store)
    assert manager.get("dev").run("echo via-config").text() == "via-config\n"
    manager.close()


def test_jump_profile_tunnels_through_direct_tcpip(sshd: SshServer, ranktable_home: Path) -> None:
    sshd.write_known_hosts(ranktable_home / "known_hosts")
    store = _store_with(ranktable_home, sshd, name="gateway")
    store.add(sshd.profile("inner", "/tmp", jump="gateway"))
    manager = ConnectionManager(store)
    inner = manager.get("inner")
    assert inner.run("echo through").text() == "through\n"
    assert inner.jump is manager.get("gateway")
    assert inner.jump.is_connected
    manager.close()


def test_profiles_are_private_and_names_validated(ranktable_home: Path) -> None:
    from ranktable.errors import InputError

    store = ProfileStore(ranktable_home)
    store.add(Profile(name="ok-name_1", host="example.com"))
    assert store.path.stat().st_mode & 0o777 == 0o600
    for bad in ("1abc", "has space", "a" * 65, "", "dots.no"):
        with pytest.raises(InputError):
            Profile(name=bad, host="h")
    assert [p.name for p in store.list_profiles()] == ["ok-name_1"]
    assert HostKeyStore(ranktable_home / "known_hosts").lookup("example.com")[0] == {}


def test_server_connection_limit_and_handshake_timeout_have_specific_errors(
    ranktable_home: Path, tmp_path: Path
) -> None:
    from tests.integration.fixtures.sshd import start_sshd

    server = start_sshd(tmp_path / "limited", max_startups="1", max_sessions=2)
    deadline = time.monotonic() + 10
    while server.connection_pids() and time.monotonic() < deadline:  # the start-up probe's child exits
        time.sleep(0.05)
    hold = socket.create_connection((server.host, server.port))  # one unauthenticated connection fills it
    try:
        assert hold.recv(64).startswith(b"SSH-2.0")
        manager = ConnectionManager(_store_with(ranktable_home, server), connect_timeout=5)
        server.write_known_hosts(ranktable_home / "known_hosts")
        with pytest.raises(TooManyConnections) as info:
            manager.get("box").connect()
        assert "at most 10 simultaneous SSH connections" in info.value.message
        hold.close()
        time.sleep(0.2)
        conn = manager.get("box")
        conn.max_channels = 4  # more than the server's MaxSessions 2: the server refuses the third
        conn.close()
        leases = [conn.open_session() for _ in range(2)]
        with pytest.raises(TooManyConnections) as refused:
            conn.open_session()
        assert "refused a new session channel" in refused.value.message
        for lease in leases:
            lease.close()
        manager.close()
    finally:
        hold.close()
        server.stop()

    silent = socket.socket()
    silent.bind(("127.0.0.1", 0))
    silent.listen(1)  # accepts TCP (backlog) but never speaks SSH
    try:
        store = ProfileStore(ranktable_home)
        store.add(Profile(name="silent", host="127.0.0.1", port=silent.getsockname()[1], remote_dir="/tmp"))
        from ranktable.remote.errors import ConnectTimeout

        with pytest.raises(ConnectTimeout):
            ConnectionManager(store, connect_timeout=1).get("silent").connect()
    finally:
        silent.close()


def test_ssh_config_proxyjump_is_followed(sshd: SshServer, ranktable_home: Path, tmp_path: Path) -> None:
    (tmp_path / "ssh_config").write_text(
        f"Host bastion\n  HostName 127.0.0.1\n  Port {sshd.port}\n  User {sshd.user}\n"
        f"  IdentityFile {sshd.client_key}\n"
        f"Host inner\n  HostName 127.0.0.1\n  Port {sshd.port}\n  ProxyJump bastion\n"
        f"  IdentityFile {sshd.client_key}\n"
    )
    sshd.write_known_hosts(ranktable_home / "known_hosts")
    store = ProfileStore(ranktable_home)
    store.add(Profile(name="via", host="inner", user=sshd.user, remote_dir="/tmp"))
    endpoint = store.resolve("via")
    assert endpoint.jump is not None and (endpoint.jump.alias, endpoint.jump.port) == ("bastion", sshd.port)
    manager = ConnectionManager(store)
    conn = manager.get("via")
    assert conn.run("echo hop").text() == "hop\n"
    assert conn.jump is not None and conn.jump.is_connected
    manager.close()


def test_connections_send_at_once_and_acknowledge_at_once(sshd_profile: SshdProfile) -> None:
    """TCP_NODELAY and (Linux) TCP_QUICKACK re-armed after every recv: without them a fresh login and
    its first channel waited ~40 ms twice for delayed ACKs (0.105 s -> 0.02 s when measured)."""
    from ranktable.remote.connection import open_socket
    from ranktable.remote.profiles import Endpoint

    conn = sshd_profile.connection()
    sock = conn.transport().sock
    assert sock.getsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY) == 1
    assert type(sock).__name__ == "_QuickAckSocket"
    with conn.open_session() as channel:  # the connection works through it
        channel.exec_command("echo ok")
        assert channel.makefile("rb").read() == b"ok\n"

    with socket.create_server(("127.0.0.1", 0)) as server:
        port = server.getsockname()[1]
        endpoint = Endpoint("t", "127.0.0.1", "t", port, "u", None, None, "~")
        client = open_socket(endpoint, 5.0)
        peer, _ = server.accept()
        with client, peer:
            assert client.gettimeout() == 5.0  # kept across the re-wrapping
            client.setsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK, 0)
            peer.sendall(b"x")
            assert client.recv(1) == b"x"
            assert client.getsockopt(socket.IPPROTO_TCP, socket.TCP_QUICKACK) == 1  # re-armed by recv


def test_a_key_file_name_too_long_for_the_file_system_is_a_key_error_not_a_crash(tmp_path: Path) -> None:
    """schemathesis: a profile whose key_file has a 1,000-character name gave a 500 (ENAMETOOLONG, #26.9)."""
    with pytest.raises(KeyFileError) as info:
        load_private_key(tmp_path / ("0" * 1000))
    assert info.value.where == "key_file" and "File name too long" in str(info.value), str(info.value)


def test_a_lease_closes_quietly_on_a_dead_transport_and_gives_its_slot_back() -> None:
    """paramiko's `Channel.close` raises EOFError once the transport died (sshd killed mid-sync); the
    lease's close then replaced the sync's own "the connection dropped" error in its `finally` (CI)."""
    from ranktable.remote.connection import ChannelLease

    class DeadChannel:
        def close(self) -> None:
            raise EOFError()

    slots = threading.BoundedSemaphore(1)
    slots.acquire()
    lease = ChannelLease(DeadChannel(), slots)  # type: ignore[arg-type]
    lease.close()
    lease.close()  # idempotent: the slot is given back once
    assert slots.acquire(blocking=False)
