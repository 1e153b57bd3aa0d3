"""Plain-language hints for the events a ranktable job produces, and the free-NPU picture behind them.

Volcano's "0/8 nodes are available: 8 Insufficient huawei.com/ascend-1980" does not say what would fit;
these hints count free NPUs per node and per leaf so the user sees why and what to change.
"""

from __future__ import annotations

from collections import defaultdict
from dataclasses import dataclass, field
from typing import Any

from ranktable.compose.names import NPU_RESOURCE

ENDED_PHASES = ("Succeeded", "Failed")


@dataclass
class NpuCapacity:
    """Free NPUs per node (allocatable minus requests of pods bound there) and per leaf."""

    per_node: dict[str, int] = field(default_factory=dict)
    total_per_node: dict[str, int] = field(default_factory=dict)
    node_leaf: dict[str, str] = field(default_factory=dict)

    @property
    def per_leaf(self) -> dict[str, int]:
        out: dict[str, int] = defaultdict(int)
        for node, free in self.per_node.items():
            out[self.node_leaf.get(node, "?")] += free
        return dict(sorted(out.items()))

    def nodes_with(self, npus: int) -> list[str]:
        return sorted(n for n, free in self.per_node.items() if free >= npus)

    def to_json(self) -> dict[str, Any]:
        return {"per_node": self.per_node, "per_leaf": self.per_leaf, "node_leaf": self.node_leaf}


def _npus(resources: dict[str, Any] | None) -> int:
    value = (resources or {}).get(NPU_RESOURCE)
    try:
        return int(str(value)) if value is not None else 0
    except ValueError:
        return 0


def npu_capacity(
    nodes: list[dict[str, Any]], pods: list[dict[str, Any]], node_leaf: dict[str, str]
) -> NpuCapacity:
    used: dict[str, int] = defaultdict(int)
    for pod in pods:
        node = (pod.get("spec") or {}).get("nodeName")
        if not node or (pod.get("status") or {}).get("phase") in ENDED_PHASES:
            continue
        for container in (pod.get("spec") or {}).get("containers") or []:
            used[node] += _npus((container.get("resources") or {}).get("requests"))
    cap = NpuCapacity(node_leaf=dict(node_leaf))
    for node in nodes:
        name = str((node.get("metadata") or {}).get("name"))
        total = _npus((node.get("status") or {}).get("allocatable"))
        if total:
            cap.total_per_node[name] = total
            cap.per_node[name] = max(total - used[name], 0)
    return cap


def _short(items: dict[str, int], limit: int = 12) -> str:
    parts = [f"{k} {v}" for k, v in items.items()]
    more = f", ... ({len(parts) - limit} more)" if len(parts) > limit else ""
    return ", ".join(parts[:limit]) + more


def event_hint(
    event: dict[str, Any], *, nodes: int, npus_per_pod: int, capacity: NpuCapacity | None, image: str = ""
) -> str:
    """A one-paragraph explanation and fix for a known event, else ''."""
    reason = str(event.get("reason") or "")
    message = str(event.get("message") or "")
    if reason in ("FailedScheduling", "Unschedulable", "PodGroupPending") or "Insufficient" in message:
        if f"Insufficient {NPU_RESOURCE}" in message and capacity is not None:
            fits = capacity.nodes_with(npus_per_pod)
            return (
                f"the job needs {nodes} pod(s) x {npus_per_pod} NPUs, each on its own node, all at once "
                f"(gang scheduling); {len(fits)} node(s) have {npus_per_pod} free. Free NPUs per node: "
                f"{_short(capacity.per_node)}; per leaf: {_short(capacity.per_leaf)}. Fix: use at most "
                f"{len(fits)} node(s), or wait for running jobs to end (`ranktable job list`)."
            )
        if "Insufficient cpu" in message or "Insufficient memory" in message:
            return "the CPU/memory request is more than a node has free; lower cpu/memory (they are per pod)."
        if "anti-affinity" in message:
            return (
                f"each pod needs its own server (pod anti-affinity) and {nodes} are needed; "
                "fewer servers are free or match the node selector."
            )
        if "node affinity" in message or "node selector" in message or "nodeSelector" in message:
            return (
                "no node has every label in the node selector; "
                "check node_selector against `kubectl get nodes --show-labels`."
            )
        if "queue" in message.lower():
            return "the queue is missing or closed; use an open queue (vcctl queue list) or 'default'."
    if reason in ("ErrImagePull", "ImagePullBackOff") or "Failed to pull image" in message:
        return f"image {image or '(the image)'} cannot be pulled; check its name, tag and registry access."
    if reason == "BackOff" and "restarting failed container" in message:
        return "the training container keeps exiting with an error; see `ranktable job logs NAME`."
    if reason == "FailedMount":
        return "a volume could not be mounted; check hostPath/PVC/NFS sources exist on the node."
    if reason in ("Evicted", "PodEvicted"):
        return (
            "a pod was evicted; the PodEvicted -> RestartJob policy restarts every pod (counted in retries)."
        )
    return ""
