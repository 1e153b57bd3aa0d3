"""#26.10, the CLI's small gaps: an argument error is one line (argparse printed its 9-line usage), and a
legacy rank table's `group_count: "x"` is invalid (the CLI called it valid)."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ranktable.cli import main


@pytest.mark.parametrize(
    "argv",
    [["job", "submit", "--nodes", "x"], ["validate"], ["no-such-command"], ["plan", "--no-such-flag"]],
)
def test_an_argument_error_is_one_line_naming_the_command(
    argv: list[str], capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        main(argv)
    assert exited.value.code == 2
    err = capsys.readouterr().err
    assert len(err.strip().splitlines()) == 1, err
    assert err.startswith("ranktable") and "usage:" not in err and "--help" in err


def _legacy(group_count: object) -> dict[str, object]:
    devices = [{"device_id": str(d), "device_ip": f"192.168.0.{d + 1}"} for d in range(2)]
    instance = {"pod_name": "p0", "server_id": "10.0.0.1", "devices": devices}
    group = {"group_name": "g", "device_count": "2", "instance_count": "1", "instance_list": [instance]}
    return {"status": "completed", "group_count": group_count, "group_list": [group]}


@pytest.mark.parametrize(
    ("group_count", "problem"),
    [("x", 'must be a number written as a string, e.g. "3"'), ("2", "says 2 but group_list has 1")],
)
def test_a_legacy_group_count_that_is_not_the_groups_is_invalid(
    tmp_path: Path, capsys: pytest.CaptureFixture[str], group_count: str, problem: str
) -> None:
    table = tmp_path / "legacy.json"
    table.write_text(json.dumps(_legacy(group_count)))
    assert main(["validate", str(table)]) == 1
    out = capsys.readouterr()
    assert "group_count" in out.out + out.err and problem in out.out + out.err
    table.write_text(json.dumps(_legacy("1")))
    assert main(["validate", str(table)]) == 0
