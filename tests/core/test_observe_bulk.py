"""The bulk path (whole batches proved against learned templates, rows merged into the series per rank)
gives exactly what feeding the same lines one at a time through the line path gives: on varied runs with
mixed formats, bad and missing timestamps, out-of-order and repeated steps, untagged lines, errors, NaN,
Inf and spikes, thinning (small max_points), and any batch size."""

from __future__ import annotations

import itertools
import json
import math
import random
from typing import Any

import numpy as np
import pytest

from ranktable.observe import ObserveSettings, RankLayout, RunObserver, fastpath, text
from ranktable.observe import observer as observing
from ranktable.observe.fastpath import PodShapes, match_batch
from ranktable.observe.series import LOSS_WEIGHT, MAX_ALERTS, Alerts, RankSeries, moved_mean, moving_means

NPUS = 4


def stamp(t: float) -> str:
    whole = int(t)
    hh, mm, ss = (whole // 3600) % 24, (whole // 60) % 60, whole % 60
    return f"2026-09-21T{hh:02d}:{mm:02d}:{ss:02d}.{int((t - whole) * 1e9):09d}Z"


ODD = [
    " iteration {step}/ 1000 | lm loss: {loss} | learning rate: 1.0E-04 |",
    "{{'loss': {loss}, 'grad_norm': 0.5, 'learning_rate': 4.9e-05, 'epoch': 0.12}}",
    "epoch: 1 step: {step}, loss is {loss}",
    "Epoch 1 | step: {step} | loss={loss} | time 10:01",
    "step {step} loss {loss} lr 1.0e-04 grad_norm 0.93\r\x1b[2Kstep {step} loss {loss}",
    "step {step} loss {loss} lr 1.0e-04 grad_norm 0.93 \u00e9",
    "step {step} loss {loss}. lr 1.e-04",
    "step {step} loss nan lr 1.0e-04",
    "step {step} loss -0.5 lr 1.0e-04",
]
PLAIN = [
    "step {step} loss {loss} lr 1.0e-04 grad_norm 0.{small}",
    "step {step} loss {loss} lr 1.0e-04 grad_norm 0.{small}",
    "step {step} loss {loss} lr 1.0e-04 grad_norm 0.{small}",
    "step {step} loss {loss} step_time {took} ms, {tput:.1f} tokens/s",
    "loss {loss} lr {lr:.3e}",  # no step: records are counted
    "step_time {tput:.1f} ms, {took}.5 tokens/s",  # no parser takes it
    "rank {rank} step {step} loss {loss}",
    "step {step} loss 1e999 lr 1.0e-04 grad_norm 0.{small}",
    "[W compiler_depend.ts:133] NPU allocator: expandable",
    "INFO dataloader worker heartbeat ok",
    "Traceback (most recent call last):",
    "EI0006: [PID: 99] Getting socket times out. remote rank {peer}",
    "RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB",
]


def pod_log(rng: random.Random, node: int, steps: int, odd: float) -> list[tuple[str, str]]:
    """One pod's log: torchrun plain lines with spikes, Inf, step-less and rank-naming lines, chatter and
    errors; with probability `odd` a line the line path must read (other formats, NaN, tqdm, ...)."""
    out: list[tuple[str, str]] = []
    t = 1_790_000_000.0 + node
    step = 0
    for _ in range(steps):
        step = max(0, step + rng.choice([1, 1, 1, 1, 0, 2, -3]))  # repeated, skipped and backwards steps
        t += rng.choice([0.5, 0.5, 0.0, 0.25, -2.0])  # equal and out-of-order times
        when = rng.choice([stamp(t)] * 12 + ["", "garbage", "2026-09-21T10:11:nanZ", "2026-09-21T10:11:12Z"])
        for local in range(NPUS):
            rank = node * NPUS + local
            usual = f"{2.5 / (1 + step / 50):.5f}"
            shapes = ["1e999", "3", f"{rng.random():.2e}"] if odd else []  # more templates than a pod keeps
            loss = rng.choice([usual] * 30 + ["9.9", "40.0", *shapes])
            values = {
                "step": step,
                "loss": loss,
                "small": rng.randint(1, 99),
                "took": rng.randint(400, 600),
                "tput": rng.random() * 3000,
                "lr": rng.random(),
                "rank": rank,
                "peer": rng.randint(0, 11),
            }
            tag = rng.choice([f"[rank{rank}]:", f"[rank{rank}]: ", f"[rank{rank}]:", ""])
            if rng.random() < odd:
                tag = rng.choice([tag, f"[default{local}]:"])
                text = rng.choice(ODD).format(**values)
            else:
                text = rng.choice(PLAIN).format(**values)
            out.append((when, tag + text))
    return out


def run(seed: int, odd: float, pods: int = 3, steps: int = 300) -> dict[str, list[tuple[str, str]]]:
    rng = random.Random(seed)
    return {f"job-worker-{n}": pod_log(rng, n, steps, odd) for n in range(pods)}


def observer(pods: int, **kwargs: Any) -> RunObserver:
    layout = RankLayout.uniform([(f"job-worker-{n}", n) for n in range(pods)], NPUS)
    return RunObserver(layout, **kwargs)


def line_by_line(logs: dict[str, list[tuple[str, str]]], **kwargs: Any) -> RunObserver:
    """Each line alone through the line path (the bulk path switched off), pods interleaved."""
    out = observer(len(logs), **kwargs)
    out._feed_bulk = lambda *args: False  # type: ignore[method-assign]
    for at in range(max(map(len, logs.values()))):
        for node, (pod, lines) in enumerate(logs.items()):
            if at < len(lines):
                out.feed(pod, node, [lines[at]])
    return out


def batched(logs: dict[str, list[tuple[str, str]]], size: int, **kwargs: Any) -> RunObserver:
    out = observer(len(logs), **kwargs)
    for start in range(0, max(map(len, logs.values())), size):
        for node, (pod, lines) in enumerate(logs.items()):
            out.feed(pod, node, lines[start : start + size])
    return out


def exact(value: Any) -> str:
    """JSON text, so that NaN (a NaN kubelet stamp is kept as a NaN time) compares equal to itself."""
    return json.dumps(value, sort_keys=True, default=repr)


def same(a: RunObserver, b: RunObserver) -> None:
    assert exact(a.metrics_json()) == exact(b.metrics_json())
    now = 1_790_001_000.0
    assert exact(a.diagnose("Running", now=now)) == exact(b.diagnose("Running", now=now))
    assert exact(sorted(a.progress.items())) == exact(sorted(b.progress.items()))
    for rank, series in a.series.items():
        other = b.series[rank]
        assert exact(list(series.step_times)) == exact(list(other.step_times))
        assert (series.loss_mean, series.loss_count, series.seen, series.stride) == (
            other.loss_mean,
            other.loss_count,
            other.seen,
            other.stride,
        )


@pytest.mark.parametrize("seed", range(3))
@pytest.mark.parametrize("size", [1, 7, 200])
@pytest.mark.parametrize("odd", [0.0, 0.003, 0.1])
@pytest.mark.parametrize("few", [1, observing.FEW_ROWS])
def test_bulk_batches_give_the_line_paths_results(
    seed: int, size: int, odd: float, few: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(observing, "FEW_ROWS", few)  # 1: every rank's rows through the array steps
    logs = run(seed, odd)
    settings = ObserveSettings(max_points=16)  # thins many times
    same(batched(logs, size, settings=settings), line_by_line(logs, settings=settings))


def test_bulk_path_is_taken_and_rows_are_held_until_read() -> None:
    rng = random.Random(1)
    lines = [
        (stamp(1_790_000_000 + s * 0.5), f"[rank{s % 8}]:step {s // 8} loss {rng.random():.4f} lr 1.0e-04")
        for s in range(4000)
    ]
    fast = observer(2)
    taken = []
    original = fast._feed_bulk

    def spy(*args: Any) -> bool:
        taken.append(original(*args))
        return taken[-1]

    fast._feed_bulk = spy  # type: ignore[method-assign]
    for start in range(0, len(lines), 200):
        fast.feed("job-worker-0", 0, lines[start : start + 200])
    assert not taken and len(fast._pending[("job-worker-0", 0)]) == 20  # the batches wait
    assert fast.lines == len(lines)  # counted when fed
    fast._drain()
    # the 20 as one chunk: no templates yet; the first alone learns them, then the other 19 as one chunk
    assert taken == [False, False, True]
    assert fast._held_rows  # rows not merged yet
    same(fast, line_by_line({"job-worker-0": lines}))
    assert not fast._held_rows and not fast._pending


def test_clean_plain_run_with_long_steps_agrees() -> None:
    """The bench's shape: one template per pod, strictly increasing steps, thinning to stride 32."""
    logs = {}
    for node in range(2):
        out = []
        for step in range(1, 9000):
            t = stamp(1_790_000_000.0 + step * 0.5)
            for local in range(NPUS):
                out.append(
                    (
                        t,
                        f"[rank{node * NPUS + local}]:step {step} loss {2.5 / (1 + step / 500):.5f} "
                        "lr 1.0e-04 grad_norm 0.93",
                    )
                )
                if step % 10 == 0:
                    out.append((t, f"[rank{node * NPUS + local}]:step_time 512.3 ms, 2304.5 tokens/s"))
        logs[f"job-worker-{node}"] = out
    fast = batched(logs, 200)
    assert fast.series[0].stride == 32
    same(fast, line_by_line(logs))


def test_alerts_near_the_cap_keep_the_line_paths_choice() -> None:
    """Which alerts fit under MAX_ALERTS depends on the order ranks raised them: held rows are then
    replayed in log order."""
    lines = []
    ranks = MAX_ALERTS // 2 + 20
    for step in range(1, 30):
        for rank in range(ranks):
            loss = "nan" if step == 20 else ("1e999" if step == 25 else f"{1 + (step % 3) * 0.1:.2f}")
            lines.append((stamp(1_790_000_000 + step), f"[rank{rank}]:step {step} loss {loss}"))
    logs = {"job-worker-0": lines}
    same(batched(logs, 200), line_by_line(logs))


LOOKALIKES = [
    "[rank1]:step 5 loss .5 lr 1.0e-04 grad_norm 0.93",  # digits deleted, these read like the template
    "[rank1]:step 5 loss 2. lr 1.0e-04 grad_norm 0.93",
    "[rank1]:step 5 loss 2.5 lr 1.e-04 grad_norm 0.93",
    "[rank1]:step 5 loss 2.5 lr 1.0e04- grad_norm 0.93",
    "[rank1]:step  loss 52.5 lr 1.0e-04 grad_norm 0.93",
    "[rank1]:step 5 loss 2.5 lr 1.0e-04 grad_norm 0.93.",
    "[rank123456789012345678]:step 5 loss 2.5 lr 1.0e-04 grad_norm 0.93",  # too long to be a tag
    "[rank]:step 5 loss 2.5 lr 1.0e-04 grad_norm 0.93",
]


@pytest.mark.parametrize("lookalike", LOOKALIKES)
def test_a_line_that_only_looks_like_a_template_is_left_to_the_line_path(lookalike: str) -> None:
    template = "[rank1]:step {} loss 2.5 lr 1.0e-04 grad_norm 0.93"
    first = [(stamp(1_790_000_000 + s), template.format(s)) for s in range(1, 4)]
    batch = [*first, (stamp(1_790_000_004), lookalike), (stamp(1_790_000_005), template.format(6))]
    fast = observer(1)
    fast.feed("job-worker-0", 0, first)
    fast._drain()  # read now: the templates are learned
    shapes = fast._shapes.get("job-worker-0") or PodShapes()
    shapes.update(fast._templates["job-worker-0"] if fast._templates else [])
    texts = [text for _, text in batch]
    assert match_batch(shapes, texts, "\n".join(texts)) is None
    assert match_batch(shapes, texts[:3], "\n".join(texts[:3])) is not None
    fast.feed("job-worker-0", 0, batch)
    same(fast, line_by_line({"job-worker-0": first + batch}))


@pytest.mark.parametrize("untagged", [False, True])
def test_live_stream_of_many_pods_is_read_at_once_and_agrees(untagged: bool) -> None:
    """Many pods, a few lines each per read (a live stream): their batches are read together on the bulk
    path (one pass over all pods) with the results of reading each batch when it came."""
    rng = random.Random(7)
    pods = 6
    logs: dict[str, list[tuple[str, str]]] = {f"job-worker-{n}": [] for n in range(pods)}
    for tick in range(120):
        for node, lines in enumerate(logs.values()):
            for k in range(5):
                rank = node * NPUS + (k % NPUS)
                tag = "" if untagged and k == 4 else f"[rank{rank}]:"
                loss = rng.choice([f"{2.5 / (1 + tick / 50):.4f}"] * 20 + ["30.5", "1e999"])
                lines.append(
                    (stamp(1_790_000_000 + tick * 0.25), f"{tag}step {tick * 5 + k} loss {loss} lr 1e-4")
                )
    fast = observer(pods)
    together = []
    original = fast._read_pods

    def spy() -> bool:
        together.append(original())
        return together[-1]

    fast._read_pods = spy  # type: ignore[method-assign]
    for start in range(0, 5 * 120, 5):
        for node, (pod, lines) in enumerate(logs.items()):
            fast.feed(pod, node, lines[start : start + 5])
        if start % 20 == 15:
            fast.diagnose("Running")  # a read: every pod's batches so far
    assert together.count(True) >= len(together) - 4  # all but reads with a line no template fits yet
    same(fast, line_by_line(logs))


def test_stamps_read_with_array_steps_equal_kube_time() -> None:
    rng = random.Random(3)
    stamps = [stamp(rng.random() * 2e9) for _ in range(2000)]
    stamps += [f"2026-09-21T10:11:12.{rng.randrange(10**9):09d}Z" for _ in range(500)]
    stamps += [
        "2026-13-21T10:11:12.123456789Z",  # no such month: no time
        "2026-02-31T25:61:99.999999999Z",  # calendar.timegm's arithmetic
        "0001-01-01T00:00:00.000000001Z",
        "2026-09-21T10:11:12Z",
        "2026-09-21T10:11:12.123456789+00:00",
        "2026-09-21T10:11:12.123456789z",
        "2026-09-21 10:11:12.123456789Z",
        "2026-09-21T10:11:12.12345678\u00e9Z",
        "2026-09-21T10:11:nanZ",
        "garbage",
        "",
    ]
    got = text.kube_times(stamps)
    assert exact(got) == exact([text.kube_time(s) if s else None for s in stamps])
    assert got[-11] is None and got[-1] is None and got[0] is not None
    usual = [s for s in stamps if len(s) == 30]  # the array steps for all: same length, ASCII or not
    ascii_only = [s for s in stamps if s.isascii()]
    odd = ["2026-09-21T10:11:12.12345678Z", "Z2026-09-21T10:11:12.123456789Z"]  # 29 + 31: 2 x 30 joined
    for some in (usual, ascii_only, [s for s in usual if s.isascii()], odd + usual[:5], stamps[:1], []):
        assert exact(text.kube_times(some)) == exact([text.kube_time(s) if s else None for s in some])


def test_stamps_array_steps_are_taken(monkeypatch: pytest.MonkeyPatch) -> None:
    """Usual stamps are read by the array steps (kube_time is called only for the others)."""
    slow: list[str] = []
    original = text.kube_time

    def spy(stamp: str) -> float | None:
        slow.append(stamp)
        return original(stamp)

    monkeypatch.setattr(text, "kube_time", spy)
    stamps = [stamp(1_790_000_000 + s * 0.37) for s in range(500)]
    no_month = "2026-13-21T10:11:12.123456789Z"  # the usual form: no time, read by the array steps too
    for some, calls in ((stamps, 0), ([*stamps, "2026-09-21T10:11:12Z"], 1), ([*stamps, no_month], 0)):
        slow.clear()
        got = text.kube_times(some)
        assert len(slow) == calls
        assert got[:500] == [original(s) for s in stamps]
        assert got[500:] == [original(s) for s in some[500:]]


def test_add_row_is_add_of_a_template_row() -> None:
    """RankSeries.add_row (the merge's row-by-row step) keeps exactly what add() of the same sample keeps."""
    rng = random.Random(11)
    fast, slow = RankSeries(16), RankSeries(16)
    for _ in range(3000):
        step = rng.choice([None, rng.randrange(0, 400), rng.randrange(0, 400)])
        when = rng.choice([None, 1_790_000_000.0 + rng.random() * 100])
        loss = rng.choice([rng.random() * 3, math.inf, math.nan])
        took = rng.choice([None, None, rng.random(), math.inf])
        fields = {name: rng.choice([None, rng.random()]) for name in ("throughput", "lr", "grad_norm")}
        unit = rng.choice([None, None, "tokens/s"])
        sample = {"loss": loss, **{k: v for k, v in fields.items() if v is not None}}
        if step is not None:
            sample["step"] = step
        if took is not None:
            sample["step_time_s"] = took
        if unit:
            sample["throughput_unit"] = unit
        expected, _ = slow.add(sample, when)
        assert fast.add_row(step, when, loss, took, *fields.values(), unit) == expected
    assert exact(fast.to_json()) == exact(slow.to_json())
    assert exact(list(fast.step_times)) == exact(list(slow.step_times))
    for name in RankSeries.__slots__:
        if name not in ("columns", "step_times"):
            assert exact(getattr(fast, name)) == exact(getattr(slow, name)), name


def _check_row_by_row(alerts: Alerts, rank: int, series: RankSeries, rows: list[tuple[float, int]]) -> None:
    for loss, step in rows:
        alerts.check(rank, series, loss, step, 1_790_000_000.0 + step)


LOSS_RUNS = {
    "calm": lambda rng, n: [2.0 + rng.random() * 0.1 for _ in range(n)],
    "decaying": lambda rng, n: [2.5 / (1 + s / 500) for s in range(n)],
    "decaying 20x": lambda rng, n: [2.5 / (1 + s / 20) * (1 + 0.2 * rng.random()) for s in range(n)],
    "rising": lambda rng, n: [1.0 + s / 50 for s in range(n)],
    "near the factor": lambda rng, n: (
        [1.0] * 10 + [rng.choice([2.99999999, 3.0, 3.0000001, 1.0]) for _ in range(n)]
    ),
    "spikes and non-finite": lambda rng, n: [
        rng.choice([1.0 + rng.random(), 40.0, math.nan, math.inf, -math.inf]) for _ in range(n)
    ],
    "negative and zero": lambda rng, n: [rng.choice([-1.0, 0.0, 1e-300, 0.5, 2.0]) for _ in range(n)],
    "huge": lambda rng, n: [rng.choice([1e308, 1.7e308, 1e300]) for _ in range(n)],
}


@pytest.mark.parametrize("kind", sorted(LOSS_RUNS))
@pytest.mark.parametrize("seed", range(3))
def test_check_many_is_check_row_by_row(kind: str, seed: int) -> None:
    """Alerts.check_many (the moving mean as one loop, or only its last value when no alert can be raised)
    keeps exactly what check() of each row in turn keeps: alerts, mean and count, split anywhere."""
    rng = random.Random(seed)
    losses = LOSS_RUNS[kind](rng, 400)
    rows = [(loss, step) for step, loss in enumerate(losses)]
    slow_alerts, slow = Alerts(3.0), RankSeries(16)
    _check_row_by_row(slow_alerts, 0, slow, rows)
    fast_alerts, fast = Alerts(3.0), RankSeries(16)
    cuts = sorted({0, len(rows), *(rng.randrange(len(rows)) for _ in range(4))})
    for start, end in itertools.pairwise(cuts):
        part = rows[start:end]
        loss = np.array([row[0] for row in part])
        steps = np.array([row[1] for row in part])
        fast_alerts.check_many(0, fast, loss, steps, 1_790_000_000.0 + steps.astype(float))
    assert exact(fast_alerts.to_json()) == exact(slow_alerts.to_json())
    assert exact((fast.loss_mean, fast.loss_count)) == exact((slow.loss_mean, slow.loss_count))


def test_moving_means_are_the_row_by_row_means() -> None:
    rng = random.Random(5)
    losses = [rng.choice([rng.random() * 3, 1e308, -2.0, math.inf, math.nan, 0.0]) for _ in range(500)]
    expected = [0.7]
    for loss in losses:
        expected.append(expected[-1] + LOSS_WEIGHT * (loss - expected[-1]))
    assert exact(moving_means(0.7, losses).tolist()) == exact(expected)
    assert exact(moved_mean(0.7, losses)) == exact(expected[-1])
    assert exact(moved_mean(0.7, [])) == exact(0.7)


@pytest.mark.parametrize(
    "odd",
    [
        "step {step} loss 1.5\nstep 99 loss 9.5",  # a newline inside a text
        "step {step} loss 1.5\r",  # CRLF
        "step {step} loss 1.5 \u00e9\u4e2d",  # multibyte UTF-8
        "step {step} loss 1.5 lr 1.0e-04 grad_norm 0.93",  # another template, learned late
        "INFO step {step} done",  # a keyword in a line no template fits
    ],
)
def test_odd_lines_in_a_read_of_many_batches_agree(odd: str) -> None:
    """A coalesced read (several batches of one pod) with one odd line goes to the line path batch by batch
    and agrees with reading each line alone, whatever the batch size."""
    lines = []
    for step in range(1, 900):
        tag = f"[rank{step % NPUS}]:"
        text = odd.format(step=step) if step == 450 else f"step {step} loss {2.5 / (1 + step / 50):.5f}"
        lines.append((stamp(1_790_000_000 + step * 0.5), tag + text))
    logs = {"job-worker-0": lines}
    for size in (7, 200):
        same(batched(logs, size), line_by_line(logs))


NUMBER_FORMS = {
    "fixed fraction": lambda rng: f"{rng.random() * 10:.5f}",
    "fixed exponent": lambda rng: f"{rng.randrange(1, 10)}.{rng.randrange(10)}e-04",
    "mixed fractions": lambda rng: rng.choice(
        [f"{rng.random():.3f}", f"{rng.random():.7f}", f"{rng.randrange(10**6)}.{rng.randrange(10**9)}"]
    ),
    "mixed exponents": lambda rng: f"{rng.randrange(1, 10)}.{rng.randrange(10)}e-{rng.randrange(1, 30):02d}",
    "edges": lambda rng: rng.choice(
        [
            "9007199254740.993",  # mantissa over 2**53
            "9007199254740.992",
            "123456789012345678.0",  # 19 digits
            "1.0000000000000000000001",  # 22 fraction digits
            "99999999.99999999",
            "0.00000",
        ]
    ),
}


@pytest.mark.parametrize("form", sorted(NUMBER_FORMS))
def test_numbers_read_in_bulk_are_floats_of_their_text(form: str, monkeypatch: pytest.MonkeyPatch) -> None:
    """A number read in bulk (one power of ten for all rows when every row has as many fraction digits
    and the same exponent, else row by row) is exactly float() of its text, as on the line path."""
    uniform = []
    original = fastpath._uniform

    def spy(*args: Any) -> Any:
        found = original(*args)
        uniform.append(found is not None)
        return found

    monkeypatch.setattr(fastpath, "_uniform", spy)
    rng = random.Random(9)
    lines = [
        (
            stamp(1_790_000_000 + step),
            f"[rank{step % NPUS}]:step {step} loss {NUMBER_FORMS[form](rng)} lr {NUMBER_FORMS[form](rng)}",
        )
        for step in range(1, 1200)
    ]
    logs = {"job-worker-0": lines}
    same(batched(logs, 200), line_by_line(logs))
    if form.startswith("fixed"):
        assert any(uniform)


def test_stamps_with_any_character_at_any_place_equal_kube_time() -> None:
    """The array steps check each byte against its place (a fixed character or a digit): every character
    0-255 at every place of a usual stamp reads as kube_time reads it."""
    usual = "2026-09-21T10:11:12.123456789Z"
    stamps = [usual[:at] + chr(code) + usual[at + 1 :] for at in range(len(usual)) for code in range(256)]
    assert exact(text.kube_times(stamps)) == exact([text.kube_time(s) for s in stamps])
    plain = [s for s in stamps if s.isascii() and "\n" not in s]  # all of the usual length: one matrix
    assert exact(text.kube_times(plain)) == exact([text.kube_time(s) for s in plain])


def test_lines_starting_with_a_number_are_read_in_bulk_and_agree() -> None:
    """A template whose line starts with a digit run (the batch's first byte is a digit)."""
    rng = random.Random(4)
    lines = [
        (stamp(1_790_000_000 + step), f"{step} loss {rng.random() * 3:.4f} lr 1.0e-04 step {step}")
        for step in range(1, 600)
    ]
    fast = observer(1)
    fast.feed("job-worker-0", 0, lines[:50])
    fast._drain()
    shapes = fast._shapes.get("job-worker-0") or PodShapes()
    shapes.update(fast._templates["job-worker-0"] if fast._templates else [])
    texts = [text for _, text in lines[50:250]]
    assert match_batch(shapes, texts, "\n".join(texts)) is not None
    logs = {"job-worker-0": lines}
    same(batched(logs, 200), line_by_line(logs))


def test_stable_order_is_a_stable_argsort() -> None:
    rng = np.random.default_rng(2)
    for values in (
        rng.integers(0, 8, 5000),
        rng.integers(0, 1 << 15, 5000),
        rng.integers(-3, 1 << 16, 5000),
        np.array([], dtype=np.int64),
        np.array([(1 << 15) - 1, 0, (1 << 15) - 1, 0]),
    ):
        assert np.array_equal(observing.stable_order(values), np.argsort(values, kind="stable"))


def _learned_shape(line: str) -> fastpath.Shape:
    """The untagged bulk reader of the template learned from `line`."""
    fast = observer(1)
    fast.feed("job-worker-0", 0, [(stamp(1_790_000_000), line)] * 3)
    fast._drain()
    shapes = PodShapes()
    shapes.update(fast._templates["job-worker-0"] if fast._templates else [])
    return shapes.by_key[line.encode().translate(None, b"0123456789")]


@pytest.mark.parametrize("kept", [0, 30, fastpath.EXPECTED_KEPT])
def test_expected_places_kept_per_shape_serve_reads_of_any_size(
    kept: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Shape.expected keeps the longest places array asked for (up to EXPECTED_KEPT): any size after any
    other gives the places of that many lines, a line whose runs sit elsewhere is still refused after a
    longer read, and whole runs read with the array kept or not agree with the line path."""
    monkeypatch.setattr(fastpath, "EXPECTED_KEPT", kept)
    found = _learned_shape("step 5 loss 2.5")
    for count in (5, 2, 9, 1, 30, 3, 12):
        places = (found.places + np.arange(count)[:, None] * found.width).ravel()
        assert np.array_equal(found.expected(count), places)
    good = [f"step {n} loss {n % 7}.{n}" for n in range(1, 40)]
    assert fastpath._read(found, good) is not None
    # same digit-less text and as many runs in all, but the runs are not at the template's places
    assert fastpath._read(found, ["s1tep 5 loss 2.5", "step  loss 2.5"]) is None
    rng = random.Random(5)
    lines = [
        (
            stamp(1_790_000_000 + step * 0.5),
            f"[rank{step % NPUS}]:step {step} loss {rng.random() * 3:.{rng.choice([3, 5])}f} lr 1.0e-04",
        )
        for step in range(1, 2500)
    ]
    logs = {"job-worker-0": lines}
    for size in (13, 200, 1000):
        same(batched(logs, size), line_by_line(logs))


@pytest.mark.parametrize("few", [1, observing.FEW_ROWS])
def test_throughput_units_merged_as_indices_agree(few: int, monkeypatch: pytest.MonkeyPatch) -> None:
    """Held rows keep their throughput unit as an index into the observer's unit names through the merge
    (array steps and row by row): each rank's last unit is the line path's."""
    monkeypatch.setattr(observing, "FEW_ROWS", few)
    merged = []
    extend = RankSeries.extend

    def spy(self: RankSeries, rows: Any) -> Any:
        merged.append(len(rows.unit))
        return extend(self, rows)

    monkeypatch.setattr(RankSeries, "extend", spy)
    rng = random.Random(8)
    lines = []
    for step in range(1, 1500):
        unit = rng.choice(["tokens/s", "samples/s", ""])
        tail = f" step_time {rng.randint(400, 600)} ms, {rng.random() * 3000:.1f} {unit}" if unit else ""
        text = f"[rank{rng.randrange(NPUS)}]:step {step} loss {rng.random() * 3:.4f}{tail}"
        lines.append((stamp(1_790_000_000 + step * 0.5), text.rstrip()))
    logs = {"job-worker-0": lines}
    for size in (7, 200):
        fast, slow = batched(logs, size), line_by_line(logs)
        same(fast, slow)
        units = {s.throughput_unit for s in fast.series.values()}
        assert units == {s.throughput_unit for s in slow.series.values()} and units & {
            "tokens/s",
            "samples/s",
        }
    assert merged or few != 1  # the array steps took rows
