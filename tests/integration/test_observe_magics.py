"""`%ranktable metrics` plots and `%ranktable diagnose` explains, on the simulated pool."""

from __future__ import annotations

import time
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.test_magics import ip  # noqa: F401 - the shell fixture

COMMAND = (
    'for i in 1 2 3 4 5; do echo "step $i loss 2.$((9 - i))"; sleep 0.2; done; '
    'echo "[ERROR] RuntimeError: NPU out of memory. Tried to allocate 2.00 GiB"; sleep 60'
)


def test_metrics_plot_and_diagnosis_inline(
    ip: InteractiveShell,  # noqa: F811
    sim_pool: SimPoolHandle,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.setenv("RANKTABLE_HOME", str(tmp_path))
    ip.run_line_magic("ranktable", f"cluster --kubeconfig {sim_pool.kubeconfig} --context {sim_pool.context}")
    ip.run_cell_magic(
        "ranktable", "job --name mag --image i --nodes 1 --npus 1 --submit --no-layout", COMMAND
    )
    deadline = time.monotonic() + 60
    while True:
        result = ip.run_line_magic("ranktable", "diagnose mag")
        if result["first_failure"] or time.monotonic() > deadline:
            break
        time.sleep(0.5)
    metrics = ip.run_line_magic("ranktable", "metrics mag")
    assert result["first_failure"]["code"] == "DEVICE_OOM"
    html = result._repr_html_()  # the one rich output of the call
    assert "First failure: rank 0" in html and "DEVICE_OOM" in html and "micro-batch" in html
    assert metrics["ranks"]["0"]["loss"] == [2.8, 2.7, 2.6, 2.5, 2.4]
    svg = metrics._repr_html_()
    assert "loss vs step" in svg and "<polyline" in svg
    assert (tmp_path / "logs" / "default" / "mag").is_dir()  # archived while read
    ip.run_line_magic("ranktable", "stop mag")
