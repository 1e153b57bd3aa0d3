"""`kubectl exec` for the simulated kubelet: run a command in a pod's sandbox over a channel WebSocket.

The command runs on the host like the pod's own process (same env, working directory and
`/user/config` mapping), with a pseudo-terminal when `tty=true`.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import pty
import select
import signal
import struct
import subprocess
import termios
import threading
import time
from typing import Any, Protocol

from ranktable.sim.controllers.common import Obj
from ranktable.sim.k8s.websocket import WebSocket

STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255
# Once the command has exited its output is relayed to the end, however long a slow client takes to read
# it; only a pipe that stays quiet this long (held open by a background child) is given up on.
DRAIN_IDLE_SECONDS = 1.0
POLL_SECONDS = 0.2
# After our Close frame, how long to wait for the client's reply before hanging up: closing the socket
# with its frames unread would make the kernel answer with a reset instead of a clean end.
CLOSE_REPLY_SECONDS = 2.0


def _status(code: int | None) -> dict[str, Any]:
    if code == 0:
        return {"metadata": {}, "status": "Success"}
    return {
        "metadata": {},
        "status": "Failure",
        "reason": "NonZeroExitCode",
        "message": f"command terminated with non-zero exit code: exit status {code}",
        "details": {"causes": [{"reason": "ExitCode", "message": str(code)}]},
    }


def _resize(fd: int, payload: bytes) -> None:
    try:
        size = json.loads(payload)
        fcntl.ioctl(
            fd, termios.TIOCSWINSZ, struct.pack("HHHH", int(size["Height"]), int(size["Width"]), 0, 0)
        )
    except (ValueError, KeyError, OSError):
        pass


def _make_controlling_tty() -> None:  # runs in the child, between fork and exec
    fcntl.ioctl(0, termios.TIOCSCTTY, 0)


def run_exec(
    ws: WebSocket, argv: list[str], env: dict[str, str], cwd: str, *, tty: bool, stdin: bool, v5: bool
) -> None:
    """Run `argv`, relay its streams over `ws`, end with the exit Status on the error channel."""
    try:
        proc, master = _spawn(argv, env, cwd, tty=tty, stdin=stdin)
    except OSError as exc:
        failure = {
            "metadata": {},
            "status": "Failure",
            "reason": "InternalError",
            "message": f"failed to exec in the sandbox: {exc}",
        }
        ws.send_channel(ERROR, json.dumps(failure).encode())
        ws.close()
        return

    exited = threading.Event()
    if tty:
        outputs = [(master, STDOUT)]
    else:
        assert proc.stdout is not None and proc.stderr is not None
        outputs = [(proc.stdout.fileno(), STDOUT), (proc.stderr.fileno(), STDERR)]
    pumps = [threading.Thread(target=_relay, args=(ws, fd, ch, exited), daemon=True) for fd, ch in outputs]
    for p in pumps:
        p.start()
    reader = threading.Thread(target=_feed, args=(ws, proc, master, tty, v5), daemon=True)
    reader.start()
    code = proc.wait()
    exited.set()
    for p in pumps:
        p.join()  # every byte is on the wire before the exit Status: kubectl stops at the Close frame
    if master >= 0:
        os.close(master)
    for pipe in (proc.stdout, proc.stderr):
        if pipe is not None:
            pipe.close()
    with contextlib.suppress(OSError):
        ws.send_channel(ERROR, json.dumps(_status(code if code >= 0 else 128 - code)).encode())
    ws.close()
    reader.join(CLOSE_REPLY_SECONDS)


def _spawn(
    argv: list[str], env: dict[str, str], cwd: str, *, tty: bool, stdin: bool
) -> tuple[subprocess.Popen[bytes], int]:
    """The command in its own session: on a new pseudo-terminal (its master returned), else on pipes
    (master -1)."""
    if not tty:
        proc = subprocess.Popen(
            argv,
            stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
            stdout=subprocess.PIPE,
            stderr=subprocess.PIPE,
            cwd=cwd,
            env=env,
            start_new_session=True,
        )
        return proc, -1
    master, slave = pty.openpty()
    try:
        proc = subprocess.Popen(
            argv,
            stdin=slave,
            stdout=slave,
            stderr=slave,
            cwd=cwd,
            env=env,
            start_new_session=True,
            preexec_fn=_make_controlling_tty,
        )
    except OSError:
        os.close(master)
        os.close(slave)
        raise
    os.close(slave)
    return proc, master


def _relay(ws: WebSocket, fd: int, channel: int, exited: threading.Event) -> None:
    """Process -> client until EOF, or until the pipe has been quiet for a while after the exit."""
    quiet_since: float | None = None
    poller = select.poll()  # not select.select: a busy server may hand out descriptors above 1024
    poller.register(fd, select.POLLIN)
    while True:
        if not poller.poll(POLL_SECONDS * 1000):
            if exited.is_set():
                quiet_since = quiet_since if quiet_since is not None else time.monotonic()
                if time.monotonic() - quiet_since >= DRAIN_IDLE_SECONDS:
                    return
            continue
        quiet_since = None
        try:
            data = os.read(fd, 65536)
        except OSError:  # EIO on a pty once the process is gone
            return
        if not data:
            return
        try:
            ws.send_channel(channel, data)
        except OSError:
            return


def _feed(ws: WebSocket, proc: subprocess.Popen[bytes], master: int, tty: bool, v5: bool) -> None:
    """Client -> process: stdin, resize, close-stdin; a vanished client kills the command."""
    writer = master if tty else (proc.stdin.fileno() if proc.stdin else -1)
    try:
        while True:
            _, message = ws.receive()
            if not message:
                continue
            channel, data = message[0], message[1:]
            if channel == STDIN and writer >= 0 and data:
                os.write(writer, data)
            elif channel == RESIZE and tty:
                _resize(master, data)
            elif channel == CLOSE and v5 and data[:1] == bytes([STDIN]) and proc.stdin is not None:
                proc.stdin.close()
                writer = -1
    except (EOFError, OSError, ValueError):
        if proc.poll() is None and not ws.closed:
            with contextlib.suppress(ProcessLookupError):
                os.killpg(proc.pid, signal.SIGHUP)


def exec_target(pod: Obj, container: str | None) -> str:
    """The container to exec into; raises ValueError with the API's wording when there is none."""
    names = [c["name"] for c in (pod.get("spec") or {}).get("containers") or []]
    name = container or (names[0] if names else "")
    if name not in names:
        raise ValueError(f"container {name} is not valid for pod {pod['metadata']['name']}")
    statuses = {c["name"]: c for c in (pod.get("status") or {}).get("containerStatuses") or []}
    if "running" not in (statuses.get(name, {}).get("state") or {}):
        raise ValueError(f'unable to upgrade connection: container not found ("{name}")')
    return name


