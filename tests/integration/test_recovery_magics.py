"""`%ranktable resume` and `%ranktable lineage` (#29): the same resume and lineage use cases as the CLI and
the panel, from a notebook."""

from __future__ import annotations

import shutil
import tempfile
from pathlib import Path

import pytest
from IPython.core.interactiveshell import InteractiveShell

from ranktable.compose.manifests import compose
from ranktable.compose.spec import EntryPoint, JobSpec
from ranktable.usecases.jobs import ClusterSettings, Jobs
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.sim_helpers import eventually
from tests.integration.test_magics import ip  # noqa: F401 - the shell fixture
from tests.integration.test_resume import TRAIN


def test_resume_and_lineage_magics(
    ip: InteractiveShell,  # noqa: F811
    sim_pool: SimPoolHandle,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    request: pytest.FixtureRequest,
) -> None:
    monkeypatch.setenv("RANKTABLE_HOME", str(tmp_path))
    saves = Path(tempfile.mkdtemp(prefix="ranktable-ckpt-"))
    saves.chmod(0o777)
    request.addfinalizer(lambda: shutil.rmtree(saves, ignore_errors=True))
    jobs = Jobs(ClusterSettings(kubeconfig=str(sim_pool.kubeconfig), context=sim_pool.context))
    args = ["--steps", "100000", "--interval", "0.1", "--save", str(saves), "--save-interval", "5"]
    spec = JobSpec(name="mres", image="i", nodes=1, npus_per_node=1, entry=EntryPoint(TRAIN, args))
    first = jobs.client().submit(compose(spec)).to_json()
    tracker = saves / "latest_checkpointed_iteration.txt"
    eventually(lambda: tracker.is_file() and int(tracker.read_text()) >= 10, timeout=60, what="two saves")
    ip.run_line_magic("ranktable", f"cluster --kubeconfig {sim_pool.kubeconfig} --context {sim_pool.context}")

    resumed = ip.run_line_magic("ranktable", "resume mres")
    step = resumed["checkpoint"]["step"]
    assert resumed["message"].startswith(f"resumed mres from checkpoint step {step} ({saves})"), resumed
    assert resumed["resumed_from"] == first["uid"] != resumed["uid"] and resumed["by"] == "hand"
    assert f"from checkpoint step {step}" in resumed._repr_html_()

    def two_runs() -> dict | None:  # type: ignore[type-arg]
        found = ip.run_line_magic("ranktable", "lineage mres")
        runs = found["runs"]
        return found if len(runs) == 2 and (runs[1]["first_step"] or 0) > 0 else None

    lineage = eventually(two_runs, timeout=60, what="the resumed run's first step")
    assert lineage["runs"][1]["from_step"] == step and lineage["runs"][1]["first_step"] == step + 1
    assert f"run 2 ({resumed['uid'][:8]}) from checkpoint {step:,}" in lineage["text"]
    assert "goodput" in lineage._repr_html_()
    ip.run_line_magic("ranktable", "stop mres --keep-logs 0")
