"""Container logs as the kubelet keeps them: one file per container run, each line prefixed by its
RFC 3339 timestamp, bounded in size; plus the reader behind `GET .../pods/NAME/log`.

A process writes raw output to its own file (so it survives a pool restart); a pump turns complete
lines into timestamped log lines and remembers how far it got, so nothing is lost or written twice.
"""

from __future__ import annotations

import os
import time
from collections.abc import Callable, Iterator
from dataclasses import asdict, dataclass
from datetime import datetime, timezone
from pathlib import Path
from typing import Any, BinaryIO

DEFAULT_LIMIT_BYTES = 64 * 2**20
READ_BLOCK = 1 << 20
BACK_BLOCK = 1 << 16
MAX_LINE_BYTES = 16 * 2**20  # a line still without newline at this size is logged as it is


_SECOND_CACHE: dict[int, str] = {}


def format_ts(ns: int) -> str:
    """RFC 3339 with nanoseconds, as the kubelet stamps log lines (the seconds part is cached)."""
    secs, frac = divmod(ns, 1_000_000_000)
    head = _SECOND_CACHE.get(secs)
    if head is None:
        if len(_SECOND_CACHE) > 64:
            _SECOND_CACHE.clear()
        head = _SECOND_CACHE[secs] = datetime.fromtimestamp(secs, timezone.utc).strftime("%Y-%m-%dT%H:%M:%S")
    return f"{head}.{frac:09d}Z"


def parse_ts(text: str) -> int:
    """RFC 3339 (with or without fraction, `Z` or offset) -> nanoseconds since the epoch."""
    text = text.strip()
    frac_ns = 0
    if "." in text:
        head, rest = text.split(".", 1)
        digits = ""
        for ch in rest:
            if not ch.isdigit():
                break
            digits += ch
        tz = rest[len(digits) :]
        frac_ns = int((digits + "000000000")[:9]) if digits else 0
        text = head + tz
    text = text.replace("Z", "+00:00")
    dt = datetime.fromisoformat(text)
    if dt.tzinfo is None:
        dt = dt.replace(tzinfo=timezone.utc)
    return int(dt.timestamp()) * 1_000_000_000 + frac_ns


