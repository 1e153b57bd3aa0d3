"""The container command for an entry point: ``ranktable launch ... -- SCRIPT ARGS``, and its inverse.

A Python launcher (``ranktable.launch.launcher``) instead of a generated shell script: the same argparse
parser builds the command here and reads it back, so nothing is quoted by hand and a composed manifest
parses back to the same entry point.
"""

from __future__ import annotations

from ranktable.compose.spec import EntryPoint, JobSpec
from ranktable.launch.launcher import LAUNCH_COMMAND, launch_parser


def launcher_command(spec: JobSpec) -> list[str]:
    """``ranktable launch`` argv for a spec with an entry point."""
    if spec.entry is None:
        raise ValueError("launcher_command needs a spec with an entry point")
    return [
        *LAUNCH_COMMAND,
        "--framework",
        spec.framework,
        "--job",
        spec.name,
        "--task",
        spec.task,
        "--nodes",
        str(spec.nodes),
        "--npus",
        str(spec.npus_per_node),
        "--master-port",
        str(spec.entry.master_port),
        *(["--python", spec.entry.python] if spec.entry.python else []),
        "--",
        spec.entry.script,
        *spec.entry.args,
    ]


def parse_launcher_command(command: list[str]) -> EntryPoint | None:
    """The entry point a launcher command runs, or None for any other (verbatim) command."""
    if command[: len(LAUNCH_COMMAND)] != LAUNCH_COMMAND:
        return None
    try:
        args = launch_parser().parse_args(command[len(LAUNCH_COMMAND) :])
    except SystemExit:
        return None
    program = list(args.program)
    if program and program[0] == "--":
        program = program[1:]
    if not program:
        return None
    return EntryPoint(program[0], program[1:], master_port=args.master_port, python=args.python or "")
