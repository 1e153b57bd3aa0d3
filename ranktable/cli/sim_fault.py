"""`ranktable sim fault|repair`: make an NPU, its link or a node of the simulated pool fail, and mend it.

The fault is written through the pool's Kubernetes API as MindCluster publishes one (device-info and
node-info ConfigMaps, events, the node's allocatable NPUs), so it works the same on the Python pool and on
the real control plane; the pool's kubelet then fails the pods using it (docs/simulated-pool.md).
"""

from __future__ import annotations

import argparse
import time
from typing import Any

from ranktable.cli.sim_pool import state_dir_flag
from ranktable.errors import InputError

STEP_POLL_SECONDS = 0.5
AT_STEP_TIMEOUT = 3600.0


def _store(args: argparse.Namespace) -> Any:
    from ranktable.cli.sim_pool import _state_dir
    from ranktable.sim.control import find_running
    from ranktable.sim.real.kube_store import KubeStore

    running = find_running(_state_dir(args))
    if running is None:
        raise InputError(
            "no simulated pool is running", where="--state-dir", fix="start one with `ranktable sim start`"
        )
    return KubeStore.from_kubeconfig(str(running.kubeconfig), running.context)


def _wait_for_step(store: Any, node: str, step: int, timeout: float) -> str:
    """Block until a pod on `node` logs a training step >= `step`; the pod's name."""
    from ranktable.observe.parsers import LineParser
    from ranktable.sim.k8s.errors import ApiError
    from ranktable.sim.k8s.resources import BY_KEY

    parser = LineParser()
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        pods, _ = store.list(BY_KEY["pods"], None, lambda p: (p.get("spec") or {}).get("nodeName") == node)
        for pod in pods:
            if (pod.get("status") or {}).get("phase") != "Running":
                continue
            meta = pod["metadata"]
            path = f"/api/v1/namespaces/{meta['namespace']}/pods/{meta['name']}/log"
            try:
                text = store.call("GET", path, query=[("tailLines", 50)], raw=True)
            except ApiError:  # the container is not up yet: try again at the next poll
                text = ""
            for line in str(text).splitlines():
                parsed = parser.parse(line)
                reached = parsed[1].get("step") if parsed else None
                if reached is not None and reached >= step:
                    return str(meta["name"])
        time.sleep(STEP_POLL_SECONDS)
    raise InputError(
        f"no pod on {node} reached step {step} within {timeout:.0f}s",
        where="--at-step",
        fix="check that a job runs there (`ranktable job list`) and prints its steps",
    )


def _fault(args: argparse.Namespace) -> int:
    from ranktable.sim.controllers.faults import inject

    if args.at_step is not None and args.at_step < 0:
        raise InputError(f"{args.at_step} is not a step", where="--at-step", fix="give a step number >= 0")
    store = _store(args)
    if args.at_step is not None:
        pod = _wait_for_step(store, args.node, args.at_step, args.timeout)
        print(f"{pod} reached step {args.at_step}")
    faults = inject(store, args.node, args.kind, args.npu)
    what = f"NPU {args.npu} ({args.kind})" if args.kind != "node" else "the whole node"
    healthy = "none" if faults.node else f"{len(faults.unhealthy | faults.network)} faulty"
    print(f"fault injected on {args.node}: {what}; NPUs on it now: {healthy}")
    print(f"repair with: ranktable sim repair {args.node}")
    return 0


def _repair(args: argparse.Namespace) -> int:
    from ranktable.sim.controllers.faults import NO_FAULTS, repair

    before = repair(_store(args), args.node)
    print(f"{args.node}: {'repaired' if before != NO_FAULTS else 'had no fault'}; all NPUs schedulable")
    return 0


def register(group: Any) -> None:
    fault = group.add_parser(
        "fault",
        help="make an NPU, its RoCE link or a whole node of the simulated pool fail",
        description="Publish a fault the way MindCluster does (mindx-dl-deviceinfo-NODE in kube-system, "
        "mindx-dl-nodeinfo-NODE in mindx-dl, Warning events), keep the faulty NPU or node out of scheduling, "
        "and fail the pods using it with the lines a real fault prints. Until `ranktable sim repair NODE`.",
    )
    fault.add_argument("node", metavar="NODE", help="a node name (`kubectl get nodes`)")
    fault.add_argument(
        "--kind", choices=("npu", "link", "node"), default="npu", help="what fails (default npu)"
    )
    fault.add_argument("--npu", type=int, default=None, metavar="N", help="the NPU (device id) for npu/link")
    fault.add_argument(
        "--at-step", type=int, default=None, metavar="S", help="wait until a pod on NODE logs step S first"
    )
    fault.add_argument(
        "--timeout", type=float, default=AT_STEP_TIMEOUT, metavar="SECONDS", help="how long --at-step waits"
    )
    state_dir_flag(fault)
    fault.set_defaults(handler=_fault)
    mend = group.add_parser("repair", help="clear every fault of a node of the simulated pool")
    mend.add_argument("node", metavar="NODE")
    state_dir_flag(mend)
    mend.set_defaults(handler=_repair)
