"""Metric parsers for the formats trainers print, plus bounded user regexes with named groups.

Each parser turns one log line into a ``Sample`` (a dict of the fields it found) or None. Built-in
formats (sources in docs/observability.md): MindSpore ``LossMonitor``/``TimeMonitor``, MindFormers
``MFLossMonitor``, Megatron-LM/MindSpeed ``training_log``, the HF Trainer's logged dicts, DeepSpeed's
``log_dist``/throughput timer lines, and plain PyTorch prints (``step 10 loss 2.3 lr 1e-4``).
"""

from __future__ import annotations

import re
from collections.abc import Callable, Sequence
from dataclasses import dataclass
from typing import Any

from ranktable.errors import InputError
from ranktable.observe.text import NUM

Sample = dict[str, Any]
"""Fields: step, epoch, steps_per_epoch, loss, step_time_s, throughput, throughput_unit, lr, grad_norm,
rank (when the line names its rank)."""

METRICS = ("loss", "step_time_s", "throughput", "lr", "grad_norm")
MAX_USER_PATTERNS = 8
MAX_PATTERN_CHARS = 500
USER_GROUPS = frozenset(
    {"step", "epoch", "loss", "step_time_s", "step_time_ms", "throughput", "lr", "grad_norm", "rank"}
)


def _num(text: str) -> float:
    return float(text)


# -- MindSpore: ``epoch: 3 step: 120, loss is 2.34`` and ``Train epoch time: ... per step time: 489.493 ms``
_MS_LOSS = re.compile(rf"epoch:\s*(\d+)\s+step:\s*(\d+),\s*loss is\s*\(?\s*({NUM})")
_MS_TIME = re.compile(rf"per step time:\s*({NUM})\s*ms")


def mindspore(text: str) -> Sample | None:
    if "loss is" in text:
        m = _MS_LOSS.search(text)
        if m:
            return {"epoch": int(m.group(1)), "step": int(m.group(2)), "loss": _num(m.group(3))}
    if "per step time" in text:
        m = _MS_TIME.search(text)
        if m:
            return {"step_time_s": _num(m.group(1)) / 1000.0}
    return None


# -- MindFormers MFLossMonitor: ``{ Epoch:[  1/  2], step:[    2/   19], loss: 10.633, per_step_time: 1752ms,
# lr: 1e-05, ..., global_norm: [1.508834], train_throughput_per_npu: 170.738T``;
# 2023 releases: ``loss:[a/b], time: x ms``
_MF_EPOCH = re.compile(r"Epoch:\[\s*(\d+)/\s*(\d+)\],\s*step:\[\s*(\d+)/\s*(\d+)\]")
# a value is a number or a one-element array ``[1.508834]``; ``[1 31049]`` (a numpy pair) is not one value
_ONE = rf"(?:\[\s*({NUM})\s*\]|({NUM})(?![\d.]))"
_MF_LOSS = re.compile(rf"\bloss:\s*{_ONE}")
_MF_TIME = re.compile(rf"(?:per_step_time|\btime):\s*({NUM})\s*ms")
_MF_LR = re.compile(rf"\blr:\s*{_ONE}")
_MF_NORM = re.compile(rf"global_norm:?\s*{_ONE}")
_MF_TPUT = re.compile(rf"train_throughput_per_npu:\s*({NUM})\s*T")


def mindformers(text: str) -> Sample | None:
    m = _MF_EPOCH.search(text) if "Epoch:[" in text else None  # the substring test is the cheap one
    if m is None:
        return None
    epoch, step, per_epoch = int(m.group(1)), int(m.group(3)), int(m.group(4))
    out: Sample = {"epoch": epoch, "step": (epoch - 1) * per_epoch + step, "steps_per_epoch": per_epoch}
    for key, pattern, scale in (
        ("loss", _MF_LOSS, 1.0),
        ("step_time_s", _MF_TIME, 0.001),
        ("lr", _MF_LR, 1.0),
        ("grad_norm", _MF_NORM, 1.0),
        ("throughput", _MF_TPUT, 1.0),
    ):
        found = pattern.search(text, m.end())
        if found:
            value = next((g for g in found.groups() if g is not None), None)
            if value is not None:
                out[key] = _num(value) * scale
    if "throughput" in out:
        out["throughput_unit"] = "TFLOPS/NPU"
    return out


