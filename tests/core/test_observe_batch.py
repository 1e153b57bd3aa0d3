"""The batch path (learned line templates, one timestamp conversion per step) gives exactly the line path's
metrics and diagnosis, on every fixture and on runs that change format, print NaN or vary number shapes."""

from __future__ import annotations

import random
from typing import Any

import pytest

from ranktable.observe import ObserveSettings, RunObserver
from ranktable.observe.template import learn
from tests.core.test_observe_triage import LOGS, failure_layout, feed_dir, steps


def both(feed: Any, **kwargs: Any) -> tuple[RunObserver, RunObserver]:
    fast, slow = RunObserver(templates=True, **kwargs), RunObserver(templates=False, **kwargs)
    feed(fast)
    feed(slow)
    return fast, slow


def assert_same(fast: RunObserver, slow: RunObserver) -> None:
    assert fast.metrics_json() == slow.metrics_json()
    assert fast.diagnose("Failed", now=10_000.0) == slow.diagnose("Failed", now=10_000.0)


@pytest.mark.parametrize(
    "name", ["mindspore", "mindformers", "megatron", "hf_trainer", "deepspeed", "crashloop"]
)
def test_fixture_formats_agree(name: str) -> None:
    lines = (LOGS / f"{name}.log").read_text().splitlines()

    def feed(observer: RunObserver) -> None:
        for start in range(0, len(lines), 7):
            observer.feed("p0", 0, [("", line) for line in lines[start : start + 7]])

    fast, slow = both(feed)
    assert_same(fast, slow)
    assert fast.series or fast.errors  # the fixture said something


def test_failing_torchrun_run_agrees() -> None:
    fast, slow = both(feed_dir, layout=failure_layout())
    assert_same(fast, slow)
    assert fast.diagnose()["first_failure"] is not None


def test_plain_lines_with_changing_shapes_nan_and_throughput_agree() -> None:
    rng = random.Random(7)

    def lines(rank: int) -> list[tuple[str, str]]:
        out = []
        for stamp, _ in steps(rank, 0.5, 400):
            step = len(out) + 1
            loss = rng.choice([f"{2 - step / 1000:.4f}", "nan", f"{rng.random():.2e}", "3", "-0.5"])
            shape = rng.randrange(4)
            if shape == 0:
                text = f"[rank{rank}]:step {step} loss {loss} lr 1.0e-04 grad_norm 0.93"
            elif shape == 1:
                took = rng.randint(400, 600)
                text = f"[rank{rank}]:step {step} loss {loss} step_time {took} ms, 2304.5 tokens/s"
            elif shape == 2:
                text = f"[rank{rank}]:step_time 512.3 ms, heartbeat {step}"
            else:
                text = f"[rank{rank}]:Epoch 1 | step: {step} | loss={loss} | time 10:01"
            out.append((stamp, text))
        return out

    data = {rank: lines(rank) for rank in range(4)}  # the same lines for both observers

    def feed(observer: RunObserver) -> None:
        for start in range(0, 400, 50):
            for rank, rows in data.items():
                observer.feed(f"p{rank}", rank, rows[start : start + 50])

    fast, slow = both(feed, settings=ObserveSettings(max_points=64))
    assert_same(fast, slow)
    assert any(a["kind"] == "nan" for a in fast.metrics_json()["alerts"])
    learned = fast._templates["p0"] if fast._templates is not None else []
    assert any(t.fields for t in learned) and any(t.fields is None for t in learned)  # both kinds were used


def test_templates_are_learned_and_user_patterns_turn_them_off() -> None:
    template = learn("step 12 loss 2.5 lr 1.0e-04", "plain", {"step": 12, "loss": 2.5, "lr": 1e-4})
    assert template is not None
    found = template.pattern.fullmatch("step 130 loss 0.25 lr 3.5e-05")
    assert found is not None and template.sample(found) == {"step": 130, "loss": 0.25, "lr": 3.5e-05}
    assert template.pattern.fullmatch("step 130 loss nan lr 3.5e-05") is None  # NaN goes the parser's way
    assert learn("step 1 loss 2.5", "plain", {"step": 1, "loss": 9.0}) is None  # must re-read the same sample
    observer = RunObserver(patterns=[r"loss=(?P<loss>[0-9.]+)"])
    observer.feed("p", 0, [("", "step 1 loss 2.5 loss=3.0")])
    assert observer.metrics_json()["ranks"]["-1"]["loss"] == [3.0]
