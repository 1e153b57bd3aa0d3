"""Log view under load: 64 pods x 2,000 lines/s for 60 s in a Job view (real chromium).

Runs bench/bench_logview.spec.ts through Playwright (ui-tests' node_modules): it starts a simulated pool
of BENCH_PODS nodes, the simulated Notebook instance and JupyterLab, submits the job, follows its logs in
its Job view and measures frame times and the JS heap. Prints the figures. Not a test: numbers, no verdict.
Environment: BENCH_PODS, BENCH_RATE, BENCH_SECONDS override 64, 2000, 60. BENCH_FEED: `pods` (the default
up to 64 pods) runs one printing process per pod; `pool` (the default above 64 pods, e.g. the 1,024 pods x
100 lines/s case `BENCH_PODS=1024 BENCH_RATE=102400`) has the simulated kubelet make the lines up itself
(`ranktable-sim-synthetic-log`, no process per pod), so they still take the whole server path; `socket`: the
pods print one line each and the benchmark sends the lines to the page over its stream websocket (the
browser alone). BENCH_TAB=Overview or Metrics: that tab of the Job view is shown while measuring, its
diagnosis and metrics polls running beside the logs (which stay subscribed; lines counted on the websocket).
UI_TEST_PORT: JupyterLab's port (default: a free one; the pool's port is always a free one); the stack's
state is ui-tests/.stack-bench of this checkout, so two worktrees' runs do not share it.

Where lines go missing: the pool and the Jupyter server count what each stage moved (`ranktable.probe`,
switched on through RANKTABLE_PROBE=ui-tests/.bench-probe) and this script samples Chromium's CPU; the
figures over the page's 60 s window are printed per stage (pool written -> server read -> websocket sent ->
page received), with the seconds each stage waited for the next and each process' (and thread group's) CPU.
"""

from __future__ import annotations

import bisect
import json
import os
import shutil
import subprocess
import sys
import threading
import time
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parents[1]
UI = ROOT / "ui-tests"
PROBE = UI / ".bench-probe"
STACK = UI / ".stack-bench"  # the bench stack's state: the pool runs detached (`sim serve`, its parent init)
TICK = os.sysconf("SC_CLK_TCK")


def _tree_cpu(root: int) -> float:
    """CPU seconds (user + system) of the Chromium processes under `root` (Playwright's)."""
    parent: dict[int, int] = {}
    info: dict[int, tuple[str, float]] = {}
    for entry in os.scandir("/proc"):
        if not entry.name.isdigit():
            continue
        try:
            stat = Path(entry.path, "stat").read_text()
        except OSError:
            continue
        head, _, rest = stat.rpartition(")")
        fields = rest.split()
        pid = int(entry.name)
        parent[pid] = int(fields[1])
        info[pid] = (head.split("(", 1)[1], (int(fields[11]) + int(fields[12])) / TICK)
    total = 0.0
    for pid, (name, cpu) in info.items():
        if "chrom" not in name and "headless" not in name:
            continue
        up = pid
        while up > 1 and up != root:
            up = parent.get(up, 0)
        if up == root:
            total += cpu
    return total


PEAK_RSS: dict[str, float] = {}  # role -> the highest resident MiB sampled during the run
ROLES = {"server": ("jupyterlab",), "pool": ("sim", "serve")}  # words of each process' command line


def _stack_rss(root: int) -> dict[str, float]:
    """Peak MiB of resident memory of the stack's processes under `root`, per role (issue 28, item 5: the
    Jupyter server <= 300 MiB, the pool <= 400 MiB at 1,024 pods x 100 lines/s)."""
    parent: dict[int, int] = {}
    for entry in os.scandir("/proc"):
        if entry.name.isdigit():
            try:
                parent[int(entry.name)] = int(
                    Path(entry.path, "stat").read_text().rpartition(")")[2].split()[1]
                )
            except (OSError, IndexError, ValueError):
                continue
    out = dict.fromkeys(ROLES, 0.0)
    for pid in parent:
        up = pid
        while up > 1 and up != root:
            up = parent.get(up, 0)
        try:
            words = Path(f"/proc/{pid}/cmdline").read_bytes().split(b"\0")
            status = Path(f"/proc/{pid}/status").read_text()
        except OSError:
            continue
        text = " ".join(w.decode(errors="replace") for w in words)
        if up != root and str(STACK) not in text:
            continue
        for role, needed in ROLES.items():
            if all(f" {w}" in f" {text}" or f"/{w}" in text or f".{w}" in text for w in needed):
                # the kernel's own peak of the process (VmHWM), so a peak between two samples counts
                kib = next((int(x.split()[1]) for x in status.splitlines() if x.startswith("VmHWM:")), 0)
                out[role] += kib / 1024
    return out