# -- Megatron-LM / MindSpeed: `` iteration      200/    5000 | ... | lm loss: 7.357863E+00 | ...``
_MEG_ITER = re.compile(r"iteration\s+(\d+)/\s*(\d+)\s*\|")
_MEG_FIELD = re.compile(r"^\s*(.+?):\s*(.+?)\s*$")
_MEG_NUM = re.compile(rf"^(?:{NUM})$")


def megatron(text: str) -> Sample | None:
    m = _MEG_ITER.search(text) if "iteration" in text else None  # the substring test is the cheap one
    if m is None:
        return None
    out: Sample = {"step": int(m.group(1))}
    for part in text[m.end() :].split("|"):
        field = _MEG_FIELD.match(part)
        if field is None or not _MEG_NUM.match(field.group(2)):
            continue
        key, value = field.group(1).lower(), _num(field.group(2))
        if key.startswith("elapsed time per iteration"):
            out["step_time_s"] = value / 1000.0
        elif key == "learning rate":
            out["lr"] = value
        elif key == "grad norm":
            out["grad_norm"] = value
        elif key.startswith("throughput per gpu"):
            out["throughput"], out["throughput_unit"] = value, "TFLOP/s/GPU"
        elif key == "samples per second" and "throughput" not in out:
            out["throughput"], out["throughput_unit"] = value, "samples/s"
        elif key.endswith("loss") and key != "loss scale" and "loss" not in out:
            out["loss"] = value  # "lm loss" first; MoE runs print more losses after it
    return out


# -- HF Trainer: ``{'loss': 1.8423, 'grad_norm': 0.6132, 'learning_rate': 4.9e-05, 'epoch': 0.12}``
_HF_PAIR = re.compile(rf"'(\w+)':\s*'?({NUM})'?")
_HF_KEYS = {"loss": "loss", "grad_norm": "grad_norm", "learning_rate": "lr", "epoch": "epoch_f"}


def hf_trainer(text: str) -> Sample | None:
    start = text.find("{'")
    if start < 0 or "'loss'" not in text:
        return None
    out: Sample = {}
    for key, value in _HF_PAIR.findall(text, start):
        name = _HF_KEYS.get(key)
        if name:
            out[name] = _num(value)
    return out if "loss" in out else None


# -- DeepSpeed: ``[Rank 0] step=10, skipped=4, lr=[4.99e-05, ...]`` and the throughput timer line
_DS_STEP = re.compile(rf"\bstep=(\d+),\s*skipped=\d+,\s*lr=\[\s*({NUM})")
_DS_TPUT = re.compile(rf"global_step=(\d+),\s*RunningAvgSamplesPerSec=({NUM}),\s*CurrSamplesPerSec=({NUM})")
_DS_RANK = re.compile(r"\[Rank (\d+)\]")
# older releases' timer: ``[timer.py:189:stop] 0/40, SamplesPerSec=83.48, MemAllocated=...`` (epoch/step)
_DS_TPUT_OLD = re.compile(rf"\b\d+/(\d+), SamplesPerSec=({NUM})")
# the pipeline engine: ``steps: 10 loss: 0.6931 iter time (s): 1.234 samples/sec: 51.9``
_DS_PIPE = re.compile(rf"\bsteps: (\d+) loss: ({NUM}) iter time \(s\): ({NUM}) samples/sec: ({NUM})")


