"""Run a command or a Python file in the profile's remote root, streaming stdout and stderr.

Both streams are read by their own threads, so a command printing megabytes on either never blocks on
a full window. SSH has no working "signal" request, so the command runs in its own session and process
group (``setsid -w``) whose id it reports first; cancel kills that group (TERM, then KILL) through a
second exec channel, which takes down every child too.
"""

from __future__ import annotations

import codecs
import shlex
import threading
from collections.abc import Callable, Sequence
from typing import TYPE_CHECKING, TypedDict

import paramiko

from ranktable.errors import InputError
from ranktable.remote.connection import ChannelLease, Connection
from ranktable.remote.errors import ConnectionLost

if TYPE_CHECKING:
    from typing_extensions import Unpack

PGID_MARK = b"__ranktable_pgid__="
OutputCallback = Callable[[str], None]


def build_command(
    root: str, command: str | None, python_file: str | None, args: Sequence[str], python: str = "python3"
) -> str:
    if (command is None) == (python_file is None):
        raise InputError(
            "give either a command or a Python file", where="run", fix="pass exactly one of them"
        )
    if python_file is not None:
        inner = " ".join(shlex.quote(a) for a in [python, "-u", python_file, *args])
    else:
        assert command is not None
        inner = command if not args else f"{command} {' '.join(shlex.quote(a) for a in args)}"
    wrapper = f'printf \'{PGID_MARK.decode()}%s\\n\' "$$"; exec sh -c "$1"'
    return (
        f"cd -- {shlex.quote(root)} || exit 126; "
        f"exec setsid -w sh -c {shlex.quote(wrapper)} ranktable-run {shlex.quote(inner)}"
    )


class RemoteProcess:
    """A remote command in its own process group: stream output, wait, cancel."""

    def __init__(
        self,
        conn: Connection,
        command: str | None = None,
        *,
        python_file: str | None = None,
        args: Sequence[str] = (),
        on_stdout: OutputCallback | None = None,
        on_stderr: OutputCallback | None = None,
        python: str = "python3",
    ) -> None:
        self.conn = conn
        self.command = build_command(conn.remote_root(), command, python_file, args, python)
        self.on_stdout = on_stdout or (lambda _text: None)
        self.on_stderr = on_stderr or (lambda _text: None)
        self.pgid: int | None = None
        self.cancelled = False
        self._pgid_ready = threading.Event()
        self._lease: ChannelLease | None = None
        self._threads: list[threading.Thread] = []

    def start(self) -> RemoteProcess:
        self._lease = self.conn.open_session()
        channel = self._lease.channel
        channel.exec_command(self.command)
        self._threads = [
            threading.Thread(target=self._pump_stdout, args=(channel,), daemon=True),
            threading.Thread(target=self._pump_stderr, args=(channel,), daemon=True),
        ]
        for thread in self._threads:
            thread.start()
        return self

    def _pump_stdout(self, channel: paramiko.Channel) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        head = b""
        while True:
            data = channel.recv(65536)
            if not data:
                break
            if not self._pgid_ready.is_set():  # the first line is our process-group id
                head += data
                if b"\n" not in head and len(head) < 4096:
                    continue
                line, sep, rest = head.partition(b"\n")
                if sep and line.startswith(PGID_MARK):
                    self.pgid = int(line[len(PGID_MARK) :])
                    data = rest
                else:
                    data = head
                head = b""
                self._pgid_ready.set()
            if data:
                self.on_stdout(decoder.decode(data))
        self._pgid_ready.set()
        tail = decoder.decode(head, final=True)
        if tail:
            self.on_stdout(tail)

    def _pump_stderr(self, channel: paramiko.Channel) -> None:
        decoder = codecs.getincrementaldecoder("utf-8")("replace")
        while True:
            data = channel.recv_stderr(65536)
            if not data:
                break
            self.on_stderr(decoder.decode(data))
        tail = decoder.decode(b"", final=True)
        if tail:
            self.on_stderr(tail)

    def wait(self, timeout: float | None = None) -> int:
        """The remote exit status (128+N if killed by signal N, as a shell reports it)."""
        assert self._lease is not None, "start() first"
        channel = self._lease.channel
        if not channel.status_event.wait(timeout):  # set on exit-status and when the channel closes
            raise TimeoutError(f"remote command still running after {timeout}s")
        for thread in self._threads:
            thread.join()
        status = channel.recv_exit_status() if channel.exit_status_ready() else -1
        self._lease.close()
        if status == -1 and not self.cancelled:
            raise ConnectionLost(
                f"the connection to profile {self.conn.name} dropped while the command ran",
                where=f"profile {self.conn.name}",
                fix="the remote command may still be running; check with `ranktable exec NAME -- ps -ef`",
            )
        return status

    def cancel(self, grace: float = 3.0) -> None:
        """Kill the remote process group: SIGTERM, then SIGKILL after ``grace`` seconds if still alive."""
        self.cancelled = True
        self._pgid_ready.wait(10)
        if self.pgid is None:
            if self._lease is not None:
                self._lease.close()
            return
        group = f"-{self.pgid}"
        script = (
            f"kill -TERM -- {group} 2>/dev/null || exit 0; i=0; "
            f"while kill -0 -- {group} 2>/dev/null && [ $i -lt {int(grace * 10)} ]; "
            "do sleep 0.1; i=$((i+1)); done; "
            f"kill -KILL -- {group} 2>/dev/null; exit 0"
        )
        self.conn.run(script, timeout=grace + 15)


class ProcessOptions(TypedDict, total=False):
    """`RemoteProcess`'s keyword arguments, which `run_remote` passes on."""

    python_file: str | None
    args: Sequence[str]
    on_stdout: OutputCallback | None
    on_stderr: OutputCallback | None
    python: str


def run_remote(
    conn: Connection,
    command: str | None = None,
    *,
    cancel: threading.Event | None = None,
    **options: Unpack[ProcessOptions],
) -> int:
    """Run to completion (or until ``cancel`` is set) and return the remote exit status."""
    process = RemoteProcess(conn, command, **options).start()
    if cancel is None:
        return process.wait()
    finished = threading.Event()
    failures: list[BaseException] = []

    def watch() -> None:
        while not cancel.wait(0.1):  # a 10 Hz check of two events: cheap, and stops with the command
            if finished.is_set():
                return
        try:
            process.cancel()
        except Exception as exc:  # reported after wait() below, never lost in a thread
            failures.append(exc)

    watcher = threading.Thread(target=watch, name="ranktable-run-cancel", daemon=True)
    watcher.start()
    try:
        status = process.wait()
    finally:
        finished.set()
        watcher.join()
    if failures:
        raise failures[0]
    return status
