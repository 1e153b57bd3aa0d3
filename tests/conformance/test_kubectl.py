"""kubectl's daily verbs, the same on both control planes (or listed in docs/conformance.md)."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

import yaml

from tests.conformance.jobs import reference_manifest, shell_job
from tests.conformance.planes import Plane, conform, wait_until


def _name(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:6]}"


def _apply(plane: Plane, docs: list[dict], *extra: str) -> str:
    out = plane.kubectl("apply", *extra, "-f", "-", stdin=yaml.safe_dump_all(docs))
    assert out.returncode == 0, out.stderr
    return out.stdout


def _conform_then_delete_job(plane: Plane, name: str, *cases: tuple[str, Callable[[], None]]) -> None:
    """Each (case, scenario) on the plane, then the Volcano job `name` deleted whatever happened."""
    try:
        for case, scenario in cases:
            conform(plane, case, scenario)
    finally:
        plane.kubectl("delete", "vcjob", name, "--wait=false")


def test_apply_get_describe(plane: Plane) -> None:
    name = _name("ref")

    def scenario() -> None:
        out = _apply(plane, reference_manifest(name))
        assert f"job.batch.volcano.sh/{name} created" in out
        got = plane.kubectl("get", "vcjob", name, "-o", "jsonpath={.spec.queue}/{.spec.schedulerName}")
        assert got.stdout == "default/volcano", got.stderr
        table = plane.kubectl("get", "vcjob", name)
        assert table.returncode == 0 and name in table.stdout
        as_json = json.loads(plane.kubectl("get", "cm", f"configmap1980-{name}", "-o", "json").stdout)
        assert as_json["metadata"]["labels"]["ring-controller.cce"] == "ascend-1980"
        described = plane.kubectl("describe", "vcjob", name)
        assert described.returncode == 0 and f"Name:         {name}" in described.stdout, described.stderr

    try:
        conform(plane, "kubectl-apply-get-describe", scenario)
    finally:
        plane.kubectl(
            "delete", "vcjob,cm", name, f"configmap1980-{name}", "--ignore-not-found", "--wait=false"
        )


def test_logs_follow_prefix_by_label(plane: Plane) -> None:
    name = _name("logs")
    _apply(plane, [shell_job(name, "echo hello-from-$HOSTNAME; sleep 2", replicas=2)])

    def phases() -> str:
        selector = f"volcano.sh/job-name={name}"
        return plane.kubectl("get", "pods", "-l", selector, "-o", "jsonpath={.items[*].status.phase}").stdout

    def scenario() -> None:
        wait_until("pods running", lambda: phases().count("Running") == 2 or "Succeeded" in phases())
        out = plane.kubectl(
            "logs", "-f", "--prefix", "-l", f"volcano.sh/job-name={name}", "--max-log-requests=4"
        )
        assert out.returncode == 0, out.stderr
        lines = sorted(out.stdout.splitlines())
        assert len(lines) == 2, lines
        for i, line in enumerate(lines):
            assert line.startswith(f"[pod/{name}-worker-{i}/main] hello-from-"), line

    _conform_then_delete_job(plane, name, ("kubectl-logs-follow-prefix", scenario))


def test_wait_for_jsonpath(plane: Plane) -> None:
    name = _name("wait")
    _apply(plane, [shell_job(name, "sleep 30")])

    def scenario() -> None:
        out = plane.kubectl(
            "wait", "--for=jsonpath={.status.state.phase}=Running", f"vcjob/{name}", "--timeout=120s"
        )
        assert out.returncode == 0, out.stderr
        out = plane.kubectl(
            "wait", "--for=condition=Ready", "pod", "-l", f"volcano.sh/job-name={name}", "--timeout=60s"
        )
        assert out.returncode == 0, out.stderr

    _conform_then_delete_job(plane, name, ("kubectl-wait", scenario))


def test_diff_and_server_dry_run_change_nothing(plane: Plane) -> None:
    name = _name("dry")
    cm = {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "namespace": "default"},
        "data": {"a": "1"},
    }
    _apply(plane, [cm])

    def data() -> dict:
        return json.loads(plane.kubectl("get", "cm", name, "-o", "json").stdout).get("data") or {}

    def scenario() -> None:
        changed = dict(cm, data={"a": "2"})
        diff = plane.kubectl("diff", "-f", "-", stdin=yaml.safe_dump(changed))
        assert diff.returncode == 1 and '+  a: "2"' in diff.stdout, diff.stdout + diff.stderr
        assert data() == {"a": "1"}, "kubectl diff changed the live object"
        _apply(plane, [changed], "--dry-run=server")
        assert data() == {"a": "1"}, "apply --dry-run=server changed the live object"
        patched = plane.kubectl("patch", "cm", name, "--dry-run=server", "-p", '{"data":{"a":"3"}}')
        assert patched.returncode == 0, patched.stderr
        assert data() == {"a": "1"}, "patch --dry-run=server changed the live object"
        deleted = plane.kubectl("delete", "cm", name, "--dry-run=server")
        assert deleted.returncode == 0, deleted.stderr
        assert plane.kubectl("get", "cm", name).returncode == 0, "delete --dry-run=server deleted the object"

    try:
        conform(plane, "kubectl-diff-dry-run", scenario)
    finally:
        plane.kubectl("delete", "cm", name, "--ignore-not-found")


def test_create_generators(plane: Plane) -> None:
    ns, name = _name("ns"), _name("gen")

    def scenario() -> None:
        for args in (
            ("create", "namespace", ns),
            ("create", "configmap", name, "-n", ns, "--from-literal=k=v"),
            ("create", "secret", "generic", name, "-n", ns, "--from-literal=k=v"),
        ):
            out = plane.kubectl(*args)
            assert out.returncode == 0, f"kubectl {' '.join(args)}: {out.stderr}"
        got = plane.kubectl("get", "cm", name, "-n", ns, "-o", "jsonpath={.data.k}")
        assert got.stdout == "v"
        can = plane.kubectl("auth", "can-i", "create", "pods")
        assert can.stdout.strip() == "yes", can.stderr

    try:
        conform(plane, "kubectl-create-generators", scenario)
    finally:
        plane.kubectl("delete", "namespace", ns, "--ignore-not-found", "--wait=false")


def test_events_for_pod(plane: Plane) -> None:
    name = _name("ev")
    _apply(plane, [shell_job(name, "sleep 20")])

    def scenario() -> None:
        pod = f"{name}-worker-0"
        wait_until("the pod to exist", lambda: plane.kubectl("get", "pod", pod).returncode == 0)
        out = wait_until(
            "events for the pod",
            lambda: (
                (r := plane.kubectl("events", "--for", f"pod/{pod}")).returncode == 0
                and pod in r.stdout
                and r
            ),
            timeout=60,
        )
        assert "Scheduled" in out.stdout or "Started" in out.stdout, out.stdout

    _conform_then_delete_job(plane, name, ("kubectl-events-for", scenario))


def test_explain_volcano_fields(plane: Plane) -> None:
    def scenario() -> None:
        out = plane.kubectl("explain", "vcjob.spec.tasks")
        assert out.returncode == 0, out.stderr
        assert "replicas" in out.stdout and "template" in out.stdout, out.stdout

    conform(plane, "kubectl-explain", scenario)


def test_explain_core_fields(plane: Plane) -> None:
    def scenario() -> None:
        out = plane.kubectl("explain", "pods.spec.containers")
        assert out.returncode == 0, out.stderr
        assert "FIELD: containers <[]Container>" in out.stdout, out.stdout
        for field in ("command", "env", "image", "resources", "volumeMounts"):
            assert f"  {field}\t<" in out.stdout, field
        image = plane.kubectl("explain", "pods.spec.containers.image")
        assert "FIELD: image <string>" in image.stdout, image.stdout

    conform(plane, "kubectl-explain-core", scenario)


def test_exec_and_cp(plane: Plane) -> None:
    name = _name("exec")
    _apply(plane, [shell_job(name, "sleep 120")])
    pod = f"{name}-worker-0"

    def running() -> bool:
        return plane.kubectl("get", "pod", pod, "-o", "jsonpath={.status.phase}").stdout == "Running"

    def exec_scenario() -> None:
        wait_until("the pod to run", running)
        out = plane.kubectl("exec", pod, "--", "sh", "-c", "echo out; echo err >&2; exit 3")
        assert out.stdout == "out\n" and "err" in out.stderr and out.returncode == 3, (
            out.returncode,
            out.stdout,
            out.stderr,
        )

    def cp_scenario() -> None:
        wait_until("the pod to run", running)
        src = plane.home / "payload.txt"
        src.write_text("payload\n")
        up = plane.kubectl("cp", str(src), f"{pod}:payload.txt")
        assert up.returncode == 0, up.stderr
        back = plane.home / "back.txt"
        down = plane.kubectl("cp", f"{pod}:payload.txt", str(back))
        assert down.returncode == 0 and back.read_text() == "payload\n", down.stderr

    _conform_then_delete_job(plane, name, ("kubectl-exec", exec_scenario), ("kubectl-cp", cp_scenario))
