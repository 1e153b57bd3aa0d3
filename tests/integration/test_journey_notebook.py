"""The first hour through the magics (docs/first-hour.md, #24), in a notebook executed by nbclient on a
real kernel: the kernel is given only what a JupyterLab server exports (RANKTABLE_KUBECONFIG, not
KUBECONFIG), so `%ranktable` finds the pool with no `%ranktable cluster` first."""

from __future__ import annotations

import json
from pathlib import Path

import nbformat
import pytest
import yaml
from nbclient import NotebookClient

from tests.integration.journey_helpers import STEPS, Journey, journey

__all__ = ["journey"]  # the fixture

CELLS = [
    "%load_ext ranktable\nimport json, time",
    "jobs = %ranktable jobs\nprint(json.dumps({'jobs': jobs}))",  # the pool the server uses, at once
    "%ranktable sync sim-notebook {workspace}",
    "%ranktable job --spec {spec} --submit --no-layout",
    # wait for the deliberate failure (the Job view's diagnosis, here as a magic)
    """
deadline = time.monotonic() + 120
while True:
    found = %ranktable diagnose bert-demo
    if found['first_failure'] or time.monotonic() > deadline:
        break
    time.sleep(0.5)
failed = %ranktable metrics bert-demo
print(json.dumps({'first': found['first_failure'], 'failed': failed}))
""",
    # the fix a user makes in the editor: delete the two lines marked "the bug"; then sync and run again
    """
from pathlib import Path
script = Path({script})
script.write_text(''.join(l for l in script.read_text().splitlines(True) if '# the bug' not in l))
""",
    "%ranktable sync sim-notebook {workspace}",
    "%ranktable stop bert-demo",
    "%ranktable job --spec {spec} --submit --no-layout",
    """
deadline = time.monotonic() + 180
while time.monotonic() < deadline:
    jobs = %ranktable jobs
    if [j['phase'] for j in jobs if j['name'] == 'bert-demo'] == ['Completed']:
        break
    time.sleep(0.5)
fixed = %ranktable metrics bert-demo
diagnosis = %ranktable diagnose bert-demo
print(json.dumps({'phase': jobs[0]['phase'], 'fixed': fixed, 'first': diagnosis['first_failure']}))
""",
    # the journey's last step: the failed run (A) and the fixed one (B) side by side
    "compared = %ranktable compare bert-demo\nprint(json.dumps(compared))\ncompared",
]


def _printed(cell: nbformat.NotebookNode) -> dict:
    text = "".join(o.get("text", "") for o in cell.outputs if o.get("output_type") == "stream")
    return dict(json.loads(text.strip().splitlines()[-1]))


def test_first_hour_through_magics_in_a_notebook(
    journey: Journey, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.delenv("KUBECONFIG")
    monkeypatch.setenv("RANKTABLE_KUBECONFIG", str(journey.pool.kubeconfig))  # as the server exports it
    spec = tmp_path / "spec.json"
    spec.write_text(json.dumps(yaml.safe_load(journey.job_file.read_text())))
    fill = {"{workspace}": str(journey.workspace), "{spec}": str(spec), "{script}": repr(str(journey.script))}
    notebook = nbformat.v4.new_notebook()
    for code in CELLS:
        for key, value in fill.items():
            code = code.replace(key, value)
        notebook.cells.append(nbformat.v4.new_code_cell(code.strip()))
    client = NotebookClient(notebook, timeout=300, kernel_name="python3")
    client.execute(cwd=str(tmp_path))
    cells = notebook.cells

    assert _printed(cells[1]) == {"jobs": []}  # no "no cluster configured"
    shared = journey.instance.shared
    assert "# the bug" not in (shared / "project" / "train.py").read_text()
    first = _printed(cells[4])
    assert (first["first"]["rank"], first["first"]["device"]) == (5, 5), first
    assert min(max(r["step"]) for r in first["failed"]["ranks"].values()) < STEPS
    done = _printed(cells[9])
    assert done["phase"] == "Completed" and done["first"] is None
    assert all(max(r["step"]) == STEPS for r in done["fixed"]["ranks"].values())
    compared = _printed(cells[10])
    assert (compared["a"]["run"], compared["b"]["run"]) == (first["failed"]["run"], done["fixed"]["run"])
    assert compared["a"]["first_failure"]["rank"] == 5 and compared["b"]["first_failure"] is None
    assert compared["b"]["outcome"] == "Completed" and compared["b"]["last_step"] == STEPS
    assert compared["a"]["least_step"] < STEPS and compared["changes"]["step_time_s"]["b"] > 0
    assert any(note.startswith("the failure of A (rank 5") for note in compared["notes"])
    shown = next(o["data"] for o in cells[10].outputs if o.get("output_type") == "execute_result")
    assert "B vs A" in shown["text/html"] and "final loss" in shown["text/html"]
