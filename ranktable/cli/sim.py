"""`ranktable sim ...`: simulators (a Lite pool speaking the Kubernetes API, a Notebook instance over SSH).

The group is assembled from one module per simulator so each stays self-contained.
"""

from __future__ import annotations

import importlib
from typing import Any

from ranktable.cli.commands import command_group

SIM_MODULES = ("ranktable.cli.sim_pool", "ranktable.cli.sim_fault", "ranktable.cli.sim_notebook")


def register(sub: Any) -> None:
    group = command_group(
        sub,
        "sim",
        "sim_command",
        "SIMULATOR_COMMAND",
        description="Local simulators: a Kubernetes API server with Volcano and the platform's plugins, "
        "and an SSH server standing in for a Notebook instance. For demos and tests only.",
    )
    for name in SIM_MODULES:
        try:
            module = importlib.import_module(name)
        except ModuleNotFoundError as exc:
            if exc.name == name:
                continue
            raise
        module.register(group)
