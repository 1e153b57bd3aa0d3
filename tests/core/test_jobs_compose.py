"""The composer reproduces the platform's reference manifest and round-trips every valid JobSpec."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from hypothesis import given, settings
from hypothesis import strategies as st

from ranktable.cli import main
from ranktable.compose.launchers import launcher_command, parse_launcher_command
from ranktable.compose.manifests import compose, dump_manifests, load_manifests, spec_from_manifests
from ranktable.compose.spec import EntryPoint, JobSpec, SecretRef, VolumeSpec
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


# -- property: compose -> YAML -> parse gives the same spec; to_dict -> JSON -> from_dict too ------------
label = st.from_regex(r"[a-z]([a-z0-9-]{0,8}[a-z0-9])?", fullmatch=True)
text = st.text(st.characters(codec="utf-8", exclude_categories=("Cs", "Cc")), max_size=12)
env_name = st.from_regex(r"[A-Z_][A-Z0-9_]{0,8}", fullmatch=True).filter(lambda n: n != "ROUTE_PLAN")
label_key = st.one_of(label, st.builds(lambda p, n: f"{p}.io/{n}", label, label)).filter(
    lambda k: k not in ("ring-controller.cce", "fault-scheduling", "accelerator/huawei-npu")
)
volume = st.one_of(
    st.builds(
        lambda n, p, m, r: VolumeSpec(n, "hostPath", m, path=p, read_only=r),
        label,
        st.just("/data"),
        st.just("/mnt/a"),
        st.booleans(),
    ),
    st.builds(lambda n, c, m: VolumeSpec(n, "pvc", m, claim=c), label, label, st.just("/mnt/b")),
    st.builds(
        lambda n, s, m: VolumeSpec(n, "nfs", m, server=s, path="/export"),
        label,
        st.just("10.0.0.2"),
        st.just("/mnt/c"),
    ),
).filter(lambda v: v.name not in ("ascend-driver", "ascend-add-ons", "localtime", "hccn", "npu-smi"))


@st.composite
def job_specs(draw: st.DrawFn) -> JobSpec:
    nodes = draw(st.integers(1, 12))
    entry = draw(
        st.one_of(
            st.none(),
            st.builds(
                EntryPoint,
                st.just("train.py"),
                st.lists(text, max_size=4),
                st.integers(1, 65535),
                st.sampled_from(["", "python3.9"]),
            ),
        )
    )
    volumes = draw(st.lists(volume, max_size=3, unique_by=lambda v: v.name))
    env = draw(st.dictionaries(env_name, text, max_size=3))
    secrets = draw(
        st.dictionaries(
            env_name.filter(lambda n: n not in env), st.builds(SecretRef, label, label), max_size=2
        )
    )
    return JobSpec(
        name=draw(label),
        image=draw(st.sampled_from(["bert_pretrain_mindspore:v1", "swr.example.com/team/llm:2.1"])),
        namespace=draw(label),
        framework=draw(st.sampled_from(["mindspore", "pytorch"])),
        command=[] if entry else draw(st.lists(text, min_size=1, max_size=4)),
        entry=entry,
        nodes=nodes,
        npus_per_node=8 if nodes > 1 else draw(st.sampled_from([1, 2, 4, 8])),
        cpu=draw(st.sampled_from([None, "96", "500m"])),
        memory=draw(st.sampled_from([None, "512Gi", "1536Gi"])),
        env=env,
        secret_env=secrets,
        volumes=volumes,
        queue=draw(st.sampled_from(["default", "training"])),
        max_retry=draw(st.integers(0, 10)),
        labels=draw(st.dictionaries(label_key, label, max_size=3)),
        routing=draw(st.booleans()),
        rank_table_version=draw(st.sampled_from(["v1", "v2"])),
        node_selector=draw(st.dictionaries(label_key, label, max_size=2)),
        flavour=draw(st.sampled_from(["Snt9B", "Custom16"])),
        task_name=draw(st.sampled_from(["", "worker"])),
        on_fault=draw(st.sampled_from(["", "restart", "resume", "stop"])),
        resume_args=draw(st.sampled_from(["", "--load {path}"])),
        avoid_nodes=draw(st.lists(label, max_size=2)),
    )


@settings(max_examples=50, deadline=None)
@given(job_specs())
def test_composed_yaml_parses_back_to_the_same_spec(spec: JobSpec) -> None:
    text_yaml = dump_manifests(compose(spec))
    assert spec_from_manifests(load_manifests(text_yaml)) == spec


@settings(max_examples=50, deadline=None)
@given(job_specs())
def test_to_dict_is_json_and_round_trips(spec: JobSpec) -> None:
    assert JobSpec.from_dict(json.loads(json.dumps(spec.to_dict()))) == spec


@settings(max_examples=25, deadline=None)
@given(job_specs())
def test_generated_specs_are_valid_apart_from_the_unknown_flavour(spec: JobSpec) -> None:
    errors = [i for i in validate_spec(spec) if i.severity == "error"]
    assert all(i.field == "flavour" for i in errors), errors
