"""Small shared pieces of the controllers: quantities, owner references, events."""

from __future__ import annotations

import contextlib
import hashlib
import re
from decimal import Decimal
from typing import TYPE_CHECKING, Any

from ranktable.sim.k8s import errors
from ranktable.sim.k8s.resources import BY_KEY, ResourceType
from ranktable.sim.k8s.store import now_rfc3339

if TYPE_CHECKING:
    from ranktable.sim.controllers.api import ObjectStore

Obj = dict[str, Any]

_SUFFIX: dict[str, Decimal | int] = {
    "Ki": 2**10,
    "Mi": 2**20,
    "Gi": 2**30,
    "Ti": 2**40,
    "Pi": 2**50,
    "Ei": 2**60,
    "n": Decimal("1e-9"),
    "u": Decimal("1e-6"),
    "m": Decimal("1e-3"),
    "": 1,
    "k": 10**3,
    "M": 10**6,
    "G": 10**9,
    "T": 10**12,
    "P": 10**15,
    "E": 10**18,
}
_QUANTITY = re.compile(r"^([+-]?[0-9.]+(?:[eE][+-]?[0-9]+)?)(Ki|Mi|Gi|Ti|Pi|Ei|n|u|m|k|M|G|T|P|E)?$")

JOB_NAME = "volcano.sh/job-name"
TASK_SPEC = "volcano.sh/task-spec"
TASK_INDEX = "volcano.sh/task-index"
PARTITION_ID = "volcano.sh/partition-id"  # a pod's partition: index // partitionSize
JOB_VERSION = "volcano.sh/job-version"
GROUP_NAME = "scheduling.k8s.io/group-name"
DEVICES_ANNOTATION = "huawei.com/AscendReal"


def quantity(value: Any) -> Decimal:
    """A Kubernetes quantity as a number ("500m" -> 0.5, "4Gi" -> 4294967296); bad text -> 0."""
    m = _QUANTITY.match(str(value).strip())
    if not m:
        return Decimal(0)
    return Decimal(m.group(1)) * Decimal(_SUFFIX[m.group(2) or ""])


def pod_requests(pod: Obj) -> dict[str, Decimal]:
    total: dict[str, Decimal] = {}
    for c in (pod.get("spec") or {}).get("containers") or []:
        res = c.get("resources") or {}
        req = dict(res.get("limits") or {})
        req.update(res.get("requests") or {})
        for k, v in req.items():
            total[k] = total.get(k, Decimal(0)) + quantity(v)
    return total


def pod_finished(pod: Obj) -> bool:
    return (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed")


def owner_reference(owner: Obj, controller: bool = True) -> Obj:
    return {
        "apiVersion": owner["apiVersion"],
        "kind": owner["kind"],
        "name": owner["metadata"]["name"],
        "uid": owner["metadata"]["uid"],
        "controller": controller,
        "blockOwnerDeletion": True,
    }


def record_event(
    store: ObjectStore,
    involved: Obj,
    reason: str,
    message: str,
    type_: str = "Normal",
    component: str = "volcano",
) -> None:
    """Create or bump (count + 1) an Event, keyed like the real recorder by object, reason and message."""
    meta = involved["metadata"]
    namespace = meta.get("namespace") or "default"
    key = f"{meta.get('uid')}{reason}{message}".encode()
    digest = hashlib.sha1(key, usedforsecurity=False).hexdigest()[:12]
    name = f"{meta['name']}.{digest}"
    rtype = BY_KEY["events"]
    now = now_rfc3339()

    def bump(ev: Obj) -> None:
        ev["count"] = int(ev.get("count", 1)) + 1
        ev["lastTimestamp"] = now

    if store.mutate(rtype, namespace, name, bump) is not None:
        return
    with contextlib.suppress(errors.ApiError):  # another thread recorded it first, or the namespace went
        _create_event(store, rtype, namespace, name, involved, reason, message, type_, component, now)


def _create_event(
    store: ObjectStore,
    rtype: ResourceType,
    namespace: str,
    name: str,
    involved: Obj,
    reason: str,
    message: str,
    type_: str,
    component: str,
    now: str,
) -> None:
    meta = involved["metadata"]
    store.create(
        rtype,
        {
            "metadata": {"name": name, "namespace": namespace},
            "involvedObject": {
                "kind": involved.get("kind"),
                "apiVersion": involved.get("apiVersion"),
                "name": meta["name"],
                "namespace": namespace,
                "uid": meta.get("uid"),
                "resourceVersion": meta.get("resourceVersion"),
            },
            "reason": reason,
            "message": message,
            "type": type_,
            "count": 1,
            "firstTimestamp": now,
            "lastTimestamp": now,
            "source": {"component": component},
            "reportingComponent": component,
            "reportingInstance": component,
        },
    )
