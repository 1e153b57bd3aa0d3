"""The demo's workspace, ready to use: each launcher card (New Ranktable job, Job view, Rank layout) leads
somewhere on the first visit.

It holds the example project (`examples/demo/`: a training script printing MindSpore-style progress, with
a deliberate bug on one rank), an example job file pointing at the project's path on the instance's
shared storage, and a rank table with the pool's own topology for the Rank layout viewer. Files the user
already has are never overwritten.
"""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Any

import yaml

from ranktable.usecases.jobs import ClusterSettings, Jobs
from ranktable.usecases.layout import preview_rank_table

EXAMPLE_JOB = "bert.rtjob.yaml"
LAYOUT_DIR = "layout"
LAYOUT_NODES = 4


def example_job(shared: str) -> dict[str, Any]:
    """The example JobSpec: the project's script as synced to the shared folder (sync's default root)."""
    return {
        "name": "bert-demo",
        "image": "bert_pretrain_mindspore:v1",
        "framework": "mindspore",
        "nodes": 2,
        "npus_per_node": 8,
        "cpu": "180",  # a whole Snt9B, as the platform guide sizes it
        "memory": "1400Gi",
        "entry": {"script": f"{shared.rstrip('/')}/project/train.py", "args": ["--steps", "30"]},
        # the deliberate bug of project/train.py: rank 5 fails at step 5 (docs/first-hour.md)
        "env": {"DEMO_FAIL_RANK": "5"},
    }


def _copy_missing(source: Path, target: Path) -> list[str]:
    written = []
    for item in sorted(source.rglob("*")):
        if item.is_file() and "__pycache__" not in item.parts:
            dest = target / item.relative_to(source)
            if not dest.exists():
                dest.parent.mkdir(parents=True, exist_ok=True)
                shutil.copy2(item, dest)
                written.append(str(dest.relative_to(target)))
    return written


def _layout_files(folder: Path, settings: ClusterSettings) -> list[str]:
    """The pool's topology and a rank table of LAYOUT_NODES of its nodes taken leaf by leaf in turn, in
    pod-index order as the platform fills it: the viewer shows what planning gains on this pool."""
    from ranktable.cluster.topology_source import cluster_topology
    from ranktable.hccl import write_rank_table

    topology_file, table_file = folder / "topology.yaml", folder / "jobstart_hccl.json"
    if topology_file.exists() and table_file.exists():
        return []
    client = Jobs(settings).client()
    nodes = client.list_nodes()
    topology = cluster_topology(client.kube, nodes)
    by_leaf: dict[str, list[dict[str, Any]]] = {}
    for node in sorted(nodes, key=lambda n: str(n["metadata"]["name"])):
        leaf = topology.leaf_of(topology.resolve(str(node["metadata"]["name"])) or "") or "?"
        by_leaf.setdefault(leaf, []).append(node)
    zigzag = [n for row in zip(*by_leaf.values(), strict=False) for n in row][:LAYOUT_NODES]
    folder.mkdir(parents=True, exist_ok=True)
    topology_file.write_text(yaml.safe_dump(topology.to_yaml_data(), sort_keys=False))
    write_rank_table(preview_rank_table(zigzag, 8), table_file)
    return [f"{LAYOUT_DIR}/topology.yaml", f"{LAYOUT_DIR}/jobstart_hccl.json"]


def prepare_workspace(root: Path, examples: Path, shared: str, settings: ClusterSettings) -> list[str]:
    """Fill `root` (the JupyterLab root) with the demo's files; returns the ones written."""
    root.mkdir(parents=True, exist_ok=True)
    written = _copy_missing(examples, root) if examples.is_dir() else []
    job = root / EXAMPLE_JOB
    if not job.exists():
        job.write_text(yaml.safe_dump(example_job(shared), sort_keys=False))
        written.append(EXAMPLE_JOB)
    return written + _layout_files(root / LAYOUT_DIR, settings)
