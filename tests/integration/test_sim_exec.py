"""`kubectl exec` output arrives whole: many execs of a known output, sequential and concurrent.

kubectl 1.32 drops frames that reach it before it has registered its streams, so the server must not
send before the client is ready (see `ranktable.sim.k8s.websocket.CLIENT_SETUP_GRACE`), and it must
relay every byte before the exit Status and the Close frame.
"""

from __future__ import annotations

import hashlib
import os
import shutil
import socket
import struct
import subprocess
import threading
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path

import pytest

from ranktable.sim.k8s.websocket import WebSocket
from tests.integration.fixtures.simpool import SimPoolHandle

REFERENCE = Path(__file__).resolve().parents[1] / "data/reference/lite-volcano-job.yaml"
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"
POD = "yourvcjobname-yourvcjobname-1-0"
SIZE = 200_000


def _kubectl(pool: SimPoolHandle, home: Path, *args: str) -> subprocess.CompletedProcess[bytes]:
    return subprocess.run(
        [KUBECTL, *args], env=pool.kubectl_env(home), capture_output=True, timeout=60, check=False
    )


@pytest.fixture
def running_pod(sim_pool: SimPoolHandle, tmp_path: Path) -> tuple[SimPoolHandle, Path]:
    home = tmp_path / "home"
    home.mkdir()
    assert _kubectl(sim_pool, home, "apply", "-f", str(REFERENCE)).returncode == 0
    waited = _kubectl(
        sim_pool, home, "wait", "--for=jsonpath={.status.phase}=Running", f"pod/{POD}", "--timeout=20s"
    )
    assert waited.returncode == 0, waited.stderr
    return sim_pool, home


def test_exec_output_is_byte_exact_sequentially_and_concurrently(
    running_pod: tuple[SimPoolHandle, Path], pod_shared_dir: Path
) -> None:
    pool, home = running_pod
    blob = pod_shared_dir / "blob"
    blob.write_bytes(os.urandom(SIZE))
    want = hashlib.sha256(blob.read_bytes()).hexdigest()

    def cat() -> tuple[int, int, str, bytes]:
        proc = _kubectl(pool, home, "exec", POD, "--", "cat", str(blob))
        return proc.returncode, len(proc.stdout), hashlib.sha256(proc.stdout).hexdigest(), proc.stderr

    for i in range(24):
        code, size, digest, err = cat()
        assert (code, size, digest) == (0, SIZE, want), f"exec {i}: {err!r}"
    with ThreadPoolExecutor(max_workers=6) as workers:
        results = list(workers.map(lambda _: cat(), range(6)))
    for code, size, digest, err in results:
        assert (code, size, digest) == (0, SIZE, want), err


def test_exec_relays_output_the_command_leaves_in_its_pipe_after_exiting(
    running_pod: tuple[SimPoolHandle, Path],
) -> None:
    """3 MB written in one go by a command that exits at once: all of it, then exit code 0."""
    pool, home = running_pod
    script = "head -c 3000000 /dev/zero | tr '\\0' x"
    proc = _kubectl(pool, home, "exec", POD, "--", "sh", "-c", script)
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == b"x" * 3_000_000


def _masked_frame(payload: bytes) -> bytes:
    mask = b"\x01\x02\x03\x04"
    body = bytes(b ^ mask[i % 4] for i, b in enumerate(payload))
    return struct.pack("!BB", 0x82, 0x80 | len(payload)) + mask + body


def _first_bytes_after(client: socket.socket, started: float) -> float:
    client.settimeout(10)
    assert client.recv(1)
    return time.monotonic() - started


def test_channel_data_waits_for_a_silent_client_until_the_setup_grace() -> None:
    server, client = socket.socketpair()
    with server, client:
        started = time.monotonic()
        ws = WebSocket(server.makefile("rb"), server.makefile("wb"), setup_grace=0.4)
        threading.Thread(target=ws.send_channel, args=(1, b"hello"), daemon=True).start()
        assert _first_bytes_after(client, started) >= 0.4


def test_channel_data_flows_once_the_client_has_spoken() -> None:
    server, client = socket.socketpair()
    with server, client:
        ws = WebSocket(server.makefile("rb"), server.makefile("wb"), setup_grace=30)
        client.sendall(_masked_frame(b"\x00stdin"))
        assert ws.receive() == (0x2, b"\x00stdin")
        started = time.monotonic()
        threading.Thread(target=ws.send_channel, args=(1, b"hello"), daemon=True).start()
        assert _first_bytes_after(client, started) < 5
