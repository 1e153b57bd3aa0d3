"""The simulated pool's controller loop: a change is acted on at once; with none, a slow pass (a big pool)
is not repeated back to back."""

from __future__ import annotations

import time
from pathlib import Path

import pytest

from ranktable.sim.controllers.kubelet import Kubelet
from ranktable.sim.controllers.manager import ControllerManager
from ranktable.sim.k8s.resources import BY_KEY
from ranktable.sim.k8s.store import Store


def test_idle_passes_wait_a_few_pass_lengths_and_a_change_is_seen_at_once(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A pass of 0.2 s (1,024 pods took ~0.25 s) used to run every 0.48 s with nothing changed: 5 in 2 s,
    the pool's controller thread busy ~40% of a core for nothing. Now it waits 3 pass lengths: 3 in 2 s."""
    store = Store()
    passes: list[float] = []

    def slow_pass(self: ControllerManager) -> None:
        passes.append(time.monotonic())
        time.sleep(0.2)

    monkeypatch.setattr(ControllerManager, "pass_once", slow_pass)
    controllers = ControllerManager(store, Kubelet(store, tmp_path, 1 << 20, 1.0), tmp_path / "errors.log")
    controllers.start()
    try:
        time.sleep(2.1)
        assert 2 <= len(passes) <= 3, [round(t - passes[0], 2) for t in passes]
        before = len(passes)
        while len(passes) == before:  # a pass begins
            time.sleep(0.005)
        before = len(passes)
        time.sleep(0.3)  # it ended, and its idle wait of 0.6 s began
        changed = time.monotonic()
        store.create(BY_KEY["namespaces"], {"metadata": {"name": "poke"}})
        deadline = time.monotonic() + 5
        while len(passes) == before and time.monotonic() < deadline:
            time.sleep(0.01)
        assert len(passes) > before and passes[before] - changed < 0.15  # not after the idle wait
    finally:
        controllers.stop()