def deepspeed(text: str) -> Sample | None:
    if "SamplesPerSec=" in text and "step=" not in text:
        old = _DS_TPUT_OLD.search(text)
        if old:
            return {
                "step": int(old.group(1)),
                "throughput": _num(old.group(2)),
                "throughput_unit": "samples/s",
            }
    if "iter time (s)" in text:
        pipe = _DS_PIPE.search(text)
        if pipe:
            return {
                "step": int(pipe.group(1)),
                "loss": _num(pipe.group(2)),
                "step_time_s": _num(pipe.group(3)),
                "throughput": _num(pipe.group(4)),
                "throughput_unit": "samples/s",
            }
    if "step=" not in text:
        return None
    m = _DS_STEP.search(text)
    if m:
        out: Sample = {"step": int(m.group(1)), "lr": _num(m.group(2))}
        rank = _DS_RANK.search(text)
        if rank:
            out["rank"] = int(rank.group(1))
        return out
    m = _DS_TPUT.search(text)
    if m:
        return {"step": int(m.group(1)), "throughput": _num(m.group(3)), "throughput_unit": "samples/s"}
    return None


# -- plain prints: ``rank 3 step 10 loss 2.3``, ``Epoch 1 | step: 10 | loss=2.3 | lr 1e-4 | 450 tokens/s``.
# One scan collects every ``word [:=|is] number [ms]`` pair; words map to fields (``learning rate`` and
# ``grad norm`` end in ``rate`` / ``norm``).
_P_PAIR = re.compile(rf"([A-Za-z_]+)\]?[\s:=]*(?:is\s+)?\[?\s*({NUM})\s*(ms\b)?")
_P_KEYS = {
    "loss": "loss",
    "Loss": "loss",
    "LOSS": "loss",
    "step": "step",
    "Step": "step",
    "global_step": "step",
    "iter": "step",
    "iteration": "step",
    "Iteration": "step",
    "Iter": "step",
    "rank": "rank",
    "Rank": "rank",
    "lr": "lr",
    "learning_rate": "lr",
    "rate": "lr",
    "grad_norm": "grad_norm",
    "norm": "grad_norm",
    "gradient_norm": "grad_norm",
    "step_time": "step_time_s",
    "time": "step_time_s",
}
_P_INT = frozenset({"step", "rank"})
_P_TPUT = re.compile(rf"({NUM})\s*(samples|tokens|it)/s")


def plain_field(key: str, value: str, ms: str) -> tuple[str, str] | None:
    """The field one plain ``word number [ms]`` pair gives and how its number reads ("int", "ms" or
    "float"); None when it gives none. Shared by `plain` and the templates learnt from its lines."""
    name = _P_KEYS.get(key)
    if name is None:
        return None
    if name in _P_INT:
        return (name, "int") if value.isdigit() else None
    if name == "step_time_s":
        if key == "time" and not ms:
            return None  # a bare "time 10:01" is a clock, not a step time
        return name, "ms" if ms else "float"
    return name, "float"


def plain(text: str) -> Sample | None:
    if "loss" not in text and "Loss" not in text and "LOSS" not in text:
        return None
    out: Sample = {}
    for key, value, ms in _P_PAIR.findall(text):
        field = plain_field(key, value, ms)
        if field is None or field[0] in out:
            continue
        name, kind = field
        out[name] = int(value) if kind == "int" else float(value) * (0.001 if kind == "ms" else 1.0)
    if "loss" not in out:
        return None
    if "/s" in text:
        found = _P_TPUT.search(text)
        if found:
            out["throughput"], out["throughput_unit"] = float(found.group(1)), f"{found.group(2)}/s"
    return out


# -- a step-time line of its own: ``Epoch 1/200, Step 100/3995, step time: 654.40 ms`` (MindYOLO and
# others print it beside the loss line); the log's own time beats one derived from the wall clock
_STEP_TIME = re.compile(rf"\b[Ss]tep[:\s]+(\d+)(?:/\d+)?,?\s+step[ _]time:\s*({NUM})\s*(ms|s)\b")


