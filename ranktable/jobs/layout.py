"""The rank layout of a running job: its completed rank table, the cluster's switch tree, the plan.

Reads ``jobstart_hccl.json`` from the job's ConfigMap, the topology from a file or from the cluster,
then runs the core planner, cost model and renderer: the same report ``ranktable plan`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ranktable.cost import compare, format_report
from ranktable.errors import RanktableError
from ranktable.hccl import parse_rank_table
from ranktable.jobs.compose import RANK_TABLE_KEY, configmap_name
from ranktable.jobs.topology_source import cluster_topology
from ranktable.plan import plan_routes
from ranktable.render import layout_svg
from ranktable.topology import add_node_aliases, load_topology

if TYPE_CHECKING:
    from ranktable.jobs.cluster import ClusterClient


@dataclass
class JobLayout:
    name: str
    topology_source: str
    report_text: str
    report: dict[str, Any]
    svg: str

    def to_json(self) -> dict[str, Any]:
        return {"name": self.name, "topology_source": self.topology_source, "report": self.report}


def job_layout(client: ClusterClient, name: str, topology_file: str | None = None) -> JobLayout:
    cm_name = configmap_name(name)
    text = (client.get_configmap(cm_name).get("data") or {}).get(RANK_TABLE_KEY) or ""
    table = parse_rank_table(text, f"{cm_name}/{RANK_TABLE_KEY}")
    if not table.completed:
        raise RanktableError(
            f"the rank table of {name} is still {table.status}",
            where=cm_name,
            fix=f"wait with `ranktable job wait-ranktable {name}`",
        )
    nodes = client.list_nodes()
    if topology_file:
        topology = load_topology(topology_file)
        add_node_aliases(topology, nodes)
        source = topology_file
    else:
        topology = cluster_topology(client.kube, nodes)
        source = topology.source
    result = plan_routes(table, topology)
    comparison = compare(table, result.planned, topology)
    report = comparison.to_json()
    report.update(
        warnings=result.warnings,
        unknown_servers=result.unknown_servers,
        rank_mapping=result.rank_mapping,
        node_rank=result.node_rank,
    )
    text_report = f"topology: {source}\n" + format_report(comparison)
    if result.warnings:
        text_report += "\n" + "\n".join(f"warning: {w}" for w in result.warnings)
    return JobLayout(
        name, source, text_report, report, layout_svg(table, result.planned, topology, comparison)
    )