def _rss_text() -> str:
    return (
        ", ".join(f"{role} {mib:.0f} MiB" for role, mib in PEAK_RSS.items())
        + " (targets at 1,024 pods x 100 lines/s: server <= 300 MiB, pool <= 400 MiB)"
    )


def _at(samples: list[tuple[float, Any]], t: float, read: Any) -> float | None:
    """A counter at wall time `t`, interpolated between the samples around it (None: not sampled then)."""
    times = [x for x, _ in samples]
    i = bisect.bisect_left(times, t)
    if not samples or (i == 0 and times[0] > t + 2.5) or (i == len(samples) and times[-1] < t - 2.5):
        return None
    lo, hi = samples[max(i - 1, 0)], samples[min(i, len(samples) - 1)]
    a, b = read(lo[1]), read(hi[1])
    if hi[0] == lo[0]:
        return b
    return a + (b - a) * (t - lo[0]) / (hi[0] - lo[0])


def stages(data: dict[str, Any], chromium: list[tuple[float, float]]) -> dict[str, Any]:
    """Each stage's rate and wait, each process' and thread group's CPU, over the page's window."""
    t0, t1 = data["window_start_ms"] / 1000, data["window_end_ms"] / 1000
    span = t1 - t0
    procs: dict[str, list[tuple[float, dict[str, Any]]]] = {}
    for path in sorted(PROBE.glob("*.jsonl")):
        rows = [json.loads(line) for line in path.read_text().splitlines() if line.strip()]
        if rows:
            role = "pool" if "sim" in rows[-1]["argv"] else "server"
            procs.setdefault(role, []).extend((r["t"], r) for r in rows)
    out: dict[str, Any] = {"window_s": round(span, 1)}
    out["page_lines_per_s"] = round(data["lines_delivered"] / span)

    def delta(samples: list[tuple[float, Any]], read: Any) -> float | None:
        a, b = _at(samples, t0, read), _at(samples, t1, read)
        return None if a is None or b is None else b - a

    for role, samples in procs.items():
        samples.sort(key=lambda x: x[0])
        names = {name for _, r in samples for name in r["counts"]}
        for name in sorted(names):
            d = delta(samples, lambda r, n=name: r["counts"].get(n, 0))
            if d is None:
                continue
            if name.endswith("_s"):
                out[f"{name[:-2]}_s_per_s"] = round(d / span, 3)
            elif name.endswith("backlog"):
                out[name] = _at(samples, t1, lambda r, n=name: r["counts"].get(n, 0))
            else:
                out[f"{name}_per_s"] = round(d / span)
        cpu = delta(samples, lambda r: r["cpu"])
        out[f"{role}_cpu_per_s"] = None if cpu is None else round(cpu / span, 3)
        groups = {name for _, r in samples for name in r["threads"]}
        threads = {}
        for name in groups:
            d = delta(samples, lambda r, n=name: r["threads"].get(n, 0.0))
            if d is not None and d / span >= 0.01:
                threads[name] = round(d / span, 3)
        out[f"{role}_threads_cpu_per_s"] = dict(sorted(threads.items(), key=lambda kv: -kv[1]))
    cpu = delta(chromium, lambda c: c)
    out["chromium_cpu_per_s"] = None if cpu is None else round(cpu / span, 3)
    return out


