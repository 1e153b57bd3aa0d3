"""The layout use case: plan a rank table on a switch tree, cost both orders, draw the picture.

One chain for every surface (`ranktable plan`, `ranktable demo`, the REST preview, a running job's
layout): the planner, the group-aware order choice, the HCCL cost model and the renderer, composed.
"""

from __future__ import annotations

import tempfile
from collections.abc import Callable
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ranktable.choice.cost import GIB, CollectiveQuery, Comparison, LinkModel, compare, format_report
from ranktable.choice.order_choice import choose_order
from ranktable.errors import InputError, RanktableError
from ranktable.hccl.bulk import gc_paused
from ranktable.hccl.model import RankTable
from ranktable.plan import PlanResult, plan_routes
from ranktable.topology.model import Topology


@dataclass
class PlanReport:
    """The plan, its cost comparison and (on demand) the layout picture."""

    table: RankTable
    topology: Topology
    result: PlanResult
    comparison: Comparison
    title: str | None = None
    notes: list[str] = field(default_factory=list)

    @property
    def text(self) -> str:
        return format_report(self.comparison)

    def svg(self, marks: dict[int, str] | None = None) -> str:
        """The picture; `marks` ({planned rank: kind}) outline a diagnosis' ranks (see render.marks)."""
        from ranktable.render import layout_svg

        return layout_svg(
            self.table, self.result.planned, self.topology, self.comparison, title=self.title, marks=marks
        )

    def to_json(self) -> dict[str, Any]:
        """The comparison plus what a launcher needs (mapping, node ranks) and the planner's warnings."""
        data = self.comparison.to_json()
        data.update(
            warnings=list(self.result.warnings),
            unknown_servers=list(self.result.unknown_servers),
            rank_mapping=self.result.rank_mapping,
            node_rank=self.result.node_rank,
        )
        return data


def plan_report(
    table: RankTable,
    topology: Topology,
    *,
    message_bytes: int | None = None,
    query: CollectiveQuery | None = None,
    title: str | None = None,
    previous: RankTable | None = None,
    stable: bool = False,
    links: LinkModel | None = None,
) -> PlanReport:
    """Plan `table` on `topology` and cost the given order against the plan (HCCL's algorithm, and each
    parallel group when `query.parallel` is set)."""
    size = message_bytes or GIB
    query = query or CollectiveQuery()
    with gc_paused():  # one collector pass after the whole chain, not one per step
        result = plan_routes(table, topology, previous=previous, stable=stable)
        result, reason = choose_order(table, topology, result, query, size, links)
        placements = (result.placement, result.server_order) if result.placement is not None else None
        comparison = compare(
            table,
            result.planned,
            topology,
            size,
            links,
            query=query,
            order_reason=reason,
            placements=placements,
        )
        return PlanReport(table, topology, result, comparison, title)


OPERATIONS = ("allreduce", "allgather", "reducescatter", "broadcast", "alltoall")


def query_from_fields(algo: Any, parallel: Any, operation: Any) -> CollectiveQuery:
    """A request's `algo` (HCCL_ALGO form), `parallel` ("tp=8,pp=4") and `operation`, checked."""
    from ranktable.collectives.choice import parse_hccl_algo
    from ranktable.collectives.groups import parse_parallel

    for name, value in (("algo", algo), ("parallel", parallel), ("operation", operation)):
        if value is not None and not isinstance(value, str):
            raise InputError(f"must be a string; got {type(value).__name__}", where=name)
    if operation is not None and operation not in OPERATIONS:
        raise InputError(
            f"unknown operation {operation!r}", where="operation", fix=f"use one of {', '.join(OPERATIONS)}"
        )
    return CollectiveQuery(
        operation=operation or "allreduce",
        settings=parse_hccl_algo(algo, "algo") if algo else None,
        source="algo",
        parallel=parse_parallel(parallel, "parallel") if parallel else None,
        parallel_where="parallel",
    )


def query_for_spec(spec: Any) -> CollectiveQuery:
    """A job spec's HCCL choice: `hccl_algo` (or HCCL_ALGO in its env) and its parallel sizes."""
    from ranktable.collectives.choice import parse_hccl_algo
    from ranktable.collectives.groups import ParallelSizes

    if spec is None:
        return CollectiveQuery()
    algo = getattr(spec, "hccl_algo", "") or (getattr(spec, "env", None) or {}).get("HCCL_ALGO", "")
    sizes = getattr(spec, "parallel", None)
    parallel = None
    if sizes is not None:
        parallel = ParallelSizes(sizes.tp, sizes.cp, sizes.ep, sizes.pp)
    return CollectiveQuery(
        settings=parse_hccl_algo(algo, "spec.hccl_algo") if algo else None,
        source="HCCL_ALGO",
        parallel=parallel,
        parallel_where="spec.parallel",
    )


