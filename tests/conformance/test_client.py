"""The official Python client: watch resume, 410 Gone, paging, patch types, dry-run."""

from __future__ import annotations

import json
import uuid
from collections.abc import Callable

from kubernetes import client, watch
from kubernetes.client.rest import ApiException

from tests.conformance.jobs import shell_job
from tests.conformance.planes import Plane, conform, raw, wait_until

NS = "default"


def _cm(name: str, **data: str) -> dict:
    return {"apiVersion": "v1", "kind": "ConfigMap", "metadata": {"name": name}, "data": data}


def _conform_then_delete(
    plane: Plane, core: client.CoreV1Api, case: str, scenario: Callable[[], None], *configmaps: str
) -> None:
    """The case's scenario on the plane, then its ConfigMaps deleted whatever happened."""
    try:
        conform(plane, case, scenario)
    finally:
        for name in configmaps:
            core.delete_namespaced_config_map(name, NS)


def test_watch_resumes_from_a_resource_version(plane: Plane) -> None:
    core = client.CoreV1Api(plane.api())
    name = f"w-{uuid.uuid4().hex[:6]}"

    def scenario() -> None:
        rv = core.list_namespaced_config_map(NS).metadata.resource_version
        core.create_namespaced_config_map(NS, _cm(name, a="1"))
        core.patch_namespaced_config_map(name, NS, {"data": {"a": "2"}})
        seen = []
        for event in watch.Watch().stream(
            core.list_namespaced_config_map, NS, resource_version=rv, timeout_seconds=5
        ):
            if event["object"].metadata.name == name:
                seen.append((event["type"], event["object"].data["a"]))
            if len(seen) == 2:
                break
        assert seen == [("ADDED", "1"), ("MODIFIED", "2")], seen

    _conform_then_delete(plane, core, "client-watch-resume", scenario, name)


def test_watch_from_a_compacted_version_is_410(plane: Plane) -> None:
    """A watch from a version the server no longer keeps gets 410 Gone (real: etcd compaction, every 10 s)."""
    core = client.CoreV1Api(plane.api())
    name = f"gone-{uuid.uuid4().hex[:6]}"

    def expired(rv: str) -> bool:
        status, body = raw(
            plane,
            "GET",
            f"/api/v1/namespaces/{NS}/configmaps",
            query=[("watch", "true"), ("resourceVersion", rv), ("timeoutSeconds", "1")],
        )
        if status == 410:
            return True
        if isinstance(body, dict):
            events = [body]  # one event: the body decoded as a whole
        else:
            events = [json.loads(line) for line in (body or "").splitlines() if line.strip()]
        return any(e["type"] == "ERROR" and e["object"].get("code") == 410 for e in events)

    def scenario() -> None:
        old = core.list_namespaced_config_map(NS).metadata.resource_version
        core.create_namespaced_config_map(NS, _cm(name, a="1"))
        for i in range(5):
            core.patch_namespaced_config_map(name, NS, {"data": {"a": str(i)}})
        wait_until("a 410 for the old resourceVersion", lambda: expired(old), timeout=45, every=2)

    _conform_then_delete(plane, core, "client-watch-410", scenario, name)


def test_paging_with_limit_and_continue(plane: Plane) -> None:
    core = client.CoreV1Api(plane.api())
    names = [f"p-{uuid.uuid4().hex[:6]}" for _ in range(3)]
    for n in names:
        core.create_namespaced_config_map(NS, _cm(n))

    def scenario() -> None:
        first = core.list_namespaced_config_map(NS, limit=2)
        assert len(first.items) == 2 and first.metadata._continue, first.metadata
        rest = core.list_namespaced_config_map(NS, limit=100, _continue=first.metadata._continue)
        everything = [i.metadata.name for i in first.items + rest.items]
        assert len(everything) == len(set(everything)) and set(names) <= set(everything)
        assert rest.metadata.remaining_item_count in (None, 0)

    _conform_then_delete(plane, core, "client-paging", scenario, *names)


def test_patch_types(plane: Plane) -> None:
    name = f"pt-{uuid.uuid4().hex[:6]}"
    job = shell_job(name, "sleep 60")
    custom = client.CustomObjectsApi(plane.api())
    custom.create_namespaced_custom_object("batch.volcano.sh", "v1alpha1", NS, "jobs", job)
    path = f"/apis/batch.volcano.sh/v1alpha1/namespaces/{NS}/jobs/{name}"

    def scenario() -> None:
        for patch, content_type, expected in (
            ({"metadata": {"labels": {"merge": "yes"}}}, "application/merge-patch+json", 200),
            (
                [{"op": "add", "path": "/metadata/labels/json", "value": "yes"}],
                "application/json-patch+json",
                200,
            ),
            ({"metadata": {"labels": {"smp": "yes"}}}, "application/strategic-merge-patch+json", 415),
        ):
            status, body = raw(plane, "PATCH", path, patch, content_type=content_type)
            assert status == expected, (content_type, status, body)
        labels = custom.get_namespaced_custom_object("batch.volcano.sh", "v1alpha1", NS, "jobs", name)[
            "metadata"
        ]["labels"]
        assert labels["merge"] == "yes" and labels["json"] == "yes" and "smp" not in labels

    try:
        conform(plane, "client-patch-types", scenario)
    finally:
        custom.delete_namespaced_custom_object("batch.volcano.sh", "v1alpha1", NS, "jobs", name)


def test_dry_run_all(plane: Plane) -> None:
    core = client.CoreV1Api(plane.api())
    name = f"dr-{uuid.uuid4().hex[:6]}"
    core.create_namespaced_config_map(NS, _cm(name, a="1"))

    def scenario() -> None:
        ghost = f"{name}-ghost"
        core.create_namespaced_config_map(NS, _cm(ghost), dry_run="All")
        try:
            core.read_namespaced_config_map(ghost, NS)
            raise AssertionError("a dry-run create made the object")
        except ApiException as exc:
            assert exc.status == 404
        core.patch_namespaced_config_map(name, NS, {"data": {"a": "2"}}, dry_run="All")
        core.replace_namespaced_config_map(name, NS, _cm(name, a="3"), dry_run="All")
        assert core.read_namespaced_config_map(name, NS).data == {"a": "1"}, (
            "a dry-run write changed the object"
        )
        core.delete_namespaced_config_map(name, NS, dry_run="All")
        assert core.read_namespaced_config_map(name, NS).data == {"a": "1"}, "a dry-run delete deleted it"

    _conform_then_delete(plane, core, "client-dry-run", scenario, name)
