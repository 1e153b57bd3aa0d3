"""Volcano's gang scheduler, reduced to what jobs notice: all-or-nothing placement of a PodGroup.

No pod of a group binds until `minMember` pods fit at once (NPU/CPU/memory, node selectors, required
pod anti-affinity on the hostname). Each bound NPU pod gets concrete device ids, as the Ascend device
plugin's `huawei.com/AscendReal` annotation records them.
"""

from __future__ import annotations

import copy
import time
from collections import Counter
from dataclasses import dataclass, field
from decimal import Decimal
from typing import Any

from ranktable.sim.controllers.common import (
    DEVICES_ANNOTATION,
    GROUP_NAME,
    TASK_INDEX,
    Obj,
    pod_finished,
    pod_requests,
    quantity,
    record_event,
)
from ranktable.sim.controllers.hypernodes import HyperNode
from ranktable.sim.fabric import LEAF_LABEL, NPU_RESOURCE
from ranktable.sim.k8s.resources import NODES, PODGROUPS, PODS
from ranktable.sim.k8s.selectors import match_label_selector
from ranktable.sim.k8s.store import Store, now_rfc3339

EVENT_REPEAT_SECONDS = 10.0


@dataclass
class NodeState:
    name: str
    labels: dict[str, str]
    free: dict[str, Decimal]
    free_devices: list[int]
    pods: list[Obj] = field(default_factory=list)  # pods bound or tentatively placed here


def _term_matches(term: Obj, labels: dict[str, str]) -> bool:
    """One nodeSelectorTerm (its matchExpressions ANDed), as the kube-scheduler's NodeAffinity reads it."""
    for expr in term.get("matchExpressions") or []:
        key, op, values = expr.get("key"), expr.get("operator"), expr.get("values") or []
        present = key in labels
        if op == "In" and not (present and labels[key] in values):
            return False
        if op == "NotIn" and present and labels[key] in values:
            return False
        if (op == "Exists" and not present) or (op == "DoesNotExist" and present):
            return False
    return True


def _devices_of(pod: Obj) -> list[int]:
    text = (pod["metadata"].get("annotations") or {}).get(DEVICES_ANNOTATION, "")
    return [int(part.rsplit("-", 1)[1]) for part in text.split(",") if "-" in part]


def _pod_index(pod: Obj) -> tuple[str, int]:
    labels = pod["metadata"].get("labels") or {}
    try:
        return (labels.get("volcano.sh/task-spec", ""), int(labels.get(TASK_INDEX, "0")))
    except ValueError:
        return (pod["metadata"]["name"], 0)


