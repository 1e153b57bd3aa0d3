"""Metric parsers on fixtures written in each trainer's real format (tests/data/logs/SOURCES.md)."""

from __future__ import annotations

import math
from pathlib import Path

import pytest

from ranktable.errors import InputError
from ranktable.observe import LineParser, ObserveSettings, RunObserver, compile_user_patterns
from ranktable.observe.parsers import deepspeed, hf_trainer, megatron, mindformers, mindspore, plain
from ranktable.observe.text import clean, inline_time, kube_time, rank_tag

LOGS = Path(__file__).parents[1] / "data" / "logs"


def feed_file(name: str, **kwargs: object) -> dict:
    observer = RunObserver(**kwargs)  # type: ignore[arg-type]
    lines = (LOGS / name).read_text(encoding="utf-8").split("\n")
    observer.feed("pod-0", 0, [("", line) for line in lines if line])
    return observer.metrics_json()


def test_mindspore_loss_and_time_lines_make_global_steps() -> None:
    data = feed_file("mindspore.log")["ranks"]["-1"]
    assert data["step"] == [1, 2, 3, 4, 5, 6]  # epoch 2 continues after epoch 1's 3 steps
    assert data["loss"][0] == pytest.approx(2.3418848514556885)
    assert data["step_time_s"][2] == pytest.approx(0.489493)  # the time line completes step 3
    assert mindspore("Eval epoch time: 10.000 ms, per step time: 5.000 ms") == {"step_time_s": 0.005}


def test_mindformers_record_with_lr_norm_throughput_and_timestamps() -> None:
    data = feed_file("mindformers.log")["ranks"]["-1"]
    assert data["step"] == [1, 2, 20]  # epoch 2 step 1 of 19 per epoch is global step 20
    assert data["loss"] == [10.712, 10.633, 9.871]
    assert data["step_time_s"] == [153.21, 1.752, 1.725]
    assert data["lr"][2] == pytest.approx(9.5e-06)
    assert data["grad_norm"][1] == pytest.approx(1.508834)
    assert data["throughput"][1] == pytest.approx(170.738)
    assert data["throughput_unit"] == "TFLOPS/NPU"
    assert data["time"][0] == pytest.approx(inline_time("2025-04-07 15:34:29,173"))


def test_megatron_iteration_lines_with_a_nan_iteration_alert() -> None:
    result = feed_file("megatron.log")
    data = result["ranks"]["-1"]
    assert data["step"] == [199, 200, 201]
    assert data["loss"][:2] == [pytest.approx(7.401205), pytest.approx(7.357863)]
    assert data["loss"][2] is None  # Megatron prints no loss for a NaN iteration
    assert data["step_time_s"][1] == pytest.approx(0.6894)
    assert data["lr"][1] == pytest.approx(6e-05)
    assert data["grad_norm"][1] == pytest.approx(4.66)
    assert data["throughput_unit"] == "TFLOP/s/GPU"
    assert [a["kind"] for a in result["alerts"]] == ["grad_nan"]
    assert result["alerts"][0]["step"] == 201


def test_hf_trainer_dicts_through_tqdm_redraws() -> None:
    result = feed_file("hf_trainer.log")
    data = result["ranks"]["-1"]
    assert data["loss"][:2] == [1.8423, 1.7011]  # eval_* and the train summary dicts are not steps
    assert data["loss"][2] == "nan"
    assert data["lr"][:2] == [4.9e-05, 4.8e-05]
    assert data["grad_norm"][0] == 0.6132
    assert len(data["step"]) == 3
    assert hf_trainer("{'eval_loss': 1.65, 'epoch': 0.24}") is None


def test_deepspeed_step_and_throughput_lines_merge() -> None:
    data = feed_file("deepspeed.log")["ranks"]
    assert list(data) == ["0"]  # `[Rank 0]` names the rank
    assert data["0"]["step"] == [10, 20]
    assert data["0"]["lr"] == [4.99e-05, 4.98e-05]
    assert data["0"]["throughput"] == [25.70, 26.02]
    assert deepspeed("[Rank 3] step=7, skipped=0, lr=[1e-3]") == {"step": 7, "lr": 1e-3, "rank": 3}


