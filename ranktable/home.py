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