class Scheduler:
    def __init__(self, store: Store) -> None:
        self.store = store
        self.hypernodes: dict[str, HyperNode] = {}
        self._last_failure: dict[str, tuple[str, float]] = {}

    def _nodes(self) -> dict[str, NodeState]:
        nodes, _ = self.store.list(NODES)
        states: dict[str, NodeState] = {}
        for n in nodes:
            alloc = {k: quantity(v) for k, v in (n.get("status") or {}).get("allocatable", {}).items()}
            npus = int(alloc.get(NPU_RESOURCE, 0))
            if (n.get("spec") or {}).get("unschedulable"):
                continue
            states[n["metadata"]["name"]] = NodeState(
                n["metadata"]["name"], n["metadata"].get("labels") or {}, alloc, list(range(npus))
            )
        pods, _ = self.store.list(PODS)
        for p in pods:
            node = states.get((p.get("spec") or {}).get("nodeName") or "")
            if node is None or pod_finished(p):
                continue
            self._take(node, p, _devices_of(p))
        return states

    @staticmethod
    def _take(node: NodeState, pod: Obj, devices: list[int]) -> None:
        for k, v in pod_requests(pod).items():
            node.free[k] = node.free.get(k, Decimal(0)) - v
        node.free["pods"] = node.free.get("pods", Decimal(110)) - 1
        node.free_devices = [d for d in node.free_devices if d not in devices]
        node.pods.append(pod)

    @staticmethod
    def _why_not(node: NodeState, pod: Obj) -> str | None:
        spec = pod.get("spec") or {}
        for k, v in (spec.get("nodeSelector") or {}).items():
            if node.labels.get(k) != v:
                return "node(s) didn't match Pod's node affinity/selector"
        required = ((spec.get("affinity") or {}).get("nodeAffinity") or {}).get(
            "requiredDuringSchedulingIgnoredDuringExecution"
        )
        if required and not any(
            _term_matches(t, node.labels) for t in required.get("nodeSelectorTerms") or []
        ):
            return "node(s) didn't match Pod's node affinity/selector"
        for k, v in pod_requests(pod).items():
            if v > node.free.get(k, Decimal(0)):
                return f"Insufficient {k}"
        if node.free.get("pods", Decimal(110)) < 1:
            return "Too many pods"
        anti = (spec.get("affinity") or {}).get("podAntiAffinity") or {}
        for term in anti.get("requiredDuringSchedulingIgnoredDuringExecution") or []:
            if term.get("topologyKey") != "kubernetes.io/hostname":
                continue
            namespaces = term.get("namespaces") or [pod["metadata"].get("namespace")]
            for other in node.pods:
                if other["metadata"].get("namespace") in namespaces and match_label_selector(
                    term.get("labelSelector"), other["metadata"].get("labels") or {}
                ):
                    return "node(s) didn't match pod anti-affinity rules"
        return None

    def _place(
        self,
        nodes: dict[str, NodeState],
        pod: Obj,
        allowed: frozenset[str] | None = None,
        spread: Counter[str] | None = None,
    ) -> tuple[str | None, list[int], Counter[str]]:
        """Fit `pod` on a node (of `allowed`, if given). With `spread` (pods of the same gang per leaf)
        the node under the leaf with the fewest of them wins, as a shared pool's scheduler spreads."""
        reasons: Counter[str] = Counter()
        npus = int(pod_requests(pod).get(NPU_RESOURCE, 0))
        fitting: list[NodeState] = []
        for node in nodes.values():
            why = self._why_not(node, pod)
            if why is None and len(node.free_devices) < npus:
                why = f"Insufficient {NPU_RESOURCE}"
            if why is None and allowed is not None and node.name not in allowed:
                why = "node(s) outside the job's network topology domain"
            if why is not None:
                reasons[why] += 1
                continue
            fitting.append(node)
            if spread is None:
                break
        if not fitting:
            return None, [], reasons
        counts = spread if spread is not None else Counter()
        node = min(fitting, key=lambda n: (counts[n.labels.get(LEAF_LABEL, "")], n.name))
        devices = node.free_devices[:npus]
        self._take(node, pod, devices)
        if spread is not None:
            spread[node.labels.get(LEAF_LABEL, "")] += 1
        return node.name, devices, reasons

    def _place_each(
        self,
        nodes: dict[str, NodeState],
        pods: list[Obj],
        allowed: frozenset[str] | None,
        spread: Counter[str],
        *,
        all_or_none: bool,
    ) -> tuple[list[tuple[Obj, str, list[int]]], Counter[str] | None]:
        """Place `pods` one by one (see `_place`): the placements made and the first pod's reasons for
        not fitting (None when all fit). `all_or_none` stops at the first pod that does not fit."""
        placed: list[tuple[Obj, str, list[int]]] = []
        failure: Counter[str] | None = None
        for pod in pods:
            node, devices, reasons = self._place(nodes, pod, allowed, spread)
            if node is None:
                failure = failure or reasons
                if all_or_none:
                    break
                continue
            placed.append((pod, node, devices))
        return placed, failure

    def schedule(self, hypernodes: dict[str, HyperNode] | None = None) -> None:
        self.hypernodes = hypernodes or {}
        pods, _ = self.store.list(PODS)
        groups: dict[tuple[str, str], list[Obj]] = {}
        singles: list[Obj] = []
        for p in pods:
            if p["metadata"].get("deletionTimestamp") or pod_finished(p):
                continue
            group = (p["metadata"].get("annotations") or {}).get(GROUP_NAME)
            if (p.get("spec") or {}).get("schedulerName") != "volcano" or not group:
                if not (p.get("spec") or {}).get("nodeName"):
                    singles.append(p)
                continue
            groups.setdefault((p["metadata"]["namespace"], group), []).append(p)
        for pod in singles:  # the default scheduler: one pod at a time
            nodes = self._nodes()
            node, devices, reasons = self._place(nodes, pod)
            if node is not None:
                self._bind(pod, node, devices)
            else:
                detail = ", ".join(
                    f"{n} {r}" for r, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0]))
                )
                self._report_single(pod, f"0/{len(nodes)} nodes are available: {detail}.")
        for (namespace, group), members in sorted(groups.items()):
            pending = sorted(
                (p for p in members if not (p.get("spec") or {}).get("nodeName")), key=_pod_index
            )
            if not pending:
                continue
            pg = self.store.find(PODGROUPS, namespace, group)
            if pg is None:
                continue
            bound = [p for p in members if (p.get("spec") or {}).get("nodeName")]
            min_member = int((pg.get("spec") or {}).get("minMember", 1))
            self._gang(pg, pending, bound, min_member)

    def _domains(self, pg: Obj, bound: list[Obj]) -> tuple[list[frozenset[str] | None], str]:
        return self._topology_domains((pg.get("spec") or {}).get("networkTopology") or {}, bound)

    def _topology_domains(self, topology: Obj, bound: list[Obj]) -> tuple[list[frozenset[str] | None], str]:
        """Where a gang (or one partition of it) may go: anywhere ([None]), or, with a `networkTopology`,
        inside one HyperNode of tier <= highestTierAllowed, tightest first (hard: only there; soft: else
        anywhere)."""
        if not topology:
            return [None], ""
        highest = topology.get("highestTierAllowed")
        if highest is None and topology.get("highestTierName"):
            named = [
                h for h in self.hypernodes.values() if h.name and h.tier_name == topology["highestTierName"]
            ]
            highest = min((h.tier for h in named), default=1)
        highest = int(highest or 1)
        on = {(p.get("spec") or {}).get("nodeName") for p in bound}
        candidates = sorted(
            (h for h in self.hypernodes.values() if h.tier <= highest and h.nodes and on <= h.nodes),
            key=lambda h: (h.tier, len(h.nodes), h.name),
        )
        domains: list[frozenset[str] | None] = [h.nodes for h in candidates]
        if topology.get("mode", "hard") == "soft":
            domains.append(None)
        why = f"network topology (hard): no HyperNode of tier <= {highest} can hold the gang"
        return domains, why

    def _partitions(
        self, pg: Obj, pending: list[Obj], bound: list[Obj], job_domain: frozenset[str] | None
    ) -> tuple[list[tuple[Obj, str, list[int]]], Counter[str] | None] | None:
        """Volcano's subGroupPolicy (a task's partitionPolicy): each partition (the pods sharing the
        policy's matchLabelKeys values) is placed on its own, inside its own HyperNode when the policy has
        a networkTopology, and all of them inside `job_domain` (the job's own networkTopology). None when
        the PodGroup has no such policy."""
        policies = [p for p in (pg.get("spec") or {}).get("subGroupPolicy") or [] if p.get("networkTopology")]
        if not policies:
            return None

        def key(pod: Obj) -> tuple[int, tuple[str, ...]]:
            labels = pod["metadata"].get("labels") or {}
            for n, policy in enumerate(policies):
                if match_label_selector(policy.get("labelSelector"), labels):
                    return n, tuple(labels.get(k, "") for k in policy.get("matchLabelKeys") or [])
            return -1, ()

        groups: dict[tuple[int, tuple[str, ...]], list[Obj]] = {}
        for pod in pending:
            groups.setdefault(key(pod), []).append(pod)
        nodes = self._nodes()
        plan: list[tuple[Obj, str, list[int]]] = []
        failure: Counter[str] | None = None
        for group_key, pods in sorted(groups.items(), key=lambda kv: kv[0]):
            topology = policies[group_key[0]]["networkTopology"] if group_key[0] >= 0 else {}
            mine = [p for p in bound if key(p) == group_key]
            domains, _ = self._topology_domains(topology, mine)
            for domain in domains:
                allowed = (
                    domain if job_domain is None else (job_domain if domain is None else domain & job_domain)
                )
                trial = copy.deepcopy(nodes)
                placed, missed = self._place_each(trial, pods, allowed, Counter(), all_or_none=True)
                failure = failure or missed
                if len(placed) == len(pods):
                    nodes, plan = trial, plan + placed
                    break
        return plan, failure

    def _gang(self, pg: Obj, pending: list[Obj], bound: list[Obj], min_member: int) -> None:
        total = len(self._nodes())
        domains, topology_reason = self._domains(pg, bound)
        plan: list[tuple[Obj, str, list[int]]] = []
        failure: Counter[str] | None = None
        partitioned = None
        for job_domain in domains:  # a job's networkTopology holds all its partitions together
            partitioned = self._partitions(pg, pending, bound, job_domain)
            if partitioned is None or len(bound) + len(partitioned[0]) >= min_member:
                break
        if partitioned is not None:
            plan, failure = partitioned
            domains = []
        for allowed in domains:
            nodes = self._nodes()
            spread: Counter[str] = Counter(
                nodes[n].labels.get(LEAF_LABEL, "") if n in nodes else ""
                for n in ((p.get("spec") or {}).get("nodeName") for p in bound)
            )
            plan, failure = self._place_each(nodes, pending, allowed, spread, all_or_none=False)
            if len(bound) + len(plan) >= min_member:
                break
        if len(bound) + len(plan) < min_member:
            reasons = failure or Counter()
            detail = ", ".join(f"{n} {r}" for r, n in sorted(reasons.items(), key=lambda kv: (-kv[1], kv[0])))
            if partitioned is None and (not domains or (topology_reason and None not in domains)):
                detail = f"{detail}; {topology_reason}" if detail else topology_reason
            message = (
                f"0/{total} nodes are available: {detail}." if detail else f"0/{total} nodes are available."
            )
            self._report(pg, pending, message, len(bound) + len(plan), min_member)
            return
        self._last_failure.pop(pg["metadata"]["uid"], None)
        for pod, node, devices in plan:
            self._bind(pod, node, devices)
        self._set_pg_phase(pg, "Inqueue" if pg.get("status", {}).get("phase") in (None, "Pending") else None)

    def _report(self, pg: Obj, pending: list[Obj], message: str, ready: int, min_member: int) -> None:
        key = pg["metadata"]["uid"]
        last = self._last_failure.get(key)
        now = time.monotonic()
        if last is not None and last[0] == message and now - last[1] < EVENT_REPEAT_SECONDS:
            return
        self._last_failure[key] = (message, now)
        for pod in pending:
            record_event(self.store, pod, "FailedScheduling", message, "Warning", "volcano")

            def unschedulable(p: Obj, msg: str = message) -> None:
                conds = [
                    c
                    for c in (p.setdefault("status", {}).get("conditions") or [])
                    if c["type"] != "PodScheduled"
                ]
                conds.append(
                    {
                        "type": "PodScheduled",
                        "status": "False",
                        "reason": "Unschedulable",
                        "message": msg,
                        "lastTransitionTime": now_rfc3339(),
                    }
                )
                p["status"]["conditions"] = conds
                p["status"].setdefault("phase", "Pending")

            self.store.mutate(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"], unschedulable)
        gang_message = f"{min_member - ready}/{len(pending)} tasks in gang unschedulable: {message}"
        record_event(self.store, pg, "Unschedulable", gang_message, "Warning", "volcano")

        def pg_status(obj: Obj) -> None:
            status = obj.setdefault("status", {})
            status["phase"] = status.get("phase") or "Pending"
            status["conditions"] = [
                {
                    "type": "Unschedulable",
                    "status": "True",
                    "reason": "NotEnoughResources",
                    "message": gang_message,
                    "transitionID": key,
                    "lastTransitionTime": now_rfc3339(),
                }
            ]

        self.store.mutate(PODGROUPS, pg["metadata"]["namespace"], pg["metadata"]["name"], pg_status)

    def _report_single(self, pod: Obj, message: str) -> None:
        key = pod["metadata"]["uid"]
        last = self._last_failure.get(key)
        if last is not None and last[0] == message and time.monotonic() - last[1] < EVENT_REPEAT_SECONDS:
            return
        self._last_failure[key] = (message, time.monotonic())
        record_event(self.store, pod, "FailedScheduling", message, "Warning", "default-scheduler")

    def _set_pg_phase(self, pg: Obj, phase: str | None) -> None:
        if phase is None:
            return

        def update(obj: Obj) -> None:
            obj.setdefault("status", {})["phase"] = phase
            obj["status"]["conditions"] = [
                {
                    "type": "Scheduled",
                    "status": "True",
                    "reason": "tasks in gang are ready to be scheduled",
                    "lastTransitionTime": now_rfc3339(),
                }
            ]

        self.store.mutate(PODGROUPS, pg["metadata"]["namespace"], pg["metadata"]["name"], update)

    def _bind(self, pod: Obj, node: str, devices: list[int]) -> None:
        def bind(p: Obj) -> None:
            if (p.get("spec") or {}).get("nodeName"):
                return
            p["spec"]["nodeName"] = node
            if devices:
                p["metadata"].setdefault("annotations", {})[DEVICES_ANNOTATION] = ",".join(
                    f"Ascend910-{d}" for d in devices
                )
            status = p.setdefault("status", {})
            status["phase"] = "Pending"
            conds = [c for c in status.get("conditions") or [] if c["type"] != "PodScheduled"]
            conds.append({"type": "PodScheduled", "status": "True", "lastTransitionTime": now_rfc3339()})
            status["conditions"] = conds

        bound = self.store.mutate(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"], bind)
        if bound is not None:
            record_event(
                self.store,
                bound,
                "Scheduled",
                f"Successfully assigned {pod['metadata']['namespace']}/{pod['metadata']['name']} to {node}",
                "Normal",
                "volcano",
            )


def pods_of_group(pods: list[Obj], group: str) -> list[Obj]:
    return [p for p in pods if (p["metadata"].get("annotations") or {}).get(GROUP_NAME) == group]


__all__: list[Any] = ["Scheduler", "pods_of_group"]
