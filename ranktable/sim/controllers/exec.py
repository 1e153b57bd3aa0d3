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
import signal
import struct
import subprocess
import termios
import threading
from typing import Any

from ranktable.sim.controllers.common import Obj
from ranktable.sim.k8s.websocket import WebSocket

STDIN, STDOUT, STDERR, ERROR, RESIZE, CLOSE = 0, 1, 2, 3, 4, 255


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
    master = -1
    try:
        if tty:
            master, slave = pty.openpty()
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
            os.close(slave)
        else:
            proc = subprocess.Popen(
                argv,
                stdin=subprocess.PIPE if stdin else subprocess.DEVNULL,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                cwd=cwd,
                env=env,
                start_new_session=True,
            )
    except OSError as exc:
        ws.send_channel(
            ERROR,
            json.dumps(
                {
                    "metadata": {},
                    "status": "Failure",
                    "reason": "InternalError",
                    "message": f"failed to exec in the sandbox: {exc}",
                }
            ).encode(),
        )
        ws.close()
        return

    def relay(fd: int, channel: int) -> None:
        while True:
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

    pumps = []
    if tty:
        pumps.append(threading.Thread(target=relay, args=(master, STDOUT), daemon=True))
    else:
        assert proc.stdout is not None and proc.stderr is not None
        pumps += [
            threading.Thread(target=relay, args=(proc.stdout.fileno(), STDOUT), daemon=True),
            threading.Thread(target=relay, args=(proc.stderr.fileno(), STDERR), daemon=True),
        ]
    for p in pumps:
        p.start()

    def feed() -> None:
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

    reader = threading.Thread(target=feed, daemon=True)
    reader.start()
    code = proc.wait()
    for p in pumps:
        p.join(timeout=5)
    if master >= 0:
        os.close(master)
    with contextlib.suppress(OSError):
        ws.send_channel(ERROR, json.dumps(_status(code if code >= 0 else 128 - code)).encode())
    ws.close()


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
