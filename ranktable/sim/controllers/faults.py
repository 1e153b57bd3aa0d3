"""NPU, link and node faults in a simulated pool, published the way Ascend pools publish them.

MindCluster's device plugin writes one ConfigMap per node, `mindx-dl-deviceinfo-<node>` in kube-system
(key `DeviceInfoCfg`: `DeviceInfo.DeviceList` with the `-Unhealthy`, `-NetworkUnhealthy` and `-Fault`
entries), NodeD writes `mindx-dl-nodeinfo-<node>` in mindx-dl (`NodeInfo`: `FaultDevList`, `NodeStatus`),
and both raise Warning events (reason `Occur`, then `Recovery`). Volcano's Ascend plugin then keeps the
unhealthy NPUs (and an unhealthy node) out of scheduling. Facts and sources: docs/simulated-pool.md.

Here the same objects are written through the API (so both control planes see them), the node's
allocatable NPUs drop by the unhealthy ones, a node fault cordons the node (`spec.unschedulable`, which
Volcano's predicates honour), and the kubelet fails the pods that use a faulty NPU with the lines a real
fault prints (`fault_lines`).
"""

from __future__ import annotations

import json
import time
from dataclasses import dataclass
from typing import Any

from ranktable.errors import InputError
from ranktable.sim.controllers.api import ObjectStore
from ranktable.sim.controllers.common import Obj, record_event
from ranktable.sim.fabric import NPU_RESOURCE
from ranktable.sim.k8s import errors
from ranktable.sim.k8s.resources import CONFIGMAPS, NAMESPACES, NODES

DEVICE_NAMESPACE = "kube-system"
NODE_NAMESPACE = "mindx-dl"
DEVICE_KEY = "DeviceInfoCfg"
NODE_KEY = "NodeInfo"
CHIP = "huawei.com/Ascend910"
UNHEALTHY_ANNOTATION = f"{CHIP}-Unhealthy"  # also a node annotation, as pre-2023 device plugins wrote it
NETWORK_ANNOTATION = f"{CHIP}-NetworkUnhealthy"
NODE_FAULT_ANNOTATION = "ranktable.sim/node-fault"  # the NodeD fault the kubelet acts on
CAPACITY_ANNOTATION = "ranktable.sim/npu-capacity"  # the NPU count before faults, restored on repair
KINDS = ("npu", "link", "node")
# fault_type and the level the device plugin gives each kind (MindCluster api/ascend_device_plugin.md)
FAULT_TYPES = {"npu": "CardUnhealthy", "link": "CardNetworkUnhealthy", "node": "NodeUnhealthy"}
FAULT_CODES = {"npu": "80E18005", "link": "81078603", "node": "NodeHeartbeatLost"}  # 81078603: link Up->Down


@dataclass(frozen=True)
class NodeFaults:
    """What is wrong with one node, as the kubelet and the scheduler need it."""

    unhealthy: frozenset[int]  # NPU ids whose chip is faulty
    network: frozenset[int]  # NPU ids whose RoCE link is down
    node: bool  # the whole node (NodeD: UnHealthy)

    def hits(self, devices: list[int]) -> list[int]:
        """The devices of a pod that a fault stops (all of them when the node is down)."""
        if self.node:
            return devices
        return [d for d in devices if d in self.unhealthy or d in self.network]

    def kind_of(self, device: int) -> str:
        if self.node:
            return "node"
        return "npu" if device in self.unhealthy else "link"


NO_FAULTS = NodeFaults(frozenset(), frozenset(), False)


def _ids(text: str) -> frozenset[int]:
    return frozenset(int(p.rsplit("-", 1)[1]) for p in text.split(",") if p.rsplit("-", 1)[-1].isdigit())


def _names(ids: frozenset[int]) -> str:
    return ",".join(f"Ascend910-{d}" for d in sorted(ids))


def faults_of(node: Obj) -> NodeFaults:
    """A node's faults, from the annotations `inject` keeps on it (read by the kubelet every pass)."""
    notes = (node.get("metadata") or {}).get("annotations") or {}
    return NodeFaults(
        _ids(notes.get(UNHEALTHY_ANNOTATION, "")),
        _ids(notes.get(NETWORK_ANNOTATION, "")),
        notes.get(NODE_FAULT_ANNOTATION) == "true",
    )


