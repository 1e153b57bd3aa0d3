"""Bad CLI input is one line on stderr naming the file or flag, the problem and the fix; never a traceback."""

from __future__ import annotations

import io
import sys
from pathlib import Path

import pytest

from ranktable.cli import main

DATA = Path(__file__).parents[1] / "data" / "topology"


def bad_files(tmp: Path) -> dict[str, tuple[Path, str]]:
    """name -> (file, a fragment its error must contain)."""
    deep = tmp / "deep.json"
    deep.write_text("[" * 100_000)
    bigint = tmp / "bigint.json"
    bigint.write_text('{"status": "completed", "version": "1.0", "nodes": ' + "9" * 5000 + "}")
    latin = tmp / "latin1.json"
    latin.write_bytes('{"name": "caf\u00e9"}'.encode("latin-1"))
    return {
        "deep": (deep, "limit of 100 levels"),
        "bigint": (bigint, "more than 4300 digits"),
        "endless": (Path("/dev/zero"), "256 MiB limit"),
        "latin1": (latin, "not UTF-8"),
    }


COMMANDS = {
    "validate": lambda f: ["validate", str(f)],
    "plan": lambda f: ["plan", "--ranktable", str(f), "--topology", str(DATA / "topology.yaml")],
    "plan-topology": lambda f: ["plan", "--ranktable", str(f), "--topology", str(f)],
    "compose-spec": lambda f: ["job", "compose", "--spec", str(f)],
    "submit-file": lambda f: ["job", "submit", str(f), "--kubeconfig", "/nonexistent"],
}


def one_error_line(capsys: pytest.CaptureFixture[str]) -> str:
    err = capsys.readouterr().err
    assert "Traceback" not in err
    lines = [line for line in err.splitlines() if line.strip()]
    assert len(lines) == 1, err
    return lines[0]


@pytest.mark.parametrize("command", sorted(COMMANDS))
@pytest.mark.parametrize("bad", ["deep", "bigint", "endless", "latin1"])
def test_bad_files_are_one_line_naming_file_problem_and_limit(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], command: str, bad: str
) -> None:
    path, fragment = bad_files(tmp_path)[bad]
    argv = COMMANDS[command](path)
    code = main(argv)
    if command == "validate" and code == 1:
        out = capsys.readouterr()
        assert "Traceback" not in out.err + out.out
        assert fragment in out.out + out.err and str(path) in out.out + out.err
        return
    assert code != 0
    line = one_error_line(capsys)
    assert str(path) in line and fragment in line, line


def test_an_unterminated_script_args_quote_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    argv = ["job", "compose", "--name", "a", "--image", "i", "--script", "t.py", "--script-args", "--x 'oops"]
    assert main(argv) == 1
    line = one_error_line(capsys)
    assert line.startswith("ranktable job compose: --script-args: cannot split")
    assert "no closing quotation" in line and "close the quote" in line


def test_an_unterminated_command_quote_names_the_flag(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["job", "compose", "--name", "a", "--image", "i", "--command", 'sh -c "echo']) == 1
    assert "--command: cannot split" in one_error_line(capsys)


def test_a_spec_that_is_not_an_object_is_refused(tmp_path: Path, capsys: pytest.CaptureFixture[str]) -> None:
    spec = tmp_path / "spec.json"
    spec.write_text("[1, 2]")
    assert main(["job", "compose", "--spec", str(spec)]) == 1
    assert "must be a JSON object" in one_error_line(capsys)


def test_compose_reads_the_spec_from_stdin(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    spec = b'{"name": "piped", "image": "img:v1", "nodes": 1, "command": ["true"]}'
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(spec)))
    assert main(["job", "compose", "--spec", "-"]) == 0
    assert "name: piped" in capsys.readouterr().out


def test_submit_from_an_empty_stdin_is_one_line(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    monkeypatch.setattr(sys, "stdin", io.TextIOWrapper(io.BytesIO(b"")))
    assert main(["job", "submit", "-", "--kubeconfig", "/nonexistent"]) == 1
    line = one_error_line(capsys)
    assert line.startswith("ranktable job submit: -: is empty") and "ranktable job compose" in line


def test_an_unexpected_error_is_one_line_unless_debugging(
    monkeypatch: pytest.MonkeyPatch, capsys: pytest.CaptureFixture[str]
) -> None:
    from ranktable.cli import build_parser

    def broken(args: object) -> int:
        raise KeyError("boom")

    args = build_parser().parse_args(["validate", "x.json"])
    monkeypatch.setattr(args, "handler", broken)
    monkeypatch.setattr("ranktable.cli.build_parser", lambda *_: _FixedParser(args))
    assert main([]) == 70
    line = one_error_line(capsys)
    assert "unexpected KeyError" in line and "RANKTABLE_DEBUG=1" in line
    monkeypatch.setenv("RANKTABLE_DEBUG", "1")
    with pytest.raises(KeyError):
        main([])


class _FixedParser:
    def __init__(self, args: object) -> None:
        self.args = args

    def parse_args(self, argv: object) -> object:
        return self.args