def step_time_line(text: str) -> Sample | None:
    if "step time" not in text and "step_time" not in text:
        return None
    m = _STEP_TIME.search(text)
    if m is None:
        return None
    return {"step": int(m.group(1)), "step_time_s": _num(m.group(2)) * (0.001 if m.group(3) == "ms" else 1.0)}


Parser = Callable[[str], "Sample | None"]
BUILT_IN: tuple[tuple[str, Parser], ...] = (
    ("mindformers", mindformers),
    ("megatron", megatron),
    ("hf_trainer", hf_trainer),
    ("deepspeed", deepspeed),
    ("mindspore", mindspore),
    ("step_time", step_time_line),
    ("plain", plain),
)


@dataclass(frozen=True)
class UserPattern:
    """A user's regex with named groups (RE2 syntax: linear time, so a pattern cannot hang the parser)."""

    source: str
    compiled: Any

    def parse(self, text: str) -> Sample | None:
        match = self.compiled.search(text)
        if match is None:
            return None
        out: Sample = {}
        for name, value in match.groupdict().items():
            if value is None:
                continue
            try:
                number = float(value)
            except ValueError:
                continue
            if name in ("step", "epoch", "rank"):
                out[name] = int(number)
            elif name == "step_time_ms":
                out["step_time_s"] = number / 1000.0
            else:
                out[name] = number
        return out or None


def compile_user_patterns(patterns: Sequence[str], where: str = "metric_patterns") -> list[UserPattern]:
    """Check and compile user regexes: at most 8, each <= 500 characters, RE2 syntax, named groups from
    step, epoch, loss, step_time_s, step_time_ms, throughput, lr, grad_norm, rank (one metric at least)."""
    import re2  # google-re2: a linear-time engine, so no pattern can backtrack for ever

    if len(patterns) > MAX_USER_PATTERNS:
        raise InputError(
            f"{len(patterns)} patterns; at most {MAX_USER_PATTERNS} are allowed",
            where=where,
            fix="merge patterns with alternation",
        )
    out = []
    options = re2.Options()
    options.max_mem = 1 << 20  # 1 MiB of automaton per pattern
    options.log_errors = False
    for index, source in enumerate(patterns):
        here = f"{where}[{index}]"
        if not isinstance(source, str) or not source:
            raise InputError("a pattern must be a non-empty string", where=here)
        if len(source) > MAX_PATTERN_CHARS:
            raise InputError(
                f"pattern is {len(source)} characters; the limit is {MAX_PATTERN_CHARS}", where=here
            )
        try:
            compiled = re2.compile(source, options)
        except re2.error as exc:
            raise InputError(
                f"not a valid RE2 regular expression: {exc}",
                where=here,
                fix="RE2 has no backreferences or lookaround; use (?P<loss>...) for groups",
            ) from None
        names = set(compiled.groupindex)
        unknown = names - USER_GROUPS
        if unknown:
            raise InputError(
                f"unknown group name(s) {', '.join(sorted(unknown))}",
                where=here,
                fix=f"use {', '.join(sorted(USER_GROUPS))}",
            )
        if not names & {"loss", "step_time_s", "step_time_ms", "throughput", "lr", "grad_norm"}:
            raise InputError(
                "the pattern names no metric",
                where=here,
                fix="add a named group, e.g. (?P<loss>[0-9.eE+-]+)",
            )
        out.append(UserPattern(source, compiled))
    return out


class LineParser:
    """Tries user patterns first, then the built-in formats, starting with the one that matched last."""

    def __init__(self, user: Sequence[UserPattern] = ()) -> None:
        self.user = list(user)
        self.order: list[tuple[str, Parser]] = list(BUILT_IN)

    def parse(self, text: str) -> tuple[str, Sample] | None:
        for pattern in self.user:
            sample = pattern.parse(text)
            if sample:
                return "user", sample
        for index, (name, parser) in enumerate(self.order):
            sample = parser(text)
            if sample:
                if index:  # formats rarely change within a run: try this one first next time
                    self.order.insert(0, self.order.pop(index))
                return name, sample
        return None