def fault_lines(kind: str, device: int, rank: int | None, pid: int, when: float | None = None) -> list[str]:
    """What a training process prints when its NPU, its link or its node fails (torch_npu and CANN
    formats: MindCluster ascend-faultdiag kg-config.json; vllm-ascend#486; LlamaFactory#3839)."""
    stamp = time.strftime("%Y-%m-%d-%H:%M:%S", time.localtime(when or time.time()))
    rank_text = "" if rank is None else f", RankID:{rank}"
    head = f"[ERROR] {stamp} (PID:{pid}, Device:{device}{rank_text})"
    if kind == "link":
        cause = [
            f"[devid {device}]    {stamp}    LINK DOWN",
            f"[ERROR] HCCL({pid},python):{stamp} [Heartbeat]cqe err status: device {device} RoCE link down",
        ]
    else:
        cause = [f"[ERROR] RUNTIME({pid},python):{stamp} Device[{device}] lost heartbeat."]
    return [
        *cause,
        f"{head} ERR02200 DIST call hccl api failed.",
        "RuntimeError: [ERROR] HCCL error in: torch_npu/csrc/distributed/ProcessGroupHCCL.cpp:1820",
    ]


def _ensure_namespace(store: ObjectStore, name: str) -> None:
    if store.find(NAMESPACES, None, name) is None:
        try:
            store.create(NAMESPACES, {"metadata": {"name": name}})
        except errors.ApiError as exc:
            if exc.code != 409:
                raise


def _put(store: ObjectStore, namespace: str, name: str, data: dict[str, str]) -> None:
    def update(cm: Obj) -> None:
        cm["data"] = data

    if store.mutate(CONFIGMAPS, namespace, name, update) is None:
        store.create(CONFIGMAPS, {"metadata": {"name": name, "namespace": namespace}, "data": data})


def _npu_count(node: Obj) -> int:
    notes = node["metadata"].get("annotations") or {}
    if CAPACITY_ANNOTATION in notes:
        return int(notes[CAPACITY_ANNOTATION])
    return int(((node.get("status") or {}).get("capacity") or {}).get(NPU_RESOURCE, 0) or 0)


def _publish(store: ObjectStore, node: Obj, faults: NodeFaults, kind: str, device: int | None) -> None:
    """The device plugin's and NodeD's ConfigMaps for `node` as `faults` say."""
    name, total = node["metadata"]["name"], _npu_count(node)
    bad = faults.unhealthy | faults.network | (frozenset(range(total)) if faults.node else frozenset())
    now = int(time.time())
    entries = [
        {
            "fault_type": FAULT_TYPES[faults.kind_of(d)],
            "npu_name": f"Ascend910-{d}",
            "fault_level": "SeparateNPU",
            "fault_handling": "SeparateNPU",
            "fault_code": FAULT_CODES[faults.kind_of(d)],
            "fault_time_and_level_map": {FAULT_CODES[faults.kind_of(d)]: {"fault_time": now * 1000}},
        }
        for d in sorted(bad)
    ]
    device_list = {
        CHIP: _names(frozenset(range(total)) - bad),
        UNHEALTHY_ANNOTATION: _names(faults.unhealthy | (bad if faults.node else frozenset())),
        NETWORK_ANNOTATION: _names(faults.network),
        f"{CHIP}-Recovering": "",
        f"{CHIP}-Fault": json.dumps(entries),
    }
    info = {"DeviceInfo": {"DeviceList": device_list, "UpdateTime": now}, "CheckCode": ""}
    _put(store, DEVICE_NAMESPACE, f"mindx-dl-deviceinfo-{name}", {DEVICE_KEY: json.dumps(info)})
    status = "UnHealthy" if faults.node else ("Healthy" if not bad else "PreSeparate")
    node_info = {
        "NodeInfo": {
            "FaultDevList": [
                {
                    "DeviceType": "NPU",
                    "DeviceId": d,
                    "FaultCode": [FAULT_CODES[faults.kind_of(d)]],
                    "FaultLevel": "SeparateFault",
                }
                for d in sorted(bad)
            ],
            "NodeStatus": status,
        },
        "CheckCode": "",
    }
    _put(store, NODE_NAMESPACE, f"mindx-dl-nodeinfo-{name}", {NODE_KEY: json.dumps(node_info)})


