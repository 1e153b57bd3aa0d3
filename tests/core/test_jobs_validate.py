"""Each validation rule fires on its case, naming the field, the reason and a fix."""

from __future__ import annotations

from dataclasses import replace
from pathlib import Path

import pytest

from ranktable.cli import main
from ranktable.compose.flavours import BUILTIN_FLAVOURS, load_flavours
from ranktable.compose.spec import EntryPoint, JobSpec, SecretRef, VolumeSpec
from ranktable.compose.validate import validate_spec
from ranktable.errors import InputError

BASE = JobSpec(
    name="bert", image="img:1", nodes=4, cpu="180", memory="1400Gi", command=["python", "train.py"]
)


def findings(spec: JobSpec, severity: str | None = None) -> list:
    return [i for i in validate_spec(spec, BUILTIN_FLAVOURS) if severity is None or i.severity == severity]


def test_a_sized_multi_node_job_has_no_findings() -> None:
    assert findings(BASE) == []


@pytest.mark.parametrize(
    ("change", "field", "words"),
    [
        ({"name": "Bert_1"}, "name", "DNS-1035"),
        ({"name": "b" * 30}, "name", "63"),
        ({"namespace": "Team A"}, "namespace", "DNS-1123"),
        ({"task_name": "Worker"}, "task_name", "DNS-1123"),
        ({"npus_per_node": 3, "nodes": 1}, "npus_per_node", "not allowed"),
        ({"npus_per_node": 4}, "npus_per_node", "must use 8"),
        ({"npus_per_node": 16, "nodes": 1}, "npus_per_node", "exceeds"),
        ({"cpu": "200"}, "cpu", "192 vCPUs"),
        ({"cpu": "lots"}, "cpu", "quantity"),
        ({"memory": "2Ti"}, "memory", "1536Gi"),
        ({"nodes": 0}, "nodes", "at least 1"),
        ({"flavour": "Snt10"}, "flavour", "unknown flavour"),
        ({"framework": "jax"}, "framework", "unknown framework"),
        ({"command": []}, "command", "neither"),
        ({"entry": EntryPoint("t.py")}, "command", "both"),
        ({"env": {"1ST": "x"}}, "env.1ST", "not a valid environment variable"),
        ({"env": {"ip": "x"}}, "env.ip", "downward API"),
        ({"env": {"ROUTE_PLAN": "true"}}, "env.ROUTE_PLAN", "routing switch"),
        ({"env": {"A": "1"}, "secret_env": {"A": SecretRef("s", "k")}}, "secret_env.A", "also a plain"),
        ({"volumes": [VolumeSpec("hccn", "hostPath", "/x", path="/y")]}, "volumes[0].name", "driver mount"),
        (
            {"volumes": [VolumeSpec("d", "hostPath", "/etc/hccn.conf", path="/y")]},
            "volumes[0].mount_path",
            "driver",
        ),
        (
            {"volumes": [VolumeSpec("d", "pvc", "/d"), VolumeSpec("d", "pvc", "/e", claim="c")]},
            "volumes[0].claim",
            "claim",
        ),
        (
            {"volumes": [VolumeSpec("d", "pvc", "/d", claim="c"), VolumeSpec("d", "pvc", "/e", claim="c")]},
            "volumes[1].name",
            "twice",
        ),
        ({"volumes": [VolumeSpec("d", "nfs", "/d", path="/x")]}, "volumes[0].server", "server"),
        ({"labels": {"ring-controller.cce": "x"}}, "labels.ring-controller.cce", "fixed"),
        ({"labels": {"team": "a b"}}, "labels.team", "label value"),
        ({"rank_table_version": "v3"}, "rank_table_version", "unknown"),
        ({"max_retry": -1}, "max_retry", "negative"),
    ],
)
def test_each_error_names_field_reason_and_fix(change: dict, field: str, words: str) -> None:
    errors = findings(replace(BASE, **change), "error")
    match = [i for i in errors if i.field == field]
    assert match, f"expected an error on {field}, got {errors}"
    assert words in match[0].message
    assert match[0].fix


def test_pod_name_fix_says_how_short_the_name_must_be() -> None:
    issue = next(i for i in findings(replace(BASE, name="a" * 30), "error") if "pod name" in i.message)
    assert "at most 29" in issue.fix  # <job>-<job>-1-<i>: 29 + 1 + 31 + 2 = 63


