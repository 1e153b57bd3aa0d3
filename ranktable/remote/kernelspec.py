"""Kernelspecs that make JupyterLab's launcher show "Python (PROFILE)" backed by a remote interpreter.

The spec's ``argv`` is a normal local ipykernel command because the kernelspec format requires one; it is
never run: ``metadata.kernel_provisioner`` hands the launch to ``SSHKernelProvisioner``, which starts
ipykernel on the instance. ``interrupt_mode: signal`` makes Jupyter call the provisioner's ``send_signal``
(which signals the remote process group) rather than sending an interrupt message.
"""

from __future__ import annotations

import json
import re
import tempfile
from pathlib import Path
from typing import Any

from ranktable.errors import InputError

PROVISIONER_NAME = "ranktable-ssh-provisioner"
KERNEL_PREFIX = "ranktable-"
DEFAULT_REMOTE_PYTHON = "python3"
_PROFILE_NAME = re.compile(r"^[A-Za-z][A-Za-z0-9_-]{0,63}$")


def kernel_name(profile: str) -> str:
    return f"{KERNEL_PREFIX}{profile.lower()}"


def kernelspec_dict(
    profile: str, python: str = DEFAULT_REMOTE_PYTHON, display_name: str | None = None
) -> dict[str, Any]:
    """The kernel.json content for a profile (pure data; validated names)."""
    if not _PROFILE_NAME.match(profile):
        raise InputError(
            f"profile name {profile!r} is not valid",
            where="NAME",
            fix="use letters, digits, '_' and '-', starting with a letter, at most 64 characters",
        )
    if not python.strip() or any(ch in python for ch in "\n\r\0"):
        raise InputError(
            f"remote python {python!r} is not a usable command or path",
            where="--python",
            fix="give the remote interpreter, e.g. python3 or /home/ma-user/anaconda3/bin/python",
        )
    return {
        "argv": ["python", "-m", "ipykernel_launcher", "-f", "{connection_file}"],
        "display_name": display_name or f"Python ({profile})",
        "language": "python",
        "interrupt_mode": "signal",
        "metadata": {
            "debugger": False,
            "kernel_provisioner": {
                "provisioner_name": PROVISIONER_NAME,
                "config": {"profile": profile, "python": python},
            },
        },
    }


def install_kernelspec(
    profile: str,
    python: str = DEFAULT_REMOTE_PYTHON,
    *,
    display_name: str | None = None,
    user: bool = True,
    prefix: str | None = None,
) -> str:
    """Install (or replace) the kernelspec for ``profile``; returns its name (``ranktable-<profile>``)."""
    from jupyter_client.kernelspec import KernelSpecManager

    spec = kernelspec_dict(profile, python, display_name)
    name = kernel_name(profile)
    with tempfile.TemporaryDirectory(prefix="ranktable-kernelspec-") as tmp:
        source = Path(tmp) / name
        source.mkdir()
        (source / "kernel.json").write_text(json.dumps(spec, indent=2) + "\n")
        KernelSpecManager().install_kernel_spec(
            str(source), name, user=user and prefix is None, prefix=prefix
        )
    return name
