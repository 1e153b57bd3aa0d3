"""Arguments are argv on every surface (#24.5): one shell-words splitter in the core, used by the CLI, the
widget, the `%%ranktable job` cell and a JobSpec whose entry.args is one line (the form's Arguments)."""

from __future__ import annotations

import json
import shlex
from pathlib import Path

import pytest

from ranktable.compose.argv import python_script, shell_words
from ranktable.compose.spec import JobSpec
from ranktable.compose.spec_flags import SHELL, with_cell
from ranktable.errors import InputError

# the table the form is checked on too (src/spec/specfile.spec.ts): one contract for both sides
CASES = json.loads((Path(__file__).parents[2] / "src" / "spec" / "argv_cases.json").read_text())["cases"]


@pytest.mark.parametrize("case", CASES, ids=[c["line"] for c in CASES])
def test_each_line_splits_to_its_argv(case: dict) -> None:
    assert shlex.join(case["argv"]) == case["line"]  # the table is what the form writes (shell quoting)
    assert shell_words(case["line"], "args") == case["argv"]


def test_a_spec_takes_its_arguments_as_a_list_or_as_one_line() -> None:
    base = {"name": "j", "image": "i"}
    line = JobSpec.from_dict({**base, "entry": {"script": "train.py", "args": "--steps 300 --tag 'a b'"}})
    listed = JobSpec.from_dict(
        {**base, "entry": {"script": "train.py", "args": ["--steps", "300", "--tag", "a b"]}}
    )
    assert line.entry is not None and line.entry.args == ["--steps", "300", "--tag", "a b"]
    assert line.to_dict() == listed.to_dict()  # normalised: the preview shows the argv
    with pytest.raises(InputError) as caught:
        JobSpec.from_dict({**base, "entry": {"script": "train.py", "args": "--tag 'open"}})
    assert caught.value.where == "spec.entry.args" and "quote" in caught.value.fix


def test_a_python_command_is_a_script_with_arguments() -> None:
    assert python_script(["python3.9", "train.py", "--steps", "3"]) == (
        "python3.9",
        "train.py",
        ["--steps", "3"],
    )
    assert python_script(["/usr/bin/python3", "t.py"]) == ("/usr/bin/python3", "t.py", [])
    for words in (
        ["python", "-m", "mod"],
        ["bash", "run.sh"],
        ["python", "a.py", "&&", "python", "b.py"],
        [],
    ):
        assert python_script(words) is None


def test_a_cell_runs_through_the_launcher_unless_it_is_not_one_python_command() -> None:
    spec = JobSpec(name="j", image="i")
    launched, notes = with_cell(spec, "# train\npython train.py --steps 300  # ten minutes\n")
    assert notes == [] and launched.command == []
    assert launched.entry is not None and (launched.entry.script, launched.entry.args) == (
        "train.py",
        ["--steps", "300"],
    )
    shelled, notes = with_cell(spec, "python a.py\npython b.py")
    assert shelled.entry is None and shelled.command == [*SHELL, "python a.py\npython b.py"]
    assert [n.field for n in notes] == ["cell"] and "launcher" in notes[0].message
