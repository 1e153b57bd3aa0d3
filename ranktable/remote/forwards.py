"""Port forwards to a Notebook instance (TensorBoard, a web app): a listener per forward whose connections
become ``direct-tcpip`` channels on the profile's transport (ProxyJump included).

The listener is either a 127.0.0.1 TCP port (the CLI, the magics, a REST caller asking for a local port:
every local user can connect to it) or a Unix socket of mode 600 in a folder of mode 700 that only its
owner reaches (``private=True``: the server's forwards, served through its authenticated proxy path
``/ranktable/forwards/ID/proxy/``). Never bound to any other interface.

One process-wide registry (``default_forwards()``) is shared by the server extension (REST + panel) and
the magics; the CLI runs its own forward in the foreground.

Every open forward is also recorded under the user's ranktable home (``forwards/PID-ID.json``, mode 600:
pid, the process's start time, profile, ports), so the panel lists the forwards of the CLI and of kernels
too (as ``ID@PID``). Entries of processes that ended (or whose pid now belongs to another process: the
start time differs) are dropped when listed. Closing another process's forward asks that process: a
``PID-ID.close`` request file its registry polls for (a kernel keeps running; only the forward stops).
"""

from __future__ import annotations

import contextlib
import errno
import itertools
import json
import os
import stat
import tempfile
import threading
import time
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import Any

import paramiko

from ranktable.errors import ConflictError, InputError, NotFoundError
from ranktable.home import ranktable_home
from ranktable.remote.errors import SshError
from ranktable.remote.kernel_link import KernelLink
from ranktable.remote.kernel_tunnel import PortForwarder
from ranktable.remote.manager import ConnectionManager, default_manager
from ranktable.remote.state import write_private_json

MAX_FORWARDS = 32  # per process: each holds a listener and up to a few channels
REMOTE_HOST = "127.0.0.1"  # what the instance's own loopback serves (TensorBoard's default bind)
CLOSE_POLL = 0.25  # how often a registry with open forwards looks for close requests from other processes
CLOSE_WAIT = 10.0  # how long a close request waits for the owning process to close its forward
UNIX_PATH_MAX = 107  # bytes in an AF_UNIX path (sun_path is 108 with its NUL)


def check_port(value: object, where: str, *, allow_zero: bool = False) -> int:
    low = 0 if allow_zero else 1
    if isinstance(value, float) and value.is_integer():  # JSON Schema's integer: 6006.0 is one
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or not low <= value <= 65535:
        raise InputError(
            f"must be a port number {low}-65535, not {value!r:.40}",
            where=where,
            fix="e.g. 6006 for TensorBoard" + (" (0 or omitted: any free local port)" if allow_zero else ""),
        )
    return value


@dataclass(frozen=True)
class Forward:
    id: str
    profile: str
    remote_port: int
    local_port: int  # 0 for a Unix-socket forward
    created: float
    socket: str | None = None  # the Unix socket's path (mode 600), else a 127.0.0.1 TCP port

    @property
    def proxy_path(self) -> str | None:
        """Where the Jupyter server serves a Unix-socket forward (relative to its base URL)."""
        return f"/ranktable/forwards/{self.id}/proxy/" if self.socket else None

    @property
    def url(self) -> str:
        return self.proxy_path or f"http://127.0.0.1:{self.local_port}/"

    def to_json(self) -> dict[str, Any]:
        data = {**asdict(self), "url": self.url, "remote_host": REMOTE_HOST}
        if self.socket:
            return {**data, "bind": "unix", "proxy_path": self.proxy_path}
        del data["socket"]
        return {**data, "bind": "127.0.0.1"}


