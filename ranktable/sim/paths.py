"""Where the simulated pool keeps its state: `$RANKTABLE_HOME/sim/` (default under Jupyter's data dir)."""

from __future__ import annotations

from pathlib import Path

from ranktable.home import ranktable_home

CONTEXT = "ranktable-sim"


def default_state_dir() -> Path:
    return ranktable_home() / "sim"


def default_kubeconfig() -> Path:
    """The kubeconfig `ranktable sim start` writes; the product's embedded default."""
    return default_state_dir() / "kubeconfig"
