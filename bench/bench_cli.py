"""CLI latency: each `ranktable job ...` command against the kubectl command that shows the same thing,
whole processes, on the simulated pool (or any cluster: --kubeconfig, --job; the real control plane too).

Pairs (ours, then the peer, run in turn so load hits both alike): `job list` / `kubectl get vcjob,pods`,
`job describe` / `kubectl describe vcjob`, `job logs` / `kubectl logs --prefix -l`. Ours runs twice: warm
(the warm server of `ranktable.cli.warm` already running; a user's second command on) and cold
(`RANKTABLE_WARM=0`, everything imported in the process: the first command after boot, or after the
warm server idled out). Both must be within 2x kubectl; the worst of either is printed. Also
`ranktable --help` and `ranktable validate` against their 0.15 s target. Medians of --runs runs (>= 5)
and the 1-minute load before and after.

    .venv/bin/python bench/bench_cli.py [--runs 7] [--control-plane real] [--kubeconfig F --job NAME]

`--control-plane real` starts the pool on the real kube-apiserver + Volcano (the Go build the
conformance suite uses), so both sides talk to a real API server.
"""

from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
from wall_time import wall

from tests.integration.warm_helpers import THROUGH_WARM

if TYPE_CHECKING:
    from ranktable.sim.control import Running

TARGET_RATIO = 2.0
TARGET_SECONDS = 0.15
HERE = Path(__file__).resolve().parent


def load() -> float:
    return os.getloadavg()[0]


def medians(runners: list[Callable[[], float]], runs: int) -> list[float]:
    """Each runner `runs` times, interleaved; the median of each."""
    times: list[list[float]] = [[] for _ in runners]
    for _ in range(runs):
        for i, run in enumerate(runners):
            times[i].append(run())
    return [statistics.median(t) for t in times]


def served_warm(env: dict[str, str]) -> bool:
    done = subprocess.run([sys.executable, "-c", THROUGH_WARM, "job", "list"], env=env, capture_output=True)
    return done.returncode != 3


def submit_job(env: dict[str, str], ranktable: str, name: str) -> None:
    subprocess.run(
        [ranktable, "job", "submit", "--name", name, "--image", "bench", "--nodes", "2", "--npus", "8",
         "--command", "sh -c 'echo step 1 loss 2.5; echo step 2 loss 2.4; exec sleep 900'"],
        env=env, check=True, capture_output=True,
    )  # fmt: skip
    deadline = time.monotonic() + 120
    while time.monotonic() < deadline:  # until both pods have printed their lines
        logs = subprocess.run([ranktable, "job", "logs", name], env=env, capture_output=True, check=False)
        if logs.stdout.count(b"step 2") == 2:
            return
        time.sleep(1)
    raise SystemExit(f"job {name}'s pods did not print their lines in 120 s")


def _parse_args() -> argparse.Namespace:
    parser = argparse.ArgumentParser()
    parser.add_argument("--runs", type=int, default=7)
    parser.add_argument("--kubeconfig", help="a cluster to use instead of a new simulated pool")
    parser.add_argument("--job", default="clibench", help="the job to list, describe and read")
    parser.add_argument(
        "--port", type=int, default=0, help="the simulated pool's API port (default: a free one)"
    )
    parser.add_argument(
        "--control-plane",
        choices=("python", "real"),
        default="python",
        help="the pool's control plane: the simulator's (python) or the real kube-apiserver + Volcano "
        "(real; built by `make controlplane`, as the conformance suite uses it)",
    )
    return parser.parse_args()


def _start_pool(state: Path, control_plane: str, port: int) -> Running:
    """A simulated pool of 4 nodes under `state`/sim with the given control plane; stopped if it fails."""
    from ranktable.sim.control import start_background

    plane = ["--control-plane", control_plane]
    try:  # the real plane (etcd, kube-apiserver, Volcano) takes longer to come up on a loaded machine
        return start_background(
            state / "sim",
            ["--nodes", "4", "--leaves", "2", "--tenants", "0", "--port", str(port), *plane],
            timeout=240.0 if control_plane == "real" else None,
        )
    except BaseException:
        from ranktable.sim.control import stop_running

        stop_running(state / "sim")
        raise


