"""A per-user connection agent, like OpenSSH's ControlMaster: CLI runs reuse one verified connection.

Each ``ranktable sync`` used to log in afresh (TCP, key exchange, authentication: most of a no-op
sync). The first CLI sync starts this agent in the background; later ones hand their sync to it over
a Unix socket and get progress and the result back, so only the first pays for the handshake.

Security: the socket lives in a folder only the user can enter (0700, owned by the user, checked
every time, never followed through a symlink); the socket itself is 0600, and every connection's peer
credentials (``SO_PEERCRED``) must be the user's own uid. The agent holds no secret the CLI does not:
keys needing a passphrase are never used through it (the CLI then syncs itself and asks). It exits
after ``IDLE_SECONDS`` without requests. ``RANKTABLE_AGENT=0`` turns it off.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
import os
import socket
import socketserver
import stat
import struct
import subprocess
import sys
import tempfile
import threading
import time
from collections.abc import Callable, Iterator
from pathlib import Path
from typing import Any

from ranktable.errors import InputError, RanktableError
from ranktable.home import ranktable_home

IDLE_SECONDS = 600.0
START_SECONDS = 10.0
MAX_REQUEST = 1 << 16  # bytes of one JSON request line


class AgentUnavailable(Exception):
    """No agent can be used (turned off, cannot start, wrong owner): the caller works in-process."""


def enabled() -> bool:
    return os.environ.get("RANKTABLE_AGENT", "1") not in ("0", "no", "off", "false")


def _private_dir(path: Path) -> Path:
    """``path`` as a folder only this user can use, or ``AgentUnavailable``."""
    with contextlib.suppress(FileExistsError):
        path.mkdir(mode=0o700, parents=False)
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o077:
        raise AgentUnavailable(
            f"{path} is not a private folder of this user (mode 0700, owned by uid {os.getuid()})"
        )
    return path


def socket_path(home: Path | None = None) -> Path:
    """The agent's socket for this user and RANKTABLE_HOME (short: Unix socket paths are <= 107 bytes)."""
    home = (home or ranktable_home()).resolve()
    tag = hashlib.sha256(str(home).encode()).hexdigest()[:12]
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or tempfile.gettempdir())
    folder = _private_dir(base / f"ranktable-{os.getuid()}")
    return _private_dir(folder / tag) / "agent.sock"


# -- the agent ----------------------------------------------------------------------------------------
class _Handler(socketserver.StreamRequestHandler):
    server: _AgentServer

    def handle(self) -> None:
        creds = self.request.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
        if uid != os.getuid():
            return  # another user: say nothing
        line = self.rfile.readline(MAX_REQUEST)
        self.server.touch()
        try:
            request = json.loads(line)
            if not isinstance(request, dict):
                raise ValueError("not an object")
        except ValueError:
            self._send({"error": {"reason": "malformed request", "type": "InputError"}})
            return
        try:
            result = self.server.dispatch(request, self._send)
            self._send({"result": result})
        except RanktableError as exc:
            self._send({"error": {"type": type(exc).__name__, **exc.to_json()}})
        except Exception as exc:  # reported to the CLI, which then works in-process
            self._send({"error": {"type": "Internal", "reason": f"{type(exc).__name__}: {exc}"}})
        finally:
            self.server.touch()

    def _send(self, message: dict[str, Any]) -> None:
        with self.server.send_lock:  # progress comes from upload threads too
            self.wfile.write(json.dumps(message).encode() + b"\n")
            self.wfile.flush()


