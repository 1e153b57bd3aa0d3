"""Checkpoint saves read from real log lines (#29.3); each line's source is beside it."""

from __future__ import annotations

import pytest

from ranktable.observe.checkpoints import Checkpoint, checkpoint_saved, last_checkpoint

CASES = [
    # Megatron-LM megatron/training/checkpointing.py: print_rank_0('  successfully saved checkpoint from
    # iteration {:7d} to {}'.format(iteration, args.save))
    (
        "  successfully saved checkpoint from iteration    1200 to /mnt/sfs_turbo/ckpt/llama",
        Checkpoint("megatron", 1200, "/mnt/sfs_turbo/ckpt/llama"),
    ),
    # MindSpeed-LLM examples/mindspore/glm4 README (a conversion log, no padding)
    (
        "successfully saved checkpoint from iteration 1 to ./model_weights/glm4_mcore/",
        Checkpoint("megatron", 1, "./model_weights/glm4_mcore/"),
    ),
    # MindFormers mindformers/core/callback/callback.py CheckpointMonitor.print_savetime (logger prefix)
    (
        "2025-06-01 10:00:00,123 - mindformers[mindformers/core/callback/callback.py:1180] - INFO - "
        "Finish saving ckpt of epoch 2 step 50 using 3.141 seconds",
        Checkpoint("mindformers", 50, epoch=2),
    ),
    # transformers trainer.py: logger.info(f"Saving model checkpoint to {output_dir}")
    (
        "[INFO|trainer.py:3984] 2025-01-07 12:00:00,000 >> Saving model checkpoint to "
        "saves/qwen2-7b/lora/sft/checkpoint-500",
        Checkpoint("hf_trainer", 500, "saves/qwen2-7b/lora/sft/checkpoint-500"),
    ),
    # deepspeed/runtime/engine.py: logger.info(f"Saving model checkpoint: {save_path}") ([Rank 0] prefix)
    (
        "[2025-03-02 08:00:00,000] [INFO] [logging.py:128:log_dist] [Rank 0] Saving model checkpoint: "
        "/ckpt/global_step300/mp_rank_00_model_states.pt",
        Checkpoint("deepspeed", 300, "/ckpt/global_step300/mp_rank_00_model_states.pt"),
    ),
]

NOT_SAVES = [
    # a save that has only started is not a checkpoint to resume from
    "[2025-01-01 00:00:00] saving checkpoint at iteration    1200 to /ckpt in torch_dist format",
    "......Saving ckpt......",
    "[Torch] Checkpoint global_step300 is about to be saved!",
    "loading checkpoint from /ckpt at iteration 1200",
    "Epoch:[  1/  2], step:[  100/  500], loss:[6.123/6.200], time:350.0 ms, lr:0.0001",
]


@pytest.mark.parametrize(("line", "expected"), CASES)
def test_finished_saves_are_read(line: str, expected: Checkpoint) -> None:
    assert checkpoint_saved(line) == expected


@pytest.mark.parametrize("line", NOT_SAVES)
def test_other_lines_are_not_saves(line: str) -> None:
    assert checkpoint_saved(line) is None


def test_the_last_save_of_a_run_and_how_to_resume_from_it() -> None:
    log = [
        "iteration      100/   2000 | lm loss: 7.1",
        "  successfully saved checkpoint from iteration     100 to /mnt/sfs_turbo/ckpt",
        "iteration      200/   2000 | lm loss: 6.2",
        "[2025-01-01 00:00:00] saving checkpoint at iteration     200 to /mnt/sfs_turbo/ckpt in torch format",
    ]
    last = last_checkpoint(log)
    assert last == Checkpoint("megatron", 100, "/mnt/sfs_turbo/ckpt")
    assert last.resume_args() == "--load /mnt/sfs_turbo/ckpt"
    assert (
        last.resume_args("--resume {path} --start-step {step}")
        == "--resume /mnt/sfs_turbo/ckpt --start-step 100"
    )
    assert last_checkpoint(["no save here"]) is None


def test_mindformers_steps_become_global_with_the_epoch_length() -> None:
    saved = checkpoint_saved("Finish saving ckpt of epoch 3 step 20 using 1.000 seconds")
    assert saved is not None
    assert saved.global_step(steps_per_epoch=100) == 220
    assert saved.global_step() == 20


def test_an_observer_keeps_the_last_save_it_was_fed() -> None:
    """The lineage and the live view read a run's last checkpoint from the observer that parsed its lines
    (no second pass over the archive): every framework's line, in any batch, the later one kept."""
    from ranktable.observe import RankLayout, RunObserver

    observer = RunObserver(RankLayout.uniform([("p-0", 0), ("p-1", 1)], 1))
    steps = [("", f"step {i} loss {1 / (i + 1):.4f}") for i in range(200)]
    observer.feed("p-0", 0, steps)
    assert observer.last_checkpoint is None
    for text, expected in CASES:
        observer.feed("p-1", 1, [*steps[:50], ("", text), *steps[50:60]])
        assert observer.last_checkpoint == expected, text
    observer.feed("p-0", 0, steps)  # no save in it: the last one stays
    assert observer.last_checkpoint == CASES[-1][1]
