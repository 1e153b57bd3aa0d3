"""The composer reproduces the platform's reference manifest and round-trips every valid JobSpec."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from ranktable.cli import main
from ranktable.compose.launchers import launcher_command, parse_launcher_command
from ranktable.compose.manifests import compose, spec_from_manifests
from ranktable.compose.spec import EntryPoint, JobSpec, SecretRef
from ranktable.compose.validate import has_errors, validate_spec
from ranktable.errors import InputError

REFERENCE = Path(__file__).resolve().parents[1] / "data/reference/lite-volcano-job.yaml"
REFERENCE_ARGS = [
    "job",
    "compose",
    "--name",
    "yourvcjobname",
    "--image",
    "bert_pretrain_mindspore:v1",
    "--nodes",
    "1",
    "--npus",
    "1",
    "--framework",
    "mindspore",
    "--command",
    "sleep 1000000000000000000",
]


def reference_docs() -> list[dict]:
    return list(yaml.safe_load_all(REFERENCE.read_text()))


def test_cli_compose_equals_the_reference_manifest(capsys: pytest.CaptureFixture[str]) -> None:
    assert main(REFERENCE_ARGS) == 0
    out = capsys.readouterr().out
    assert list(yaml.safe_load_all(out)) == reference_docs()
    # the rank-table placeholder is the same text, written as a block like the guide
    assert '  jobstart_hccl.json: |\n    {\n        "status":"initializing"\n    }\n' in out


def test_cli_compose_writes_a_file(tmp_path: Path) -> None:
    target = tmp_path / "job.yaml"
    assert main([*REFERENCE_ARGS, "-o", str(target)]) == 0
    assert list(yaml.safe_load_all(target.read_text())) == reference_docs()


def test_reference_manifest_parses_to_the_flags_spec() -> None:
    spec = spec_from_manifests(reference_docs())
    assert spec == JobSpec(
        name="yourvcjobname",
        image="bert_pretrain_mindspore:v1",
        nodes=1,
        npus_per_node=1,
        framework="mindspore",
        command=["sleep", "1000000000000000000"],
    )
    assert not has_errors(validate_spec(spec))


def test_multi_node_job_is_gang_scheduled_one_pod_per_server() -> None:
    spec = JobSpec(
        name="bert", image="img:1", nodes=4, cpu="180", memory="1400Gi", command=["python", "t.py"]
    )
    cm, job = compose(spec)
    assert cm["metadata"]["name"] == "configmap1980-bert"
    assert job["spec"]["minAvailable"] == 4
    task = job["spec"]["tasks"][0]
    assert task["replicas"] == 4
    pod = task["template"]["spec"]
    resources = pod["containers"][0]["resources"]
    assert (
        resources["requests"]
        == resources["limits"]
        == {"huawei.com/ascend-1980": "8", "cpu": "180", "memory": "1400Gi"}
    )
    term = pod["affinity"]["podAntiAffinity"]["requiredDuringSchedulingIgnoredDuringExecution"][0]
    assert term["topologyKey"] == "kubernetes.io/hostname"
    assert term["labelSelector"]["matchExpressions"][0]["values"] == ["bert"]


def test_entry_point_runs_the_launcher_and_parses_back() -> None:
    spec = JobSpec(
        name="bert",
        image="img",
        nodes=4,
        framework="pytorch",
        routing=True,
        entry=EntryPoint("examples/train.py", ["--steps", "3", "--", "--odd arg"], master_port=23456),
    )
    container = compose(spec)[1]["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    assert container["command"][:2] == ["ranktable", "launch"]
    assert container["command"][-5:] == ["examples/train.py", "--steps", "3", "--", "--odd arg"]
    assert {"name": "ROUTE_PLAN", "value": "true"} in container["env"]
    assert parse_launcher_command(launcher_command(spec)) == spec.entry
    assert parse_launcher_command(["python", "train.py"]) is None


def test_secret_env_is_a_reference_not_a_value() -> None:
    spec = JobSpec(name="j", image="i", command=["x"], secret_env={"TOKEN": SecretRef("obs-token", "token")})
    env = compose(spec)[1]["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["env"]
    assert {"name": "TOKEN", "valueFrom": {"secretKeyRef": {"name": "obs-token", "key": "token"}}} in env


@pytest.mark.parametrize(
    ("mutate", "field"),
    [
        (
            lambda d: d[1]["spec"]["tasks"][0]["template"]["spec"]["containers"][0]["resources"][
                "limits"
            ].update({"huawei.com/ascend-1980": "2"}),
            "resources",
        ),
        (lambda d: d[0]["metadata"].update({"name": "configmap1980-other"}), "ConfigMap.metadata.name"),
        (lambda d: d[1]["spec"].update({"minAvailable": 1}), "Job.spec.minAvailable"),
        (lambda d: d[1]["spec"]["plugins"].pop("configmap1980"), "Job.spec.plugins.configmap1980"),
        (lambda d: d.pop(1), "manifest"),
    ],
)
def test_unrepresentable_manifest_names_the_field(mutate: object, field: str) -> None:
    docs = compose(JobSpec(name="j", image="i", nodes=2, command=["x"]))
    mutate(docs)  # type: ignore[operator]
    with pytest.raises(InputError) as err:
        spec_from_manifests(docs)
    assert field in (err.value.where or "")


def test_on_fault_presets_write_coherent_policies_labels_and_restart_policy() -> None:
    def job(on_fault: str) -> dict:
        return compose(JobSpec(name="j", image="i", nodes=2, command=["x"], max_retry=5, on_fault=on_fault))[
            1
        ]

    default = job("")  # the platform guide's reference lines, unchanged
    assert default["spec"]["policies"] == [{"event": "PodEvicted", "action": "RestartJob"}]
    assert default["metadata"]["labels"]["fault-scheduling"] == "force"
    assert default["spec"]["tasks"][0]["template"]["spec"]["restartPolicy"] == "OnFailure"
    restart = job("restart")
    assert {"event": "PodFailed", "action": "RestartJob"} in restart["spec"]["policies"]
    assert restart["metadata"]["labels"]["fault-retry-times"] == "5" and restart["spec"]["maxRetry"] == 5
    # fault-retry-times only works with restartPolicy Never (MindCluster's fault-handling guide)
    assert restart["spec"]["tasks"][0]["template"]["spec"]["restartPolicy"] == "Never"
    resume = job("resume")
    assert {"event": "PodFailed", "action": "AbortJob"} in resume["spec"]["policies"]
    assert "fault-retry-times" not in resume["metadata"]["labels"]
    stop = job("stop")
    assert all(p["action"] == "AbortJob" for p in stop["spec"]["policies"])
    assert stop["metadata"]["labels"]["fault-scheduling"] == "off"
    for preset in ("", "restart", "resume", "stop"):
        assert (
            spec_from_manifests(
                [compose(JobSpec(name="j", image="i", command=["x"]))[0], job(preset)]
            ).on_fault
            == preset
        )


def test_on_fault_flag_and_errors_name_the_field(capsys: pytest.CaptureFixture[str]) -> None:
    assert main([*REFERENCE_ARGS, "--on-fault", "resume"]) == 0
    (_, vcjob) = yaml.safe_load_all(capsys.readouterr().out)
    assert {"event": "PodFailed", "action": "AbortJob"} in vcjob["spec"]["policies"]
    with pytest.raises(InputError) as err:
        JobSpec.from_dict({"name": "j", "image": "i", "on_fault": "retry"})
    assert err.value.where == "spec.on_fault" and "restart" in (err.value.fix or "")
    docs = compose(JobSpec(name="j", image="i", command=["x"]))
    docs[1]["spec"]["policies"] = [{"event": "PodFailed", "action": "CompleteJob"}]
    with pytest.raises(InputError) as err:
        spec_from_manifests(docs)
    assert err.value.where == "Job.spec.policies"


def test_from_dict_names_the_bad_field() -> None:
    with pytest.raises(InputError) as err:
        JobSpec.from_dict({"name": "j", "image": "i", "nodes": "many"})
    assert err.value.where == "spec.nodes"
    with pytest.raises(InputError) as err:
        JobSpec.from_dict(
            {"name": "j", "image": "i", "volumes": [{"name": "v", "kind": "s3", "mount_path": "/d"}]}
        )
    assert err.value.where == "spec.volumes[0].kind"
    with pytest.raises(InputError) as err:
        JobSpec.from_dict({"name": "j", "image": "i", "colour": "red"})
    assert "colour" in err.value.reason
