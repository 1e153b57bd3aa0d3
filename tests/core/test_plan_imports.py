"""`ranktable plan` imports only what the topology's format needs, and the warm CLI's caller stays light
(issue 28: a whole `plan` process within 2x a `python -c` json.load of the same table)."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest
import yaml

from ranktable.hccl import Device, RankTable, Server, dump_rank_table
from ranktable.topology.export import to_hypernodes, to_slurm, to_tor_info
from ranktable.topology.synthetic import synthetic_topology

WATCHED = ("yaml", "ranktable.block_yaml", "ranktable.topology.hypernode", "ranktable.topology.tor_info")

PLAN_MODULES = (
    "import json, sys\n"
    "from ranktable.cli import main\n"
    "code = main(sys.argv[1:])\n"
    "print('MODULES', json.dumps(sorted(m for m in sys.modules if m in {watched!r})))\n"
)


@pytest.fixture(scope="module")
def pool(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("pool")
    topology, ids = synthetic_topology(32, 4, 2)
    table = RankTable(status="completed", version="1.0")
    for n, server_id in enumerate(ids):
        table.servers.append(Server(server_id, [Device(d, n * 8 + d, f"29.0.{n}.{d}") for d in range(8)]))
    (folder / "hccl.json").write_text(dump_rank_table(table))
    (folder / "topology.conf").write_text(to_slurm(topology))
    (folder / "tor_info.json").write_text(json.dumps(to_tor_info(topology)[0]))
    (folder / "hypernodes.yaml").write_text(yaml.safe_dump_all(to_hypernodes(topology)))
    return folder, folder / "hccl.json"


def plan_modules(table: Path, topology: Path, home: Path) -> set[str]:
    env = {**os.environ, "RANKTABLE_WARM": "0", "RANKTABLE_HOME": str(home)}
    argv = ["plan", "--ranktable", str(table), "--topology", str(topology), "--json"]
    code = PLAN_MODULES.format(watched=set(WATCHED))
    done = subprocess.run(
        [sys.executable, "-c", code, *argv], env=env, capture_output=True, text=True, check=True
    )
    line = next(x for x in done.stdout.splitlines() if x.startswith("MODULES"))
    return set(json.loads(line.split(" ", 1)[1]))


def test_plan_on_json_or_slurm_topology_imports_no_yaml(pool: tuple[Path, Path], tmp_path: Path) -> None:
    folder, table = pool
    assert plan_modules(table, folder / "tor_info.json", tmp_path) == {"ranktable.topology.tor_info"}
    assert plan_modules(table, folder / "topology.conf", tmp_path) == set()


def test_plan_on_hypernode_yaml_reads_it_without_pyyaml(pool: tuple[Path, Path], tmp_path: Path) -> None:
    folder, table = pool
    found = plan_modules(table, folder / "hypernodes.yaml", tmp_path)
    assert found == {"ranktable.block_yaml", "ranktable.topology.hypernode"}


@pytest.mark.parametrize("home_set", [True, False])
def test_the_warm_callers_path_imports_no_server_agent_or_thread_module(
    tmp_path: Path, home_set: bool
) -> None:
    code = (
        "import sys\n"
        "from ranktable.cli import warm\n"
        "warm.socket_path()\n"
        "heavy = ('subprocess', 'socketserver', 'threading', 'hashlib', 'tempfile', 'ranktable.remote.agent',"
        " 'ranktable.cli.warm_server', 'numpy', 'yaml', 'jupyter_core')\n"
        "print(sorted(m for m in heavy if m in sys.modules))\n"
    )
    env = {k: v for k, v in os.environ.items() if k != "RANKTABLE_HOME"}
    if home_set:
        env["RANKTABLE_HOME"] = str(tmp_path)
    else:  # the default home (Jupyter's data folder) is not resolved: jupyter_core is not imported
        env["XDG_RUNTIME_DIR"] = str(tmp_path)
    done = subprocess.run([sys.executable, "-c", code], env=env, capture_output=True, text=True, check=True)
    assert done.stdout.strip() == "[]"
