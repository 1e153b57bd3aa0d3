"""Every `ranktable` command: its name, the module that registers it and its one-line help, in help order.

`ranktable --help` is built from this table alone and `ranktable CMD ...` imports only CMD's module, so
neither pays for the other areas' imports (numpy, the kubernetes client, paramiko, Jupyter). A module adds
its commands in `register(sub)` with `help=HELP[name]`; a new command is one row here.
"""

from __future__ import annotations

# no `typing` at run time: every `ranktable` run, warm or not, imports this module (~4 ms; issue 28)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import Any


COMMANDS: tuple[tuple[str, str, str], ...] = (
    ("validate", "core", "check a rank table and list every problem with its JSON path"),
    ("plan", "core", "plan rank ids along the switch tree and compare the cost with the given order"),
    ("wait", "core", "wait until a rank table is completed and valid (in-container helper)"),
    ("route", "core", "plan the table and print this server's export lines (in-container helper)"),
    (
        "ssh",
        "remote",
        "SSH profiles for Notebook instances: add, list, test (and accept the host key), remove",
    ),
    ("sync", "remote", "upload changed files of a folder to the profile's remote directory"),
    ("download", "remote", "download a remote file or folder (inside the remote directory)"),
    ("exec", "remote", "run a command in the remote directory; exit code is the remote one"),
    (
        "launch",
        "jobs",
        "in-container launcher: wait for the rank table, route, start one process per NPU (or torchrun)",
    ),
    ("job", "jobs", "compose, submit, watch and stream ranktable-routed Volcano jobs"),
    ("sim", "sim", "simulated Lite pool and Notebook instance (for demos and tests, not a real cluster)"),
    ("controller", "controller", "run one of the platform's controllers against a cluster"),
    ("kernel", "kernel", "remote interpreter (Jupyter kernel) sessions on an SSH profile"),
    ("demo", "demo", "plan the shipped example pool and write its layout picture and report"),
)

HELP = {name: text for name, _, text in COMMANDS}
MODULE = {name: f"ranktable.cli.{module}" for name, module, _ in COMMANDS}


def command_group(sub: Any, name: str, dest: str, metavar: str, description: str | None = None) -> Any:
    """`ranktable NAME`'s parser (its help from COMMANDS) and the group of its subcommands, one required."""
    parser = sub.add_parser(name, help=HELP[name], description=description)
    group = parser.add_subparsers(dest=dest, metavar=metavar)
    group.required = True
    return group
