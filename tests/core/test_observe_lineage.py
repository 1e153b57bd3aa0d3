"""A job's runs as one lineage (#29.5): chained through the run each resumed, the cost of each fault
(detection, restart, replayed steps) and the goodput."""

from __future__ import annotations

import pytest

from ranktable.observe.lineage import (
    LINEAGE_LABEL,
    RESUMED_BY_LABEL,
    RESUMED_FROM_LABEL,
    RESUMED_STEP_LABEL,
    RunFacts,
    chain,
    lineage_report,
    resumed_labels,
)

FAULT = {"node": "node-5", "device": "3", "rank": 11, "code": "NPU_HEARTBEAT_LOST", "time": 1124.5}


def two_runs() -> list[RunFacts]:
    # run 1: steps 1..1,240 at 1 step/s from t=0 (first step at t=0); the fault at t=1,239.5, the run
    # seen ended at t=1,250; run 2 from checkpoint 1,200, first step (1,201) at t=1,270, last 2,000
    run1 = RunFacts(
        "aaaaaaaa-1", created=-10.0, ended=1250.0, phase="Aborted", first_step=1, first_step_time=0.0,
        last_step=1240, last_step_time=1239.0, step_time_s=1.0, fault={**FAULT, "time": 1239.5},
        last_checkpoint=1200,
    )  # fmt: skip
    run2 = RunFacts(
        "bbbbbbbb-2", created=1255.0, ended=None, phase="Running", first_step=1201, first_step_time=1270.0,
        last_step=2000, last_step_time=2069.0, step_time_s=1.0, resumed_from="aaaaaaaa-1", from_step=1200,
        resumed_by="auto",
    )  # fmt: skip
    return [run2, run1]


def test_the_lineage_says_each_fault_and_what_it_cost() -> None:
    report = lineage_report(two_runs(), now=2070.0)
    assert [r["number"] for r in report["runs"]] == [1, 2]
    (fault,) = report["faults"]
    assert fault["node"] == "node-5" and fault["device"] == "3" and fault["at_step"] == 1240
    assert fault["from_step"] == 1200 and fault["resumed_by"] == "auto"
    assert fault["detection_s"] == pytest.approx(10.5)  # the fault to the run seen ended
    assert fault["restart_s"] == pytest.approx(20.0)  # ended to the first step of run 2
    assert fault["fault_to_first_step_s"] == pytest.approx(30.5)
    assert fault["replayed_steps"] == 40
    assert fault["lost_s"] == pytest.approx(31.0 + 40.0)  # the gap between steps, then 40 replayed steps
    goodput = report["goodput"]
    assert goodput["steps_kept"] == 2000 and goodput["wall_s"] == pytest.approx(2070.0)
    assert goodput["share"] == pytest.approx(2000 / 2070, abs=1e-4)
    assert report["text"].startswith(
        "run 1 (aaaaaaaa) steps 1-1,240 -> fault on node-5 NPU 3 (NPU_HEARTBEAT_LOST) at step 1,240 -> "
        "run 2 (bbbbbbbb) from checkpoint 1,200 steps 1,201-2,000 [auto-resumed]; goodput 2,000 steps kept"
    )


def test_only_the_newest_runs_chain_is_its_lineage() -> None:
    runs = two_runs()
    unrelated = RunFacts("cccccccc-0", created=-100.0, ended=-50.0, phase="Completed")
    newest_alone = RunFacts("dddddddd-3", created=5000.0)
    assert [r.uid for r in chain([*runs, unrelated])] == ["aaaaaaaa-1", "bbbbbbbb-2"]
    assert [r.uid for r in chain([*runs, newest_alone])] == ["dddddddd-3"]  # a fresh submit starts anew
    looped = RunFacts("eeeeeeee-4", created=1.0, resumed_from="eeeeeeee-4")
    assert chain([looped]) == [looped]  # a record naming itself ends the walk


def test_a_run_without_steps_has_no_goodput_and_a_from_scratch_resume_replays_all() -> None:
    run1, run2 = two_runs()[1], two_runs()[0]
    scratch = RunFacts(**{**run2.__dict__, "from_step": None, "first_step": 1})
    report = lineage_report([run1, scratch], now=2070.0)
    assert report["faults"][0]["replayed_steps"] == 1240
    assert lineage_report([RunFacts("ffffffff-5", created=0.0)], now=1.0)["goodput"] is None


def test_labels_say_which_run_a_job_resumed() -> None:
    assert resumed_labels({"app": "x"}) is None
    labels = {
        RESUMED_FROM_LABEL: "u1",
        RESUMED_BY_LABEL: "auto",
        RESUMED_STEP_LABEL: "1200",
        LINEAGE_LABEL: "u0",
    }
    assert resumed_labels(labels) == {"from": "u1", "by": "auto", "step": 1200, "lineage": "u0"}
