"""`ranktable exec NB -- CMD ARGS` keeps argv as kubectl exec does; `--shell STRING` is the shell form."""

from __future__ import annotations

from pathlib import Path

import pytest

from ranktable.cli import main
from ranktable.cli.remote import exec_command_line
from ranktable.errors import InputError
from ranktable.remote.manager import default_manager
from tests.integration.fixtures.sshd import SshServer


@pytest.fixture
def box(sshd: SshServer, ranktable_home: Path, tmp_path: Path) -> Path:
    """A trusted profile `box` whose remote directory exists."""
    remote = tmp_path / "remote"
    remote.mkdir()
    argv = ["ssh", "add", "box", "--host", sshd.host, "--port", str(sshd.port), "--user", sshd.user]
    assert main([*argv, "--key", str(sshd.client_key), "--remote-dir", str(remote)]) == 0
    sshd.write_known_hosts(ranktable_home / "known_hosts")
    yield remote
    default_manager().close()


def test_sh_c_keeps_its_script_as_one_argument(box: Path, capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["exec", "box", "--", "sh", "-c", "echo x; exit 7"]) == 7
    assert capsys.readouterr().out == "x\n"


def test_arguments_reach_the_command_unexpanded(box: Path, capsys: pytest.CaptureFixture[str]) -> None:
    (box / "f1").write_text("")
    assert main(["exec", "box", "--", "printf", "%s|", "a  b", "$HOME", "*", "it's", ""]) == 0
    assert capsys.readouterr().out == "a  b|$HOME|*|it's||"


@pytest.mark.parametrize(
    "argv",
    [
        ["exec", "box", "--shell", "echo $((1+2)) | tr 3 4; exit 5"],
        ["exec", "--shell", "echo $((1+2)) | tr 3 4; exit 5", "box"],
    ],
)
def test_the_shell_form_runs_a_command_line(
    box: Path, capsys: pytest.CaptureFixture[str], argv: list[str]
) -> None:
    assert main(argv) == 5
    assert capsys.readouterr().out == "4\n"


@pytest.mark.parametrize(
    ("cmd", "shell", "problem"),
    [
        ([], None, "no command given"),
        (["--"], None, "no command given"),
        (["ls"], "ls", "not both"),
        (["--shell"], None, "exactly one string"),
        ([], "  ", "is empty"),
    ],
)
def test_bad_exec_forms_name_the_fix(cmd: list[str], shell: str | None, problem: str) -> None:
    with pytest.raises(InputError) as err:
        exec_command_line("nb", cmd, shell)
    assert problem in str(err.value) and "ranktable exec nb" in str(err.value)


def test_argv_is_quoted_for_the_remote_shell() -> None:
    assert exec_command_line("nb", ["--", "sh", "-c", "echo x; exit 7"], None) == "sh -c 'echo x; exit 7'"
    assert exec_command_line("nb", [], "a | b") == "a | b"