def _run_sampled(env: dict[str, str]) -> tuple[subprocess.CompletedProcess[str], list[tuple[float, float]]]:
    """The Playwright spec's run, and Chromium's CPU seconds sampled every 2 s meanwhile."""
    proc = subprocess.Popen(
        [
            str(ROOT / ".venv" / "bin" / "jlpm"),
            "playwright",
            "test",
            "--config",
            "playwright.bench.config.js",
        ],
        cwd=UI,
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    chromium: list[tuple[float, float]] = []
    done = threading.Event()

    def sample() -> None:
        while not done.wait(2.0):
            chromium.append((time.time(), _tree_cpu(proc.pid)))
            for role, mib in _stack_rss(proc.pid).items():
                PEAK_RSS[role] = max(PEAK_RSS.get(role, 0.0), mib)

    sampler = threading.Thread(target=sample, daemon=True)
    sampler.start()
    stdout, stderr = proc.communicate()
    done.set()
    sampler.join()
    return subprocess.CompletedProcess(proc.args, proc.returncode, stdout, stderr), chromium


def _last_server_line(output: str, marker: str) -> str | None:
    """What the server last logged after `marker`'s "ranktable: " (None: it did not log it in time)."""
    lines = [line.split("ranktable: ", 1)[1] for line in output.splitlines() if marker in line]
    return lines[-1] if lines else None


def _print_view(data: dict[str, Any]) -> None:
    """The log view's figures as the page measured them: lines, first lines, frames, heap."""
    print(
        f"log view: {data['pods']} pods, target {data['target_lines_per_second']} lines/s "
        f"for {data['seconds']} s ({data['feed']} feed, {data.get('tab', 'Logs')} tab shown)"
    )
    share = data["lines_per_second_delivered"] / max(1, data["target_lines_per_second"])
    print(
        f"  delivered to the browser: {data['lines_per_second_delivered']} lines/s, {share:.0%} of the "
        f"target (issue 28 item 4: >= 95% with Overview or Metrics shown) ({data['view_status']})"
    )
    print(
        f"  Job view opened -> first lines shown: {data['first_lines_ms']} ms from the click to the first "
        f"line painted (the page's clock); Playwright saw them {data['first_lines_playwright_ms']} ms after "
        "it began its click (its checks and expect's polling included)"
    )
    print(
        f"  in the page's clock (ms after Playwright's click began): click event {data['click_ms']}, "
        f"subscribe {data['subscribe_ms']}, first batch {data['first_batch_ms']}, first line in the DOM "
        f"{data['first_line_in_dom_ms']}, painted {data['first_line_painted_ms']}"
    )
    print(f"  server: {data['server_steps']}")
    print(f"  server at the end: {data['server_end']}")
    print(
        f"  frames: {data['fps']} fps (median {data['fps_median']}), "
        f"frame time p50 {data['frame_ms_p50']} ms, "
        f"p95 {data['frame_ms_p95']} ms, p99 {data['frame_ms_p99']} ms, max {data['frame_ms_max']} ms; "
        f"long tasks {data['long_tasks']}"
    )
    print(
        f"  JS heap: {data['heap_mb_start']} MB at start, {data['heap_mb_end']} MB at end, "
        f"max {data['heap_mb_max']} MB (5 s samples); after a forced full GC "
        f"{data['heap_mb_after_gc_start']} MB at start, {data['heap_mb_after_gc_end']} MB at end"
    )


def _print_stages(st: dict[str, Any]) -> None:
    """Where the lines go and wait, stage by stage, and each process's CPU."""
    print(
        f"  stages over the page's {st['window_s']} s window (lines/s): pool wrote "
        f"{st.get('pool.lines_per_s')} (backlog at the end {st.get('pool.backlog')} lines, socket full "
        f"{st.get('pool.socket_full_per_s')}/s) -> server read {st.get('server.read_per_s')} -> "
        f"websocket sent {st.get('server.ws_lines_per_s')} -> page received {st['page_lines_per_s']}"
    )
    print(
        "  waits (s per s): server loop -> queue "
        f"{st.get('server.loop_emit_wait_s_per_s')}, run log -> subscriber "
        f"{st.get('server.runlog_put_wait_s_per_s')}, thread -> event loop "
        f"{st.get('server.hub_slots_wait_s_per_s')}, websocket write {st.get('server.ws_write_s_per_s')}"
    )
    print(
        f"  CPU (s per s): pool {st.get('pool_cpu_per_s')}, server {st.get('server_cpu_per_s')}, "
        f"chromium {st.get('chromium_cpu_per_s')}"
    )
    for role in ("pool", "server"):
        print(f"  {role} threads (CPU s per s): {st.get(f'{role}_threads_cpu_per_s')}")


def main() -> int:
    env = {
        **os.environ,
        "PATH": f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "NODE_PATH": str(UI / "node_modules"),
        "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
        "CI": "1",
        "RANKTABLE_PROBE": str(PROBE),
    }
    shutil.rmtree(PROBE, ignore_errors=True)
    proc, chromium = _run_sampled(env)
    figures = [
        line.split(" ", 1)[1] for line in proc.stdout.splitlines() if line.startswith("BENCH_LOGVIEW ")
    ]
    if proc.returncode != 0 or not figures:
        sys.stdout.write(proc.stdout[-4000:] + proc.stderr[-2000:])
        print(f"peak resident memory until the failure: {_rss_text()}")
        return proc.returncode or 1
    data = json.loads(figures[-1])
    output = proc.stdout + proc.stderr
    # the server's steps from the logs subscribe to its first batch (usecases/logs.py logs them)
    data["server_steps"] = _last_server_line(output, "ranktable: logs of")
    # the stream's own count at its end (reconnects, duplicates dropped), when logged in time
    data["server_end"] = _last_server_line(output, "ranktable: log stream of")
    _print_view(data)
    data["peak_rss_mib"] = {role: round(mib) for role, mib in PEAK_RSS.items()}
    print(f"peak resident memory: {_rss_text()}")
    if "window_start_ms" in data:
        data["stages"] = stages(data, chromium)
        _print_stages(data["stages"])
    print(json.dumps(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
