"""A warm CLI for cluster and planning commands: a per-user process that has already imported the
kubernetes client, the planner and numpy forks one child per `ranktable job ...` or `ranktable plan` run,
and the child runs the command on the caller's own terminal.

Why: importing the official kubernetes client (pydantic models, `CoreV1Api`) costs ~1.4 s of CPU per
run, where `kubectl get` answers in ~0.2 s. The child reads the kubeconfig afresh on every run (no
client, token or certificate is kept between runs), so a changed kubeconfig is seen at once; only the
imported code is shared. The caller passes its stdin, stdout and stderr (``SCM_RIGHTS``), working
folder, environment and arguments; output, colours, pipes and exit codes are the command's own, and
Ctrl-C reaches the child. The first run starts the server in the background and runs in-process.

Security: the socket is in the connection agent's private folder (0700, this user's, checked every
time), mode 0600, and each connection's peer credentials (``SO_PEERCRED``) must be this user's uid.
The server is keyed by the installed code (a changed package starts a new one) and exits after
``IDLE_SECONDS`` without runs. ``RANKTABLE_WARM=0`` turns it off.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import hashlib
import json
import os
import signal
import socket
import socketserver
import struct
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

IDLE_SECONDS = 600.0
MAX_REQUEST = 1 << 20  # argv and environment of one run


class WarmUnavailable(Exception):
    """No warm server can be used: the caller runs the command in-process."""


def enabled() -> bool:
    return os.environ.get("RANKTABLE_WARM", "1") not in ("0", "no", "off", "false")


def code_tag() -> str:
    """A tag of the installed ranktable code (interpreter, package path, newest module time): a server
    started from other code is never used."""
    package = Path(__file__).resolve().parent.parent
    newest = 0
    for folder, _dirs, files in os.walk(package):
        for name in files:
            if name.endswith(".py"):
                newest = max(newest, os.stat(os.path.join(folder, name)).st_mtime_ns)
    key = f"{sys.executable}\0{package}\0{newest}"
    return hashlib.sha256(key.encode()).hexdigest()[:12]


def socket_path() -> Path:
    from ranktable.usecases.warm import NoPrivateFolder, private_folder

    try:
        folder = private_folder()  # private to this user and RANKTABLE_HOME, checked
    except NoPrivateFolder as exc:
        raise WarmUnavailable(str(exc)) from None
    return folder / f"cli-{code_tag()}.sock"


# -- the server ------------------------------------------------------------------------------------
def preload() -> None:
    """Import what cluster and planning commands use, once, before any fork; then move it all to the
    collector's permanent generation, so no child's collection walks it (nor copies its pages)."""
    import gc

    from ranktable.cli import build_parser
    from ranktable.usecases.warm import preload_cluster, preload_planning

    build_parser()
    preload_cluster()
    preload_planning()
    gc.collect()
    gc.freeze()


class _Handler(socketserver.BaseRequestHandler):
    """Runs in the forked child: becomes the caller's command."""

    request: socket.socket
    server: _WarmServer

    def handle(self) -> None:
        creds = self.request.getsockopt(socket.SOL_SOCKET, socket.SO_PEERCRED, struct.calcsize("3i"))
        _pid, uid, _gid = struct.unpack("3i", creds)
        if uid != os.getuid():
            return
        fds = array.array("i")
        data, ancdata, _flags, _addr = self.request.recvmsg(MAX_REQUEST, socket.CMSG_SPACE(3 * fds.itemsize))
        for level, kind, payload in ancdata:
            if level == socket.SOL_SOCKET and kind == socket.SCM_RIGHTS:
                fds.frombytes(payload[: len(payload) - len(payload) % fds.itemsize])
        if len(fds) != 3 or len(data) < 4:
            return
        size = int.from_bytes(data[:4], "big")
        if size > MAX_REQUEST:
            return
        data = data[4:]
        while len(data) < size:
            more = self.request.recv(size - len(data))
            if not more:
                return
            data += more
        request = json.loads(data)
        if request.get("stop"):
            os.kill(os.getppid(), signal.SIGTERM)  # the server: it ends its loop and removes the socket
            for fd in fds:
                os.close(fd)
            return
        for target, fd in enumerate(fds):
            os.dup2(fd, target)
            os.close(fd)
        os.chdir(request["cwd"])
        os.environ.clear()
        os.environ.update(request["env"])
        sys.argv = ["ranktable", *request["argv"]]
        sys.stdin = open(0, closefd=False)  # noqa: SIM115 - the caller's, for the process's lifetime
        sys.stdout = open(1, "w", buffering=1 if os.isatty(1) else -1, closefd=False)  # noqa: SIM115
        sys.stderr = open(2, "w", buffering=1, closefd=False)  # noqa: SIM115
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGPIPE, signal.SIG_DFL)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        self.request.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
        threading.Thread(target=self._end_with_caller, daemon=True).start()
        code = run_command(request["argv"])
        self.request.sendall(json.dumps({"exit": code}).encode() + b"\n")

    def _end_with_caller(self) -> None:
        """The caller never writes again: end of stream means it is gone, so interrupt the command."""
        with contextlib.suppress(OSError):
            self.request.recv(1)
        os.kill(os.getpid(), signal.SIGINT)


