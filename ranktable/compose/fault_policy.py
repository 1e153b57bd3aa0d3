"""What a job does when a pod fails: the ``on_fault`` presets as Volcano policies and platform labels.

One preset sets the Volcano lifecycle ``policies``, the pods' ``restartPolicy`` and the platform's fault
labels together, so they never contradict each other (``fault-retry-times`` needs ``restartPolicy: Never``
and a PodFailed policy; ``fault-scheduling: off`` leaves retries to Volcano's ``maxRetry``). The empty
preset is the platform guide's reference manifest, unchanged.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

#: presets a spec may name in ``on_fault`` ("" = the platform guide's defaults)
ON_FAULT_PRESETS = ("", "restart", "resume", "stop")
ON_FAULT_TEXT = (
    "what a pod failure does: restart = Volcano restarts the whole job in place (up to max_retry); "
    "resume = the job stops so `ranktable job resume` restarts it from its last checkpoint on healthy "
    "nodes; stop = the job stops; empty = the platform's default (only evictions restart it)"
)
FAULT_SCHEDULING = "fault-scheduling"
FAULT_RETRY_TIMES = "fault-retry-times"
FAULT_LABEL_KEYS = (FAULT_SCHEDULING, FAULT_RETRY_TIMES)


@dataclass(frozen=True)
class FaultPolicy:
    """The manifest lines one preset writes."""

    policies: list[dict[str, str]]
    labels: dict[str, str]
    restart_policy: str


def fault_policy(on_fault: str, max_retry: int) -> FaultPolicy:
    """The policies, labels and pod restart policy of the preset ``on_fault``."""
    evicted_restarts = {"event": "PodEvicted", "action": "RestartJob"}
    if on_fault == "restart":
        return FaultPolicy(
            [evicted_restarts, {"event": "PodFailed", "action": "RestartJob"}],
            {FAULT_SCHEDULING: "force", FAULT_RETRY_TIMES: str(max_retry)},
            "Never",
        )
    if on_fault == "resume":
        return FaultPolicy(
            [evicted_restarts, {"event": "PodFailed", "action": "AbortJob"}],
            {FAULT_SCHEDULING: "force"},
            "Never",
        )
    if on_fault == "stop":
        return FaultPolicy(
            [{"event": "PodEvicted", "action": "AbortJob"}, {"event": "PodFailed", "action": "AbortJob"}],
            {FAULT_SCHEDULING: "off"},
            "Never",
        )
    return FaultPolicy([evicted_restarts], {FAULT_SCHEDULING: "force"}, "OnFailure")


def preset_of(policies: Any, max_retry: int) -> str | None:
    """The preset whose Volcano policies these are (inverse of ``fault_policy``), or None if none is."""
    for preset in ON_FAULT_PRESETS:
        if policies == fault_policy(preset, max_retry).policies:
            return preset
    return None
