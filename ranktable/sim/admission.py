"""Admission for the pool: Volcano's job webhooks (defaults, then validation) on create."""

from __future__ import annotations

from ranktable.sim.k8s import errors, validation
from ranktable.sim.k8s.resources import QUEUES, ResourceType
from ranktable.sim.k8s.server import Admitter
from ranktable.sim.k8s.store import Obj, Store


def volcano_admitter(store: Store) -> Admitter:
    def admit(rtype: ResourceType, obj: Obj, operation: str) -> None:
        if rtype.key != "batch.volcano.sh/jobs":
            return
        if operation == "CREATE":
            validation.default_volcano_job(obj)
        queues = {
            q["metadata"]["name"]
            for q in store.list(QUEUES)[0]
            if (q.get("status") or {}).get("state", "Open") == "Open"
        }
        causes = validation.validate_volcano_job(obj, queues)
        if causes:
            raise errors.invalid(rtype.kind, rtype.group, obj["metadata"].get("name", ""), causes)

    return admit
