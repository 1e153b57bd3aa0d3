"""Where the simulated pool keeps its state: `$RANKTABLE_HOME/sim/` (default under Jupyter's data dir)."""

from __future__ import annotations

import os
from pathlib import Path

CONTEXT = "ranktable-sim"


def ranktable_home() -> Path:
    env = os.environ.get("RANKTABLE_HOME")
    if env:
        return Path(env).expanduser()
    from jupyter_core.paths import jupyter_data_dir

    return Path(jupyter_data_dir()) / "ranktable"


def default_state_dir() -> Path:
    return ranktable_home() / "sim"


def default_kubeconfig() -> Path:
    """The kubeconfig `ranktable sim start` writes; the product's embedded default."""
    return default_state_dir() / "kubeconfig"
