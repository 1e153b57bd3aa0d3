"""The local user's name, also for a UID with no passwd entry (OpenShift-style hosted JupyterLab).

paramiko asks ``getpass.getuser()`` on every ``~/.ssh/config`` lookup (``Match localuser``, ``%u``), and
that raises KeyError when the UID has no passwd entry and USER/LOGNAME are unset. We then name the user
``uid-<N>`` (docs/ssh.md) and put it in LOGNAME, where getpass looks first; the login name on the
instance always comes from the profile (default ``ma-user``), never from here.
"""

from __future__ import annotations

import getpass
import os


def local_user_name() -> str:
    """getpass's answer, or ``uid-<N>`` (then also in LOGNAME) when the system does not know the UID."""
    try:
        return getpass.getuser()
    except (KeyError, OSError):  # KeyError up to Python 3.12, OSError from 3.13
        name = f"uid-{os.getuid()}"
        os.environ["LOGNAME"] = name
        return name
