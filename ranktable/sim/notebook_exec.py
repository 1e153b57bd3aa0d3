"""`exec` requests of the simulated Notebook instance: a local shell in the sandbox root, streamed.

Mirrors what OpenSSH does without a pty: ``/bin/sh -c CMD`` with stdin/stdout/stderr on the channel, the
exit status sent at the end, and — because the SSH protocol has no usable signal request — the process group
killed when the client closes the channel early. Processes that detach into their own session (``setsid``)
survive, as they do on a real instance.
"""

from __future__ import annotations

import contextlib
import logging
import os
import signal
import subprocess
import threading
from collections.abc import Callable
from pathlib import Path
from typing import IO

import paramiko

log = logging.getLogger(__name__)

CHUNK = 32768


def sandbox_env(root: Path, user: str) -> dict[str, str]:
    """The environment a command sees: HOME is the sandbox root, nothing inherited but PATH and locale."""
    env = {
        "HOME": str(root),
        "USER": user,
        "LOGNAME": user,
        "SHELL": "/bin/sh",
        "PATH": os.environ.get("PATH", "/usr/local/bin:/usr/bin:/bin"),
        "LANG": os.environ.get("LANG", "C.UTF-8"),
    }
    return env


class ExecSession(threading.Thread):
    """Runs one command for one channel; daemon thread so a dying server never hangs on it."""

    def __init__(self, channel: paramiko.Channel, command: str, root: Path, user: str) -> None:
        super().__init__(name="sim-notebook-exec", daemon=True)
        self.channel = channel
        self.command = command
        self.root = root
        self.user = user

    def run(self) -> None:
        chan = self.channel
        try:
            proc = subprocess.Popen(
                ["/bin/sh", "-c", self.command],
                cwd=self.root,
                env=sandbox_env(self.root, self.user),
                stdin=subprocess.PIPE,
                stdout=subprocess.PIPE,
                stderr=subprocess.PIPE,
                start_new_session=True,
            )
        except OSError as exc:
            with contextlib.suppress(Exception):
                chan.sendall_stderr(f"sim-notebook: cannot start shell: {exc}\n".encode())
                chan.send_exit_status(127)
                chan.close()
            return
        assert proc.stdout is not None and proc.stderr is not None and proc.stdin is not None
        readers = [
            threading.Thread(target=self._copy_out, args=(proc.stdout, chan.sendall), daemon=True),
            threading.Thread(target=self._copy_out, args=(proc.stderr, chan.sendall_stderr), daemon=True),
        ]
        for reader in readers:
            reader.start()
        threading.Thread(target=self._copy_in, args=(proc.stdin,), daemon=True).start()
        while True:
            try:
                code = proc.wait(timeout=0.2)
                break
            except subprocess.TimeoutExpired:
                if chan.closed or not chan.get_transport().is_active():
                    self._kill_group(proc)
        for reader in readers:
            reader.join(10)
        with contextlib.suppress(Exception):
            chan.send_exit_status(code if code >= 0 else 128 - code)
            chan.shutdown_write()
            chan.close()

    @staticmethod
    def _kill_group(proc: subprocess.Popen[bytes]) -> None:
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(proc.pid, signal.SIGKILL)

    def _copy_out(self, stream: IO[bytes], send: Callable[[bytes], object]) -> None:
        try:
            while True:
                data = os.read(stream.fileno(), CHUNK)
                if not data:
                    return
                send(data)
        except Exception as exc:  # channel closed under us: the process gets EPIPE/killed
            log.debug("exec output ended: %s", exc)
        finally:
            stream.close()

    def _copy_in(self, stdin: IO[bytes]) -> None:
        try:
            while True:
                data = self.channel.recv(CHUNK)
                if not data:
                    return
                stdin.write(data)
                stdin.flush()
        except Exception as exc:
            log.debug("exec input ended: %s", exc)
        finally:
            with contextlib.suppress(OSError):
                stdin.close()
