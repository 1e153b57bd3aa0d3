"""Remote kernels never lose output: what a cell prints while the connection is down, or while the
Jupyter server is away, reaches the client afterwards — every line, in order, once. Real OpenSSH sshd.

``CELL_SECONDS`` shortens the cell for CI (default 8 s); one test always runs the full 60 s cell.
"""

from __future__ import annotations

import asyncio
import os
import queue
import time
from pathlib import Path

import pytest
from jupyter_client import KernelManager
from jupyter_client.blocking import BlockingKernelClient

from ranktable.remote.kernel_output import parse_records
from ranktable.remote.kernel_provisioner import SSHKernelProvisioner
from ranktable.remote.kernel_records import KernelRecords
from ranktable.remote.kernelspec import install_kernelspec
from tests.integration.fixtures.sshd import REMOTE_PYTHON, SshServer

pytestmark = pytest.mark.fault

CELL_SECONDS = int(os.environ.get("RANKTABLE_CELL_SECONDS", "8"))


def printing_cell(seconds: int) -> str:
    return (
        f"import time\nfor i in range({seconds}):\n    print(f'line {{i}}', flush=True)\n    time.sleep(1)\n"
    )


def collect_lines(kc: BlockingKernelClient, msg_id: str, timeout: float) -> list[str]:
    """Every stream line of ``msg_id`` until its idle status (plus a short grace for late streams)."""
    text, idle_at = "", None
    deadline = time.monotonic() + timeout
    while True:
        now = time.monotonic()  # one reading per turn: two could straddle a limit
        if idle_at is not None and now >= idle_at + 1.0:
            break
        assert idle_at is not None or now < deadline, f"no idle within {timeout}s; got {text!r}"
        try:
            msg = kc.get_iopub_msg(timeout=0.5)
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            text += msg["content"]["text"]
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            idle_at = time.monotonic()
    return text.splitlines()


def wait_for_line(kc: BlockingKernelClient, msg_id: str, wanted: str) -> list[str]:
    seen: list[str] = []
    deadline = time.monotonic() + 60
    while wanted not in seen:
        assert time.monotonic() < deadline, seen
        try:
            msg = kc.get_iopub_msg(timeout=1)
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") == msg_id and msg["msg_type"] == "stream":
            seen += msg["content"]["text"].splitlines()
    return seen


def outage(sshd: SshServer, seconds: float) -> None:
    """The network is down for ``seconds``: every SSH connection is cut as soon as it appears."""
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        sshd.kill_connections()
        time.sleep(0.1)


def _disconnect_during_cell(
    remote_kernel: tuple[KernelManager, BlockingKernelClient],
    sshd: SshServer,
    n: int,
) -> None:
    _km, kc = remote_kernel
    msg_id = kc.execute(printing_cell(n))
    first = wait_for_line(kc, msg_id, "line 1")
    outage(sshd, min(n / 2, 20))
    rest = collect_lines(kc, msg_id, timeout=n + 90)
    assert first + rest == [f"line {i}" for i in range(n)]  # every line, in order, once


def test_disconnect_during_a_cell_loses_no_output(
    remote_kernel: tuple[KernelManager, BlockingKernelClient],
    sshd: SshServer,
) -> None:
    _disconnect_during_cell(remote_kernel, sshd, CELL_SECONDS)


def test_disconnect_during_a_60_second_cell(
    remote_kernel: tuple[KernelManager, BlockingKernelClient],
    sshd: SshServer,
) -> None:
    _disconnect_during_cell(remote_kernel, sshd, 60)


def test_server_restart_mid_cell_replays_what_was_missed(
    remote_kernel: tuple[KernelManager, BlockingKernelClient],
    remote_profile: Path,
) -> None:
    """What a restarted Jupyter server does: the old one detaches (the kernel keeps running and
    printing), a new provisioner takes the kernel over from the saved record and replays the rest."""
    km, kc = remote_kernel
    n = CELL_SECONDS
    msg_id = kc.execute(printing_cell(n))
    first = wait_for_line(kc, msg_id, "line 1")
    old = km.provisioner
    assert isinstance(old, SSHKernelProvisioner)
    old.detach()  # server stopping: local ends closed, remote kernel untouched
    time.sleep(min(n / 2, 4))  # the server is away while the cell prints
    record = KernelRecords().load(str(km.kernel_id))
    assert record is not None and record["provisioner"]["pid"] == old._pgid

    async def take_over() -> SSHKernelProvisioner:
        new = SSHKernelProvisioner(kernel_id=record["kernel_id"], kernel_spec=km.kernel_spec)
        await new.load_provisioner_info(record["provisioner"])
        assert await new.poll() is None  # alive; ports and output relay back on the same local ports
        return new

    km.provisioner = asyncio.run(take_over())
    rest = collect_lines(kc, msg_id, timeout=n + 60)
    assert first + rest == [f"line {i}" for i in range(n)]


def test_output_log_is_bounded_and_rotated(remote_profile: Path) -> None:
    """A cell printing far more than the cap: the instance keeps at most two files of about the cap,
    and the client still gets every line (the follower crosses rotations)."""
    from traitlets.config import Config

    cap = 20_000
    config = Config()
    config.SSHKernelProvisioner.output_log_bytes = cap
    km = KernelManager(kernel_name=install_kernelspec("box", python=REMOTE_PYTHON), config=config)
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        # ~1 KB per message, 100 per second: a rotation every ~0.2 s, which the follower keeps up with
        cell = (
            "import time\nfor i in range(300):\n"
            "    print(f'{i:04d}' + 'x' * 200, flush=True)\n    time.sleep(0.01)\n"
        )
        msg_id = kc.execute(cell)
        lines = collect_lines(kc, msg_id, timeout=60)
        assert [line[:4] for line in lines] == [f"{i:04d}" for i in range(300)]
        files = km.provisioner._files
        log = Path(files.iopub_log)
        rotated = Path(f"{files.iopub_log}.1")
        assert rotated.exists()  # the log rotated at least once (300 records of ~1 KB > 20 KB)
        for path in (log, rotated):
            assert path.stat().st_size <= cap + 4096  # at most one record past the cap
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)
    assert not log.exists() and not rotated.exists()  # shutting down removes the log


def test_parse_records_keeps_a_partial_record() -> None:
    from ranktable.remote.kernel_output import FRAME, RECORD

    body = b"".join(FRAME.pack(len(f)) + f for f in (b"a", b"bc"))
    record = RECORD.pack(7, 2, len(body)) + body
    buffer = bytearray(record + record[:5])
    assert parse_records(buffer) == [(7, [b"a", b"bc"])]
    assert bytes(buffer) == record[:5]
