"""Observability core: metrics from training logs, the error catalogue, triage, stragglers and hangs.

Pure: no Kubernetes, Jupyter or SSH imports. The cluster adapter feeds it log lines and pod states.
The names below are imported on first use (PEP 562): a module that needs only `observe.health` or
`observe.text` (a cold `ranktable job list`) does not pay for the observer and numpy (#28).
`catalogue` is the submodule here; its function is `ranktable.observe.catalogue.catalogue`.
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from ranktable.lazy import lazy_exports

if TYPE_CHECKING:
    from ranktable.observe.catalogue import Catalogue, Signature
    from ranktable.observe.layout import RankLayout, RankPlace
    from ranktable.observe.observer import RunObserver
    from ranktable.observe.parsers import LineParser, compile_user_patterns
    from ranktable.observe.settings import ObserveSettings

_HOMES = {
    "Catalogue": "catalogue",
    "Signature": "catalogue",
    "RankLayout": "layout",
    "RankPlace": "layout",
    "RunObserver": "observer",
    "LineParser": "parsers",
    "compile_user_patterns": "parsers",
    "ObserveSettings": "settings",
}

__all__ = [
    "Catalogue",
    "LineParser",
    "ObserveSettings",
    "RankLayout",
    "RankPlace",
    "RunObserver",
    "Signature",
    "compile_user_patterns",
]


__getattr__ = lazy_exports(__name__, _HOMES, globals())
