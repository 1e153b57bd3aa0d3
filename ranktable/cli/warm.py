"""A warm CLI for cluster and planning commands: a per-user process that has already imported the
cluster client, the planner and numpy forks one child per `ranktable job ...` or `ranktable plan` run,
and the child runs the command on the caller's own terminal.

Why: a Python process's imports (urllib3 and the cluster client, the JobSpec, the planner and numpy)
cost more CPU than the command's own work, where `kubectl get` answers in ~0.2 s. The child reads the
kubeconfig afresh on every run (no client, token or certificate is kept between runs), so a changed
kubeconfig is seen at once; only the imported code is shared. The caller passes its stdin, stdout and
stderr (``SCM_RIGHTS``), working folder, environment and arguments; output, colours, pipes and exit
codes are the command's own, and Ctrl-C reaches the child. The first run runs in-process and starts the
server in the background as it ends (`StartBeside`).

Security: the socket is in the connection agent's private folder (0700, this user's, checked every
time), mode 0600, and each connection's peer credentials (``SO_PEERCRED``) must be this user's uid.
The server is keyed by the installed code (a changed package starts a new one) and exits after
``IDLE_SECONDS`` without runs. ``RANKTABLE_WARM=0`` turns it off.
"""

from __future__ import annotations

import array
import contextlib
import json
import os
import signal
import socket
import sys
import zlib
from pathlib import Path

# no `typing` at run time: every `ranktable` run, warm or not, imports this module (~4 ms; issue 28)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

IDLE_SECONDS = 600.0
MAX_REQUEST = 1 << 20  # argv and environment of one run


class WarmUnavailable(Exception):
    """No warm server can be used: the caller runs the command in-process. ``start``: none answered at
    that socket, so the caller starts one (`StartBeside`) once its own command no longer needs the CPU."""

    def __init__(self, reason: str, start: Path | None = None) -> None:
        super().__init__(reason)
        self.start = start


def enabled() -> bool:
    return os.environ.get("RANKTABLE_WARM", "1") not in ("0", "no", "off", "false")


def code_tag() -> str:
    """A tag of the installed ranktable code (environment and interpreter, package path, newest module
    time): a server started from other code is never used."""
    package = Path(__file__).resolve().parent.parent
    newest = 0
    for folder, _dirs, files in os.walk(package):
        for name in files:
            if name.endswith(".py"):
                newest = max(newest, os.stat(os.path.join(folder, name)).st_mtime_ns)
    # the interpreter by its environment and real binary: `.venv/bin/python` and the `ranktable` script's
    # `.venv/bin/python3` are one interpreter, and must find one server
    key = f"{sys.prefix}\0{os.path.realpath(sys.executable)}\0{package}\0{newest}"
    return f"{zlib.crc32(key.encode()):08x}"


def socket_path() -> Path:
    from ranktable.usecases.warm import NoPrivateFolder, private_folder

    try:
        folder = private_folder()  # private to this user and RANKTABLE_HOME, checked
    except NoPrivateFolder as exc:
        raise WarmUnavailable(str(exc)) from None
    return folder / f"cli-{code_tag()}.sock"


# -- the caller ------------------------------------------------------------------------------------
def start(path: Path) -> None:
    """Start the server in the background (this run goes on in-process)."""
    import subprocess

    log = path.with_suffix(".log")
    with open(log, "ab") as out:
        os.chmod(log, 0o600)
        subprocess.Popen(
            [sys.executable, "-m", "ranktable.cli.warm_server", str(path)],
            stdin=subprocess.DEVNULL,
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,  # outlives this run
            env={**os.environ, "PYTHONPATH": os.pathsep.join(sys.path)},
        )


class StartBeside(contextlib.AbstractContextManager["StartBeside"]):
    """Start the server at `path` while the caller's in-process command runs: after ``delay`` seconds
    (a long command, `job logs -f`), or when the command ends, whichever comes first. Not at once: its
    imports (~1 s of CPU) would compete with the cold command on a loaded 2-core machine (#28)."""

    def __init__(self, path: Path | None, delay: float = 2.0) -> None:
        import threading

        self.path = path
        self._done = threading.Lock()
        self._timer: threading.Timer | None = None
        if path is not None:
            self._timer = threading.Timer(delay, self._start)
        if self._timer is not None:
            self._timer.daemon = True
            self._timer.start()

    def _start(self) -> None:
        if self.path is not None and self._done.acquire(blocking=False):
            with contextlib.suppress(OSError):
                start(self.path)

    def __exit__(self, *exc: object) -> None:
        if self._timer is not None:
            self._timer.cancel()
            self._start()


def run_warm(argv: list[str]) -> int:
    """Run the command in a child of the warm server; `WarmUnavailable` if there is none (its ``start``
    says where to start one: `StartBeside`), and the caller runs the command itself."""
    if not enabled():
        raise WarmUnavailable("RANKTABLE_WARM=0")
    path = socket_path()
    sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    try:
        sock.connect(str(path))
    except OSError:
        sock.close()
        raise WarmUnavailable("none runs", start=path) from None
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
        if not line:  # killed, or ended by a signal before it could answer: never a silent exit 1
            print(
                f"ranktable: the warm CLI's run (pid {child}) ended without an exit code; run the command"
                " again, or with RANKTABLE_WARM=0 to run it in this process",
                file=sys.stderr,
            )
            return 1
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
