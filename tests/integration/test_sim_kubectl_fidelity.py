"""kubectl's daily verbs that the simulated pool used to get wrong (issue 10): server dry-run on every
verb, the protobuf bodies of kubectl's generators, `auth can-i`, `events --for`, and `explain` from
Volcano's published schemas. Real kubectl (1.32) and the official client against the pool."""

from __future__ import annotations

import json
import ssl
import urllib.error
import urllib.request
from pathlib import Path
from typing import Any

import pytest
import yaml
from kubernetes import client

from ranktable.sim.controllers.sandbox import Confinement
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.sim_helpers import eventually, volcano_job
from tests.integration.test_sim_kubectl import kubectl

JOBS = ("batch.volcano.sh", "v1alpha1", "default", "jobs")
MAGIC = b"k8s\x00"  # every Kubernetes protobuf body starts with it


@pytest.fixture
def home(tmp_path: Path) -> Path:
    path = tmp_path / "home"
    path.mkdir()
    return path


def _snapshot(core: client.CoreV1Api, custom: client.CustomObjectsApi) -> tuple[Any, ...]:
    cm = core.read_namespaced_config_map("settings", "default")
    job = custom.get_namespaced_custom_object(*JOBS, "steady")
    return (cm.metadata.resource_version, cm.data, cm.metadata.labels, job["metadata"]["resourceVersion"])


