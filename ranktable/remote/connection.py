"""One SSH transport per profile, shared by every sync, command, SFTP client and port forward.

Channels are leased: a semaphore caps how many are open at once (default 8, below the 10 sessions a
Notebook instance accepts), waiting up to ``channel_wait`` seconds before failing with
``TooManyConnections``. Before reuse an idle transport is probed with a real round trip
(``keepalive@openssh.com`` with a reply and a timeout, since ``set_keepalive`` never notices a dead peer)
and re-established if the probe fails.
"""

from __future__ import annotations

import contextlib
import shlex
import socket
import threading
import time
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass
from types import TracebackType
from typing import Any, NoReturn, overload

import paramiko

from ranktable.remote.errors import (
    ConnectionLost,
    ConnectionRefused,
    ConnectTimeout,
    HostKeyChanged,
    HostNotResolved,
    KeyNotAccepted,
    SshError,
    TooManyConnections,
)
from ranktable.remote.hostkeys import HostKeyStore, VerifyingPolicy, fingerprint
from ranktable.remote.keys import load_private_key
from ranktable.remote.profiles import Endpoint

SERVER_SESSION_LIMIT_HINT = "Notebook instances accept at most 10 simultaneous SSH connections"


@dataclass
class ExecResult:
    exit_status: int
    stdout: bytes
    stderr: bytes

    def text(self) -> str:
        return self.stdout.decode("utf-8", "replace")


def replace_hint(profile: str, hid: str) -> str:
    return (
        f"if {hid} was really recreated, check its new fingerprint with the instance owner "
        f"(on the instance: ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub), then trust it: "
        f"ranktable ssh test {profile} --replace-host-key NEW_FINGERPRINT"
    )


class ChannelLease:
    """An open channel holding one slot of the profile's cap until ``close()`` (idempotent)."""

    def __init__(self, channel: paramiko.Channel, slots: threading.BoundedSemaphore) -> None:
        self.channel = channel
        self._slots = slots
        self._released = False
        self._lock = threading.Lock()

    def close(self) -> None:
        # on a dead transport (sshd killed) paramiko's close raises EOFError: it then replaced the sync's
        # "the connection dropped" error in the caller's `finally` (CI, kill -9 of sshd mid-sync)
        with contextlib.suppress(OSError, EOFError, paramiko.SSHException):
            self.channel.close()
        with self._lock:
            if not self._released:
                self._released = True
                self._slots.release()

    def __enter__(self) -> paramiko.Channel:
        return self.channel

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()


def _transport_factory(
    sock: Any, *, disabled_algorithms: Mapping[str, Iterable[str]] | None = None, **_: Any
) -> paramiko.Transport:
    """A transport preferring AES-GCM: no separate MAC pass per packet, markedly more throughput."""
    transport = paramiko.Transport(sock, disabled_algorithms=disabled_algorithms)
    options = transport.get_security_options()
    ciphers = list(options.ciphers)
    options.ciphers = sorted(ciphers, key=lambda name: (0 if "gcm" in name else 1, ciphers.index(name)))
    return transport


_TCP_QUICKACK: int = getattr(socket, "TCP_QUICKACK", 0)  # Linux only


class _QuickAckSocket(socket.socket):
    """A TCP socket that acknowledges what it receives at once (Linux ``TCP_QUICKACK``, re-armed after
    every ``recv``: the kernel drops it by itself).

    Without it, an exchange where sshd answers with two small writes waited ~40 ms for our delayed ACK
    (sshd's Nagle holds the second write until the first is acknowledged): the first channel after a
    login took 0.044 s, 0.001 s with it. With ``TCP_NODELAY`` as well, a fresh login + first channel
    went from 0.105 s to 0.02 s here (the authentication alone 0.048 s -> 0.008 s).
    """

    def recv(self, bufsize: int, flags: int = 0, /) -> bytes:
        data = super().recv(bufsize, flags)
        with contextlib.suppress(OSError):
            self.setsockopt(socket.IPPROTO_TCP, _TCP_QUICKACK, 1)
        return data


