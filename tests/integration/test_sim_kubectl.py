"""The real kubectl (1.32) against the simulated pool: apply the guide's manifest, get, logs, delete."""

from __future__ import annotations

import json
import shutil
import subprocess
from pathlib import Path
from typing import Any

import pytest
import yaml

from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.sim_helpers import eventually, volcano_job

REFERENCE = Path(__file__).resolve().parents[1] / "data/reference/lite-volcano-job.yaml"
KUBECTL = shutil.which("kubectl") or "/usr/bin/kubectl"


def kubectl(pool: SimPoolHandle, home: Path, *args: str, check: bool = True, timeout: float = 60) -> str:
    proc = subprocess.run(
        [KUBECTL, *args], env=pool.kubectl_env(home), capture_output=True, text=True, timeout=timeout
    )
    if check and proc.returncode != 0:
        raise AssertionError(f"kubectl {' '.join(args)} failed ({proc.returncode}): {proc.stderr}")
    return proc.stdout + (proc.stderr if not check else "")


def rank_table_text(pool: SimPoolHandle, home: Path, job: str) -> str:
    """The job's rank table as the guide reads it: the ConfigMap key, through kubectl's jsonpath."""
    return kubectl(
        pool, home, "get", "cm", f"configmap1980-{job}", "-o", "jsonpath={.data.jobstart_hccl\\.json}"
    )


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def test_apply_the_reference_manifest_then_get_and_delete(sim_pool: SimPoolHandle, home: Path) -> None:
    out = kubectl(sim_pool, home, "apply", "-f", str(REFERENCE))
    assert "configmap/configmap1980-yourvcjobname created" in out
    assert "job.batch.volcano.sh/yourvcjobname created" in out
    kubectl(
        sim_pool,
        home,
        "wait",
        "--for=jsonpath={.status.state.phase}=Running",
        "vcjob/yourvcjobname",
        "--timeout=20s",
    )
    table = kubectl(sim_pool, home, "get", "vcjob").splitlines()
    assert table[0].split() == ["NAME", "STATUS", "MINAVAILABLE", "RUNNINGS", "AGE"]
    assert table[1].split()[:4] == ["yourvcjobname", "Running", "1", "1"]
    assert kubectl(sim_pool, home, "get", "vj", "-o", "name").strip() == "job.batch.volcano.sh/yourvcjobname"
    pods = kubectl(sim_pool, home, "get", "pods", "-l", "volcano.sh/job-name=yourvcjobname").splitlines()
    assert pods[1].split()[:3] == ["yourvcjobname-yourvcjobname-1-0", "1/1", "Running"]
    kubectl(
        sim_pool,
        home,
        "wait",
        "--for=jsonpath={.data.jobstart_hccl\\.json}",
        "cm/configmap1980-yourvcjobname",
        "--timeout=20s",
    )
    table_json = rank_table_text(sim_pool, home, "yourvcjobname")
    assert '"status": "completed"' in table_json
    assert kubectl(sim_pool, home, "logs", "yourvcjobname-yourvcjobname-1-0") == ""  # `sleep` prints nothing
    out = kubectl(sim_pool, home, "delete", "-f", str(REFERENCE))
    assert 'job.batch.volcano.sh "yourvcjobname" deleted' in out
    eventually(
        lambda: "No resources found" in kubectl(sim_pool, home, "get", "pods", check=False), what="pods gone"
    )


