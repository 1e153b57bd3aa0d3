"""Recovery from faults (#29): auto-resume against the by-hand baseline, on the simulated pool.

One lineage per mode: a 4-node job saving a checkpoint every 100 steps loses an NPU three times (a fault
injected with `ranktable sim fault --at-step` at a random step of each run). Two modes in the same run:
- auto: the server's policy (`usecases.recovery.AutoResume`, polling every second) resumes each fault;
- by hand: the user's steps timed as commands, with no thinking time: watch `ranktable job list` until the
  run failed (every 2 s), read `ranktable job diagnose NAME`, then `ranktable job resume NAME` (which edits
  the spec: the resume arguments, the blamed node excluded). A person reading and deciding only adds to it.
Printed per mode: the time from each fault to the first step of the resumed run, and the goodput over the
lineage (steps kept / wall time, as a share of the fault-free rate), from `ranktable job lineage`; then the
ratio by-hand / auto. Targets: resumed < 60 s after the fault, goodput >= 90 %. With the load (`uptime`).

    python bench/bench_recovery.py [--steps 3000] [--interval 0.05] [--seed N]
"""

from __future__ import annotations

import argparse
import os
import random
import shutil
import statistics
import subprocess
import sys
import tempfile
import threading
import time
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from ranktable.compose.manifests import compose
from ranktable.compose.spec import EntryPoint, JobSpec
from ranktable.usecases.jobs import ClusterSettings, Jobs
from ranktable.usecases.recovery import AutoResume
from tests.integration.fixtures.simpool import SimPoolHandle, start_pool
from tests.integration.sim_helpers import eventually

TRAIN = str(Path(__file__).resolve().parents[1] / "examples" / "train.py")
NODES, FAULTS, SAVE_EVERY = 4, 3, 100


def cli(pool: SimPoolHandle, state: str, *argv: str) -> str:
    flags = ["--kubeconfig", str(pool.kubeconfig), "--context", pool.context]
    if argv[0] == "job" and argv[1] != "list":
        flags += ["--state-dir", state]
    out = subprocess.run(
        [sys.executable, "-m", "ranktable", *argv, *flags], capture_output=True, text=True, timeout=300
    )
    if out.returncode != 0:
        raise SystemExit(f"ranktable {' '.join(argv)}: {out.stderr.strip()}")
    return out.stdout


def inject(pool: SimPoolHandle, jobs: Jobs, name: str, at_step: int) -> None:
    """An NPU fault on the node of the job's second pod, once a pod there reached `at_step`."""
    pods = eventually(lambda: _running(jobs, name), timeout=180, what="the run's pods")
    pod = pods[1]
    node = pod["spec"]["nodeName"]
    npu = pod["metadata"]["annotations"]["huawei.com/AscendReal"].split(",")[0].rsplit("-", 1)[1]
    out = subprocess.run(
        [sys.executable, "-m", "ranktable", "sim", "fault", node, "--npu", npu, "--at-step", str(at_step),
         "--timeout", "600", "--state-dir", str(pool.state_dir)],
        capture_output=True, text=True, timeout=700,
    )  # fmt: skip
    if out.returncode != 0:
        raise SystemExit(f"sim fault: {out.stderr.strip()}")


def _running(jobs: Jobs, name: str) -> list[dict[str, Any]] | None:
    pods = jobs.client().job_pods(name)
    running = [p for p in pods if (p.get("status") or {}).get("phase") == "Running"]
    ordered = sorted(running, key=lambda p: p["metadata"]["name"])
    return (
        ordered if len(ordered) == NODES and all(p["metadata"].get("annotations") for p in ordered) else None
    )


