"""Two runs side by side (observe.compare): the figures each run is reduced to, and what changed."""

from __future__ import annotations

from typing import Any

from ranktable.observe.compare import compare_summaries, compare_text, run_summary


def _metrics(run: str, last_step: int, step_time: float, loss: float) -> dict[str, Any]:
    steps = list(range(1, last_step + 1))
    series = {
        "step": steps,
        "loss": [loss + 0.1 * (last_step - s) for s in steps],
        "step_time_s": [step_time * (5 if s == 1 else 1) for s in steps],  # a slow first step
        "throughput": [100 / step_time for _ in steps],
        "throughput_unit": "samples/s",
    }
    return {
        "run": run,
        "ranks": {"0": series, "1": {**series, "step": steps[:-1], "loss": series["loss"][:-1]}},
    }


FAILED = {
    "phase": "Failed",
    "summary": "Failed: rank 5 (pod-0) failed first: PY_INDEX - IndexError",
    "first_failure": {"rank": 5, "node_rank": 0, "pod": "pod-0", "code": "PY_INDEX", "title": "IndexError"},
    "errors": [{}],
}
COMPLETED = {
    "phase": "Completed",
    "summary": "Completed: no errors found",
    "first_failure": None,
    "errors": [],
}


def test_a_run_is_reduced_to_its_outcome_progress_and_median_figures() -> None:
    summary = run_summary(_metrics("a1", 6, 0.2, 2.0), FAILED, created=100.0, ended=112.5)
    assert summary["outcome"] == "Failed" and summary["duration_s"] == 12.5
    assert (summary["last_step"], summary["least_step"], summary["ranks"]) == (6, 5, 2)
    assert summary["step_time_s"] == 0.2  # the median: the slow first step moves it not
    assert summary["throughput"] == 500.0 and summary["throughput_unit"] == "samples/s"
    assert summary["loss"] == 2.05  # mean of the ranks' last losses (2.0 and 2.1)
    assert summary["first_failure"]["rank"] == 5 and summary["errors"] == 1
    unended = run_summary({"ranks": {}}, {"phase": "Running"}, created=100.0)
    assert unended["duration_s"] is None and unended["loss"] is None and unended["last_step"] is None


def test_the_comparison_says_what_changed_from_a_to_b() -> None:
    a = run_summary(_metrics("a1", 6, 0.2, 2.0), FAILED, created=100.0, ended=112.0)
    b = run_summary(_metrics("b2", 12, 0.1, 1.0), COMPLETED, created=200.0, ended=203.0)
    result = compare_summaries(a, b)
    assert result["changes"]["step_time_s"] == {"a": 0.2, "b": 0.1, "delta": -0.1, "ratio": 0.5}
    assert result["changes"]["throughput"]["ratio"] == 2.0
    assert result["changes"]["duration_s"]["delta"] == -9.0
    notes = result["notes"]
    assert "outcome: Failed -> Completed" in notes
    assert "the failure of A (rank 5 PY_INDEX) is gone in B" in notes
    assert "every rank reached step 5 in A, 11 in B" in notes
    assert "step time 0.50x of A's (lower is better)" in notes
    text = compare_text(result)
    assert "A a1" in text and "B b2" in text and "0.50x" in text and "throughput (samples/s)" in text


def test_same_figures_say_nothing_but_the_shared_failure() -> None:
    a = run_summary(_metrics("a1", 6, 0.2, 2.0), FAILED)
    result = compare_summaries(a, dict(a, run="b2"))
    assert result["notes"] == ["both fail: A rank 5 PY_INDEX; B rank 5 PY_INDEX"]
    assert result["changes"]["duration_s"] == {"a": None, "b": None, "delta": None, "ratio": None}
