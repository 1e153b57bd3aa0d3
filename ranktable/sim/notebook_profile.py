"""Start the SIMULATED Notebook instance and register an SSH profile for it, so the demo needs no cloud.

`profile_of` says what its SSH profile needs; the CLI (or a test) registers it through the remote use
case, so this adapter never imports the SSH one.
"""

from __future__ import annotations

from pathlib import Path
from typing import Any

from ranktable.compose.spec import VolumeSpec
from ranktable.compose.storage import SharedStorage
from ranktable.home import ranktable_home
from ranktable.sim.notebook import DEFAULT_USER, SimulatedNotebook

DEFAULT_PROFILE = "sim-notebook"


def default_state_dir() -> Path:
    return ranktable_home() / "sim-notebook"


def default_root() -> Path:
    return default_state_dir() / "home" / DEFAULT_USER


SHARED_VOLUME = "shared"


def shared_storage(folder: Path) -> SharedStorage:
    """The instance's shared folder as jobs see it: a hostPath volume at the same absolute path."""
    path = str(folder)
    return SharedStorage(path, VolumeSpec(SHARED_VOLUME, "hostPath", mount_path=path, path=path))


def profile_of(instance: SimulatedNotebook) -> dict[str, Any]:
    """What an SSH profile for the running instance needs, its host key included: the caller (the CLI,
    a test) registers it through `ranktable.usecases.remote.Remote.register_instance`; the simulator
    itself knows nothing of the SSH layer."""
    return {
        "host": instance.host,
        "port": instance.port,
        "user": instance.user,
        "key_file": str(instance.keys.client_key_path),
        "host_key": instance.keys.host_key(),
        "shared": shared_storage(instance.shared),
    }


def start_simulated_notebook(
    *, port: int = 0, root: Path | None = None, state_dir: Path | None = None
) -> SimulatedNotebook:
    """Start the simulator in background threads (tests, ``make demo``); ``.stop()`` shuts it down.
    Register its profile with `profile_of(instance)`."""
    instance = SimulatedNotebook(root or default_root(), state_dir or default_state_dir(), port=port)
    instance.start()
    return instance
