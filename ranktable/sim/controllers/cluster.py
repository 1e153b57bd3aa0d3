"""The objects a fresh pool starts with: namespaces, the default queue, nodes, and the topology views.

The same fabric is published three ways (node labels, HyperNodes, MindCluster's `basic-tor-node-cm`)
so every topology loader of the product has something true to read.
"""

from __future__ import annotations

import json
from typing import Any

from ranktable.plan.forecast import (
    NODE_CHOICE_ANNOTATION,
    SCHEDULER_CONF_KEY,
    SCHEDULER_CONFIGMAP,
    SCHEDULER_NAMESPACE,
    SPREAD_BY_LEAF,
)
from ranktable.sim.fabric import LEAF_LABEL, NPU_LABEL, NPU_RESOURCE, SPINE_LABEL, SimNode
from ranktable.sim.k8s.resources import BY_KEY
from ranktable.sim.k8s.store import Store, now_rfc3339

Obj = dict[str, Any]
TOR_IP_ANNOTATION = "topology.ranktable.io/tor-ip"
OVERSUBSCRIPTION_ANNOTATION = "topology.ranktable.io/oversubscription"
SCHEDULER_CONF = """\
actions: "enqueue, allocate, backfill"
tiers:
- plugins:
  - name: priority
  - name: gang
    enablePreemptable: false
  - name: conformance
- plugins:
  - name: overcommit
  - name: drf
    enablePreemptable: false
  - name: predicates
  - name: proportion
  - name: nodeorder
  - name: binpack
  - name: network-topology-aware
"""
LEAF_OVERSUBSCRIPTION = "4"  # the uplink share one job gets in a shared pool (docs/simulated-pool.md)
INDEX_ANNOTATION = "topology.ranktable.io/index"


def node_object(node: SimNode) -> Obj:
    flav = node.flavour
    capacity = {
        "cpu": str(flav.cpu),
        "memory": f"{flav.memory_gi}Gi",
        "pods": "110",
        NPU_RESOURCE: str(flav.npus),
        "ephemeral-storage": "3Ti",
    }
    labels = {
        "kubernetes.io/hostname": node.name,
        "kubernetes.io/os": "linux",
        "kubernetes.io/arch": "arm64",
        NPU_LABEL: "ascend-1980",
        "node.kubernetes.io/instance-type": flav.name,
        LEAF_LABEL: node.leaf,
    }
    if node.spine:
        labels[SPINE_LABEL] = node.spine
    now = now_rfc3339()
    return {
        "metadata": {
            "name": node.name,
            "labels": labels,
            "annotations": {
                TOR_IP_ANNOTATION: node.tor_ip,
                INDEX_ANNOTATION: str(node.index),
                "topology.ranktable.io/slot": str(node.slot),
            },
        },
        "spec": {},
        "status": {
            "capacity": capacity,
            "allocatable": dict(capacity),
            "addresses": [
                {"type": "InternalIP", "address": node.ip},
                {"type": "Hostname", "address": node.name},
            ],
            "conditions": [
                {
                    "type": "Ready",
                    "status": "True",
                    "reason": "KubeletReady",
                    "message": "kubelet is posting ready status",
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            ],
            "nodeInfo": {
                "kubeletVersion": "v1.32.4+ranktable-sim",
                "kubeProxyVersion": "v1.32.4+ranktable-sim",
                "osImage": "EulerOS 2.0 (simulated)",
                "kernelVersion": "5.10.0-sim",
                "architecture": "arm64",
                "operatingSystem": "linux",
                "containerRuntimeVersion": "sim://local-processes",
                "bootID": f"boot-{node.index}",
                "machineID": f"{node.index:032x}",
                "systemUUID": f"00000000-0000-0000-0000-{node.index:012x}",
            },
        },
    }


def hypernode_objects(nodes: list[SimNode]) -> list[Obj]:
    leaves: dict[str, list[str]] = {}
    spines: dict[str, list[str]] = {}
    for n in nodes:
        leaves.setdefault(n.leaf, []).append(n.name)
        if n.spine and n.leaf not in spines.setdefault(n.spine, []):
            spines[n.spine].append(n.leaf)
    out = []
    for leaf, members in leaves.items():
        out.append(
            {
                "metadata": {
                    "name": leaf,
                    "annotations": {OVERSUBSCRIPTION_ANNOTATION: LEAF_OVERSUBSCRIPTION},
                },
                "spec": {
                    "tier": 1,
                    "tierName": "leaf",
                    "members": [{"type": "Node", "selector": {"exactMatch": {"name": m}}} for m in members],
                },
                "status": {"nodeCount": len(members)},
            }
        )
    for spine, members in spines.items():
        count = sum(len(leaves[m]) for m in members)
        out.append(
            {
                "metadata": {"name": spine},
                "spec": {
                    "tier": 2,
                    "tierName": "spine",
                    "members": [
                        {"type": "HyperNode", "selector": {"exactMatch": {"name": m}}} for m in members
                    ],
                },
                "status": {"nodeCount": count},
            }
        )
    return out


def tor_node_configmap(nodes: list[SimNode]) -> Obj:
    """MindCluster's `basic-tor-node-cm` (kube-system): ToRs with their servers' IPs and slices."""
    tors: dict[int, dict[str, Any]] = {}
    for n in nodes:
        tor = tors.setdefault(n.leaf_index, {"tor_id": n.leaf_index, "tor_ip": n.tor_ip, "server": []})
        tor["server"].append({"server_ip": n.ip, "npu_count": n.flavour.npus, "slice_id": n.slot})
    per_tor = max((len(t["server"]) for t in tors.values()), default=0)  # MindCluster: servers per ToR
    info = {"version": "1.0", "tor_count": per_tor, "server_list": [tors[k] for k in sorted(tors)]}
    return {
        "metadata": {"name": "basic-tor-node-cm", "namespace": "kube-system"},
        "data": {
            "tor_info": json.dumps(info, indent=2),
            "tor_level": "double_layer" if any(n.spine for n in nodes) else "single_layer",
        },
    }


TENANT_NAMESPACE = "tenant-b"


def scheduler_configmap(node_choice: str | None) -> Obj:
    """Volcano's scheduler configuration as its Helm chart publishes it; the simulated pool's copy says
    how it picks among equal nodes (plan/forecast.py), so the layout preview can predict it."""
    annotations = {NODE_CHOICE_ANNOTATION: node_choice} if node_choice else {}
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": SCHEDULER_CONFIGMAP,
            "namespace": SCHEDULER_NAMESPACE,
            "annotations": annotations,
        },
        "data": {SCHEDULER_CONF_KEY: SCHEDULER_CONF},
    }


