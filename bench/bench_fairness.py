"""Fairness between readers of one job's logs (#26.1): 10 viewers of a 1,024-pod job plus 1 stalled reader.

A simulated pool of BENCH_PODS nodes (1,024) runs in its own process (`ranktable sim serve`), a Jupyter
server with the extension in another; a job with a pod per node runs the pool's synthetic log source at
BENCH_RATE lines/s per pod (10: 10,240 lines/s, so the server sends 102,400 lines/s to 10 viewers). Ten
websockets (this process) follow the job's logs. After a warm-up, three windows of BENCH_SECONDS (30) each:
* before (the peer): the 10 viewers alone;
* stalled: an 11th websocket subscribes to the same logs and never reads (a hung tab, a tiny receive
  buffer), opened before the window and held through it, closed at its end;
* after (the peer again): the 10 viewers alone, so a drift over the run (a backlog growing on a loaded
  machine) shows in both peers, not as the stalled reader's doing.
For each viewer and window: the share of the lines stamped in the window that reached it *live* (within
BENCH_LIVE_S, 2 s, of their stamp) and in all (by the end), counted from each pod's stamps (the synthetic log
is periodic, so the lines a pod wrote in a window are known exactly). Also the server's peak RSS in each
window (the stalled reader's cost must stay bounded). Prints the figures and the ratios stalled / peers, with
the load (`uptime`) before and after.

    .venv/bin/python bench/bench_fairness.py     # BENCH_PODS, BENCH_RATE, BENCH_SECONDS, BENCH_PORT
"""

from __future__ import annotations

import asyncio
import calendar
import json
import os
import shutil
import socket
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from tornado.httpclient import HTTPRequest  # noqa: E402
from tornado.websocket import websocket_connect  # noqa: E402

from ranktable.cluster.client import ClusterClient  # noqa: E402
from ranktable.compose.manifests import compose  # noqa: E402
from ranktable.compose.spec import JobSpec  # noqa: E402
from ranktable.server_ext.demo import stop_process  # noqa: E402
from ranktable.sim.control import find_running  # noqa: E402
from tests.integration.server_helpers import (  # noqa: E402
    free_port,
    jupyter_server_process,
    stalled_reader,
    wait_answering,
)
from tests.integration.sim_helpers import eventually  # noqa: E402

PODS = int(os.environ.get("BENCH_PODS", "1024"))
RATE = float(os.environ.get("BENCH_RATE", "10"))
SECONDS = float(os.environ.get("BENCH_SECONDS", "30"))
VIEWERS = int(os.environ.get("BENCH_VIEWERS", "10"))
LIVE_S = float(os.environ.get("BENCH_LIVE_S", "2"))
WARM_S = float(os.environ.get("BENCH_WARM_S", "15"))
SETTLE_S = float(os.environ.get("BENCH_SETTLE_S", "20"))  # after the last window: late lines count in all
GAP_S = 5.0  # between the stalled reader's subscribe and its window: its queue and buffers fill
TOKEN = "bench-fairness-token"
JOB = "fairness"
PERIOD_NS = max(1, round(1e9 / RATE))  # the synthetic log's period (`SyntheticLog.period_ns`)


def load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


_HEADS: dict[str, int] = {}


def stamp_ns(stamp: str) -> int:
    """`2026-12-05T05:20:00.123456789Z` as nanoseconds since the epoch."""
    head = stamp[:19]
    secs = _HEADS.get(head)
    if secs is None:
        secs = _HEADS[head] = calendar.timegm(time.strptime(head, "%Y-%m-%dT%H:%M:%S"))
    return secs * 1_000_000_000 + int(stamp[20:29].ljust(9, "0"))


@dataclass
class Window:
    name: str
    start_ns: int
    end_ns: int
    live: int = 0
    got: int = 0
    latency: list[int] = field(default_factory=lambda: [0] * 601)  # lines per 0.1 s of delay (last: more)

    def percentile(self, q: float) -> float:
        """The delay (s) within which a share `q` of the lines stamped in the window arrived."""
        need, seen = q * self.got, 0
        for tenth, count in enumerate(self.latency):
            seen += count
            if seen >= need and count:
                return (tenth + 1) / 10
        return float("nan")