def test_plain_prints() -> None:
    assert plain("rank 13 step 40 loss 2.3010") == {"loss": 2.301, "step": 40, "rank": 13}
    sample = plain(
        "Epoch 1 | step: 10 | loss=2.3 | lr 1e-4 | grad_norm 0.5 | step_time 250 ms | 900 tokens/s"
    )
    assert sample == {
        "loss": 2.3,
        "step": 10,
        "lr": 1e-4,
        "grad_norm": 0.5,
        "step_time_s": 0.25,
        "throughput": 900.0,
        "throughput_unit": "tokens/s",
    }
    assert plain("loss scale: 1.0 | lossless") is None
    assert megatron("iteration bar") is None and mindformers("Epoch 1") is None


def test_text_helpers() -> None:
    assert clean("\x1b[32m 10%|█\r{'loss': 1.0}\r") == "{'loss': 1.0}"
    assert rank_tag("[rank9]:hello") == ("rank", 9, "hello")
    assert rank_tag("[default3]: hi") == ("default", 3, "hi")
    assert rank_tag("[W foo] x") is None
    assert kube_time("2026-12-01T07:03:21.123456789Z") == pytest.approx(1796108601.123456789)
    assert kube_time("garbage") is None
    assert inline_time("EI0006: [PID: 1] 2025-04-08-18:07:20.444.436 x") == pytest.approx(1744135640.444)


def test_user_patterns_are_linear_time_checked_and_first() -> None:
    observer = RunObserver(settings=ObserveSettings(patterns=(r"it=(?P<step>\d+) l=(?P<loss>[0-9.]+)",)))
    observer.feed("p", 0, [("", "it=5 l=0.75"), ("", "it=6 l=0.70")])
    assert observer.metrics_json()["ranks"]["-1"]["loss"] == [0.75, 0.7]
    # catastrophic backtracking in a backtracking engine; RE2 answers at once
    (evil,) = compile_user_patterns([r"(a+)+$(?P<loss>\d)"])
    assert evil.parse("a" * 5000 + "!") is None


@pytest.mark.parametrize(
    ("pattern", "message"),
    [
        ("(?P<loss>x", "not a valid RE2"),
        (r"(\w+)\1(?P<loss>\d)", "not a valid RE2"),
        ("(?P<speed>\\d+)", "unknown group name(s) speed"),
        ("(?P<step>\\d+)", "names no metric"),
        ("a" * 501, "the limit is 500"),
    ],
)
def test_user_pattern_errors_name_the_pattern(pattern: str, message: str) -> None:
    with pytest.raises(InputError) as info:
        compile_user_patterns(["(?P<loss>\\d)", pattern], where="spec.metric_patterns")
    assert message in str(info.value)
    assert "spec.metric_patterns[1]" in str(info.value)


def test_too_many_patterns_and_bad_settings() -> None:
    with pytest.raises(InputError, match="at most 8"):
        compile_user_patterns(["(?P<loss>\\d)"] * 9)
    with pytest.raises(InputError, match=r"observe.straggler_factor: 0.5 is not a number in \[1.01, 10\]"):
        ObserveSettings.from_mapping({"straggler_factor": 0.5})
    with pytest.raises(InputError, match="unknown setting 'nope'"):
        ObserveSettings.from_mapping({"nope": 1})
    assert ObserveSettings.from_mapping({"straggler_factor": 1.5}).straggler_factor == 1.5


def test_parser_prefers_the_format_seen_last() -> None:
    parser = LineParser()
    assert parser.parse("epoch: 1 step: 1, loss is 2.0") == (
        "mindspore",
        {"epoch": 1, "step": 1, "loss": 2.0},
    )
    assert parser.order[0][0] == "mindspore"


def test_loss_spike_alert_once_per_rank_with_count() -> None:
    observer = RunObserver()
    lines = [("", f"step {i} loss {2.0 - i * 0.01:.3f}") for i in range(1, 21)]
    lines += [("", "step 21 loss 9.5"), ("", "step 22 loss 9.9"), ("", "step 23 loss 1.7")]
    observer.feed("p", 0, lines)
    alerts = observer.metrics_json()["alerts"]
    assert [(a["kind"], a["step"], a["count"]) for a in alerts] == [("spike", 21, 2)]
    assert not math.isnan(observer.series[-1].columns["loss"][-1])


def test_job_spec_carries_metric_patterns_through_the_manifest() -> None:
    from ranktable.compose.manifests import compose, spec_from_manifests
    from ranktable.compose.spec import JobSpec

    spec = JobSpec.from_dict(
        {
            "name": "a",
            "image": "i",
            "command": ["true"],
            "metric_patterns": [r"it (?P<step>\d+) l=(?P<loss>\S+)"],
        }
    )
    assert spec_from_manifests(compose(spec)).metric_patterns == spec.metric_patterns
    with pytest.raises(InputError, match=r"spec.metric_patterns\[0\]: unknown group name\(s\) speed"):
        JobSpec.from_dict({"name": "a", "image": "i", "metric_patterns": ["(?P<speed>\\d+)"]})


