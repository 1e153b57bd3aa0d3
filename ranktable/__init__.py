"""jupyter-ranktable: open route planning and job tooling for ranktable-routed Volcano jobs on Ascend NPUs.

Layers point inward (checked by `lint-imports`, contracts in pyproject.toml): the pure core (``topology``,
``hccl``, ``plan``, ``cost``, ``render``, ``compose``, ``launch``) imports nothing from Jupyter, SSH or
Kubernetes; adapters (``cluster``, ``remote``, ``sim``) use it; ``usecases`` sit above them; interfaces
(``cli``, ``server_ext``, ``magics``, ``widgets``) parse input and call the use cases.
"""

from __future__ import annotations

from ranktable._version import __version__

# no `typing` at run time: every `ranktable` run, warm or not, imports this module (~4 ms; issue 28)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any

__all__ = ["__version__", "load_ipython_extension"]


def load_ipython_extension(ipython: Any) -> None:
    """`%load_ext ranktable` entry point (kept lazy so importing the core stays light)."""
    from ranktable.magics import load_ipython_extension as _load

    _load(ipython)


def _jupyter_labextension_paths() -> list[dict[str, str]]:
    """Where the prebuilt JupyterLab extension lives (`jupyter labextension develop`)."""
    return [{"src": "labextension", "dest": "jupyter-ranktable"}]


def _jupyter_server_extension_points() -> list[dict[str, Any]]:
    """The server extension (`jpserver_extensions: {"ranktable": true}`), imported only when Jupyter asks."""
    from ranktable.server_ext import _jupyter_server_extension_points as points

    return points()