class ForwardRegistry:
    """The open forwards of this process, by id."""

    def __init__(self, manager: ConnectionManager | None = None) -> None:
        self._manager = manager
        self._lock = threading.Lock()
        self._open: dict[str, tuple[Forward, PortForwarder]] = {}
        self._ids = itertools.count(1)
        self._closing = 0  # closes under way (forwarder and record not yet gone)
        self._watcher: threading.Thread | None = None

    @property
    def manager(self) -> ConnectionManager:
        return self._manager or default_manager()

    def open(
        self, profile: str, remote_port: object, local_port: object = 0, *, private: bool = False
    ) -> Forward:
        """Forward 127.0.0.1:``local_port`` (0: a free one) to ``remote_port`` on the profile's instance;
        ``private``: a Unix socket only this user can connect to instead (``local_port`` ignored).

        Checks first that something listens on the remote port, so a typo is an error now, not a blank
        browser tab later.
        """
        remote = check_port(remote_port, "remote_port")
        local = check_port(local_port if local_port is not None else 0, "local_port", allow_zero=True)
        with self._lock:
            if len(self._open) >= MAX_FORWARDS:
                raise ConflictError(
                    f"{MAX_FORWARDS} forwards are open (limit {MAX_FORWARDS})",
                    where="forwards",
                    fix="close forwards you no longer use",
                )
        link = KernelLink(self.manager.get(profile), owned=False)
        try:
            probe = link.open_forward((REMOTE_HOST, remote), ("127.0.0.1", 0))
        except paramiko.ChannelException as exc:
            raise SshError(
                f"nothing accepts connections on port {remote} of the instance ({exc})",
                where="remote_port",
                fix="start the service first (e.g. tensorboard --port 6006) or check the port",
            ) from exc
        probe.close()
        forwarder = PortForwarder(link.open_forward, name=f"ranktable-forward-{profile}-{remote}")
        forward_id = f"fwd-{next(self._ids)}"
        path: str | None = None
        try:
            if private:
                path = str(_socket_dir() / f"{os.getpid()}-{forward_id}.sock")
                Path(path).unlink(missing_ok=True)  # left by an ended process that had this pid
            key = forwarder.listen_unix(path) if path else forwarder.listen(local)
        except OSError as exc:
            forwarder.close()
            if exc.errno == errno.EADDRINUSE and not path:
                raise ConflictError(
                    f"local port {local} is already in use", where="local_port", fix="pick another or omit it"
                ) from exc
            where = path or ("a private socket folder" if private else f"127.0.0.1:{local}")
            raise InputError(f"cannot listen on {where}: {exc}", where="local_port") from exc
        forwarder.point(key, (REMOTE_HOST, remote))
        forwarder.start()
        forward = Forward(forward_id, profile, remote, max(key, 0), time.time(), path)
        with self._lock:
            self._open[forward.id] = (forward, forwarder)
        _record(forward)
        self._watch()
        return forward

    def _watch(self) -> None:
        """Poll for close requests from other processes while this registry has forwards open."""
        with self._lock:
            if self._watcher is not None:
                return
            self._watcher = threading.Thread(
                target=self._serve_close_requests, name="ranktable-forward-requests", daemon=True
            )
            self._watcher.start()

    def _serve_close_requests(self) -> None:
        while True:
            time.sleep(CLOSE_POLL)
            with self._lock:
                ids = list(self._open)
                if not ids:
                    self._watcher = None
                    return
            for forward_id in ids:
                request = _entry_path(os.getpid(), forward_id).with_suffix(".close")
                if request.exists():
                    with contextlib.suppress(NotFoundError):
                        self.close(forward_id)
                    request.unlink(missing_ok=True)

    def wait_closed(self, timeout: float) -> bool:
        """True once no forward is open (closed here or on request of another process)."""
        deadline = time.monotonic() + timeout
        while self.list() or self._closing:
            if time.monotonic() >= deadline:
                return False
            time.sleep(min(CLOSE_POLL, max(0.0, deadline - time.monotonic())))
        return True

    def list(self) -> list[Forward]:
        with self._lock:
            return [forward for forward, _ in self._open.values()]

    def get(self, forward_id: str) -> Forward:
        with self._lock:
            found = self._open.get(forward_id)
        if found is None:
            raise NotFoundError(
                f"no open forward {forward_id!r}", where="forward", fix="list the open forwards"
            )
        return found[0]

    def close(self, forward_id: str) -> Forward:
        with self._lock:
            found = self._open.pop(forward_id, None)
            self._closing += found is not None  # wait_closed() waits for the record to be gone too
        if found is None:
            raise NotFoundError(
                f"no open forward {forward_id!r}", where="forward", fix="list the open forwards"
            )
        try:
            found[1].close()
            _entry_path(os.getpid(), forward_id).unlink(missing_ok=True)
        finally:
            with self._lock:
                self._closing -= 1
        return found[0]

    def close_all(self, profile: str | None = None) -> None:
        for forward in self.list():
            if profile is None or forward.profile == profile:
                with contextlib.suppress(NotFoundError):
                    self.close(forward.id)


_default: ForwardRegistry | None = None
_default_lock = threading.Lock()


def default_forwards() -> ForwardRegistry:
    """The process-wide registry (server extension and magics)."""
    global _default
    with _default_lock:
        if _default is None:
            _default = ForwardRegistry()
        return _default


# -- where private (Unix socket) forwards listen -----------------------------------------------------------
_sockets: Path | None = None


def _private_dir(path: Path) -> Path:
    """``path`` as a folder of mode 700 owned by this user (created if missing; refused otherwise)."""
    path.mkdir(mode=0o700, parents=True, exist_ok=True)
    info = os.lstat(path)
    if not stat.S_ISDIR(info.st_mode) or info.st_uid != os.getuid():
        raise OSError(errno.EPERM, "not a folder of this user", str(path))
    os.chmod(path, 0o700)
    return path


def _socket_dir() -> Path:
    """The folder of this process's forward sockets: ``RANKTABLE_HOME/fwd`` (mode 700), or a private folder
    under $XDG_RUNTIME_DIR or the temp dir when that path is too long for a Unix socket."""
    global _sockets
    longest = f"/{os.getpid()}-fwd-{MAX_FORWARDS * 1000000}.sock"
    home = ranktable_home() / "fwd"
    if len(os.fsencode(str(home) + longest)) <= UNIX_PATH_MAX:
        return _private_dir(home)
    if _sockets is not None and _sockets.is_dir():
        return _sockets
    runtime = os.environ.get("XDG_RUNTIME_DIR")
    if runtime and len(os.fsencode(f"{runtime}/ranktable-{os.getuid()}{longest}")) <= UNIX_PATH_MAX:
        with contextlib.suppress(OSError):
            _sockets = _private_dir(Path(runtime) / f"ranktable-{os.getuid()}")
            return _sockets
    _sockets = Path(tempfile.mkdtemp(prefix="rt-fwd-"))  # mode 700
    return _sockets