def run_mode(mode: str, pool: SimPoolHandle, args: argparse.Namespace, rng: random.Random) -> dict[str, Any]:
    state = tempfile.mkdtemp(prefix=f"bench-recovery-{mode}-")
    saves = Path(tempfile.mkdtemp(prefix="bench-ckpt-"))
    saves.chmod(0o777)
    name = f"rec-{mode}"
    jobs = Jobs(ClusterSettings(kubeconfig=str(pool.kubeconfig), context=pool.context, state_dir=state))
    train = ["--steps", str(args.steps), "--interval", str(args.interval), "--save", str(saves),
             "--save-interval", str(SAVE_EVERY)]  # fmt: skip
    spec = JobSpec(
        name=name, image="i", nodes=NODES, npus_per_node=1, on_fault="resume", entry=EntryPoint(TRAIN, train)
    )
    jobs.client().submit(compose(spec))
    if mode == "hand":
        follow(jobs, name)  # `job logs -f` in another terminal: the lines outlive the pods an abort deletes
    policy = AutoResume(jobs, budget=FAULTS, poll_s=1.0, hang_check_s=1e9).start() if mode == "auto" else None
    span = args.steps // (FAULTS + 1)
    try:
        for fault in range(FAULTS):
            low = fault * span + SAVE_EVERY + 1
            inject(pool, jobs, name, rng.randint(low, low + span - SAVE_EVERY - 2))
            if mode == "hand":
                by_hand(pool, jobs, state, name)
                follow(jobs, name)  # the resumed run's logs
            else:
                done = fault + 1
                eventually(
                    lambda n=done: policy is not None and len(policy.events) >= n, timeout=300, what="resume"
                )
        eventually(lambda: _phase(jobs, name) == "Completed", timeout=args.steps * args.interval * 3 + 300,
                   what="the last run to finish")  # fmt: skip
    finally:
        if policy is not None:
            policy.stop()
    lineage = jobs.lineage(None, name)
    jobs.stop(None, name, keep_logs_s=0)
    for fault in lineage["faults"]:  # the next mode starts on a healthy pool
        repair = ["sim", "repair", str(fault["node"]), "--state-dir", str(pool.state_dir)]
        subprocess.run(
            [sys.executable, "-m", "ranktable", *repair], capture_output=True, timeout=120, check=True
        )
    shutil.rmtree(saves, ignore_errors=True)
    return lineage


def follow(jobs: Jobs, name: str) -> None:
    threading.Thread(target=lambda: list(jobs.log_lines(None, name, follow=True)), daemon=True).start()


def by_hand(pool: SimPoolHandle, jobs: Jobs, state: str, name: str) -> None:
    """The user's steps as commands: watch the list until the run failed, read the diagnosis, resume."""
    while True:
        listed = cli(pool, state, "job", "list")
        rows = [line.split() for line in listed.splitlines()]  # Name Age Phase ...
        if any(row[:1] == [name] and row[2:3] in (["Aborted"], ["Failed"]) for row in rows):
            break
        time.sleep(2.0)
    cli(pool, state, "job", "diagnose", name)
    cli(pool, state, "job", "resume", name)


def _phase(jobs: Jobs, name: str) -> str:
    return str(((jobs.client().get_job(name).get("status") or {}).get("state") or {}).get("phase") or "")


def summary(mode: str, lineage: dict[str, Any]) -> tuple[float, float]:
    times = [f["fault_to_first_step_s"] for f in lineage["faults"] if f["fault_to_first_step_s"] is not None]
    goodput = lineage["goodput"] or {}
    share = float(goodput.get("share") or 0.0)
    print(f"{mode:8} faults {len(lineage['faults'])}: fault -> first resumed step "
          f"{', '.join(f'{t:.1f}' for t in times)} s (median {statistics.median(times):.1f} s); "
          f"replayed steps {[f['replayed_steps'] for f in lineage['faults']]}; goodput {share:.1%} "
          f"({goodput.get('steps_kept')} steps in {goodput.get('wall_s')} s)")  # fmt: skip
    print(f"         {lineage['text']}")
    return statistics.median(times), share


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--steps", type=int, default=3000)
    parser.add_argument("--interval", type=float, default=0.05, help="seconds per step")
    parser.add_argument("--seed", type=int, default=None)
    args = parser.parse_args()
    seed = args.seed if args.seed is not None else random.randrange(1 << 30)
    print(f"load before: {os.getloadavg()[0]:.1f} (1-min) on {os.cpu_count()} cores; seed {seed}")
    print(f"{NODES}-node job, {args.steps} steps of {args.interval} s, a checkpoint every {SAVE_EVERY} "
          f"steps, {FAULTS} NPU faults at random steps")  # fmt: skip
    pool = start_pool(Path(tempfile.mkdtemp(prefix="bench-recovery-")), nodes=NODES + FAULTS + 1, leaves=2,
                      ranktable_delay=0.2, backoff_seconds=0.5)  # fmt: skip
    try:
        auto = summary("auto", run_mode("auto", pool, args, random.Random(seed)))
        hand = summary("by hand", run_mode("hand", pool, args, random.Random(seed)))
    finally:
        pool.stop()
    print(f"by hand / auto: fault -> first step {hand[0] / auto[0]:.2f}x; goodput auto {auto[1]:.1%} vs "
          f"by hand {hand[1]:.1%}")  # fmt: skip
    print(f"targets: resumed < 60 s: {'met' if auto[0] < 60 else 'MISSED'}; goodput >= 90%: "
          f"{'met' if auto[1] >= 0.9 else 'MISSED'}")  # fmt: skip
    print(f"load after: {os.getloadavg()[0]:.1f} (1-min)")


if __name__ == "__main__":
    main()
