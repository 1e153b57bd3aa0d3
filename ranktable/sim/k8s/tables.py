"""`meta.k8s.io/v1 Table` responses, so `kubectl get` prints the usual columns (STATUS, AGE, ...)."""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from ranktable.sim.k8s.resources import Column, ResourceType

Obj = dict[str, Any]


def wants_table(accept: str) -> bool:
    return "as=Table" in accept


def human_age(timestamp: str | None) -> str:
    """Like apimachinery's HumanDuration: 45s, 5m3s, 2h10m, 3d4h."""
    if not timestamp:
        return "<unknown>"
    then = datetime.strptime(timestamp, "%Y-%m-%dT%H:%M:%SZ").replace(tzinfo=timezone.utc)
    secs = max(0, int((datetime.now(timezone.utc) - then).total_seconds()))
    if secs < 120:
        return f"{secs}s"
    mins = secs // 60
    if mins < 10:
        return f"{mins}m{secs % 60}s" if secs % 60 else f"{mins}m"
    if mins < 180:
        return f"{mins}m"
    hours = mins // 60
    if hours < 48:
        return f"{hours}h{mins % 60}m" if hours < 8 and mins % 60 else f"{hours}h"
    return f"{hours // 24}d{hours % 24}h" if hours % 24 else f"{hours // 24}d"


def _path(obj: Obj, path: str) -> Any:
    cur: Any = obj
    for part in path.split("."):
        if not isinstance(cur, dict):
            return None
        cur = cur.get(part)
    return cur


def pod_status_text(pod: Obj) -> str:
    status = pod.get("status") or {}
    if pod["metadata"].get("deletionTimestamp"):
        return "Terminating"
    text = status.get("reason") or status.get("phase") or "Pending"
    for cs in status.get("containerStatuses") or []:
        state = cs.get("state") or {}
        if "waiting" in state and state["waiting"].get("reason"):
            text = state["waiting"]["reason"]
        elif "terminated" in state:
            text = state["terminated"].get("reason") or "Error"
    return text


def _computed(obj: Obj, name: str) -> Any:
    status = obj.get("status") or {}
    if name == "!pod-ready":
        statuses = status.get("containerStatuses") or []
        total = len((obj.get("spec") or {}).get("containers") or [])
        return f"{sum(1 for c in statuses if c.get('ready'))}/{total}"
    if name == "!pod-status":
        return pod_status_text(obj)
    if name == "!pod-restarts":
        return str(sum(c.get("restartCount", 0) for c in status.get("containerStatuses") or []))
    if name == "!node-ready":
        ready = any(
            c.get("type") == "Ready" and c.get("status") == "True" for c in status.get("conditions") or []
        )
        return "Ready" if ready else "NotReady"
    if name == "!node-roles":
        return "<none>"
    if name == "!node-ip":
        return next(
            (a["address"] for a in status.get("addresses") or [] if a.get("type") == "InternalIP"), ""
        )
    if name == "!data-count":
        return len(obj.get("data") or {}) + len(obj.get("binaryData") or {})
    if name == "!event-object":
        inv = obj.get("involvedObject") or {}
        return f"{str(inv.get('kind', '')).lower()}/{inv.get('name', '')}"
    return None


def _cell(obj: Obj, col: Column) -> Any:
    value = _computed(obj, col.path) if col.path.startswith("!") else _path(obj, col.path)
    if value is None:
        return 0 if col.type == "integer" and col.path.startswith("status.") else "<none>"
    return value


def table(
    rtype: ResourceType, items: list[Obj], resource_version: int, include_object: str
) -> dict[str, Any]:
    columns = [{"name": "Name", "type": "string", "format": "name", "description": "Name", "priority": 0}]
    columns += [
        {"name": c.name, "type": c.type, "format": "", "description": c.name, "priority": c.priority}
        for c in rtype.columns
    ]
    columns.append({"name": "Age", "type": "string", "format": "", "description": "Age", "priority": 0})
    rows = []
    for obj in items:
        cells = [
            obj["metadata"]["name"],
            *(_cell(obj, c) for c in rtype.columns),
            human_age(obj["metadata"].get("creationTimestamp")),
        ]
        row: dict[str, Any] = {"cells": cells}
        if include_object == "Object":
            row["object"] = obj
        elif include_object != "None":
            row["object"] = {
                "kind": "PartialObjectMetadata",
                "apiVersion": "meta.k8s.io/v1",
                "metadata": obj["metadata"],
            }
        rows.append(row)
    return {
        "kind": "Table",
        "apiVersion": "meta.k8s.io/v1",
        "metadata": {"resourceVersion": str(resource_version)},
        "columnDefinitions": columns,
        "rows": rows,
    }