class LogPump:
    """Moves one container run's raw output into its timestamped log file.

    Only whole lines are moved while the process runs (a line still being written waits for its
    newline, however many read blocks it spans), so a line is never split or written twice; the
    final pump after the process ended also moves an unterminated last line. Memory stays bounded
    by `READ_BLOCK`: long lines are copied through in blocks.
    """

    def __init__(self, raw: Path, log: Path, offset_file: Path, limit: int = DEFAULT_LIMIT_BYTES) -> None:
        self.raw, self.log, self.offset_file, self.limit = raw, log, offset_file, limit
        self.offset = int(offset_file.read_text() or 0) if offset_file.is_file() else 0
        self.written = log.stat().st_size if log.is_file() else 0
        self.last_ns = 0
        self.truncated = False
        self._no_newline_until = 0  # raw bytes from `offset` up to here are known to hold no newline

    def pump(self, final: bool = False) -> bool:
        """Consume complete lines (all bytes when `final`); True if anything was written."""
        try:
            size = self.raw.stat().st_size  # consume up to here only: the writer may be mid-line beyond
        except FileNotFoundError:
            return False
        if size <= self.offset:
            return False
        start = self.offset
        with open(self.raw, "rb") as fh, open(self.log, "ab") as out:
            while self.offset < size:
                fh.seek(self.offset)
                data = fh.read(min(READ_BLOCK, size - self.offset))
                if not data:
                    break
                end = data.rfind(b"\n") + 1
                if end:
                    self._write_lines(out, data[:end])
                    self.offset += end
                    continue  # a partial line after the last newline is read again from its start
                newline = self._find_newline(fh, self.offset + len(data), size)
                if newline >= 0:
                    self._copy_line(out, fh, self.offset, newline)
                    self.offset = newline + 1
                elif final or size - self.offset >= MAX_LINE_BYTES:
                    self._copy_line(out, fh, self.offset, size)  # the last line, or one without end
                    self.offset = size
                else:
                    break  # the line is still being written: wait for its newline
        if self.offset == start:
            return False
        self._no_newline_until = 0
        tmp = self.offset_file.with_suffix(".tmp")
        tmp.write_text(str(self.offset))
        tmp.replace(self.offset_file)
        return True

    def _find_newline(self, fh: BinaryIO, pos: int, size: int) -> int:
        """Absolute position of the first newline in raw[pos:size], or -1 (remembered for next time)."""
        pos = max(pos, self._no_newline_until)
        while pos < size:
            fh.seek(pos)
            block = fh.read(min(READ_BLOCK, size - pos))
            if not block:
                break
            idx = block.find(b"\n")
            if idx >= 0:
                return pos + idx
            pos += len(block)
        self._no_newline_until = pos
        return -1

    def _stamp(self) -> int:
        now = max(time.time_ns(), self.last_ns + 1)
        self.last_ns = now
        return now

    def _room(self, out: BinaryIO, size: int) -> bool:
        """Whether `size` more bytes fit under the limit; the first time they don't, say so in the log."""
        if self.written + size <= self.limit:
            return True
        if not self.truncated:
            self.truncated = True
            out.write(
                f"{format_ts(time.time_ns())} [ranktable sim] log limit of {self.limit} bytes reached; "
                "further output of this container is dropped\n".encode()
            )
        return False

    def _write_lines(self, out: BinaryIO, chunk: bytes) -> None:
        """Stamp each line of `chunk` (which ends with a newline)."""
        lines = chunk.split(b"\n")
        lines.pop()
        buf = bytearray()
        now = self._stamp()
        for line in lines:  # one clock reading per batch; +1 ns per line keeps stamps unique and ordered
            buf += format_ts(now).encode() + b" " + line + b"\n"
            now += 1
        self.last_ns = now
        if self._room(out, len(buf)):
            out.write(buf)
            self.written += len(buf)

    def _copy_line(self, out: BinaryIO, fh: BinaryIO, start: int, stop: int) -> None:
        """Stamp raw[start:stop] as one line, copied through in blocks."""
        head = format_ts(self._stamp()).encode() + b" "
        if not self._room(out, len(head) + stop - start + 1):
            return
        out.write(head)
        fh.seek(start)
        left = stop - start
        while left > 0:
            block = fh.read(min(READ_BLOCK, left))
            if not block:
                break
            out.write(block)
            left -= len(block)
        out.write(b"\n")
        self.written += len(head) + stop - start + 1


def _tail_offset(path: Path, lines: int) -> int:
    """Where the last `lines` lines of a log file start, found by reading backwards in blocks."""
    size = path.stat().st_size
    need = max(lines, 0) + 1  # newlines to pass: one ends the last line, one precedes the tail
    with open(path, "rb") as fh:
        pos = size
        while pos > 0:
            step = min(BACK_BLOCK, pos)
            pos -= step
            fh.seek(pos)
            block = fh.read(step)
            idx = len(block)
            while (idx := block.rfind(b"\n", 0, idx)) >= 0:
                need -= 1
                if need == 0:
                    return pos + idx + 1
    return 0


def read_log(
    path: Path,
    *,
    follow: bool,
    finished: Callable[[], bool],
    wait: Callable[[float], None],
    timestamps: bool = False,
    since_ns: int | None = None,
    tail: int | None = None,
    limit_bytes: int | None = None,
    stopping: Callable[[], bool] = lambda: False,
) -> Iterator[bytes]:
    """Yield log bytes as the API does (tailLines, sinceTime, timestamps, limitBytes, follow).

    Reads in blocks, so memory stays bounded however long the log is.
    """
    since_key = format_ts(since_ns).encode() if since_ns is not None else None  # stamps sort as text
    offset = _tail_offset(path, tail) if tail is not None and path.is_file() else 0
    sent = 0
    pending = b""
    while True:
        done = finished()  # read before the file so the last lines written before finishing are seen
        data = b""
        if path.is_file():
            with open(path, "rb") as fh:
                fh.seek(offset)
                data = fh.read(READ_BLOCK)
        offset += len(data)
        chunk = pending + data
        end = chunk.rfind(b"\n") + 1
        pending = chunk[end:]
        out = bytearray()
        for line in chunk[:end].split(b"\n")[:-1] if end else ():
            stamp, _, rest = line.partition(b" ")
            if since_key is not None and stamp < since_key:
                continue
            out += (line if timestamps else rest) + b"\n"
        if out:
            if limit_bytes is not None and sent + len(out) >= limit_bytes:
                yield bytes(out[: limit_bytes - sent])
                return
            sent += len(out)
            yield bytes(out)
        if len(data) == READ_BLOCK:
            continue  # more is already there
        if not follow or (done and not data) or stopping():
            return
        if not data:
            wait(0.5)


