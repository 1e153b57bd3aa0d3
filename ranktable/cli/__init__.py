"""The `ranktable` command: a thin argparse front over the same services the JupyterLab extension uses.

Each concern registers its own sub-commands from a module in this package (``core``, ``remote``,
``jobs``, ``sim``, ``kernel``); `ranktable.cli.commands` lists them all with their help, so `ranktable
--help` imports none of them and `ranktable CMD` imports only CMD's module.
"""

from __future__ import annotations

import argparse
import contextlib
import importlib
import os
import sys
from collections.abc import Callable, Sequence

from ranktable._version import __version__
from ranktable.cli.commands import COMMANDS, MODULE
from ranktable.errors import RanktableError

# no `typing` at run time: every `ranktable` run, warm or not, imports this module (~4 ms; issue 28)
TYPE_CHECKING = False
if TYPE_CHECKING:
    from typing import NoReturn

Handler = Callable[[argparse.Namespace], int]

# Served by the warm server (`ranktable.cli.warm`) when it runs: the cluster commands (the kubernetes
# client is imported there) and `plan` (numpy, the planner and the cost model: ~0.15 s of imports, as
# long as reading a 65,536-rank table; issue 28). Not `route`: it runs in the job's containers, where no
# server should be left behind.
WARM_COMMANDS = frozenset(("job", "plan"))

# Short rank-table commands that build and drop tens of thousands of objects: run with the cyclic GC paused.
GC_PAUSED_COMMANDS = frozenset(("validate", "plan", "route"))


class CliError(RanktableError):
    """A usage problem found by a command handler (exit code 2)."""


class OneLineParser(argparse.ArgumentParser):
    """Usage errors in one line, as every other error of the CLI (argparse printed a 9-line usage)."""

    def error(self, message: str) -> NoReturn:
        self.exit(2, f"{self.prog}: {message} (see `{self.prog} --help`)\n")


def build_parser(command: str | None = None) -> argparse.ArgumentParser:
    """The parser for `command` (its module registers its sub-commands and flags); every other command
    is listed from the static table only, so its module is not imported. None: every module registers
    (the full parser, for the warm server and tests)."""
    parser = OneLineParser(
        prog="ranktable",
        description="Plan rank layouts, compose and watch ranktable-routed Volcano jobs, "
        "and work on Notebook instances over SSH.",
    )
    parser.add_argument("--version", action="version", version=f"ranktable {__version__}")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    sub.required = True
    wanted = set(MODULE.values()) if command is None else {MODULE.get(command)}
    registered: set[str] = set()
    for name, _, text in COMMANDS:
        module = MODULE[name]
        if module in wanted and module not in registered:
            try:
                importlib.import_module(module).register(sub)
                registered.add(module)
                continue
            except ModuleNotFoundError as exc:
                if not (exc.name and exc.name.startswith("ranktable")):
                    raise
                wanted.discard(module)  # that area is not part of this build
        if module not in registered:  # a placeholder: enough for `--help` and the choices
            sub.add_parser(name, help=text).set_defaults(handler=_not_in_this_build)
    return parser


def _not_in_this_build(args: argparse.Namespace) -> int:
    raise CliError(
        f"the command {args.command!r} is not part of this build",
        fix="install the full package (`pip install jupyter-ranktable`)",
    )


SUB_COMMANDS = ("job_command", "sim_command", "ssh_command", "kernel_command")


def command_name(args: argparse.Namespace) -> str:
    """`job submit`, `ssh add`...: the words that start an error line."""
    words = [args.command, *(getattr(args, dest, None) for dest in SUB_COMMANDS)]
    return " ".join(w for w in words if isinstance(w, str))


