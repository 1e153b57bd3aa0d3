"""`ranktable kernel install NAME`: a "Python (NAME)" kernelspec whose kernels run on the profile's host."""

from __future__ import annotations

import argparse
from typing import Any

from ranktable.cli.commands import command_group


def register(sub: Any) -> None:
    group = command_group(
        sub,
        "kernel",
        "kernel_command",
        "KERNEL_COMMAND",
        description="Jupyter kernels that run on a Notebook instance through an SSH profile.",
    )
    install = group.add_parser(
        "install",
        help="write a kernelspec 'Python (NAME)' that starts ipykernel on profile NAME's host",
        description="Install a user kernelspec named ranktable-NAME. JupyterLab's launcher then shows "
        "'Python (NAME)'; its kernels run in the profile's remote directory, over the profile's verified "
        "SSH connection. The remote needs ipykernel (python -m pip install ipykernel).",
    )
    install.add_argument("name", metavar="NAME", help="SSH profile name (see `ranktable ssh list`)")
    install.add_argument(
        "--python",
        metavar="PATH",
        default="python3",
        help="remote Python interpreter (default: python3 on the remote PATH)",
    )
    install.add_argument(
        "--display-name", metavar="TEXT", default=None, help="launcher label (default: 'Python (NAME)')"
    )
    install.set_defaults(handler=_install)


def _install(args: argparse.Namespace) -> int:
    from ranktable.usecases.remote import Remote

    installed = Remote().install_kernel(args.name, args.python, args.display_name)
    name, label = installed["kernel_name"], installed["display_name"]
    print(f"installed kernelspec {name}: {label!r} runs {args.python} on profile {args.name}")
    return 0