def ensure_dir(path: Path) -> Path:
    path.mkdir(parents=True, exist_ok=True)
    os.chmod(path, 0o700)
    return path


# -- the synthetic log source ----------------------------------------------------------------------------
SYNTHETIC_COMMAND = "ranktable-sim-synthetic-log"
SYNTHETIC_WAIT = 0.1  # a follower's sleep between batches (also how soon it sees the run end)
SYNTHETIC_BATCH = 4096  # lines per yielded chunk


@dataclass
class SyntheticLog:
    """A container log the simulated kubelet makes up itself: no process, no file.

    Line i is stamped ``start_ns + i * period`` and reads ``step i loss 1/(i+1) throughput ...`` (every
    `error_every`-th line adds an HCCL error), so a log is a pure function of its start, rate and the
    clock: tailLines, sinceTime and follow are computed, not scanned. Opt-in through the container's
    command: ``["ranktable-sim-synthetic-log", "--rate=100", "--lines=N", "--error-every=500"]``
    (`--lines`: the container exits 0 after that many lines; without it the log runs until the pod is
    deleted). Used by `bench/bench_logview.py` to feed 1,024 pods x 100 lines/s through the whole server
    path, which one process per pod cannot on a small machine.
    """

    start_ns: int
    rate: float = 100.0
    lines: int | None = None
    error_every: int = 500
    end_ns: int | None = None  # stopped (signalled) at this time: no line after it
    exit_code: int | None = None

    @classmethod
    def from_argv(cls, argv: list[str], start_ns: int) -> SyntheticLog | None:
        """The generator the command asks for, None when it is an ordinary command; ValueError on bad args."""
        if not argv or argv[0] != SYNTHETIC_COMMAND:
            return None
        opts = {"rate": "100", "lines": "", "error-every": "500"}
        for arg in argv[1:]:
            key, sep, value = arg.removeprefix("--").partition("=")
            if not arg.startswith("--") or not sep or key not in opts:
                usage = "use --rate=R, --lines=N, --error-every=K"
                raise ValueError(f"{SYNTHETIC_COMMAND}: unknown argument {arg!r} ({usage})")
            opts[key] = value
        try:
            rate = float(opts["rate"])
            lines = int(opts["lines"]) if opts["lines"] else None
            error_every = int(opts["error-every"])
        except ValueError as exc:
            raise ValueError(
                f"{SYNTHETIC_COMMAND}: {exc} (use --rate=R, --lines=N, --error-every=K)"
            ) from exc
        if not 0 < rate <= 1e6:
            raise ValueError(f"{SYNTHETIC_COMMAND}: --rate must be in (0, 1000000] lines/s, not {rate:g}")
        if lines is not None and lines < 0:
            raise ValueError(f"{SYNTHETIC_COMMAND}: --lines must be >= 0")
        return cls(start_ns, rate, lines, max(0, error_every))

    def to_json(self) -> dict[str, Any]:
        return asdict(self)

    @classmethod
    def from_json(cls, data: dict[str, Any]) -> SyntheticLog:
        return cls(**data)

    @property
    def period_ns(self) -> int:
        return max(1, round(1e9 / self.rate))

    def stamp(self, i: int) -> int:
        return self.start_ns + i * self.period_ns

    def count(self, now_ns: int) -> int:
        """How many lines exist at `now_ns` (stamped at or before it, not after a stop, at most `lines`)."""
        upto = now_ns if self.end_ns is None else min(now_ns, self.end_ns)
        n = 0 if upto < self.start_ns else (upto - self.start_ns) // self.period_ns + 1
        return n if self.lines is None else min(n, self.lines)

    def done_at(self) -> int | None:
        """When the last line is due (`lines` given), else None."""
        return None if self.lines is None else self.stamp(max(self.lines - 1, 0))

    def index_since(self, since_ns: int) -> int:
        """The first line stamped at or after `since_ns`."""
        return max(0, -((self.start_ns - since_ns) // self.period_ns))

    def text(self, i: int) -> str:
        line = f"step {i} loss {1.0 / (i + 1):.6f} throughput 1234.5 samples/s"
        if self.error_every and i % self.error_every == self.error_every - 1:
            line += "  RuntimeError: HCCL timeout"
        return line

    def render(self, first: int, stop: int, timestamps: bool) -> bytes:
        """Lines first..stop-1 as the log endpoint sends them: `format_ts(stamp(i))` and `text(i)`, inlined,
        the `step i loss ...` part shared by every pod's log (`_STEP_TEXTS`): the pool renders 100,000
        lines a second for bench_logview, and formatting the loss was most of a line's ~3.4 µs."""
        period, start, every = self.period_ns, self.start_ns, self.error_every
        plain = " throughput 1234.5 samples/s\n"
        error = " throughput 1234.5 samples/s  RuntimeError: HCCL timeout\n"
        next_error = first + (every - 1 - first) % every if every else -1
        steps = _STEP_TEXTS
        if len(steps) > STEP_TEXTS_KEPT:
            steps.clear()
        out: list[str] = []
        append = out.append
        secs = -1
        head = ""
        for i in range(first, stop):
            step = steps.get(i)
            if step is None:
                step = steps[i] = f"step {i} loss {1.0 / (i + 1):.6f}"
            if i == next_error:
                next_error += every
                line = step + error
            else:
                line = step + plain
            if timestamps:
                now_secs, frac = divmod(start + i * period, 1_000_000_000)
                if now_secs != secs:
                    secs = now_secs
                    head = format_ts(secs * 1_000_000_000)[:19]
                line = f"{head}.{frac:09d}Z {line}"
            append(line)
        return "".join(out).encode()


STEP_TEXTS_KEPT = 1 << 17  # `step i loss ...` texts kept for the next pod's log (every pod counts alike)
_STEP_TEXTS: dict[int, str] = {}


class SyntheticReader:
    """`read_log` for a `SyntheticLog`: the same tailLines / sinceTime / timestamps / limitBytes / follow
    (tail first, then the since filter, as the kubelet applies them).

    Iterated, it is a follower that sleeps `SYNTHETIC_WAIT` between batches. `poll()` gives one step
    without sleeping, so one writer thread can serve every follower (the API server's `PolledWriter`):
    1,024 followers each in its own thread cost more CPU than the Jupyter server reading them.
    """

    def __init__(
        self,
        log: SyntheticLog,
        *,
        follow: bool,
        finished: Callable[[], bool],
        wait: Callable[[float], object],
        timestamps: bool = False,
        since_ns: int | None = None,
        tail: int | None = None,
        limit_bytes: int | None = None,
        stopping: Callable[[], bool] = lambda: False,
        clock: Callable[[], int] = time.time_ns,
    ) -> None:
        self.log, self.follow, self.finished, self.wait = log, follow, finished, wait
        self.timestamps, self.since_ns, self.tail = timestamps, since_ns, tail
        self.limit_bytes, self.stopping, self.clock = limit_bytes, stopping, clock
        self.first: int | None = None  # the next line to send, placed at the first poll
        self.sent = 0
        self.ended = False

    def poll(self) -> bytes | None:
        """The next batch due now (at most `SYNTHETIC_BATCH` lines), b"" when none is yet, None once the
        log ended (not following, the run drained, the pool stopping, or limitBytes reached)."""
        if self.ended:
            return None
        log = self.log
        if self.first is None:
            first = 0
            if self.tail is not None:
                first = max(0, log.count(self.clock()) - max(self.tail, 0))
            if self.since_ns is not None:
                first = max(first, log.index_since(self.since_ns))
            self.first = first
        done = self.finished()  # before counting: the lines up to the end are all counted after it
        have = log.count(self.clock())
        if self.first < have:
            stop = min(have, self.first + SYNTHETIC_BATCH)
            out = log.render(self.first, stop, self.timestamps)
            self.first = stop
            limit = self.limit_bytes
            if limit is not None and self.sent + len(out) >= limit:
                self.ended = True
                return out[: limit - self.sent]
            self.sent += len(out)
            return out
        if not self.follow or done or self.stopping():
            self.ended = True
            return None
        return b""

    def behind(self) -> int:
        """Lines due now that no poll has given yet (0 before the first poll or once ended)."""
        if self.first is None or self.ended:
            return 0
        return max(0, self.log.count(self.clock()) - self.first)

    def __iter__(self) -> Iterator[bytes]:
        while (out := self.poll()) is not None:
            if out:
                yield out
            else:
                self.wait(SYNTHETIC_WAIT)  # batches of 0.1 s of lines: followers do not wake per line