# -- forwards of every ranktable process of this user ---------------------------------------------------
def _forwards_dir() -> Path:
    return ranktable_home() / "forwards"


def _entry_path(pid: int, forward_id: str) -> Path:
    return _forwards_dir() / f"{pid}-{forward_id}.json"


def _started(pid: int) -> str | None:
    """The process's start time (clock ticks since boot, /proc/PID/stat field 22): a pid reused by
    another process has another one. None where there is no /proc."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rpartition(")")[2].split()[19]


def _record(forward: Forward) -> None:
    pid = os.getpid()
    entry = {**forward.to_json(), "pid": pid, "started": _started(pid)}
    with contextlib.suppress(OSError):  # the forward works without its record (read-only home)
        write_private_json(_entry_path(pid, forward.id), entry)


def _alive(entry: dict[str, Any]) -> bool:
    """The recorded process still runs: same pid, same start time, same user."""
    pid = entry.get("pid")
    if not isinstance(pid, int) or pid <= 0:
        return False
    try:
        os.kill(pid, 0)
    except (ProcessLookupError, PermissionError):  # gone, or another user's process now
        return False
    started = _started(pid)
    if started is not None and started != entry.get("started"):
        return False
    with contextlib.suppress(OSError, IndexError):  # ended, not yet reaped by its parent: gone too
        if Path(f"/proc/{pid}/stat").read_text().rpartition(")")[2].split()[0] == "Z":
            return False
    with contextlib.suppress(OSError):
        if os.stat(f"/proc/{pid}").st_uid != os.getuid():
            return False
    return True


def _entries() -> list[tuple[Path, dict[str, Any]]]:
    found = []
    try:
        paths = sorted(_forwards_dir().glob("*.json"))
    except OSError:
        return []
    for path in paths:
        try:
            entry = json.loads(path.read_text())
        except (OSError, ValueError):
            continue
        if isinstance(entry, dict):
            found.append((path, entry))
    return found


def other_forwards() -> list[dict[str, Any]]:
    """The forwards other ranktable processes of this user hold open (CLI, kernels, another server),
    with ids ``ID@PID``; records of processes that ended are removed."""
    listed = []
    for path, entry in _entries():
        if entry.get("pid") == os.getpid():
            continue
        if not _alive(entry):
            path.unlink(missing_ok=True)
            path.with_suffix(".close").unlink(missing_ok=True)
            _remove_stale_socket(entry)
            continue
        public = {k: v for k, v in entry.items() if k not in ("started", "proxy_path")}
        if public.get("bind") == "unix":  # served by that process's Jupyter server, not this one
            public["url"] = f"unix:{public.get('socket')}"
        listed.append({**public, "id": f"{entry.get('id')}@{entry['pid']}", "owner": "another process"})
    return listed


def _remove_stale_socket(entry: dict[str, Any]) -> None:
    """The socket file of a forward whose process ended, if it is in this user's forward socket folder."""
    sock = entry.get("socket")
    if isinstance(sock, str) and Path(sock).parent == ranktable_home() / "fwd" and ".." not in sock:
        Path(sock).unlink(missing_ok=True)


def close_other(qualified_id: str, wait: float = CLOSE_WAIT) -> dict[str, Any]:
    """Ask the process holding forward ``ID@PID`` to close it; return its record once it did."""
    forward_id, _, pid_text = qualified_id.rpartition("@")
    path = _entry_path(int(pid_text), forward_id) if pid_text.isdigit() and forward_id else None
    entry = None
    if path is not None and "/" not in forward_id:
        with contextlib.suppress(OSError, ValueError):
            entry = json.loads(path.read_text())
    if not isinstance(entry, dict) or not _alive(entry):
        if path is not None and entry is not None:
            path.unlink(missing_ok=True)
        raise NotFoundError(
            f"no open forward {qualified_id!r}", where="forward", fix="list the open forwards"
        )
    assert path is not None
    path.with_suffix(".close").touch(mode=0o600)
    deadline = time.monotonic() + wait
    while path.exists():
        if time.monotonic() >= deadline:
            path.with_suffix(".close").unlink(missing_ok=True)
            raise ConflictError(
                f"process {pid_text} did not close forward {forward_id} within {wait:g}s",
                where="forward",
                fix=f"stop it where it runs (Ctrl+C for `ranktable ssh forward`, or kill {pid_text})",
            )
        time.sleep(0.05)
    public = {k: v for k, v in entry.items() if k not in ("started", "proxy_path")}
    return {**public, "id": qualified_id, "owner": "another process"}
