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
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
UI = ROOT / "ui-tests"


def main() -> int:
    env = {
        **os.environ,
        "PATH": f"{ROOT / '.venv' / 'bin'}{os.pathsep}{os.environ.get('PATH', '')}",
        "NODE_PATH": str(UI / "node_modules"),
        "PLAYWRIGHT_SKIP_BROWSER_DOWNLOAD": "1",
        "CI": "1",
    }
    proc = subprocess.run(
        [
            str(ROOT / ".venv" / "bin" / "jlpm"),
            "playwright",
            "test",
            "--config",
            "playwright.bench.config.js",
        ],
        cwd=UI,
        env=env,
        capture_output=True,
        text=True,
        check=False,
    )
    figures = [
        line.split(" ", 1)[1] for line in proc.stdout.splitlines() if line.startswith("BENCH_LOGVIEW ")
    ]
    if proc.returncode != 0 or not figures:
        sys.stdout.write(proc.stdout[-4000:] + proc.stderr[-2000:])
        return proc.returncode or 1
    data = json.loads(figures[-1])
    # the server's steps from the logs subscribe to its first batch (jobs_service logs them)
    server_steps = [
        line.split("ranktable: ", 1)[1]
        for line in (proc.stdout + proc.stderr).splitlines()
        if "ranktable: logs of" in line
    ]
    data["server_steps"] = server_steps[-1] if server_steps else None
    ended = [  # the stream's own count at its end (reconnects, duplicates dropped), when logged in time
        line.split("ranktable: ", 1)[1]
        for line in (proc.stdout + proc.stderr).splitlines()
        if "ranktable: log stream of" in line
    ]
    data["server_end"] = ended[-1] if ended else None
    print(
        f"log view: {data['pods']} pods, target {data['target_lines_per_second']} lines/s "
        f"for {data['seconds']} s ({data['feed']} feed, {data.get('tab', 'Logs')} tab shown)"
    )
    print(f"  delivered to the browser: {data['lines_per_second_delivered']} lines/s ({data['view_status']})")
    print(
        f"  Job view opened -> first lines shown: {data['first_lines_ms']} ms (logs subscribe sent at "
        f"{data['subscribe_ms']} ms, first batch received at {data['first_batch_ms']} ms)"
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
        f"max {data['heap_mb_max']} MB"
    )
    print(json.dumps(data))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