def run_command(argv: list[str]) -> int:
    from ranktable.cli import run

    try:
        code = run(argv)
    except SystemExit as exc:  # argparse's usage errors and --help
        code = exc.code if isinstance(exc.code, int) else (0 if exc.code is None else 2)
    finally:
        with contextlib.suppress(OSError, ValueError):
            sys.stdout.flush()
            sys.stderr.flush()
    return code


class _WarmServer(socketserver.ForkingMixIn, socketserver.UnixStreamServer):
    def __init__(self, path: Path, idle: float) -> None:
        self.idle = idle
        self.last = time.monotonic()
        old = os.umask(0o177)
        try:
            super().__init__(str(path), _Handler)
        finally:
            os.umask(old)

        self.timeout = 1.0  # handle_request() returns each second, to reap children and check idleness

    def process_request(self, request: Any, client_address: Any) -> None:
        self.last = time.monotonic()
        super().process_request(request, client_address)

    def idle_over(self) -> bool:
        return time.monotonic() - self.last > self.idle and not self.active_children


def serve(path: Path, idle: float = IDLE_SECONDS) -> None:
    """Serve runs until idle for ``idle`` seconds. One thread only: it forks on every run.

    Callers start a server whenever none answers, so several may start at once: the one holding the
    lock serves, the others exit. Servers of older code in the folder are stopped (they would idle on).
    """
    lock = open(path.with_suffix(".lock"), "a")  # noqa: SIM115 - held for the server's lifetime
    try:
        fcntl.flock(lock, fcntl.LOCK_EX | fcntl.LOCK_NB)
    except BlockingIOError:
        return
    for other in path.parent.glob("cli-*.sock"):
        if other != path:
            _send_stop(other)
    preload()
    with contextlib.suppress(FileNotFoundError):
        path.unlink()  # a stale socket of a server that died (the folder is ours alone)
    server = _WarmServer(path, idle)
    stopping: list[int] = []
    signal.signal(signal.SIGTERM, lambda signum, _frame: stopping.append(signum))
    try:
        while not stopping and not server.idle_over():
            server.handle_request()
            server.collect_children()
    finally:
        server.server_close()
        with contextlib.suppress(FileNotFoundError):
            path.unlink()


# -- the caller ------------------------------------------------------------------------------------
def start(path: Path) -> None:
    """Start the server in the background (this run goes on in-process)."""
    log = path.with_suffix(".log")
    with open(log, "ab") as out:
        os.chmod(log, 0o600)
        subprocess.Popen(
            [sys.executable, "-m", "ranktable.cli.warm", str(path)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives this run
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )


def run_warm(argv: list[str]) -> int:
    """Run the command in a child of the warm server; `WarmUnavailable` if there is none (then one is
    started, and the caller runs the command itself)."""
    if not enabled():
        raise WarmUnavailable("RANKTABLE_WARM=0")
    path = socket_path()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        start(path)
        raise WarmUnavailable("starting") from None
    with sock, sock.makefile("rb") as replies:
        message = json.dumps({"argv": argv, "cwd": os.getcwd(), "env": dict(os.environ)}).encode()
        framed = len(message).to_bytes(4, "big") + message
        sent = sock.sendmsg([framed], [_std_fds()])
        sock.sendall(framed[sent:])
        first = replies.readline()
        if not first:
            raise WarmUnavailable("the warm server refused the run")
        child = int(json.loads(first)["pid"])
        try:
            line = replies.readline()
        except KeyboardInterrupt:
            os.kill(child, signal.SIGINT)
            line = _after_interrupt(replies, child)
        if not line:
            return 1  # the child died without an exit code
        return int(json.loads(line)["exit"])


def stop() -> bool:
    """Stop this user's warm server for the installed code, if one runs."""
    try:
        path = socket_path()
    except WarmUnavailable:
        return False
    return _send_stop(path)


def _send_stop(path: Path) -> bool:
    with socket.socket(socket.AF_UNIX, socket.SOCK_STREAM) as sock:
        try:
            sock.connect(str(path))
        except OSError:
            return False
        message = json.dumps({"stop": True}).encode()
        sock.sendmsg([len(message).to_bytes(4, "big") + message], [_std_fds()])
        sock.recv(1)  # the child closes the connection once it has signalled the server
    return True


def _std_fds() -> tuple[int, int, bytes]:
    return (socket.SOL_SOCKET, socket.SCM_RIGHTS, array.array("i", [0, 1, 2]).tobytes())


def _after_interrupt(replies: Any, child: int) -> bytes:
    """Wait for the interrupted child's exit code; a second Ctrl-C ends it for good."""
    while True:
        try:
            return bytes(replies.readline())
        except KeyboardInterrupt:
            with contextlib.suppress(ProcessLookupError):
                os.kill(child, signal.SIGKILL)


if __name__ == "__main__":
    serve(Path(sys.argv[1]), float(os.environ.get("RANKTABLE_WARM_IDLE", IDLE_SECONDS)))