class ExecHost(Protocol):
    """What `serve_exec` needs of a kubelet (`Kubelet` has it)."""

    def exec_context(self, pod: Obj, container: str) -> tuple[dict[str, str], str]: ...

    def exec_argv(self, pod: Obj, argv: list[str]) -> list[str]: ...


def serve_exec(
    kubelet: ExecHost, pod: Obj, query: dict[str, list[str]], ws: WebSocket, protocol: str
) -> None:
    """Run an exec request (`command`, `container`, `stdin`, `tty` query parameters) on an open WebSocket."""
    try:
        container = exec_target(pod, (query.get("container") or [""])[0] or None)
    except ValueError as exc:
        status = {
            "metadata": {},
            "status": "Failure",
            "reason": "BadRequest",
            "message": str(exc),
            "code": 400,
        }
        ws.send_channel(ERROR, json.dumps(status).encode())
        ws.close()
        return
    env, cwd = kubelet.exec_context(pod, container)

    def flag(name: str) -> bool:
        return (query.get(name) or ["false"])[0] in ("1", "true", "True")

    run_exec(
        ws,
        kubelet.exec_argv(pod, query.get("command") or ["sh"]),
        env,
        cwd,
        tty=flag("tty"),
        stdin=flag("stdin"),
        v5=protocol.startswith("v5"),
    )
