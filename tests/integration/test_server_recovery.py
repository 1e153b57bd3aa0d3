"""Auto-resume in the server (#29): with `c.Ranktable.auto_resume` an NPU fault is resumed without a
person, the decision is listed for the panel's notification (GET /ranktable/recovery), the job row says it
was resumed automatically, GET .../lineage tells the runs and the fault's cost; a second fault over the
budget is only reported."""

from __future__ import annotations

import json
import shutil
import tempfile
from pathlib import Path
from typing import Any

import pytest
from jsonschema import Draft202012Validator

from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.server_helpers import call, extension_on_pool
from tests.integration.test_resume import TRAIN
from tests.integration.test_server_api import response_schema
from tests.integration.test_server_jobs import until
from tests.integration.test_sim_faults import _core, ranktable


@pytest.fixture
def pool(sim_pool_factory: Any) -> SimPoolHandle:
    return sim_pool_factory(nodes=4, leaves=2, ranktable_delay=0.2, backoff_seconds=0.5)


@pytest.fixture
def jp_server_config(pool: SimPoolHandle, tmp_path: Path) -> dict[str, Any]:
    return extension_on_pool(
        pool, tmp_path, auto_resume=True, auto_resume_budget=1, auto_resume_poll_seconds=0.3
    )


async def get(jp_fetch: Any, *path: str, params: dict[str, str]) -> Any:
    response = await jp_fetch(*path, params=params, raise_error=False)
    assert response.code == 200, response.body
    return json.loads(response.body)


def victim(core: Any, name: str) -> tuple[str, int] | None:
    """(node, NPU) of the job's second pod once both run."""
    pods = core.list_namespaced_pod("default", label_selector=f"volcano.sh/job-name={name}").items
    running = sorted(
        (p for p in pods if p.status.phase == "Running" and p.metadata.annotations),
        key=lambda p: p.metadata.name,
    )
    if len(running) != 2:
        return None
    pod = running[1]
    npu = int(pod.metadata.annotations["huawei.com/AscendReal"].split(",")[0].rsplit("-", 1)[1])
    return pod.spec.node_name, npu


async def test_an_npu_fault_is_resumed_by_the_server_and_the_next_one_is_over_budget(
    jp_fetch: Any, pool: SimPoolHandle, request: pytest.FixtureRequest
) -> None:
    saves = Path(tempfile.mkdtemp(prefix="ranktable-ckpt-"))
    saves.chmod(0o777)
    request.addfinalizer(lambda: shutil.rmtree(saves, ignore_errors=True))
    args = ["--steps", "100000", "--interval", "0.1", "--save", str(saves), "--save-interval", "5"]
    spec = {"name": "auto", "image": "i", "nodes": 2, "npus_per_node": 8, "on_fault": "resume"}
    spec["entry"] = {"script": TRAIN, "args": args}
    first = await call(jp_fetch, "ranktable", "jobs", method="POST", body={"spec": spec}, expect=201)
    core = _core(pool)

    async def placed() -> tuple[str, int] | None:
        return victim(core, "auto")

    node, npu = await until(placed, 60)
    assert (
        ranktable(pool, "fault", node, "--npu", str(npu), "--at-step", "12", "--timeout", "60").returncode
        == 0
    )

    async def decided() -> list[dict[str, Any]]:
        return (await call(jp_fetch, "ranktable", "recovery"))["events"]

    (event,) = await until(decided, 90)
    assert event["action"] == "resumed" and event["run"] == first["uid"], event
    assert node in event["message"] and event["avoided"] == [node] and event["checkpoint"]["step"] >= 5
    data = await get(jp_fetch, "ranktable", "recovery", params={"since": "0"})
    Draft202012Validator(response_schema("/ranktable/recovery", "get", 200)).validate(data)
    later = await get(jp_fetch, "ranktable", "recovery", params={"since": str(event["at"])})
    assert later["events"] == []  # the panel asks for what is new since the last one it showed

    async def resumed_row() -> dict[str, Any] | None:
        rows = (await call(jp_fetch, "ranktable", "jobs"))["jobs"]
        row = next((r for r in rows if r["name"] == "auto"), None)
        return row if row and row["uid"] == event["new_run"] else None

    row = await until(resumed_row, 30)
    assert row["resumed"] == {
        "from": first["uid"], "by": "auto", "step": event["checkpoint"]["step"], "lineage": first["uid"]
    }  # fmt: skip

    async def second_run_trains() -> dict[str, Any] | None:
        found = await call(jp_fetch, "ranktable", "jobs", "default", "auto", "lineage")
        runs = found["runs"]
        return found if len(runs) == 2 and (runs[1]["last_step"] or 0) > event["checkpoint"]["step"] else None

    lineage = await until(second_run_trains, 60)
    Draft202012Validator(response_schema("/ranktable/jobs/{namespace}/{name}/lineage", "get", 200)).validate(
        lineage
    )
    assert lineage["faults"][0]["node"] == node and lineage["runs"][1]["resumed_by"] == "auto"

    # the second fault is over the budget of 1: reported, not resumed
    node2, npu2 = await until(placed, 60)
    assert node2 != node
    step = lineage["runs"][1]["last_step"] + 10
    injected = ranktable(pool, "fault", node2, "--npu", str(npu2), "--at-step", str(step), "--timeout", "60")
    assert injected.returncode == 0, injected.stderr

    async def two() -> list[dict[str, Any]] | None:
        events = await decided()
        return events if len(events) == 2 else None

    second = (await until(two, 90))[1]
    assert second["action"] == "budget" and "resume it by hand" in second["message"], second
    job = await call(jp_fetch, "ranktable", "jobs", "default", "auto")
    assert job["job"]["uid"] == event["new_run"]  # nothing was resubmitted
    await call(jp_fetch, "ranktable", "jobs", "default", "auto", method="DELETE")


async def test_recovery_refuses_a_since_that_is_not_a_number(jp_fetch: Any) -> None:
    response = await jp_fetch("ranktable", "recovery", params={"since": "yesterday"}, raise_error=False)
    assert response.code == 400
    body = json.loads(response.body)
    assert body["field"] == "since" and "number of seconds" in body["message"]