def main(argv: Sequence[str] | None = None) -> int:
    """The `ranktable` command. Run from the command line (``argv`` None), a cluster or planning command
    goes to the warm server when one runs (`ranktable.cli.warm`: what it imports is imported there)."""
    if argv is None:
        words = sys.argv[1:]
        if words and words[0] in WARM_COMMANDS:
            from ranktable.cli import warm

            try:
                return warm.run_warm(words)
            except warm.WarmUnavailable as exc:
                with warm.StartBeside(exc.start):
                    return run(words)
        return run(words)
    return run(list(argv))


def run(words: list[str]) -> int:
    """Parse ``words`` and run the command in this process."""
    parser = build_parser(words[0] if words else "")
    args = parser.parse_args(words)
    handler: Handler = args.handler
    if words and words[0] in GC_PAUSED_COMMANDS:
        # the whole command without the cyclic collector: the 65,536-rank table, topology and plan are
        # freed by reference counting when the handler returns, before the collector is back (else its
        # first pass walks all of them, ~15-25 ms); these commands are short and make few cycles.
        # Imported here: ranktable.hccl loads numpy (0.2-0.3 s), which a sync through the agent never needs.
        from ranktable.hccl.bulk import gc_paused

        with gc_paused():
            return _run(handler, args)
    return _run(handler, args)


def _run(handler: Handler, args: argparse.Namespace) -> int:
    try:
        return handler(args)
    except KeyboardInterrupt:
        print("ranktable: interrupted", file=sys.stderr)
        return 130
    except RanktableError as exc:
        print(f"ranktable {command_name(args)}: {exc.message}", file=sys.stderr)
        return 2 if isinstance(exc, CliError) else 1
    except ModuleNotFoundError as exc:
        if not exc.name or exc.name.split(".")[0] == "ranktable":
            raise
        print(f"ranktable {command_name(args)}: {missing_dependency(exc.name)}", file=sys.stderr)
        return 1
    except BrokenPipeError:
        if not _stdout_reader_gone():
            raise  # a socket's, not the terminal's: reported as any other bug
        quiet_stdout()
        return 141  # what a shell reports for a command ended by SIGPIPE, as `kubectl ... | head` is
    except OSError as exc:
        where = f"{exc.filename}: " if getattr(exc, "filename", None) else ""
        print(f"ranktable {command_name(args)}: {where}{exc.strerror or exc}", file=sys.stderr)
        return 1
    except Exception as exc:  # a bug, not bad input: still one line; the traceback on request
        if os.environ.get("RANKTABLE_DEBUG"):
            raise
        print(
            f"ranktable {command_name(args)}: unexpected {type(exc).__name__}: {str(exc)[:300]} "
            "(a bug in ranktable: please report it; RANKTABLE_DEBUG=1 shows the traceback)",
            file=sys.stderr,
        )
        return 70  # EX_SOFTWARE


# Import names whose distribution on PyPI is called differently.
DISTRIBUTIONS = {"re2": "google-re2", "yaml": "PyYAML", "IPython": "ipython"}


def missing_dependency(module: str) -> str:
    """One line for a command whose dependency is not installed (e.g. a launcher-only install)."""
    top = module.split(".")[0]
    package = DISTRIBUTIONS.get(top, top.replace("_", "-"))
    return (
        f"this command needs the Python package {package!r}, which is not installed "
        "(`pip install jupyter-ranktable` installs the whole product; docs/install.md)"
    )


def _stdout_reader_gone() -> bool:
    """Whether stdout is a pipe nobody reads any more (`ranktable job logs -f NAME | head`): poll reports
    an error on a pipe's write end once its read end is closed."""
    import select

    try:
        poller = select.poll()
        poller.register(sys.stdout.fileno(), select.POLLOUT)
        return any(events & select.POLLERR for _fd, events in poller.poll(0))
    except (OSError, ValueError):
        return False


def quiet_stdout() -> None:
    """Point stdout at /dev/null, so the interpreter's last flush does not fail again on the closed pipe."""
    with contextlib.suppress(OSError, ValueError):
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
        os.close(devnull)
