"""Start the SIMULATED Notebook instance and register an SSH profile for it, so the demo needs no cloud.

The profile goes through the same profile store and known_hosts as real instances. Its host key is
pinned directly (no fingerprint prompt) because we generated that key ourselves and hold the listening
port right now: there is no third party to verify.
"""

from __future__ import annotations

from pathlib import Path

from ranktable.compose.spec import VolumeSpec
from ranktable.compose.storage import SharedStorage
from ranktable.home import ranktable_home
from ranktable.remote import ProfileStore, default_manager
from ranktable.remote.hostkeys import HostKeyStore, fingerprint, host_id
from ranktable.remote.profiles import DEFAULT_REMOTE_DIR, Profile
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


def register_profile(instance: SimulatedNotebook, name: str = DEFAULT_PROFILE) -> Profile:
    """Add/replace profile ``name`` for a running instance and pin its host key in our known_hosts."""
    store = ProfileStore()
    profile = store.add(
        Profile(
            name=name,
            host=instance.host,
            port=instance.port,
            user=instance.user,
            key_file=str(instance.keys.client_key_path),
            remote_dir=DEFAULT_REMOTE_DIR,  # so sync, runs and kernels default to the shared folder
            shared=shared_storage(instance.shared),
        ),
        replace_existing=True,
    )
    key = instance.keys.host_key()
    HostKeyStore(store.home / "known_hosts").accept(
        host_id(instance.host, instance.port), key, fingerprint(key), replace=True
    )  # our own simulator's key: a previous one on this port is stale
    default_manager().close(name)  # a cached connection would still point at an older port
    return profile


def start_simulated_notebook(
    *,
    port: int = 0,
    root: Path | None = None,
    state_dir: Path | None = None,
    profile: str | None = DEFAULT_PROFILE,
) -> SimulatedNotebook:
    """Start the simulator in background threads (tests, ``make demo``); registers ``profile`` unless None.

    Call ``.stop()`` on the result to shut it down.
    """
    instance = SimulatedNotebook(root or default_root(), state_dir or default_state_dir(), port=port)
    instance.start()
    if profile:
        try:
            register_profile(instance, profile)
        except BaseException:
            instance.stop()
            raise
    return instance
