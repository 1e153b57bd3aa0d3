"""The job spec's HCCL_ALGO and parallel sizes: validated, composed into the job's env, read back."""

from __future__ import annotations

from importlib.resources import files
from typing import Any

import pytest

from ranktable.compose.manifests import RANK_TABLE_KEY, compose, spec_from_manifests
from ranktable.compose.spec import JobSpec, ParallelSpec
from ranktable.compose.validate import validate_spec
from ranktable.errors import ConflictError, InputError, NotFoundError, NotReady
from ranktable.usecases.jobs import job_layout
from ranktable.usecases.layout import query_for_spec


def spec(**extra: Any) -> JobSpec:
    return JobSpec.from_dict({"name": "llm", "image": "img:1", "nodes": 4, "npus_per_node": 8, **extra})


def container_env(job: JobSpec) -> dict[str, str]:
    container = compose(job)[1]["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    return {e["name"]: e.get("value") for e in container["env"]}


def test_hccl_algo_and_parallel_sizes_reach_the_job_and_come_back() -> None:
    job = spec(hccl_algo="level0:NA;level1:NHR", parallel={"tp": 8, "pp": 2})
    assert job.parallel == ParallelSpec(tp=8, cp=1, ep=1, pp=2)
    env = container_env(job)
    assert env["HCCL_ALGO"] == "level0:NA;level1:NHR"
    assert env["RANKTABLE_PARALLEL"] == "tp=8,cp=1,ep=1,pp=2"
    back = spec_from_manifests(compose(job))
    assert back.hccl_algo == job.hccl_algo and back.parallel == job.parallel
    assert "HCCL_ALGO" not in back.env
    assert JobSpec.from_dict(job.to_dict()) == job
    assert not [i for i in validate_spec(job) if i.field in ("parallel", "hccl_algo", "env.HCCL_ALGO")]
    query = query_for_spec(job)
    assert query.settings is not None and query.settings["*"].level1 == "NHR"
    assert query.parallel is not None and (query.parallel.tp, query.parallel.pp) == (8, 2)


def test_defaults_leave_hccl_to_decide() -> None:
    job = spec()
    assert job.hccl_algo == "" and job.parallel is None
    assert "HCCL_ALGO" not in container_env(job) and "RANKTABLE_PARALLEL" not in container_env(job)
    assert query_for_spec(job).settings is None


@pytest.mark.parametrize(
    ("extra", "where", "words"),
    [
        ({"hccl_algo": "level1:fastest"}, "spec.hccl_algo", "not one HCCL knows"),
        ({"hccl_algo": 3}, "spec.hccl_algo", "expected a string"),
        ({"parallel": {"tp": 0}}, "spec.parallel.tp", "from 1 to"),
        ({"parallel": {"dp": 2}}, "spec.parallel", "unknown field"),
        ({"parallel": {"tp": "x"}}, "spec.parallel.tp", "whole number"),
        ({"parallel": [8]}, "spec.parallel", "expected an object"),
    ],
)
def test_bad_values_name_the_field(extra: dict[str, Any], where: str, words: str) -> None:
    with pytest.raises(InputError, match=words) as info:
        spec(**extra)
    assert info.value.where == where


def test_sizes_that_do_not_fit_the_npus_and_a_doubled_hccl_algo_are_issues() -> None:
    issues = validate_spec(spec(parallel={"tp": 3}))
    assert any(i.field == "parallel" and "does not divide the 32 ranks" in i.message for i in issues)
    doubled = validate_spec(spec(hccl_algo="ring", env={"HCCL_ALGO": "level0:NA;level1:NHR"}))
    assert any(i.field == "env.HCCL_ALGO" and i.severity == "error" for i in doubled)


class FakeCluster:
    """Just what `job_layout` reads: the job's ConfigMap (with a completed table) and its Volcano job."""

    def __init__(self, job: JobSpec, table_text: str, with_job: bool = True) -> None:
        self.configmap, self.job = compose(job)
        self.configmap["data"][RANK_TABLE_KEY] = table_text
        self.with_job = with_job

    def get_configmap(self, name: str) -> dict[str, Any]:
        return self.configmap

    def get_job(self, name: str) -> dict[str, Any]:
        if not self.with_job:
            raise NotFoundError("job llm is gone", where="job llm")
        return self.job

    def list_nodes(self) -> list[dict[str, Any]]:
        return []

    def job_pods(self, name: str) -> list[dict[str, Any]]:
        return []


def test_a_running_jobs_layout_uses_the_jobs_own_hccl_algo_and_groups() -> None:
    examples = files("ranktable.examples")
    table = examples.joinpath("jobstart_hccl.json").read_text()
    topology = str(examples.joinpath("topology.yaml"))
    job = spec(nodes=16, hccl_algo="level0:NA;level1:ring", parallel={"tp": 8, "pp": 2})
    layout = job_layout(FakeCluster(job, table), "llm", topology)  # type: ignore[arg-type]
    assert (
        layout.report["algorithm"] == "ring"
        and "HCCL_ALGO sets level1:ring" in layout.report["algorithm_reason"]
    )
    assert [g["kind"] for g in layout.report["groups"]] == ["tp", "dp", "pp"]
    assert 'data-algorithm="ring"' in layout.svg
    gone = job_layout(FakeCluster(job, table, with_job=False), "llm", topology)  # type: ignore[arg-type]
    assert gone.report["algorithm"] == "pipeline" and gone.report["groups"] == []


def test_a_layout_asked_while_the_rank_table_initializes_is_not_ready_a_409_to_ask_again() -> None:
    """The Job view's Layout tab opened at submit time: the controller has not filled the table in yet.
    That is `NotReady` (a 409 the tab retries on: `test_server_bad_input`), not a final error."""
    initializing = '{"status": "initializing", "server_count": "0", "server_list": []}'
    with pytest.raises(NotReady, match="still initializing") as raised:
        job_layout(FakeCluster(spec(), initializing), "llm")  # type: ignore[arg-type]
    assert isinstance(raised.value, ConflictError)
    assert raised.value.fix is not None and "wait-ranktable" in raised.value.fix
