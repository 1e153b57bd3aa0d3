"""Observability core: metrics from training logs, the error catalogue, triage, stragglers and hangs.

Pure: no Kubernetes, Jupyter or SSH imports. The cluster adapter feeds it log lines and pod states.
"""

from ranktable.observe.catalogue import Catalogue, Signature, catalogue
from ranktable.observe.layout import RankLayout, RankPlace
from ranktable.observe.observer import RunObserver
from ranktable.observe.parsers import LineParser, compile_user_patterns
from ranktable.observe.settings import ObserveSettings

__all__ = [
    "Catalogue",
    "LineParser",
    "ObserveSettings",
    "RankLayout",
    "RankPlace",
    "RunObserver",
    "Signature",
    "catalogue",
    "compile_user_patterns",
]