def test_discovery_short_names_and_strict_validation(
    sim_pool: SimPoolHandle, home: Path, tmp_path: Path
) -> None:
    resources = kubectl(sim_pool, home, "api-resources", "--no-headers")
    rows = {line.split()[0]: line.split() for line in resources.splitlines()}
    assert "vcjob,vj" in rows["jobs"] and "hn" in rows["hypernodes"] and "cm" in rows["configmaps"]
    nodes = kubectl(sim_pool, home, "get", "nodes", "-l", "accelerator/huawei-npu=ascend-1980", "-o", "name")
    assert len(nodes.split()) == 8
    assert kubectl(sim_pool, home, "get", "hn", "-o", "name").split() == [
        "hypernode.topology.volcano.sh/leaf-0",
        "hypernode.topology.volcano.sh/leaf-1",
        "hypernode.topology.volcano.sh/spine-0",
    ]

    bad = volcano_job("typo", 1, ["true"])
    bad["spec"]["taks"] = []  # misspelt
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump(bad))
    out = kubectl(sim_pool, home, "apply", "-f", str(path), check=False)
    assert 'strict decoding error: unknown field "spec.taks"' in out

    invalid = volcano_job("toolarge", 2, ["true"])
    invalid["spec"]["minAvailable"] = 3
    path.write_text(yaml.safe_dump(invalid))
    out = kubectl(sim_pool, home, "apply", "-f", str(path), check=False)
    assert "is invalid" in out and "spec.minAvailable" in out


def test_logs_follow_with_prefix_for_every_pod_of_a_job(
    sim_pool: SimPoolHandle, home: Path, tmp_path: Path
) -> None:
    job: dict[str, Any] = volcano_job(
        "talk",
        3,
        ["sh", "-c", 'sleep 1; for i in 1 2 3; do echo "$VK_TASK_INDEX says $i"; sleep 0.1; done'],
        plugins={"env": [], "svc": []},
    )
    path = tmp_path / "talk.yaml"
    path.write_text(yaml.safe_dump(job))
    kubectl(sim_pool, home, "apply", "-f", str(path))
    kubectl(
        sim_pool, home, "wait", "--for=jsonpath={.status.state.phase}=Running", "vcjob/talk", "--timeout=20s"
    )
    out = kubectl(
        sim_pool, home, "logs", "-f", "-l", "volcano.sh/job-name=talk", "--prefix", "--max-log-requests", "8"
    )
    lines = sorted(out.splitlines())
    expected = sorted(f"[pod/talk-worker-{p}/main] {p} says {i}" for p in range(3) for i in (1, 2, 3))
    assert lines == expected
    assert kubectl(sim_pool, home, "logs", "talk-worker-2", "--tail=1") == "2 says 3\n"


def test_exec_runs_in_the_pod_sandbox_with_its_env(sim_pool: SimPoolHandle, home: Path) -> None:
    kubectl(sim_pool, home, "apply", "-f", str(REFERENCE))
    kubectl(
        sim_pool,
        home,
        "wait",
        "--for=jsonpath={.status.phase}=Running",
        "pod/yourvcjobname-yourvcjobname-1-0",
        "--timeout=20s",
    )
    pod = "yourvcjobname-yourvcjobname-1-0"
    out = kubectl(
        sim_pool, home, "exec", pod, "--", "sh", "-c", 'echo "$name"; pwd; echo oops >&2; exit 3', check=False
    )
    assert out.startswith(f"{pod}\n{sim_pool.state_dir}/pods/default/{pod}-")
    assert "oops" in out and "command terminated with exit code 3" in out
    proc = subprocess.run(
        [KUBECTL, "exec", "-i", pod, "--", "cat"],
        input="piped in\n",
        capture_output=True,
        text=True,
        env=sim_pool.kubectl_env(home),
        timeout=30,
    )
    assert proc.returncode == 0 and proc.stdout == "piped in\n"

    # the guide's manual steps: read the mounted rank table, look at the cards
    def table() -> str | None:
        text = rank_table_text(sim_pool, home, "yourvcjobname")
        return text if '"completed"' in text else None

    completed = eventually(table, what="rank table completed")

    def mounted() -> str | None:
        text = kubectl(sim_pool, home, "exec", pod, "--", "cat", "/user/config/jobstart_hccl.json")
        return text if json.loads(text) == json.loads(completed) else None

    eventually(mounted, what="the pod's /user/config/jobstart_hccl.json to match the ConfigMap")
    cards = kubectl(sim_pool, home, "exec", pod, "--", "npu-smi", "info")
    assert "910B3" in cards and cards.count("| OK ") == 1  # the one NPU this pod requested