def test_server_dry_run_changes_nothing_on_any_verb(
    sim_pool: SimPoolHandle, home: Path, tmp_path: Path
) -> None:
    api = sim_pool.api_client()
    core, custom = client.CoreV1Api(api), client.CustomObjectsApi(api)
    core.create_namespaced_config_map("default", {"metadata": {"name": "settings"}, "data": {"a": "1"}})
    custom.create_namespaced_custom_object(*JOBS, volcano_job("steady", 1, ["sleep", "60"], plugins={}))
    before = _snapshot(core, custom)

    changed = {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": "settings"}, "data": {"a": "2"}}
    path = tmp_path / "cm.yaml"
    path.write_text(yaml.safe_dump(changed))
    kubectl(sim_pool, home, "apply", "--dry-run=server", "-f", str(path))
    kubectl(sim_pool, home, "apply", "--server-side", "--dry-run=server", "-f", str(path))
    kubectl(sim_pool, home, "replace", "--dry-run=server", "-f", str(path))
    kubectl(sim_pool, home, "patch", "cm", "settings", "--dry-run=server", "-p", '{"data":{"a":"3"}}')
    kubectl(sim_pool, home, "label", "cm", "settings", "x=y", "--dry-run=server")
    kubectl(
        sim_pool,
        home,
        "patch",
        "vcjob",
        "steady",
        "--type=merge",
        "--dry-run=server",
        "-p",
        '{"spec":{"maxRetry":9}}',
    )
    diff = kubectl(sim_pool, home, "diff", "-f", str(path), check=False)
    assert '-  a: "1"' in diff and '+  a: "2"' in diff
    kubectl(sim_pool, home, "delete", "cm", "settings", "--dry-run=server")
    kubectl(sim_pool, home, "delete", "vcjob", "steady", "--dry-run=server")
    kubectl(sim_pool, home, "delete", "cm", "--all", "--dry-run=server")
    fresh = tmp_path / "new.yaml"
    fresh.write_text(yaml.safe_dump({**changed, "metadata": {"name": "never"}}))
    kubectl(sim_pool, home, "create", "--dry-run=server", "-f", str(fresh))

    # the official client's dry_run="All"
    core.replace_namespaced_config_map("settings", "default", changed, dry_run="All")
    core.patch_namespaced_config_map("settings", "default", {"data": {"a": "4"}}, dry_run="All")
    core.delete_namespaced_config_map("settings", "default", dry_run="All")
    custom.patch_namespaced_custom_object(*JOBS, "steady", {"spec": {"maxRetry": 7}}, dry_run="All")
    custom.delete_namespaced_custom_object(*JOBS, "steady", dry_run="All")
    dry = core.create_namespaced_config_map("default", {"metadata": {"name": "ghost"}}, dry_run="All")
    assert dry.metadata.name == "ghost"

    assert _snapshot(core, custom) == before
    assert [c.metadata.name for c in core.list_namespaced_config_map("default").items] == ["settings"]
    assert custom.get_namespaced_custom_object(*JOBS, "steady")["spec"]["maxRetry"] == 3
    # and without dry-run the same verbs do change things
    kubectl(sim_pool, home, "apply", "-f", str(path))
    assert core.read_namespaced_config_map("settings", "default").data == {"a": "2"}


def test_kubectl_generators_send_protobuf_and_can_i_answers(sim_pool: SimPoolHandle, home: Path) -> None:
    kubectl(sim_pool, home, "create", "namespace", "team-a")
    kubectl(sim_pool, home, "create", "configmap", "conf", "-n", "team-a", "--from-literal=mode=fast")
    kubectl(
        sim_pool, home, "create", "secret", "generic", "creds", "-n", "team-a", "--from-literal=pw=s3cret"
    )
    core = client.CoreV1Api(sim_pool.api_client())
    assert core.read_namespace("team-a").status.phase == "Active"
    assert core.read_namespaced_config_map("conf", "team-a").data == {"mode": "fast"}
    assert core.read_namespaced_secret("creds", "team-a").data == {"pw": "czNjcmV0"}
    assert kubectl(sim_pool, home, "auth", "can-i", "create", "vcjobs").strip() == "yes"
    assert kubectl(sim_pool, home, "auth", "can-i", "delete", "pods", "-n", "team-a").strip() == "yes"


def _post(pool: SimPoolHandle, path: str, body: bytes, ctype: str) -> tuple[int, dict[str, Any]]:
    context = ssl.create_default_context(cafile=str(pool.state_dir / "server.crt"))
    request = urllib.request.Request(
        pool.url + path,
        data=body,
        method="POST",
        headers={"Authorization": f"Bearer {pool.token}", "Content-Type": ctype},
    )
    try:
        with urllib.request.urlopen(request, context=context, timeout=10) as resp:
            return resp.status, json.loads(resp.read())
    except urllib.error.HTTPError as err:
        return err.code, json.loads(err.read())


def test_protobuf_bodies_that_cannot_be_decoded_get_4xx(sim_pool: SimPoolHandle) -> None:
    protobuf = "application/vnd.kubernetes.protobuf"
    code, body = _post(sim_pool, "/api/v1/namespaces", b"not protobuf", protobuf)
    assert code == 400 and "magic" in body["message"]
    code, body = _post(sim_pool, "/api/v1/namespaces", MAGIC + b"\x0a\xff", protobuf)
    assert code == 400 and "could not be decoded as protobuf" in body["message"]
    pod_type = b"\x0a\x09\x0a\x02v1\x12\x03Pod"  # runtime.Unknown{typeMeta{apiVersion: v1, kind: Pod}}
    code, body = _post(sim_pool, "/api/v1/namespaces/default/pods", MAGIC + pod_type, protobuf)
    assert code == 415 and "Pod" in body["message"] and "application/json" in body["message"]


def test_events_for_one_pod(sim_pool: SimPoolHandle, home: Path) -> None:
    kubectl(sim_pool, home, "run", "solo", "--image=x", "--restart=Never", "--", "sh", "-c", "echo hi")
    core = client.CoreV1Api(sim_pool.api_client())
    eventually(lambda: core.read_namespaced_pod("solo", "default").status.phase == "Succeeded", what="done")
    kubectl(sim_pool, home, "run", "other", "--image=x", "--restart=Never", "--", "true")
    out = kubectl(sim_pool, home, "events", "--for", "pod/solo")
    assert "Scheduled" in out and "Started" in out and "pod/solo" in out.lower()
    assert "other" not in out
    selected = core.list_namespaced_event(
        "default", field_selector="involvedObject.apiVersion=v1,involvedObject.name=solo,source=kubelet"
    ).items
    assert {e.reason for e in selected} == {"Started"}


def test_explain_reads_volcanos_published_schema(sim_pool: SimPoolHandle, home: Path) -> None:
    out = kubectl(sim_pool, home, "explain", "vcjob.spec.tasks")
    assert "FIELD: tasks <[]Object>" in out
    for field in ("dependsOn", "minAvailable", "policies", "replicas", "template", "partitionPolicy"):
        assert f"  {field}\t<" in out, field
    topology = kubectl(sim_pool, home, "explain", "vcjob.spec.networkTopology")
    assert "highestTierAllowed\t<integer>" in topology and "mode\t<string>" in topology
    assert "members\t<[]Object>" in kubectl(sim_pool, home, "explain", "hypernode.spec")


def test_explain_reads_the_core_kinds_schema(sim_pool: SimPoolHandle, home: Path) -> None:
    """`kubectl explain pods.spec.containers` failed: the core kinds were open objects."""
    out = kubectl(sim_pool, home, "explain", "pods.spec.containers")
    assert "FIELD: containers <[]Container>" in out
    assert "A single application container that you want to run within a pod." in out
    for field in ("command", "env", "image", "resources", "volumeMounts"):
        assert f"  {field}\t<" in out, field
    assert "Attributes:" not in out and "openapi_types" not in out
    image = kubectl(sim_pool, home, "explain", "pods.spec.containers.image")
    assert "FIELD: image <string>" in image and "Container image name." in image
    assert "unschedulable\t<boolean>" in kubectl(sim_pool, home, "explain", "node.spec")


SSHD_POD = """
apiVersion: v1
kind: Pod
metadata: {name: sshd}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: volcanosh/example-mpi:0.0.3
    command:
    - sh
    - -c
    - ssh-keygen -q -N "" -t ed25519 -f $HOME/hk && exec /usr/sbin/sshd -D -e -p 22 -h $HOME/hk
---
apiVersion: v1
kind: Pod
metadata: {name: probe}
spec:
  restartPolicy: Never
  containers:
  - name: main
    image: busybox
    command: [sh, -c, 'id -u; whoami; hostname; cat /etc/shadow >/dev/null 2>&1 || echo denied; sleep 30']
"""


def test_pods_run_unprivileged_in_their_own_namespaces(
    sim_pool: SimPoolHandle, home: Path, tmp_path: Path
) -> None:
    """Volcano's MPI example starts sshd on port 22: in the pool it must fail inside the pod."""
    confinement = Confinement.detect()
    assert confinement.active, "bubblewrap is missing: `make system-deps` installs it"
    manifest = tmp_path / "pods.yaml"
    manifest.write_text(SSHD_POD)
    kubectl(sim_pool, home, "apply", "-f", str(manifest))
    core = client.CoreV1Api(sim_pool.api_client())
    eventually(
        lambda: core.read_namespaced_pod("sshd", "default").status.phase == "Failed", what="sshd fails"
    )
    assert "Bind to port 22 on 0.0.0.0 failed: Permission denied" in kubectl(sim_pool, home, "logs", "sshd")
    eventually(lambda: "denied" in kubectl(sim_pool, home, "logs", "probe"), what="probe output")
    assert kubectl(sim_pool, home, "logs", "probe").split() == ["10001", "pod", "probe", "denied"]
    assert kubectl(sim_pool, home, "exec", "probe", "--", "id", "-u").strip() == "10001"
    assert kubectl(sim_pool, home, "exec", "probe", "--", "hostname").strip() == "probe"