class _AgentServer(socketserver.ThreadingMixIn, socketserver.UnixStreamServer):
    daemon_threads = True

    def __init__(self, path: Path, idle: float) -> None:
        from ranktable.remote.manager import ConnectionManager

        self.idle = idle
        self.last = time.monotonic()
        self.send_lock = threading.Lock()
        self.manager = ConnectionManager()
        old = os.umask(0o177)
        try:
            super().__init__(str(path), _Handler)
        finally:
            os.umask(old)
        os.chmod(path, 0o600)

    def touch(self) -> None:
        self.last = time.monotonic()

    def dispatch(self, request: dict[str, Any], send: Callable[[dict[str, Any]], None]) -> Any:
        op = request.get("op")
        if op == "ping":
            return {"pid": os.getpid()}
        if op == "stop":
            threading.Thread(target=self.shutdown, daemon=True).start()
            return {"stopping": True}
        if op == "sync":
            return self._sync(request, send)
        raise InputError(f"unknown agent operation {op!r}", where="op")

    def _sync(self, request: dict[str, Any], send: Callable[[dict[str, Any]], None]) -> dict[str, Any]:
        from dataclasses import asdict, replace

        from ranktable.remote.sync import Syncer

        name = str(request["profile"])
        profile = self.manager.profiles.get(name)  # a key needing a passphrase fails: the CLI asks
        settings = profile.sync
        if request.get("delete"):
            settings = replace(settings, delete_remote=True)
        syncer = Syncer(self.manager.get(name), request["local_dir"], settings)

        def progress(event: Any) -> None:
            send({"progress": asdict(event)})

        result = syncer.sync(
            dry_run=bool(request.get("dry_run")),
            force=bool(request.get("force")),
            progress=progress if request.get("progress") else None,
        )
        data = asdict(result)
        data["summary"] = result.summary()
        return data

    def service_actions(self) -> None:
        if time.monotonic() - self.last > self.idle:
            threading.Thread(target=self.shutdown, daemon=True).start()


def serve(idle: float = IDLE_SECONDS) -> None:
    """Run the agent in this process until it has been idle for ``idle`` seconds (or is stopped)."""
    path = socket_path()
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a stale socket of an agent that died (the folder is ours alone)
    server = _AgentServer(path, idle)
    try:
        server.serve_forever(poll_interval=1.0)
    finally:
        server.server_close()
        server.manager.close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


# -- the client -----------------------------------------------------------------------------------
def _connect(path: Path) -> socket.socket:
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        raise
    return sock


def _start(path: Path) -> socket.socket:
    log = path.with_name("agent.log")
    with open(log, "ab") as out:
        os.chmod(log, 0o600)
        subprocess.Popen(
            [sys.executable, "-m", "ranktable.remote.agent"],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives this CLI run
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )
    deadline = time.monotonic() + START_SECONDS
    while True:
        try:
            return _connect(path)
        except OSError:
            if time.monotonic() > deadline:
                raise AgentUnavailable(f"the connection agent did not start (see {log})") from None
            time.sleep(0.02)


def request(message: dict[str, Any], *, start: bool = True) -> Iterator[dict[str, Any]]:
    """Send one request to the user's agent (starting it if needed); yields its replies."""
    if not enabled():
        raise AgentUnavailable("RANKTABLE_AGENT=0")
    path = socket_path()
    try:
        sock = _connect(path)
    except OSError:
        if not start:
            raise AgentUnavailable("no agent running") from None
        sock = _start(path)
    with sock, sock.makefile("rwb") as stream:
        stream.write(json.dumps(message).encode() + b"\n")
        stream.flush()
        for line in stream:
            yield json.loads(line)


def call(message: dict[str, Any], on_progress: Callable[[dict[str, Any]], None] | None = None) -> Any:
    """One request's result; an error of the agent is re-raised as a ``RanktableError``."""
    for reply in request(message):
        if "progress" in reply:
            if on_progress is not None:
                on_progress(reply["progress"])
        elif "error" in reply:
            error = reply["error"]
            if error.get("type") in ("Internal", "PassphraseRequired", "UnknownHostKey", "HostKeyChanged"):
                raise AgentUnavailable(error.get("reason") or "agent error")  # the CLI explains these itself
            raise RanktableError(
                error.get("reason") or "error", where=error.get("field"), fix=error.get("fix")
            )
        elif "result" in reply:
            return reply["result"]
    raise AgentUnavailable("the agent closed the connection")


def stop() -> bool:
    """Stop the user's agent for this RANKTABLE_HOME if one runs."""
    try:
        for _ in request({"op": "stop"}, start=False):
            pass
    except (AgentUnavailable, OSError):
        return False
    return True


if __name__ == "__main__":
    serve(float(os.environ.get("RANKTABLE_AGENT_IDLE", IDLE_SECONDS)))