def _low_latency(sock: socket.socket) -> socket.socket:
    """``TCP_NODELAY`` (each SSH packet leaves at once: Nagle cost a login 40 ms of waiting for sshd's
    delayed ACK of the previous packet) and, on Linux, immediate ACKs (``_QuickAckSocket``)."""
    with contextlib.suppress(OSError):
        sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    if not _TCP_QUICKACK or sock.family not in (socket.AF_INET, socket.AF_INET6):
        return sock
    timeout = sock.gettimeout()
    quick = _QuickAckSocket(sock.family, sock.type, sock.proto, fileno=sock.detach())
    quick.settimeout(timeout)
    return quick


def open_socket(endpoint: Endpoint, timeout: float) -> socket.socket:
    where = f"{endpoint.host}:{endpoint.port}"
    try:
        infos = socket.getaddrinfo(endpoint.host, endpoint.port, type=socket.SOCK_STREAM)
    except (socket.gaierror, UnicodeError) as exc:  # UnicodeError: an empty label (".F") or one over 63
        reason = exc.strerror if isinstance(exc, socket.gaierror) else "an empty or over-long label"
        raise HostNotResolved(
            f"host name {endpoint.host!r} does not resolve ({reason})",
            where=f"profile {endpoint.profile}",
            fix="check the host in the profile or in ~/.ssh/config (HostName), and your network/DNS",
        ) from exc
    last: OSError | None = None
    for family, kind, proto, _, addr in infos:
        sock = socket.socket(family, kind, proto)
        sock.settimeout(timeout)
        try:
            sock.connect(addr)
            return _low_latency(sock)
        except ConnectionRefusedError as exc:
            sock.close()
            last = exc
        except TimeoutError as exc:
            sock.close()
            raise ConnectTimeout(
                f"no answer from {where} within {timeout:g}s",
                where=f"profile {endpoint.profile}",
                fix="check that the instance is running, its address, and firewall/security-group rules",
            ) from exc
        except OSError as exc:
            sock.close()
            last = exc
    if isinstance(last, ConnectionRefusedError):
        raise ConnectionRefused(
            f"connection refused by {where}: nothing accepts SSH connections on that port",
            where=f"profile {endpoint.profile}",
            fix="check that the instance is running and the port (Notebook SSH ports are shown on its page)",
        ) from last
    raise ConnectionLost(
        f"cannot reach {where}: {last}", where=f"profile {endpoint.profile}", fix="check the network"
    ) from last


