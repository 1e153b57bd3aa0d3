"""The rank layout of a running job: its completed rank table, the cluster's switch tree, the plan.

Reads ``jobstart_hccl.json`` from the job's ConfigMap, the topology from a file or from the cluster,
then runs the core planner, cost model and renderer: the same report ``ranktable plan`` prints.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ranktable.errors import RanktableError
from ranktable.hccl import parse_rank_table
from ranktable.jobs.compose import RANK_TABLE_KEY, configmap_name
from ranktable.jobs.topology_source import cluster_topology
from ranktable.topology import add_node_aliases, load_topology
from ranktable.usecases.layout import plan_report

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
    planned = plan_report(table, topology)
    text_report = f"topology: {source}\n" + planned.text
    if planned.result.warnings:
        text_report += "\n" + "\n".join(f"warning: {w}" for w in planned.result.warnings)
    return JobLayout(name, source, text_report, planned.to_json(), planned.svg())