def tenant_nodes(nodes: list[SimNode], tenants: int) -> list[SimNode]:
    """Which nodes other tenants hold: spread evenly over the pool (never the first node)."""
    if tenants <= 0 or not nodes:
        return []
    step = len(nodes) / tenants
    return [nodes[(1 + int(i * step)) % len(nodes)] for i in range(min(tenants, len(nodes)))]


def tenant_pod(node: SimNode, index: int) -> Obj:
    """A pod of another tenant's long training job, bound to `node`, holding all its NPUs."""
    npus = str(node.flavour.npus)
    return {
        "metadata": {
            "name": f"pretrain-70b-worker-{index}",
            "namespace": TENANT_NAMESPACE,
            "labels": {"app": "pretrain-70b", "volcano.sh/queue-name": "default"},
        },
        "spec": {
            "nodeName": node.name,
            "schedulerName": "volcano",
            "restartPolicy": "Always",
            "terminationGracePeriodSeconds": 0,
            "containers": [
                {
                    "name": "main",
                    "image": "swr.cn-southwest-2.myhuaweicloud.com/other-team/pretrain:2.1",
                    "command": ["sleep", "2147483647"],
                    "resources": {"requests": {NPU_RESOURCE: npus}, "limits": {NPU_RESOURCE: npus}},
                }
            ],
        },
        "status": {"phase": "Pending"},
    }


def bootstrap(store: Store, nodes: list[SimNode], tenants: int = 0, namespaces: tuple[str, ...] = ()) -> None:
    """Create the pool's fixed objects (skipping any a restored state already has); `tenants` nodes
    are held by another team's running job, as in a shared pool; `namespaces`: the team members' own."""

    def ensure(key: str, obj: Obj) -> None:
        rtype = BY_KEY[key]
        if store.find(rtype, obj["metadata"].get("namespace"), obj["metadata"]["name"]) is None:
            store.create(rtype, obj)

    spaces = ["default", "kube-system", "kube-public", "volcano-system"]
    for ns in spaces + ([TENANT_NAMESPACE] if tenants else []) + list(namespaces):
        ensure(
            "namespaces",
            {
                "metadata": {"name": ns, "labels": {"kubernetes.io/metadata.name": ns}},
                "spec": {"finalizers": ["kubernetes"]},
                "status": {"phase": "Active"},
            },
        )
    ensure(
        "scheduling.volcano.sh/queues",
        {
            "metadata": {"name": "default"},
            "spec": {"weight": 1, "reclaimable": True},
            "status": {"state": "Open"},
        },
    )
    for node in nodes:
        ensure("nodes", node_object(node))
    for hn in hypernode_objects(nodes):
        ensure("topology.volcano.sh/hypernodes", hn)
    ensure("configmaps", tor_node_configmap(nodes))
    ensure("configmaps", scheduler_configmap(SPREAD_BY_LEAF))
    for index, node in enumerate(tenant_nodes(nodes, tenants)):
        ensure("pods", tenant_pod(node, index))
