"""The one place that decides where ranktable keeps its state (profiles, sync manifests, the simulators).

``RANKTABLE_HOME`` overrides the default so tests and several installations never share state by
accident. The default lives in Jupyter's data dir (``jupyter --data-dir``/ranktable) when jupyter_core
is installed, and follows the same XDG rule without it (a training image with only the core installed).
"""

from __future__ import annotations

import os
from pathlib import Path


def ranktable_home() -> Path:
    env = os.environ.get("RANKTABLE_HOME")
    if env:
        return Path(env).expanduser()
    try:
        from jupyter_core.paths import jupyter_data_dir
    except ImportError:
        base = os.environ.get("XDG_DATA_HOME") or str(Path.home() / ".local" / "share")
        return Path(base) / "jupyter" / "ranktable"
    return Path(jupyter_data_dir()) / "ranktable"


# The JupyterLab server's `c.Ranktable` cluster settings, exported to the processes it starts (kernels,
# local and remote, and terminals) so `%ranktable jobs` and `ranktable job list` there see its cluster.
SHARED_SETTINGS_ENV = {
    "kubeconfig": "RANKTABLE_KUBECONFIG",
    "context": "RANKTABLE_CONTEXT",
    "namespace": "RANKTABLE_NAMESPACE",
    "state_dir": "RANKTABLE_HOME",
}


def export_shared_settings(settings: dict[str, str | None], environ: dict[str, str] | None = None) -> None:
    """Put each set value of `settings` (keys of SHARED_SETTINGS_ENV) into `environ` (os.environ)."""
    target = os.environ if environ is None else environ
    for key, name in SHARED_SETTINGS_ENV.items():
        value = settings.get(key)
        if value:
            target[name] = value


def shared_settings(environ: dict[str, str] | None = None) -> dict[str, str]:
    """The settings a server exported to this process (missing keys: not set)."""
    source = os.environ if environ is None else environ
    return {key: source[name] for key, name in SHARED_SETTINGS_ENV.items() if source.get(name)}
