"""The warm CLI's server (`ranktable.cli.warm` is the caller's side, kept light: every warm run imports
it): a process that has imported the cluster client, the planner and numpy, and forks one child per run.
"""

from __future__ import annotations

import array
import contextlib
import fcntl
import json
import os
import signal
import socket
import socketserver
import struct
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ranktable.cli.warm import IDLE_SECONDS, MAX_REQUEST, _send_stop


# -- the server ------------------------------------------------------------------------------------
def preload() -> None:
    """Import what cluster and planning commands use, once, before any fork; then move it all to the
    collector's permanent generation, so no child's collection walks it (nor copies its pages)."""
    import gc

    from ranktable.cli import build_parser
    from ranktable.usecases.warm import preload_cluster, preload_planning, warm_up_planning

    build_parser()
    preload_cluster()
    preload_planning()
    with contextlib.suppress(Exception):  # only a head start: a failure here is the run's own later
        warm_up_planning(run_command)
    gc.collect()
    gc.freeze()


class _Handler(socketserver.BaseRequestHandler):
    """Runs in the forked child: becomes the caller's command."""

    request: socket.socket
    server: _WarmServer
    _answered: threading.Event  # set once the command has its exit code

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
        # SIGPIPE stays ignored, as in any Python process: at its default, a write to a socket the other
        # end had closed (a log stream's TLS close after a Ctrl-C) killed the run silently (#28).
        # A reader of stdout that went away is handled as in-process (`ranktable.cli._run`).
        signal.signal(signal.SIGINT, signal.default_int_handler)
        signal.signal(signal.SIGTERM, signal.SIG_DFL)
        self.request.sendall(json.dumps({"pid": os.getpid()}).encode() + b"\n")
        self._answered = threading.Event()
        threading.Thread(target=self._end_with_caller, daemon=True).start()
        try:
            code = run_command(request["argv"])
        except KeyboardInterrupt:  # outside the handler's own catch (parsing, flushing): still an answer
            print("ranktable: interrupted", file=sys.stderr)
            code = 130
        self._answered.set()
        with contextlib.suppress(OSError):
            self.request.sendall(json.dumps({"exit": code}).encode() + b"\n")

    def _end_with_caller(self) -> None:
        """The caller never writes again: end of stream means it is gone, so interrupt the command
        (not once it is answered: the caller closes as soon as it has the exit code)."""
        with contextlib.suppress(OSError):
            self.request.recv(1)
        if not self._answered.is_set():
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


if __name__ == "__main__":
    serve(Path(sys.argv[1]), float(os.environ.get("RANKTABLE_WARM_IDLE", IDLE_SECONDS)))