@dataclass
class Viewer:
    """One websocket following the job's logs; counts per window what came live and what came at all."""

    windows: list[Window]
    last: dict[str, int] = field(default_factory=dict)  # pod -> newest stamp received (duplicates: skipped)
    first: dict[str, int] = field(default_factory=dict)  # pod -> a stamp of it (its phase in the period)
    lines: int = 0

    def take(self, group: dict[str, Any], arrival_ns: int) -> None:
        pod, n = group["pod"], group["n"]
        ts = group["ts"]
        first = stamp_ns(ts[: ts.find("\n")] if n > 1 else ts)
        last = stamp_ns(ts[ts.rfind("\n") + 1 :]) if n > 1 else first
        self.first.setdefault(pod, first)
        self.lines += n
        if (last - first) // PERIOD_NS + 1 == n:  # consecutive lines: count by arithmetic
            stamps: Any = range(first, last + 1, PERIOD_NS)
        else:
            stamps = [stamp_ns(s) for s in ts.split("\n")]
        seen = self.last.get(pod, -1)
        for w in self.windows:
            if last < w.start_ns or first >= w.end_ns:
                continue
            for s in stamps:
                if s <= seen or not w.start_ns <= s < w.end_ns:
                    continue
                w.got += 1
                delay = arrival_ns - s
                w.latency[min(max(delay, 0) // 100_000_000, 600)] += 1
                if delay <= LIVE_S * 1e9:
                    w.live += 1
        self.last[pod] = max(seen, last)


def expected(window: Window, phases: dict[str, int]) -> int:
    """Lines the pods stamped in the window: each pod's stamps are `phase + k * PERIOD_NS`."""
    total = 0
    for phase in phases.values():
        lo = -(-(window.start_ns - phase) // PERIOD_NS)
        hi = -(-(window.end_ns - phase) // PERIOD_NS)
        total += hi - lo
    return total


def queued(local_port: int, remote_port: int) -> tuple[int, int]:
    """(send queue, receive queue) in bytes of the TCP connection from `local_port` to `remote_port`."""
    for line in Path("/proc/net/tcp").read_text().splitlines()[1:]:
        parts = line.split()
        local, remote = parts[1].split(":")[1], parts[2].split(":")[1]
        if int(local, 16) == local_port and int(remote, 16) == remote_port:
            tx, rx = parts[4].split(":")
            return int(tx, 16), int(rx, 16)
    return -1, -1


class RssSampler(threading.Thread):
    """The server's resident memory every 0.5 s, with the wall time."""

    def __init__(self, pid: int) -> None:
        super().__init__(daemon=True)
        self.pid, self.samples, self.done = pid, [], threading.Event()
        self.samples: list[tuple[int, float]]

    def run(self) -> None:
        while not self.done.wait(0.5):
            try:
                status = Path(f"/proc/{self.pid}/status").read_text()
            except OSError:
                return
            kib = next(int(line.split()[1]) for line in status.splitlines() if line.startswith("VmRSS:"))
            self.samples.append((time.time_ns(), kib / 1024))

    def peak(self, w: Window) -> float:
        inside = [mib for t, mib in self.samples if w.start_ns <= t < w.end_ns]
        return max(inside) if inside else float("nan")


async def follow(url: str, viewer: Viewer, stop: asyncio.Event, ready: asyncio.Event) -> None:
    request = HTTPRequest(url, headers={"Authorization": f"token {TOKEN}"})
    ws = await websocket_connect(request, max_message_size=256 << 20)
    ws.write_message(json.dumps({"op": "subscribe", "id": "v", "channel": "logs", "job": JOB}))
    ready.set()
    try:
        while not stop.is_set():
            raw = await ws.read_message()
            if raw is None:
                raise RuntimeError("a viewer's websocket closed")
            arrival = time.time_ns()
            msg = json.loads(raw)
            if msg.get("type") != "data":
                raise RuntimeError(f"a viewer got {msg}")
            for group in msg["data"]["pods"]:
                viewer.take(group, arrival)
    finally:
        ws.close()


async def measure(port: int, server_pid: int) -> dict[str, Any]:
    url = f"ws://127.0.0.1:{port}/ranktable/stream"
    t0 = time.time_ns() + int(WARM_S * 1e9)
    span = int(SECONDS * 1e9)
    gap = int(GAP_S * 1e9)
    before = Window("before", t0, t0 + span)
    stall_at = before.end_ns
    stalled_w = Window("stalled", stall_at + gap, stall_at + gap + span)
    after = Window("after", stalled_w.end_ns + gap, stalled_w.end_ns + gap + span)
    windows = (before, stalled_w, after)
    viewers = [Viewer([Window(w.name, w.start_ns, w.end_ns) for w in windows]) for _ in range(VIEWERS)]
    stop = asyncio.Event()
    readies = [asyncio.Event() for _ in viewers]
    tasks = [asyncio.ensure_future(follow(url, v, stop, r)) for v, r in zip(viewers, readies, strict=True)]
    sampler = RssSampler(server_pid)
    sampler.start()
    stalled: socket.socket | None = None
    server_tx = own_rx = -1
    try:
        await asyncio.wait_for(asyncio.gather(*(r.wait() for r in readies)), 60)
        await asyncio.sleep((stall_at - time.time_ns()) / 1e9)
        for task in tasks:
            if task.done():
                task.result()
        stalled = await asyncio.to_thread(
            stalled_reader, port, "/ranktable/stream", {"Authorization": f"token {TOKEN}"}, JOB
        )
        await asyncio.sleep((stalled_w.end_ns - time.time_ns()) / 1e9)
        mine = stalled.getsockname()[1]
        server_tx, _ = queued(port, mine)  # what the server could not hand to the stalled reader
        _, own_rx = queued(mine, port)
        stalled.close()
        stalled = None
        await asyncio.sleep((after.end_ns - time.time_ns()) / 1e9 + SETTLE_S)
        for task in tasks:
            if task.done():
                task.result()
    finally:
        stop.set()
        for task in tasks:
            task.cancel()
        await asyncio.gather(*tasks, return_exceptions=True)
        sampler.done.set()
        if stalled is not None:
            stalled.close()
    phases: dict[str, int] = {}
    for v in viewers:
        for pod, s in v.first.items():
            phases.setdefault(pod, s)
    out: dict[str, Any] = {"pods_seen": len(phases), "stalled_unread_bytes": [server_tx, own_rx]}
    for i, name in enumerate(w.name for w in windows):
        want = expected(viewers[0].windows[i], phases)
        live = [v.windows[i].live / want for v in viewers]
        got = [v.windows[i].got / want for v in viewers]
        p50 = [v.windows[i].percentile(0.5) for v in viewers]
        p99 = [v.windows[i].percentile(0.99) for v in viewers]
        out[name] = {
            "lines_in_window": want,
            "live_min": min(live),
            "live_median": statistics.median(live),
            "all_min": min(got),
            "delay_p50_s_max": max(p50),
            "delay_p99_s_max": max(p99),
            "server_peak_rss_mib": sampler.peak(viewers[0].windows[i]),
        }
    return out


def start_server(tmp: Path, port: int, kubeconfig: Path, context: str) -> subprocess.Popen[bytes]:
    ranktable = {"kubeconfig": str(kubeconfig), "context": context, "state_dir": str(tmp / "state")}
    proc = jupyter_server_process(tmp, port, TOKEN, ranktable)
    wait_answering(proc, f"http://127.0.0.1:{port}/api/status", TOKEN, tmp / "server.log", timeout=90)
    return proc


def main() -> int:
    load_before = load()
    tmp = Path(tempfile.mkdtemp(prefix="bench-fairness-"))
    pool_log = open(tmp / "pool.log", "ab")  # noqa: SIM115 - the child owns it
    pool = subprocess.Popen(
        [
            *(sys.executable, "-m", "ranktable", "sim", "serve", "--state-dir", str(tmp / "pool")),
            *("--nodes", str(PODS), "--leaves", str(max(1, -(-PODS // 8))), "--tenants", "0"),
        ],
        stdout=pool_log,
        stderr=subprocess.STDOUT,
    )
    server: subprocess.Popen[bytes] | None = None
    try:
        running = eventually(lambda: find_running(tmp / "pool"), 300, "the pool to start", every=0.5)
        client = ClusterClient(str(running.kubeconfig), running.context, "default", timeout=(5.0, 120.0))
        port = int(os.environ.get("BENCH_PORT") or free_port())
        server = start_server(tmp, port, Path(running.kubeconfig), running.context)
        spec = JobSpec(
            name=JOB,
            image="bench:v1",
            nodes=PODS,
            npus_per_node=8,
            command=["ranktable-sim-synthetic-log", f"--rate={RATE:g}"],
        )
        client.submit(compose(spec))
        started = time.monotonic()

        def all_running() -> bool:
            pods = client.job_pods(JOB)
            return len(pods) == PODS and all((p.get("status") or {}).get("phase") == "Running" for p in pods)

        eventually(all_running, 900, f"the job's {PODS} pods to run", every=0.5)
        print(f"{PODS} pods running after {time.monotonic() - started:.1f} s; load {load_before} -> {load()}")
        figures = asyncio.run(measure(port, server.pid))
        figures.update(
            pods=PODS,
            rate_per_pod=RATE,
            viewers=VIEWERS,
            window_s=SECONDS,
            live_s=LIVE_S,
            load_before=load_before,
            load_after=load(),
        )
        peers, stalled = (figures["before"], figures["after"]), figures["stalled"]
        labels = (f"before: {VIEWERS} viewers", "beside a stalled reader", f"after: {VIEWERS} viewers")
        for name, f in zip(labels, (peers[0], stalled, peers[1]), strict=True):
            print(
                f"  {name}: {f['lines_in_window']:,} lines stamped in {SECONDS:g} s; live (<= {LIVE_S:g} s) "
                f"min {f['live_min']:.2%}, median {f['live_median']:.2%}; "
                f"all by the end min {f['all_min']:.2%}; delay p50 {f['delay_p50_s_max']:.1f} s, "
                f"p99 {f['delay_p99_s_max']:.1f} s (worst viewer); "
                f"server peak RSS {f['server_peak_rss_mib']:.0f} MiB"
            )
        peer_live = statistics.mean(p["live_min"] for p in peers)
        peer_p50 = statistics.mean(p["delay_p50_s_max"] for p in peers)
        live_ratio = stalled["live_min"] / peer_live if peer_live else float("nan")
        delay_ratio = stalled["delay_p50_s_max"] / peer_p50 if peer_p50 else float("nan")
        growth = stalled["server_peak_rss_mib"] - max(p["server_peak_rss_mib"] for p in peers)
        figures["ratios"] = {"live_min": live_ratio, "delay_p50": delay_ratio, "rss_mib": growth}
        print(
            f"  stalled / peers (mean of before and after): worst viewer live {live_ratio:.3f}x, "
            f"p50 delay {delay_ratio:.2f}x; the stalled reader's RSS cost {growth:+.0f} MiB; "
            f"load {load_before} -> {figures['load_after']}"
        )
        tx, rx = figures["stalled_unread_bytes"]
        print(f"  the stalled socket at the window's end: {tx:,} B waiting at the server, {rx:,} B unread")
        print(json.dumps(figures))
        return 0
    finally:
        if server is not None:
            stop_process(server, timeout=60)
        stop_process(pool, timeout=60)
        pool_log.close()
        shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    raise SystemExit(main())