class Connection:
    """The shared transport of one profile. Thread-safe; connects lazily and reconnects when dead."""

    def __init__(
        self,
        endpoint: Endpoint,
        *,
        host_keys: HostKeyStore | None = None,
        passphrase: str | None = None,
        jump: Connection | None = None,
        max_channels: int = 8,
        channel_wait: float = 30.0,
        connect_timeout: float = 15.0,
        probe_after: float = 5.0,
        probe_timeout: float = 5.0,
        keepalive: int = 30,
    ) -> None:
        self.endpoint = endpoint
        self.host_keys = host_keys or HostKeyStore()
        self._passphrase = passphrase  # memory only, never written anywhere
        self.jump = jump
        self.max_channels = max_channels
        self.channel_wait = channel_wait
        self.connect_timeout = connect_timeout
        self.probe_after = probe_after
        self.probe_timeout = probe_timeout
        self.keepalive = keepalive
        self._lock = threading.RLock()
        self._client: paramiko.SSHClient | None = None
        self._jump_lease: ChannelLease | None = None
        self._slots = threading.BoundedSemaphore(max_channels)
        self._last_ok = 0.0
        self._remote_root: str | None = None
        self._record_stamp: tuple[tuple[int, int, int] | None, ...] | None = None
        self.reconnects = 0

    # -- connecting ---------------------------------------------------------------------------------
    @property
    def name(self) -> str:
        return self.endpoint.profile

    def accept_hint(self, fp: str = "FINGERPRINT") -> str:
        return (
            f"if it is the instance's key, accept it: ranktable ssh test {self.name} --accept-host-key {fp}"
        )

    def _sock(self) -> socket.socket | paramiko.Channel:
        if self.jump is None:
            return open_socket(self.endpoint, self.connect_timeout)
        self._jump_lease = self.jump.open_forward(self.endpoint.host, self.endpoint.port)
        return self._jump_lease.channel

    def _abort(self, client: paramiko.SSHClient, sock: socket.socket | paramiko.Channel) -> None:
        client.close()
        sock.close()
        if self._jump_lease is not None:  # give the jump host's channel slot back
            self._jump_lease.close()
            self._jump_lease = None

    def _connect(self) -> None:
        ep = self.endpoint
        pkey = load_private_key(ep.key_file, self._passphrase) if ep.key_file else None
        client = paramiko.SSHClient()
        # Only this host's recorded keys, ours first: a key the user replaced in ours (a recreated
        # instance) overrides the stale line in ~/.ssh/known_hosts, which is read, never written.
        known, _ = self.host_keys.lookup(ep.host_id)
        for key_type, host_key in known.items():
            client.get_host_keys().add(ep.host_id, key_type, host_key)
        client.set_missing_host_key_policy(VerifyingPolicy(self.host_keys, self.accept_hint()))
        sock = self._sock()
        started = time.monotonic()
        try:
            client.connect(
                ep.host,
                port=ep.port,
                username=ep.user,
                pkey=pkey,
                sock=sock,
                timeout=self.connect_timeout,
                banner_timeout=self.connect_timeout,
                auth_timeout=self.connect_timeout,
                channel_timeout=self.connect_timeout,
                allow_agent=pkey is None,
                look_for_keys=pkey is None,
                transport_factory=_transport_factory,
            )
        except (SshError, paramiko.SSHException, EOFError, OSError) as exc:
            transport = client.get_transport()
            saved = getattr(transport, "saved_exception", None) if transport else None
            self._abort(client, sock)
            self._raise_connect_error(exc, saved, time.monotonic() - started)
        transport = client.get_transport()
        assert transport is not None
        transport.set_keepalive(self.keepalive)
        self._client = client
        self._record_stamp = self.host_keys.record_stamp()
        self._slots = threading.BoundedSemaphore(self.max_channels)  # old leases release into the old one
        self._last_ok = time.monotonic()

    def _raise_connect_error(
        self, exc: BaseException, saved: BaseException | None, seconds: float
    ) -> NoReturn:
        """Why the handshake failed, said for this profile: a changed host key, an unknown one (with the
        accept hint), a refused key pair, a silent port, a full server or a dropped connection."""
        ep = self.endpoint
        if isinstance(exc, HostKeyChanged):
            exc.fix = replace_hint(ep.profile, exc.host_id)
            raise exc
        if isinstance(exc, SshError):
            if hasattr(exc, "fingerprint"):
                exc.fix = self.accept_hint(exc.fingerprint)
            raise exc
        if isinstance(exc, paramiko.BadHostKeyException):
            _, source = self.host_keys.lookup(ep.host_id)
            raise HostKeyChanged(
                ep.host_id,
                exc.key.get_name(),
                fingerprint(exc.expected_key),
                fingerprint(exc.key),
                str(source),
                profile=ep.profile,
            ) from exc
        if isinstance(exc, paramiko.AuthenticationException):
            key = ep.key_file or "any of your default keys"
            raise KeyNotAccepted(
                f"Permission denied (publickey) for {ep.user}@{ep.host_id}: "
                f"the instance's key pair is not {key}",
                where=f"profile {ep.profile}",
                fix="use the key pair bound to the instance (--key FILE, the .pem downloaded at creation) "
                "and the right user (Notebook instances use ma-user)",
            ) from exc
        if isinstance(exc, TimeoutError):
            raise ConnectTimeout(
                f"{ep.host_id} accepted the TCP connection but the SSH handshake timed out",
                where=f"profile {ep.profile}",
                fix="check that the port is an SSH port and the instance is healthy",
            ) from exc
        timed_out = seconds >= 0.9 * self.connect_timeout
        if timed_out or any(isinstance(e.__context__, TimeoutError) for e in (exc, saved) if e is not None):
            raise ConnectTimeout(
                f"{ep.host_id} accepted the TCP connection but sent no SSH banner "
                f"within {self.connect_timeout:g}s",
                where=f"profile {ep.profile}",
                fix="check that the port is the instance's SSH port and the instance is healthy",
            ) from exc
        if "banner" in str(exc).lower() or isinstance(exc, EOFError | ConnectionResetError):
            raise TooManyConnections(
                f"{ep.host_id} closed the connection before the SSH handshake ({exc})",
                where=f"profile {ep.profile}",
                fix=f"{SERVER_SESSION_LIMIT_HINT}: close other SSH sessions (IDEs, terminals) and retry",
            ) from exc
        raise ConnectionLost(
            f"SSH handshake with {ep.host_id} failed: {exc}", where=f"profile {ep.profile}", fix="retry"
        ) from exc

    def connect(self) -> Connection:
        self.transport()
        return self

    def close(self) -> None:
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None
            if self._jump_lease is not None:
                self._jump_lease.close()
                self._jump_lease = None

    def __enter__(self) -> Connection:
        return self

    def __exit__(
        self, et: type[BaseException] | None, ev: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.close()

    # -- liveness -----------------------------------------------------------------------------------
    def probe(self, timeout: float | None = None) -> bool:
        """A real round trip: a global request the server must answer (OpenSSH replies "failure")."""
        with self._lock:
            client = self._client
            transport = client.get_transport() if client else None
            if transport is None or not transport.is_active():
                return False
            done = threading.Event()

            def ask() -> None:
                with contextlib.suppress(Exception):  # any failure means "not alive", decided below
                    transport.global_request("keepalive@openssh.com", wait=True)
                done.set()

            threading.Thread(target=ask, name=f"ssh-probe-{self.name}", daemon=True).start()
            if not done.wait(timeout or self.probe_timeout) or not transport.is_active():
                transport.close()  # dead or black-holed: the waiting thread ends as the transport stops
                return False
            self._last_ok = time.monotonic()
            return True

    @property
    def is_connected(self) -> bool:
        transport = self._client.get_transport() if self._client else None
        return bool(transport and transport.is_active())

    def transport(self) -> paramiko.Transport:
        """The live transport, (re)connecting if it is missing, closed, or fails the probe."""
        with self._lock:
            alive = self.is_connected
            if alive and not self._record_holds():
                self.close()  # the host's record changed: this transport's key is no longer the trusted one
                alive = False
            if alive and time.monotonic() - self._last_ok > self.probe_after:
                alive = self.probe()
            if not alive:
                if self._client is not None:
                    self.close()
                    self.reconnects += 1
                    self._remote_root = None
                self._connect()
            assert self._client is not None
            transport = self._client.get_transport()
            assert transport is not None
            return transport

    def _record_holds(self) -> bool:
        """Is the live transport's host key still recorded? Re-read only when a known_hosts file moved."""
        stamp = self.host_keys.record_stamp()
        if stamp == self._record_stamp:
            return True
        transport = self._client.get_transport() if self._client else None
        if transport is None:
            return False
        if not self.host_keys.still_trusted(self.endpoint.host_id, transport.get_remote_server_key()):
            return False
        self._record_stamp = stamp
        return True

    # -- channels -----------------------------------------------------------------------------------
    def _acquire(self, wait: bool = True) -> threading.BoundedSemaphore | None:
        slots = self._slots
        if not wait:
            return slots if slots.acquire(blocking=False) else None
        if not slots.acquire(timeout=self.channel_wait):
            raise TooManyConnections(
                f"all {self.max_channels} SSH channels of profile {self.name} stayed busy for "
                f"{self.channel_wait:g}s",
                where=f"profile {self.name}",
                fix="wait for running transfers/commands to finish, or raise max_channels "
                f"({SERVER_SESSION_LIMIT_HINT})",
            )
        return slots

    @overload
    def _open(self, kind: str, dest: tuple[str, int] | None = None) -> ChannelLease: ...
    @overload
    def _open(self, kind: str, dest: tuple[str, int] | None = None, *, wait: bool) -> ChannelLease | None: ...
    def _open(
        self, kind: str, dest: tuple[str, int] | None = None, *, wait: bool = True
    ) -> ChannelLease | None:
        for attempt in (1, 2):
            transport = self.transport()
            slots = self._acquire(wait)
            if slots is None:
                return None
            try:
                if kind == "session":
                    channel = transport.open_session(timeout=self.connect_timeout)
                else:
                    assert dest is not None
                    channel = transport.open_channel(
                        "direct-tcpip",
                        dest_addr=dest,
                        src_addr=("127.0.0.1", 0),
                        timeout=self.connect_timeout,
                    )
                self._last_ok = time.monotonic()
                return ChannelLease(channel, slots)
            except paramiko.ChannelException as exc:
                slots.release()
                raise TooManyConnections(
                    f"{self.endpoint.host_id} refused a new {kind} channel ({exc})",
                    where=f"profile {self.name}",
                    fix=f"{SERVER_SESSION_LIMIT_HINT} and a few sessions each: close other sessions, "
                    "or lower max_channels",
                ) from exc
            except (paramiko.SSHException, EOFError, OSError) as exc:
                slots.release()
                if attempt == 2:
                    raise ConnectionLost(
                        f"cannot open a channel to {self.endpoint.host_id}: {exc}",
                        where=f"profile {self.name}",
                        fix="check the instance and the network, then retry",
                    ) from exc
                with self._lock:
                    self._last_ok = 0.0  # force a probe -> reconnect on the retry
        raise AssertionError("unreachable")

    def open_session(self) -> ChannelLease:
        """A session channel (exec / subsystem). Close the lease when done."""
        return self._open("session")

    def spare_session(self) -> ChannelLease | None:
        """A session channel if one of the profile's slots is free right now, else None (never waits:
        for optional extra channels, such as a sync's second upload stream)."""
        return self._open("session", wait=False)

    def open_forward(self, host: str, port: int) -> ChannelLease:
        """A ``direct-tcpip`` channel to ``host:port`` as the remote side sees it (forwards, jumps)."""
        return self._open("direct-tcpip", (host, port))

    @contextmanager
    def sftp(self) -> Iterator[paramiko.SFTPClient]:
        """An SFTP client on its own channel (never share one across threads: paramiko deadlocks)."""
        lease = self.open_session()
        try:
            lease.channel.invoke_subsystem("sftp")
            client = paramiko.SFTPClient(lease.channel)
        except Exception:
            lease.close()
            raise
        try:
            yield client
        finally:
            client.close()
            lease.close()

    def run(self, command: str, *, stdin: bytes | None = None, timeout: float | None = None) -> ExecResult:
        """Run a short command and collect its output (both streams read concurrently: no deadlock)."""
        with self.open_session() as channel:
            if timeout:
                channel.settimeout(timeout)
            channel.exec_command(command)
            errors: list[bytes] = []
            reader = threading.Thread(
                target=lambda: errors.append(_read_all(channel.recv_stderr)), daemon=True
            )
            reader.start()
            try:
                if stdin is not None:
                    channel.sendall(stdin)
                    channel.shutdown_write()
                out = _read_all(channel.recv)
                reader.join(timeout)
                status = channel.recv_exit_status()
            except TimeoutError as exc:
                raise ConnectTimeout(
                    f"remote command did not finish within {timeout}s: {command[:80]}",
                    where=f"profile {self.name}",
                    fix="retry; check the instance's load",
                ) from exc
            if status == -1 and not self.is_connected:
                raise ConnectionLost(
                    f"connection to {self.endpoint.host_id} dropped while running a command",
                    where=f"profile {self.name}",
                    fix="retry",
                )
            return ExecResult(status, out, b"".join(errors))

    # -- remote root --------------------------------------------------------------------------------
    def remote_root(self, *, create: bool = True) -> str:
        """The remote directory as an absolute path (``~`` expanded); created unless ``create=False``."""
        if self._remote_root is None:
            target = self.endpoint.remote_dir
            if target == "~" or target.startswith("~/"):
                quoted = '"$HOME"' + (shlex.quote(target[1:]) if target != "~" else "")
            else:
                quoted = shlex.quote(target)
            if create:
                command = f"mkdir -p -- {quoted} && cd -- {quoted} && pwd -P"
            else:  # dry runs change nothing: report the path without creating it
                command = (
                    f"if [ -d {quoted} ]; then cd -- {quoted} && pwd -P; else printf '%s\\n' {quoted}; fi"
                )
            result = self.run(command)
            if result.exit_status != 0:
                raise SshError(
                    f"cannot use remote directory {target}: {result.stderr.decode(errors='replace').strip()}",
                    where=f"profile {self.name}",
                    fix=f"choose a writable remote directory (ssh add {self.name} --remote-dir DIR)",
                )
            root = result.text().strip().splitlines()[-1]
            if not create:
                return root
            self._remote_root = root
        return self._remote_root


def _read_all(recv: Callable[[int], bytes]) -> bytes:
    chunks: list[bytes] = []
    while True:
        data = recv(65536)
        if not data:
            return b"".join(chunks)
        chunks.append(data)
