"""The Ascend device plugin's part: concrete NPU ids for a pod, recorded as `huawei.com/AscendReal`.

The Python pool's scheduler picks them at bind time; on a real control plane the virtual kubelet picks
them before it starts the pod, as the device plugin does at container creation.
"""

from __future__ import annotations

from ranktable.sim.controllers.common import DEVICES_ANNOTATION, Obj, pod_finished, pod_requests
from ranktable.sim.controllers.faults import faults_of
from ranktable.sim.fabric import NPU_RESOURCE


def devices_of(pod: Obj) -> list[int]:
    text = (pod["metadata"].get("annotations") or {}).get(DEVICES_ANNOTATION, "")
    return [int(part.rsplit("-", 1)[1]) for part in text.split(",") if "-" in part]


def annotation_value(devices: list[int]) -> str:
    return ",".join(f"Ascend910-{d}" for d in devices)


def npus_requested(pod: Obj) -> int:
    return int(pod_requests(pod).get(NPU_RESOURCE, 0))


def allocate(pod: Obj, node: Obj, pods_on_node: list[Obj]) -> list[int] | None:
    """The lowest free healthy device ids of `node` for `pod`, or None when they are not free (yet)."""
    wanted = npus_requested(pod)
    status = node.get("status") or {}
    capacity = int((status.get("capacity") or status.get("allocatable") or {}).get(NPU_RESOURCE, 0) or 0)
    faults = faults_of(node)
    if faults.node:
        return None
    used = {
        d
        for p in pods_on_node
        if p["metadata"].get("uid") != pod["metadata"].get("uid") and not pod_finished(p)
        for d in devices_of(p)
    }
    used |= faults.unhealthy | faults.network  # the Ascend plugin never hands out a faulty NPU
    free = [d for d in range(capacity) if d not in used]
    return free[:wanted] if len(free) >= wanted else None