def test_routing_on_two_nodes_warns_it_will_be_skipped() -> None:
    warnings = findings(replace(BASE, nodes=2, routing=True), "warning")
    assert [w.field for w in warnings] == ["routing"]
    assert "skipped" in warnings[0].message
    infos = findings(replace(BASE, nodes=2, routing=True), "info")
    assert any("3.7 or 3.9" in i.message for i in infos)


def test_large_job_without_routing_gets_a_suggestion() -> None:
    infos = findings(replace(BASE, nodes=64), "info")
    assert [i.field for i in infos] == ["routing"]
    assert "512" in infos[0].message
    assert (
        findings(replace(BASE, nodes=64, routing=True, entry=EntryPoint("t.py"), command=[]), "info")[0].field
        == "routing"
    )


def test_flavours_are_configurable(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    file = tmp_path / "flavours.yaml"
    file.write_text("Big:\n  npus: 16\n  vcpus: 320\n  memory_gib: 2048\n")
    monkeypatch.setenv("RANKTABLE_FLAVOURS", str(file))
    table = load_flavours()
    assert table["Big"].npus == 16 and "Snt9B" in table
    assert [
        i
        for i in validate_spec(replace(BASE, flavour="Big", nodes=1, npus_per_node=16, cpu="300"))
        if i.severity == "error"
    ] == []
    file.write_text("Big:\n  npus: lots\n")
    with pytest.raises(InputError) as err:
        load_flavours()
    assert err.value.where and err.value.where.endswith("Big.npus")


def test_cli_lists_errors_and_exits_non_zero(capsys: pytest.CaptureFixture[str]) -> None:
    code = main(
        [
            "job",
            "compose",
            "--name",
            "Bad_Name",
            "--image",
            "i",
            "--nodes",
            "2",
            "--npus",
            "4",
            "--command",
            "x",
        ]
    )
    err = capsys.readouterr().err
    assert code == 1
    assert "error: name:" in err and "error: npus_per_node:" in err
    assert "2 error(s)" in err


def test_cli_rejects_malformed_flags(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(["job", "compose", "--name", "j", "--image", "i", "--command", "x", "--env", "NOEQUALS"]) == 1
    assert "--env" in capsys.readouterr().err


def test_relative_script_path_warns_before_it_crash_loops() -> None:
    from ranktable.compose.spec import EntryPoint, JobSpec, VolumeSpec
    from ranktable.compose.validate import WARNING, validate_spec

    relative = [
        i
        for i in validate_spec(JobSpec(name="a", image="i", entry=EntryPoint("train.py")))
        if i.field == "entry.script"
    ]
    assert [(i.severity, "is relative" in i.message) for i in relative] == [(WARNING, True)]
    code = VolumeSpec("code", "pvc", mount_path="/home/ma-user/work", claim="code")
    absolute = JobSpec(name="a", image="i", entry=EntryPoint("/home/ma-user/work/train.py"), volumes=[code])
    assert not [i for i in validate_spec(absolute) if i.field == "entry.script"]


@pytest.mark.parametrize(
    ("command", "field"),
    [
        (["echo", "started;", "sleep", "300"], "command[1]"),
        (["python", "train.py", "&&", "echo", "done"], "command[2]"),
        (["python", "train.py", "|", "tee", "log"], "command[2]"),
        (["python", "train.py", ">", "out.log"], "command[2]"),
    ],
)
def test_a_shell_operator_in_the_argv_is_a_warning_that_names_sh_c(command: list[str], field: str) -> None:
    """The container command runs no shell: `echo started; sleep 300` printed one line and ended."""
    [warning] = findings(replace(BASE, command=command), "warning")
    assert warning.field == field
    assert "not run by a shell" in warning.message
    assert (
        warning.fix == f"to run a shell line, make it one word after sh -c, e.g. sh -c '{' '.join(command)}'"
    )


@pytest.mark.parametrize(
    "command",
    [
        ["sh", "-c", "echo started; sleep 300;"],  # a shell line in one word
        ["python", "train.py", "--sep=;"],
        ["bash", "-c", "python train.py && echo done"],
    ],
)
def test_a_shell_line_after_sh_c_is_no_warning(command: list[str]) -> None:
    assert findings(replace(BASE, command=command), "warning") == []