def layout_json(
    table: Any,
    topology: Any,
    *,
    message_bytes: int | None,
    title: str,
    spec: Any = None,
    query: CollectiveQuery | None = None,
) -> dict[str, Any]:
    """The layout use case's report as the panel and the magics show it; a job spec's HCCL_ALGO and
    parallel sizes (or an explicit query) shape the estimate."""
    query = query or query_for_spec(spec)
    report = plan_report(table, topology, message_bytes=message_bytes, title=title, query=query)
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


def placement_forecast(
    client: Any,
    nodes: list[dict[str, Any]],
    topology: Topology,
    spec: Any,
    released: dict[str, int] | None = None,
) -> tuple[Any, list[str]]:
    """The scheduler's expected node choice for `spec` on the pool's free nodes (plan/forecast.py), and
    notes; `released` (node -> NPUs) counts as free (a running job's own pods, to replay its preview)."""
    from ranktable.compose.network_topology import parse_network_topology
    from ranktable.plan.forecast import forecast_placement

    matching = matching_nodes(nodes, spec)
    free_now = client.npu_capacity(node_leaf={}).per_node
    free, leaf_of, allocatable = {}, {}, {}
    for node in matching:
        name = str(node["metadata"]["name"])
        free[name] = free_now.get(name, 0) + (released or {}).get(name, 0)
        allocatable[name] = max(free[name], spec.npus_per_node)
        resolved = topology.resolve(name, _internal_ip(node))
        leaf_of[name] = topology.server_leaf.get(resolved or "", "") or ""
    policy = client.scheduler_node_choice()
    parsed = parse_network_topology(getattr(spec, "network_topology", "") or "")
    confine = (parsed.mode, parsed.highest_tier) if parsed else None
    notes: list[str] = []
    try:
        forecast = forecast_placement(free, leaf_of, spec.nodes, spec.npus_per_node, policy, confine)
    except ValueError as exc:
        notes.append(f"placement: {exc} now, so the gang waits for nodes to free up; shown for an idle pool")
        try:
            forecast = forecast_placement(
                allocatable, leaf_of, spec.nodes, spec.npus_per_node, policy, confine
            )
        except ValueError as never:  # even an idle pool cannot hold it under one leaf
            notes.append(f"placement: {never} even on an idle pool: the job would never start")
            forecast = forecast_placement(allocatable, leaf_of, spec.nodes, spec.npus_per_node, policy)
    return forecast, notes


def _internal_ip(node: dict[str, Any]) -> str | None:
    addresses = (node.get("status") or {}).get("addresses") or []
    return next((a.get("address") for a in addresses if a.get("type") == "InternalIP"), None)


def _case_summary(label: str, nodes: list[str], report: dict[str, Any]) -> dict[str, Any]:
    given, planned = report["given"], report["planned"]
    return {
        "label": label,
        "nodes": nodes,
        "crossings_per_tier": given["crossings_per_tier"],
        "given_seconds": given["allreduce_seconds"],
        "planned_seconds": planned["allreduce_seconds"],
        "speedup": report["speedup"],
    }


def describe_case(case: dict[str, Any]) -> str:
    """`leaf crossings 4, 24.3 ms -> 15.1 ms with routing (1.60x)`: one placement case in a line."""
    crossings = case["crossings_per_tier"][0] if case["crossings_per_tier"] else 0
    return (
        f"leaf crossings {crossings}, {case['given_seconds'] * 1000:.1f} ms -> "
        f"{case['planned_seconds'] * 1000:.1f} ms with routing ({case['speedup']:.2f}x)"
    )


def preview_layouts(
    forecast: Any,
    notes: list[str],
    nodes: list[dict[str, Any]],
    topology: Topology,
    spec: Any,
    message_bytes: int | None,
) -> dict[str, Any]:
    """The layout of each forecast case; the picture is the predicted case, or the worst of a range."""
    by_name = {str(n["metadata"]["name"]): n for n in nodes}
    results: list[tuple[str, dict[str, Any]]] = []
    summaries = []
    for label, names in forecast.cases:
        table = preview_rank_table([by_name[n] for n in names], spec.npus_per_node)
        title = f"{spec.name} (preview)" if forecast.exact else f"{spec.name} (preview, {label} case)"
        result = layout_json(table, topology, message_bytes=message_bytes, title=title, spec=spec)
        results.append((label, result))
        summaries.append(_case_summary(label, names, result["report"]))
    shown = results[-1][1]
    if forecast.exact:
        line = f"preview: expected on {', '.join(forecast.cases[0][1])} ({forecast.reason})"
    else:
        best, worst = summaries[0], summaries[-1]
        line = (
            f"preview: {forecast.reason}; best case {describe_case(best)}, worst case "
            f"{describe_case(worst)}; the picture shows the worst case"
        )
    shown["warnings"] = [line, *notes, *shown["warnings"]]
    shown["placement"] = {**forecast.to_json(), "cases": summaries, "summary": line}
    return shown


