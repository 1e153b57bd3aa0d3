"""`ranktable controller configmap1980`: the rank-table controller on any cluster (e.g. self-hosted Volcano).

It watches Volcano Jobs that name the `configmap1980` plugin and their pods, annotates each placed pod
with its devices, and writes `configmap1980-<job>` with the rank table (see docs/control-plane.md).
"""

from __future__ import annotations

import argparse
import signal
import sys
import threading
from pathlib import Path
from types import FrameType
from typing import Any

from ranktable.cli.commands import command_group


def _run(args: argparse.Namespace) -> int:
    from ranktable.sim.real.agents import RankTableController
    from ranktable.sim.real.kube_store import KubeStore

    watched = ("pods", "nodes", "configmaps", "batch.volcano.sh/jobs")
    store = KubeStore.from_kubeconfig(args.kubeconfig, args.context, watched)
    store.start()
    error_log = Path(args.error_log).expanduser()
    controller = RankTableController(store, error_log, delay=args.delay)
    controller.start()
    done = threading.Event()

    def on_signal(_signum: int, _frame: FrameType | None) -> None:
        done.set()

    for sig in (signal.SIGTERM, signal.SIGINT):
        signal.signal(sig, on_signal)
    print(f"configmap1980 controller running against {store.host} (errors: {error_log})")
    sys.stdout.flush()
    done.wait()
    controller.stop()
    store.stop()
    return 0


def register(sub: Any) -> None:
    group = command_group(
        sub,
        "controller",
        "controller_command",
        "CONTROLLER",
        description="Run a controller of the platform against any Kubernetes API server with Volcano.",
    )
    rank = group.add_parser(
        "configmap1980",
        help="write rank tables (configmap1980-<job>) for Volcano Jobs with the configmap1980 plugin",
        description=__doc__,
    )
    rank.add_argument("--kubeconfig", default=None, metavar="FILE", help="kubeconfig (default: $KUBECONFIG)")
    rank.add_argument("--context", default=None, help="kubeconfig context (default: the current one)")
    rank.add_argument(
        "--delay",
        type=float,
        default=0.5,
        metavar="S",
        help="seconds all pods must be ready before `completed`",
    )
    rank.add_argument(
        "--error-log", default="configmap1980-errors.log", metavar="FILE", help="where controller errors go"
    )
    rank.set_defaults(handler=_run)
