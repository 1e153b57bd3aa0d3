"""Pod logs keep exactly the lines a process printed: none split, lost or doubled, however the output
falls across the kubelet's read blocks (long lines, bursts at exit, lines written in pieces)."""

from __future__ import annotations

import random
import sys
import threading
from pathlib import Path
from typing import Any

from kubernetes import client

from ranktable.sim.controllers.logs import READ_BLOCK, LogPump, read_log
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.sim_helpers import eventually

TIMEOUT = (5, 60)

# The pod's program and the test share this source: the test knows every line the pod prints.
PRINTER = """
import sys, time

def line(i):
    if i in (700, 1500):
        return "L%d:" % i + "x" * (3 * 2**19 + i)  # 1.5 MiB: longer than a read block
    return "line %d " % i + "abcdefghij" * (i % 37)

def main():
    out = sys.stdout.buffer
    for i in range(2000):  # steady part: some lines written in two pieces, flushed in between
        text = line(i).encode()
        if i % 97 == 0:
            out.write(text[:3]); out.flush(); time.sleep(0.01)
            out.write(text[3:] + b"\\n")
        else:
            out.write(text + b"\\n")
        if i % 250 == 0:
            out.flush(); time.sleep(0.02)
    out.flush()
    burst = b"".join(line(i).encode() + b"\\n" for i in range(2000, 14000))  # ~2.6 MiB at exit
    out.write(burst)
    out.write(b"no newline at the end")
    out.flush()

if __name__ == "__main__":
    main()
"""


def _expected() -> list[str]:
    scope: dict[str, Any] = {}
    exec(PRINTER, scope)  # our own constant, run to know the lines
    return [scope["line"](i) for i in range(14000)] + ["no newline at the end"]


def _assert_same_lines(got: list[Any], expected: list[Any]) -> None:
    """Equal lists, with a short message: the counts and the first line that differs (cut to 80)."""
    if got == expected:
        return
    pairs = enumerate(zip(got, expected, strict=False))
    first = next((i for i, (a, b) in pairs if a != b), min(len(got), len(expected)))
    show = lambda items: repr(items[first][:80]) if first < len(items) else "(none)"  # noqa: E731
    raise AssertionError(
        f"{len(got)} lines instead of {len(expected)}; first difference at line {first}: "
        f"got {show(got)}, expected {show(expected)}"
    )


def _log_lines(path: Path) -> list[bytes]:
    return [line.split(b" ", 1)[1] for line in path.read_bytes().split(b"\n")[:-1]]


def test_final_pump_over_several_blocks_splits_no_line(tmp_path: Path) -> None:
    """The bench's 62 extra lines: a burst of > 1 MiB still unread when the process ends."""
    lines = [b"rank %d step %d loss 0.%d" % (i % 64, i, i * 7919 % 10**6) for i in range(150_000)]
    raw, log = tmp_path / "0.raw", tmp_path / "0.log"
    raw.write_bytes(b"".join(line + b"\n" for line in lines))
    assert raw.stat().st_size > 3 * READ_BLOCK
    assert LogPump(raw, log, tmp_path / "0.offset").pump(final=True)
    _assert_same_lines(_log_lines(log), lines)


def test_pump_keeps_long_and_piecewise_lines_whole(tmp_path: Path) -> None:
    rng = random.Random(7)
    lines = [b"short %d" % i + b"y" * rng.randrange(0, 300) for i in range(12_000)]
    lines[3000] = b"long" + b"z" * (READ_BLOCK + 12345)  # longer than one read block
    lines[9000] = b"huge" + b"w" * (2 * READ_BLOCK + 7)
    payload = b"".join(line + b"\n" for line in lines) + b"tail without newline"

    # everything already written when the process ends: one final pump
    raw, log = tmp_path / "0.raw", tmp_path / "0.log"
    raw.write_bytes(payload)
    assert LogPump(raw, log, tmp_path / "0.offset").pump(final=True)
    _assert_same_lines(_log_lines(log), [*lines, b"tail without newline"])

    # written in pieces that cut lines anywhere, pumped while running, then a final pump
    raw, log, offset = tmp_path / "1.raw", tmp_path / "1.log", tmp_path / "1.offset"
    pump = LogPump(raw, log, offset)
    pos = 0
    with open(raw, "ab") as fh:
        while pos < len(payload):
            step = rng.choice([1, 17, 4096, READ_BLOCK - 1, READ_BLOCK + 3, 300_000])
            fh.write(payload[pos : pos + step])
            fh.flush()
            pos += step
            pump.pump()
            if rng.random() < 0.2:  # a pool restart: a new pump resumes from the saved offset
                pump = LogPump(raw, log, offset)
    pump.pump(final=True)
    _assert_same_lines(_log_lines(log), [*lines, b"tail without newline"])


def test_log_reader_returns_long_lines_whole(tmp_path: Path) -> None:
    raw, log = tmp_path / "0.raw", tmp_path / "0.log"
    lines = [b"a" * (READ_BLOCK - 40), b"b" * (READ_BLOCK * 2 + 5), b"c", b"d" * 70_000]
    raw.write_bytes(b"".join(line + b"\n" for line in lines))
    LogPump(raw, log, tmp_path / "0.offset").pump(final=True)
    text = b"".join(read_log(log, follow=False, finished=lambda: True, wait=lambda _t: None))
    _assert_same_lines(text.split(b"\n")[:-1], lines)


def test_pod_log_has_every_printed_line_once_and_whole(sim_pool: SimPoolHandle, pod_shared_dir: Path) -> None:
    script = pod_shared_dir / "printer.py"
    script.write_text(PRINTER)
    core = client.CoreV1Api(sim_pool.api_client())
    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "printer"},
        "spec": {
            "restartPolicy": "Never",
            "containers": [{"name": "main", "image": "ignored", "command": [sys.executable, str(script)]}],
        },
    }
    core.create_namespaced_pod("default", pod)
    eventually(
        lambda: core.read_namespaced_pod("printer", "default").status.phase != "Pending", what="started"
    )
    followed: list[bytes] = []

    def follow() -> None:
        resp = core.read_namespaced_pod_log(
            "printer", "default", follow=True, _preload_content=False, _request_timeout=TIMEOUT
        )
        followed.extend(resp.stream(amt=None))

    reader = threading.Thread(target=follow, daemon=True)
    reader.start()
    eventually(
        lambda: core.read_namespaced_pod("printer", "default").status.phase == "Succeeded",
        timeout=60,
        what="Succeeded",
    )
    reader.join(timeout=60)
    assert not reader.is_alive()
    expected = _expected()
    _assert_same_lines(b"".join(followed).decode().split("\n"), [*expected, ""])
    plain = core.read_namespaced_pod_log(
        "printer", "default", _preload_content=False, _request_timeout=TIMEOUT
    )
    _assert_same_lines(plain.data.decode().split("\n"), [*expected, ""])
