"""The first-hour journey's set-up (docs/first-hour.md), shared by its CLI and notebook tests: a simulated
Notebook instance whose shared folder the simulated pool mounts into pods, and the demo's example project
and job file in a local workspace."""

from __future__ import annotations

import shutil
from collections.abc import Callable, Iterator
from dataclasses import dataclass
from pathlib import Path
from typing import TypeVar

import pytest
import yaml

from ranktable.remote import manager as manager_module
from ranktable.sim.notebook import SimulatedNotebook
from ranktable.sim.notebook_profile import profile_of, start_simulated_notebook
from ranktable.usecases.demo import EXAMPLE_JOB, example_job
from ranktable.usecases.remote import Remote
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.sim_helpers import eventually

EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "demo"
STEPS = 12
T = TypeVar("T")


@dataclass
class Journey:
    instance: SimulatedNotebook
    pool: SimPoolHandle
    workspace: Path  # the local folder synced to the instance (the JupyterLab root in the demo)

    @property
    def job_file(self) -> Path:
        return self.workspace / EXAMPLE_JOB

    @property
    def script(self) -> Path:
        return self.workspace / "project" / "train.py"

    def fix_the_bug(self) -> None:
        """What docs/first-hour.md asks: delete the two lines marked "the bug"."""
        lines = self.script.read_text().splitlines(keepends=True)
        kept = [line for line in lines if "# the bug" not in line]
        assert len(lines) - len(kept) == 2
        self.script.write_text("".join(kept))


@pytest.fixture
def journey(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, sim_pool_factory: Callable[..., SimPoolHandle]
) -> Iterator[Journey]:
    monkeypatch.setenv("RANKTABLE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RANKTABLE_USER_KNOWN_HOSTS", str(tmp_path / "no-user-known-hosts"))
    monkeypatch.setenv("RANKTABLE_SSH_CONFIG", str(tmp_path / "no-ssh-config"))
    monkeypatch.setenv("RANKTABLE_AGENT", "0")  # no background agent outliving the test
    monkeypatch.setattr(manager_module, "_default", None)
    # under tmp_path (private folders): the pods see the project only through the shared-storage mount
    instance = start_simulated_notebook(root=tmp_path / "instance", state_dir=tmp_path / "instance-state")
    try:
        Remote().register_instance("sim-notebook", **profile_of(instance))  # as `ranktable sim notebook`
        pool = sim_pool_factory(nodes=4, leaves=2, ranktable_delay=0.2, shared_storage=(instance.shared,))
        monkeypatch.setenv("KUBECONFIG", str(pool.kubeconfig))
        workspace = tmp_path / "workspace"
        shutil.copytree(EXAMPLES, workspace)
        job = example_job(str(instance.shared))
        job["entry"]["args"] = ["--steps", str(STEPS), "--interval", "0.2"]
        (workspace / EXAMPLE_JOB).write_text(yaml.safe_dump(job, sort_keys=False))
        yield Journey(instance, pool, workspace)
    finally:
        manager_module.default_manager().close()
        instance.stop()


def wait_for(fn: Callable[[], T | None], timeout: float, what: str) -> T:
    """Poll `fn` (0.5 s apart) until it returns something truthy."""
    return eventually(fn, timeout, what, every=0.5)
