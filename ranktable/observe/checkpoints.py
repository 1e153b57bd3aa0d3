"""Checkpoint saves in training logs: which step a run can resume from, and how to tell the framework.

A save counts only once the framework says it finished (Megatron's "successfully saved", not "saving
checkpoint at"). Line formats, checked against the frameworks' sources:
- Megatron-LM / MindSpeed: ``successfully saved checkpoint from iteration {n:7d} to {dir}``
  (megatron/training/checkpointing.py); resume with ``--load {dir}`` (its tracker file names the step).
- MindFormers: ``Finish saving ckpt of epoch {e} step {s} using {t:.3f} seconds`` after
  ``......Saving ckpt......`` (mindformers/core/callback/callback.py, CheckpointMonitor.print_savetime);
  the step is within the epoch; resume with ``--resume_training True`` and ``load_checkpoint``.
- HF Trainer: ``Saving model checkpoint to {output_dir}/checkpoint-{global_step}`` (transformers
  trainer.py, INFO); resume with ``resume_from_checkpoint``.
- DeepSpeed: ``Saving model checkpoint: {path}`` after ``[Torch] Checkpoint {tag} is about to be saved!``
  (deepspeed/runtime/engine.py, checkpoint_engine); tags are ``global_step{N}`` by default.
MindSpore's own ModelCheckpoint callback prints nothing when it saves (its files are ``{prefix}-{epoch}_{
step}.ckpt``), so its saves are not visible in a log.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

_MEGATRON = re.compile(r"successfully saved checkpoint from iteration\s+(\d+)\s+to\s+(\S+)")
_MINDFORMERS = re.compile(r"Finish saving ckpt of epoch (\d+) step (\d+) using [\d.]+ seconds")
_HF = re.compile(r"Saving model checkpoint to (\S*checkpoint-(\d+))\b")
_DEEPSPEED = re.compile(r"Saving model checkpoint: (\S*?global_step(\d+)\S*)")

# How each framework resumes: arguments appended to the training command, `{path}` the checkpoint's path
# (its folder for Megatron/MindSpeed, whose tracker file names the step). A job spec can give its own.
RESUME_ARGS = {
    "megatron": "--load {path}",
    "mindformers": "--resume_training True --load_checkpoint {path}",
    "hf_trainer": "--resume_from_checkpoint {path}",
    "deepspeed": "--load_dir {path}",
}


@dataclass(frozen=True)
class Checkpoint:
    """A save the framework reported as finished."""

    framework: str
    step: int  # the global step or iteration (MindFormers: within the epoch, see `epoch`)
    path: str = ""  # where it went, when the line says
    epoch: int | None = None  # MindFormers reports (epoch, step in epoch)

    def global_step(self, steps_per_epoch: int | None = None) -> int:
        """The global step; MindFormers' needs the epoch length (from its progress lines)."""
        if self.epoch is None or not steps_per_epoch:
            return self.step
        return (self.epoch - 1) * steps_per_epoch + self.step

    def resume_args(self, template: str | None = None) -> str:
        """The arguments that resume from this checkpoint (`template`'s `{path}` and `{step}` filled)."""
        chosen = template or RESUME_ARGS.get(self.framework, "")
        return chosen.replace("{path}", self.path).replace("{step}", str(self.step))


def checkpoint_saved(text: str) -> Checkpoint | None:
    """The checkpoint a log line reports as saved, if it is such a line."""
    if "checkpoint" not in text and "ckpt" not in text:
        return None
    if m := _MEGATRON.search(text):
        return Checkpoint("megatron", int(m.group(1)), m.group(2))
    if m := _MINDFORMERS.search(text):
        return Checkpoint("mindformers", int(m.group(2)), epoch=int(m.group(1)))
    if m := _HF.search(text):
        return Checkpoint("hf_trainer", int(m.group(2)), m.group(1))
    if m := _DEEPSPEED.search(text):
        return Checkpoint("deepspeed", int(m.group(2)), m.group(1))
    return None


def last_checkpoint(lines: Iterable[str]) -> Checkpoint | None:
    """The last finished save in `lines` (a run's log, in order)."""
    last = None
    for text in lines:
        found = checkpoint_saved(text)
        if found is not None:
            last = found
    return last