def _time_alone(ranktable: str, env: dict[str, str], runs: int) -> None:
    """`ranktable --help` and `validate`: medians against the fixed target (no peer does the same)."""
    table = HERE.parent / "ranktable" / "examples" / "jobstart_hccl.json"
    (help_s, validate_s) = medians(
        [
            lambda: wall([ranktable, "--help"], env),
            lambda: wall([ranktable, "validate", str(table)], env),
        ],
        runs,
    )
    for what, seconds in (("--help", help_s), ("validate", validate_s)):
        verdict = "met" if seconds <= TARGET_SECONDS else "MISSED"
        print(f"ranktable {what:<9} {seconds:.3f} s (target <= {TARGET_SECONDS} s: {verdict})")


def main() -> int:
    args = _parse_args()
    runs = max(5, args.runs)
    ranktable = str(Path(sys.executable).with_name("ranktable"))
    kubectl = shutil.which("kubectl")
    if kubectl is None:
        raise SystemExit("kubectl is needed (the peer)")
    # the package's bytecode compiled, as an installed package has it (PYTHONDONTWRITEBYTECODE is set here)
    package = str(HERE.parent / "ranktable")
    subprocess.run([sys.executable, "-m", "compileall", "-q", package], check=True, stdout=subprocess.DEVNULL)
    state = Path(tempfile.mkdtemp(prefix="bench-cli-"))
    env = {**os.environ, "RANKTABLE_HOME": str(state / "home"), "HOME": str(state), "RANKTABLE_WARM": "1"}
    env["RANKTABLE_WARM_IDLE"] = "120"
    running = None
    if args.kubeconfig is None:
        running = _start_pool(state, args.control_plane, args.port)
        env["KUBECONFIG"] = str(running.kubeconfig)
    else:
        env["KUBECONFIG"] = args.kubeconfig
    cold = {**env, "RANKTABLE_WARM": "0"}
    try:
        if running is not None:
            submit_job(env, ranktable, args.job)  # inside: a failed submission still stops the pool
        subprocess.run([ranktable, "job", "list"], env=env, check=True, capture_output=True)  # starts it
        deadline = time.monotonic() + 180
        while not served_warm(env):  # a cold run can be quick too: ask the server itself
            if time.monotonic() > deadline:
                raise SystemExit("the warm CLI server did not answer within 180 s")
            time.sleep(0.5)
        pairs = {
            "job list": (["job", "list"], ["get", "vcjob,pods"]),
            "job describe": (["job", "describe", args.job], ["describe", "vcjob", args.job]),
            "job logs": (
                ["job", "logs", args.job],
                ["logs", "--prefix", "-l", f"volcano.sh/job-name={args.job}"],
            ),
        }  # fmt: skip
        before = load()
        where = args.kubeconfig or f"a simulated pool, {args.control_plane} control plane"
        print(
            f"{runs} runs each, medians, on {where}; 1-minute load before: {before:.2f} "
            f"(cores: {os.cpu_count()})"
        )
        worst = 0.0
        for what, (ours, theirs) in pairs.items():
            warm, peer, cold_run = medians(
                [
                    lambda o=ours: wall([ranktable, *o], env),
                    lambda t=theirs: wall([kubectl, *t], env),
                    lambda o=ours: wall([ranktable, *o], cold),
                ],
                runs,
            )
            worst = max(worst, warm / peer, cold_run / peer)
            print(
                f"{what:<13} warm {warm:.3f} s  kubectl {peer:.3f} s  = {warm / peer:.2f}x "
                f"({'met' if warm / peer <= TARGET_RATIO else 'MISSED'}); "
                f"cold (RANKTABLE_WARM=0) {cold_run:.3f} s = {cold_run / peer:.2f}x "
                f"({'met' if cold_run / peer <= TARGET_RATIO else 'MISSED'}; target <= {TARGET_RATIO:.0f}x)"
            )
        _time_alone(ranktable, env, runs)
        print(f"worst CLI/kubectl ratio (warm or cold): {worst:.2f}x; 1-minute load after: {load():.2f}")
        return 0
    finally:
        if running is not None:
            from ranktable.sim.control import stop_running

            stop_running(state / "sim")
        subprocess.run(
            [sys.executable, "-c", "from ranktable.cli import warm; warm.stop()"], env=env, check=False
        )


if __name__ == "__main__":
    raise SystemExit(main())