def test_mindformers_norm_without_colon_and_numpy_pairs_are_not_one_value() -> None:
    line = "{ Epoch:[  1/  2], step:[    2/   19], loss: 10.633, per_step_time: 1752ms, global_norm [10.58]"
    assert mindformers(line)["grad_norm"] == pytest.approx(10.58)
    pair = "{ Epoch:[  1/  2], step:[    2/   19], loss: [1 31049], per_step_time: 1752ms, lr: [1 31049]"
    sample = mindformers(pair)
    assert "loss" not in sample and "lr" not in sample
    assert sample["step_time_s"] == pytest.approx(1.752)


def test_old_deepspeed_timer_and_pipeline_lines() -> None:
    assert deepspeed("[timer.py:189:stop] 0/40, SamplesPerSec=83.5, MemAllocated=0.26GB") == {
        "step": 40,
        "throughput": 83.5,
        "throughput_unit": "samples/s",
    }
    assert deepspeed("steps: 10 loss: 0.6931 iter time (s): 1.234 samples/sec: 51.9") == {
        "step": 10,
        "loss": 0.6931,
        "step_time_s": 1.234,
        "throughput": 51.9,
        "throughput_unit": "samples/s",
    }


def test_a_logs_own_step_time_beats_the_clock_and_stops_deriving() -> None:
    observer = RunObserver()
    lines = [
        ("2026-01-01T00:00:00Z", "Epoch 1/9, Step 1/99, loss: 3.0"),
        ("2026-01-01T00:00:00Z", "Epoch 1/9, Step 1/99, step time: 500.0 ms"),
        ("2026-01-01T00:00:09Z", "Epoch 1/9, Step 2/99, loss: 2.9"),
        ("2026-01-01T00:00:09Z", "Epoch 1/9, Step 2/99, step time: 400.0 ms"),
        ("2026-01-01T00:00:19Z", "Epoch 1/9, Step 3/99, loss: 2.8"),
        ("2026-01-01T00:00:19Z", "Epoch 1/9, Step 3/99, step time: 300.0 ms"),
    ]
    observer.feed("p0", 0, lines)
    data = observer.metrics_json()["ranks"]["-1"]
    assert data["step_time_s"] == [0.5, 0.4, 0.3]
    assert observer.series[-1].median_step_time() == pytest.approx(0.35)  # not the 9-10 s clock gaps


def test_divergence_alerts_from_the_grad_norm_and_an_early_spike() -> None:
    observer = RunObserver()
    observer.feed("p0", 0, [("", "{'loss': 0.0, 'grad_norm': nan, 'learning_rate': 1e-05, 'epoch': 0.1}")])
    assert [a["kind"] for a in observer.metrics_json()["alerts"]] == ["grad_nan"]
    assert "training diverged (grad nan at step 1)" in observer.diagnose("Running")["summary"]
    spike = RunObserver()
    spike.feed("p0", 0, [("", "step 1 loss 1.5"), ("", "step 2 loss 63.1")])  # one earlier point suffices
    assert [a["kind"] for a in spike.metrics_json()["alerts"]] == ["spike"]


@pytest.mark.parametrize(
    ("line", "expected"),
    [
        ("(WorkerDict pid=63294) [rank3]:[E416 x] boom", ("rank", 3, "[E416 x] boom")),
        ("(worker1, rank=1, pid=7, ip=10.0.0.1) RuntimeError: x", ("rank", 1, "RuntimeError: x")),
        ("(ActorWorker(actor_train-1) pid=18175, ip=1.2.3.4) Traceback", ("", -1, "Traceback")),
        ("i.pretrain/0 [default2]:[rank2]: RuntimeError: y", ("rank", 2, "RuntimeError: y")),
        ("29: [rank29]: z", ("rank", 29, "z")),
        ("node-7 [stderr] [default1]:w", ("default", 1, "w")),
        ("(function operator()) not a prefix", None),
        ("[W326 11:49:12 compiler_depend.ts:133] Warning", None),
    ],
)
def test_line_prefixes_are_stripped_and_name_their_rank(line: str, expected: object) -> None:
    from ranktable.observe.text import line_prefix

    assert line_prefix(line) == expected
