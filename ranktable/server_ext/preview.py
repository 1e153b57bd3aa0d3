"""Plan + cost + picture in one call, and the likely placement of a job that is not running yet.

Shared by the REST API and the notebook magics; the work itself is the core's (planner, cost model,
renderer).
"""

from __future__ import annotations

from typing import Any

from ranktable.errors import InputError


def likely_nodes(nodes: list[dict[str, Any]], spec: Any) -> list[dict[str, Any]]:
    """The first nodes (by name) an idle pool would give the job: matching selector, enough NPUs."""
    from ranktable.jobs.compose import NPU_RESOURCE

    fitting = []
    for node in sorted(nodes, key=lambda n: str((n.get("metadata") or {}).get("name"))):
        meta, status = node.get("metadata") or {}, node.get("status") or {}
        labels = meta.get("labels") or {}
        if any(labels.get(k) != v for k, v in spec.node_selector.items()):
            continue
        if int(str((status.get("allocatable") or {}).get(NPU_RESOURCE, 0))) < spec.npus_per_node:
            continue
        fitting.append(node)
    if len(fitting) < spec.nodes:
        raise InputError(
            f"the cluster has {len(fitting)} node(s) with {spec.npus_per_node} NPUs matching the "
            f"node selector; the job needs {spec.nodes}",
            where="spec.nodes",
            fix="lower the node count or check the node selector",
        )
    return fitting[: spec.nodes]


def plan_report(
    table: Any, topology: Any, *, message_bytes: int | None, title: str, spec: Any = None
) -> dict[str, Any]:
    """Plan, cost and picture for one rank table (the layout use case); a job spec's HCCL_ALGO and
    parallel sizes shape the estimate."""
    from ranktable.usecases.layout import plan_report as layout_report
    from ranktable.usecases.layout import query_for_spec

    report = layout_report(
        table, topology, message_bytes=message_bytes, title=title, query=query_for_spec(spec)
    )
    data = report.comparison.to_json()
    return {
        "report": data,
        "svg": report.svg(),
        "warnings": list(report.result.warnings),
        "rank_mapping": report.result.rank_mapping,
        "algorithm": data["algorithm"],
        "algorithm_reason": data["algorithm_reason"],
        "groups": data["groups"],
    }


def preview_rank_table(nodes: list[dict[str, Any]], npus: int) -> Any:
    """A rank table for pods on `nodes` in that order (server_id = the node's InternalIP)."""
    from ranktable.hccl import Device, RankTable, Server

    servers = []
    for i, node in enumerate(nodes):
        addresses = {
            a.get("type"): a.get("address") for a in (node.get("status") or {}).get("addresses") or []
        }
        server_id = str(addresses.get("InternalIP") or (node.get("metadata") or {}).get("name"))
        devices = [
            Device(device_id=d, rank_id=i * npus + d, device_ip=f"preview-{i}-{d}") for d in range(npus)
        ]
        servers.append(Server(server_id=server_id, devices=devices, host_ip=server_id))
    return RankTable(status="completed", version="1.0", servers=servers)
