"""`ranktable sim ...`: simulators (a Lite pool speaking the Kubernetes API, a Notebook instance over SSH).

The group is assembled from one module per simulator so each stays self-contained.
"""

from __future__ import annotations

import argparse
import importlib
from typing import Any

from ranktable.cli.commands import HELP

SIM_MODULES = ("ranktable.cli.sim_pool", "ranktable.cli.sim_fault", "ranktable.cli.sim_notebook")


def register(sub: Any) -> None:
    parser: argparse.ArgumentParser = sub.add_parser(
        "sim",
        help=HELP["sim"],
        description="Local simulators: a Kubernetes API server with Volcano and the platform's plugins, "
        "and an SSH server standing in for a Notebook instance. For demos and tests only.",
    )
    group = parser.add_subparsers(dest="sim_command", metavar="SIMULATOR_COMMAND")
    group.required = True
    for name in SIM_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(group)