def inject(store: ObjectStore, node_name: str, kind: str, npu: int | None = None) -> NodeFaults:
    """Mark an NPU, its link or the whole node faulty; returns the node's faults now."""
    if kind not in KINDS:
        raise InputError(f"unknown fault kind {kind!r}", where="--kind", fix="use npu, link or node")
    node = store.find(NODES, None, node_name)
    if node is None:
        raise InputError(f"no node {node_name!r} in the pool", where="NODE", fix="see `kubectl get nodes`")
    total = _npu_count(node)
    if kind != "node":
        if npu is None:
            raise InputError(f"a {kind} fault needs the NPU", where="--npu", fix=f"give 0..{total - 1}")
        if not 0 <= npu < total:
            raise InputError(f"NPU {npu} is not on {node_name}", where="--npu", fix=f"give 0..{total - 1}")
    before = faults_of(node)
    after = NodeFaults(
        before.unhealthy | ({npu} if kind == "npu" and npu is not None else set()),
        before.network | ({npu} if kind == "link" and npu is not None else set()),
        before.node or kind == "node",
    )
    _apply(store, node_name, total, after)
    _ensure_namespace(store, NODE_NAMESPACE)
    refreshed = store.find(NODES, None, node_name) or node
    _publish(store, refreshed, after, kind, npu)
    what = f"NPU {npu} ({FAULT_TYPES[kind]})" if kind != "node" else "the node (NodeUnhealthy)"
    record_event(
        store,
        refreshed,
        "Occur",
        f"fault on {what}, code {FAULT_CODES[kind]}, level SeparateNPU",
        "Warning",
        "ascend-device-plugin",
    )
    return after


def repair(store: ObjectStore, node_name: str) -> NodeFaults:
    """Clear every fault of a node: it schedules again with all its NPUs; returns what was cleared."""
    node = store.find(NODES, None, node_name)
    if node is None:
        raise InputError(f"no node {node_name!r} in the pool", where="NODE", fix="see `kubectl get nodes`")
    before = faults_of(node)
    total = _npu_count(node)
    _apply(store, node_name, total, NO_FAULTS)
    _ensure_namespace(store, NODE_NAMESPACE)
    refreshed = store.find(NODES, None, node_name) or node
    _publish(store, refreshed, NO_FAULTS, "npu", None)
    if before != NO_FAULTS:
        record_event(store, refreshed, "Recovery", "all NPUs healthy again", "Normal", "ascend-device-plugin")
    return before


def _apply(store: ObjectStore, node_name: str, total: int, faults: NodeFaults) -> None:
    """The node as Volcano's Ascend plugin sees it: fewer allocatable NPUs, cordoned when it is down."""

    def update(node: Obj) -> None:
        meta = node["metadata"]
        notes = dict(meta.get("annotations") or {})
        for key, ids in ((UNHEALTHY_ANNOTATION, faults.unhealthy), (NETWORK_ANNOTATION, faults.network)):
            if ids:
                notes[key] = _names(ids)
            else:
                notes.pop(key, None)
        if faults.node:
            notes[NODE_FAULT_ANNOTATION] = "true"
        else:
            notes.pop(NODE_FAULT_ANNOTATION, None)
        notes[CAPACITY_ANNOTATION] = str(total)
        meta["annotations"] = notes
        spec: dict[str, Any] = node.setdefault("spec", {})
        if faults.node:
            spec["unschedulable"] = True
        else:
            spec.pop("unschedulable", None)
        healthy = 0 if faults.node else total - len(faults.unhealthy | faults.network)
        status = node.setdefault("status", {})
        status.setdefault("allocatable", {})[NPU_RESOURCE] = str(healthy)

    store.mutate(NODES, None, node_name, update)
