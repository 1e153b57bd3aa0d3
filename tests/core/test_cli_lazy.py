"""`ranktable --help` and `ranktable validate` start light: the command table lists every command without
importing its module, and a small rank table is validated without numpy (#28: both in <= 0.15 s)."""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

import ranktable
from ranktable.cli import _not_in_this_build, build_parser
from ranktable.cli.commands import COMMANDS, HELP
from ranktable.hccl.validate import COLUMNS_FROM_BYTES, check_document

EXAMPLE_TABLE = Path(ranktable.__file__).parent / "examples" / "jobstart_hccl.json"
HEAVY = ("numpy", "kubernetes", "pydantic", "paramiko", "jupyter_server")

# Runs the CLI, then prints the heavy packages actually loaded (a package's submodules appear once its
# body ran; a lazily bound `numpy` placeholder alone is not an import).
PROBE = """
import atexit, sys
heavy = {heavy!r}
loaded = lambda: sorted({{n.split(".")[0] for n in sys.modules if "." in n}} & set(heavy))
atexit.register(lambda: print("LOADED", loaded(), file=sys.stderr))
from ranktable.cli import main
sys.argv = ["ranktable", *{argv!r}]
sys.exit(main())
"""


def heavy_imports(*argv: str) -> tuple[int, str, list[str]]:
    done = subprocess.run(
        [sys.executable, "-c", PROBE.format(heavy=HEAVY, argv=list(argv))],
        capture_output=True, text=True, timeout=120, check=False,
    )  # fmt: skip
    loaded = [line for line in done.stderr.splitlines() if line.startswith("LOADED ")]
    assert loaded, done.stderr
    return done.returncode, done.stdout, json.loads(loaded[-1][len("LOADED ") :].replace("'", '"'))


def test_help_lists_every_command_with_its_help_and_imports_nothing_heavy() -> None:
    code, out, loaded = heavy_imports("--help")
    assert code == 0 and loaded == []
    for name, _, text in COMMANDS:
        assert f"    {name}" in out and text.split()[0] in out, name


def test_validate_of_a_rank_table_imports_nothing_heavy() -> None:
    code, out, loaded = heavy_imports("validate", str(EXAMPLE_TABLE))
    assert code == 0 and "valid" in out and loaded == []


def test_a_large_table_is_validated_with_numpy_columns(tmp_path: Path) -> None:
    """The probe above could fail: past `COLUMNS_FROM_BYTES` validation reads columns, with numpy."""
    servers = [
        {
            "server_id": f"10.0.{i // 256}.{i % 256}",
            "device": [
                {
                    "device_id": str(d),
                    "device_ip": f"10.1.{i // 32}.{i % 32 * 8 + d}",
                    "rank_id": str(i * 8 + d),
                }
                for d in range(8)
            ],
        }
        for i in range(512)
    ]
    table = tmp_path / "big.json"
    table.write_text(
        json.dumps({"status": "completed", "version": "1.0", "server_count": "512", "server_list": servers})
    )
    assert table.stat().st_size >= COLUMNS_FROM_BYTES
    code, out, loaded = heavy_imports("validate", str(table))
    assert code == 0 and "4096 ranks" in out and loaded == ["numpy"]


def _top_level(parser: argparse.ArgumentParser) -> dict[str, argparse.ArgumentParser]:
    sub = next(a for a in parser._actions if isinstance(a, argparse._SubParsersAction))
    return dict(sub.choices)


def test_every_module_registers_exactly_the_commands_of_the_table() -> None:
    full = _top_level(build_parser())
    assert list(full) == [name for name, _, _ in COMMANDS]
    for name, parser in full.items():
        assert parser.get_default("handler") is not _not_in_this_build, name  # not a placeholder


@pytest.mark.parametrize("name", [name for name, _, _ in COMMANDS])
def test_each_command_help_works_alone(name: str, capsys: pytest.CaptureFixture[str]) -> None:
    with pytest.raises(SystemExit) as done:
        build_parser(name).parse_args([name, "--help"])
    assert done.value.code == 0
    out = capsys.readouterr().out
    assert out.startswith(f"usage: ranktable {name}") and "-h, --help" in out
    assert HELP[name]  # the table's line is what `ranktable --help` shows


def _table(**changes: object) -> dict[str, object]:
    doc = json.loads(EXAMPLE_TABLE.read_text())
    devices = doc["server_list"][0]["device"]
    for key, value in changes.items():
        devices[0][key] = value
    return doc


@pytest.mark.parametrize(
    "doc",
    [
        _table(),
        _table(rank_id="1"),  # a duplicate rank
        _table(rank_id="9"),  # server 0's ranks no longer one block
        _table(rank_id="-3"),
        _table(device_id="3"),
    ],
)
def test_objects_only_validation_says_what_the_columns_say(doc: dict[str, object]) -> None:
    text = json.dumps(doc)
    with_columns = check_document(text, "t.json")
    objects_only = check_document(text, "t.json", columns=False)
    assert (objects_only.status, objects_only.problems) == (with_columns.status, with_columns.problems)


def test_job_sub_commands_build_the_jobspec_flags_only_for_compose_and_submit() -> None:
    """The JobSpec's flags import the spec and its validators: `job list` never needs them, `job compose
    --help` shows them all."""
    probe = (
        "import sys\n"
        "from ranktable.cli import build_parser\n"
        "parser = build_parser('job')\n"
        "args = parser.parse_args(sys.argv[1:])\n"
        "print(args.job_command, 'ranktable.compose.spec_flags' in sys.modules)\n"
    )
    listed = subprocess.run(
        [sys.executable, "-c", probe, "job", "list"], capture_output=True, text=True, check=True
    )
    assert listed.stdout.split() == ["list", "False"]
    composed = subprocess.run(
        [sys.executable, "-c", probe, "job", "compose", "--name", "x", "--image", "i"],
        capture_output=True, text=True, check=True,
    )  # fmt: skip
    assert composed.stdout.split() == ["compose", "True"]
    helped = subprocess.run(
        [sys.executable, "-m", "ranktable", "job", "submit", "--help"],
        capture_output=True, text=True, env={**os.environ, "RANKTABLE_WARM": "0"},  # no server left behind
    )  # fmt: skip
    assert helped.returncode == 0 and "--framework" in helped.stdout and "--wait" in helped.stdout