def placement_beside_forecast(
    client: Any,
    name: str,
    spec: Any,
    nodes: list[dict[str, Any]],
    topology: Topology,
    report: dict[str, Any],
) -> dict[str, Any] | None:
    """The job's actual nodes (pod-index order) beside what the preview predicts for the pool as it was
    before the job (its own pods' NPUs counted free again); None when the job's spec is unknown."""
    from ranktable.cluster.observing import pod_index_of
    from ranktable.compose.manifests import NPU_RESOURCE
    from ranktable.errors import RanktableError

    if spec is None:
        return None
    pods = sorted(client.job_pods(name), key=lambda p: pod_index_of(p["metadata"]["name"]))
    if not pods:
        return None  # nothing placed (yet, or any more): no placement to put beside the forecast
    actual = [str((p.get("spec") or {}).get("nodeName") or "") for p in pods]
    released: dict[str, int] = {}
    for pod, node in zip(pods, actual, strict=True):
        for container in (pod.get("spec") or {}).get("containers") or []:
            requested = ((container.get("resources") or {}).get("requests") or {}).get(NPU_RESOURCE, 0)
            released[node] = released.get(node, 0) + int(str(requested))
    try:
        forecast, _ = placement_forecast(client, nodes, topology, spec, released)
    except RanktableError:
        return None
    preview = preview_layouts(forecast, [], nodes, topology, spec, report.get("message_bytes"))["placement"]
    mine = _case_summary("actual", actual, report)
    cases = preview["cases"]
    crossings = mine["crossings_per_tier"]
    if forecast.exact:
        verdict = "as predicted" if actual == cases[0]["nodes"] else "not as predicted"
        if verdict != "as predicted" and crossings == cases[0]["crossings_per_tier"]:
            verdict = "same layout as predicted, on other nodes"
    else:
        low, high = cases[0]["crossings_per_tier"], cases[-1]["crossings_per_tier"]
        verdict = "within the predicted range" if low <= crossings <= high else "outside the predicted range"
    guess = "; ".join(f"{c['label']} {describe_case(c)}" for c in cases)
    summary = f"placement: {verdict}: actual {describe_case(mine)} (preview: {guess})"
    return {"actual": mine, "forecast": preview, "verdict": verdict, "summary": summary}


def topology_from(
    *,
    path: str | Path | None = None,
    content: str | bytes | None = None,
    fmt: str | None = None,
    default: str | None = None,
    default_format: str | None = None,
) -> Topology:
    """The switch tree a request names: a file, inline content (errors name `topology`, not a temporary
    file), else the configured `default`; InputError when there is none."""
    from ranktable.topology.load import load_topology

    if path:
        return load_topology(path, fmt)
    if content is None:
        if default:
            return load_topology(default, default_format or None)
        raise InputError(
            "is required", where="topology", fix="send `topology` (content) or `topology_path` (a file)"
        )
    with tempfile.TemporaryDirectory(prefix="ranktable-topology-") as tmp:
        file = Path(tmp) / "topology"
        file.write_bytes(content.encode() if isinstance(content, str) else content)
        try:
            return load_topology(file, fmt)
        except RanktableError as exc:  # name the request field, not our temporary file
            if exc.where:
                exc.where = exc.where.replace(str(file), "topology")
                exc.args = (exc.message,)
            raise


def cluster_or_file_topology(
    client: Any, nodes: list[dict[str, Any]], path: str | None, default_format: str | None = None
) -> Topology:
    """A file's switch tree with the cluster's node names as aliases, else the cluster's own (HyperNodes,
    basic-tor-node-cm or node labels)."""
    if path:
        from ranktable.topology import add_node_aliases, load_topology

        topology = load_topology(path, default_format or None)
        add_node_aliases(topology, nodes)
        return topology
    from ranktable.cluster.topology_source import cluster_topology

    return cluster_topology(client.kube, nodes)


def plan_json(
    body: dict[str, Any],
    rank_table: Callable[[], tuple[str | bytes | dict[str, Any], str]],
    topology: Callable[[], Topology],
) -> dict[str, Any]:
    """`/ranktable/plan`: a rank table document (and where it came from) planned on the request's switch
    tree, its query applied; the request is checked in the order its fields are read."""
    from ranktable.hccl.io import parse_rank_table

    size = message_bytes_of(body)
    query = query_from_fields(body.get("algo"), body.get("parallel"), body.get("operation"))
    data, source = rank_table()
    table = parse_rank_table(data, source)
    return layout_json(table, topology(), message_bytes=size, title=source, query=query)


def message_bytes_of(body: dict[str, Any]) -> int | None:
    """A request's `message_bytes`: a positive integer or absent."""
    value = body.get("message_bytes")
    if value is None:
        return None
    if isinstance(value, float) and value.is_integer():  # JSON Schema's integer: 1024.0 is one
        value = int(value)
    if not isinstance(value, int) or isinstance(value, bool) or value <= 0:
        raise InputError(f"must be a positive integer, not {value!r}", where="message_bytes")
    return value


def matching_nodes(nodes: list[dict[str, Any]], spec: Any) -> list[dict[str, Any]]:
    """The nodes the job's pods may use (node selector, enough allocatable NPUs), by name; raises when
    even an idle pool could not hold the job."""
    from ranktable.compose.manifests import NPU_RESOURCE

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
    return fitting


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
