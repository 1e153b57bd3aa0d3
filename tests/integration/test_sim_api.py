"""The simulated pool's Kubernetes API through the official client: verbs, selectors, errors, watches."""

from __future__ import annotations

import json
import urllib.request
from typing import Any

import pytest
from kubernetes import client, watch
from kubernetes.client.exceptions import ApiException

from tests.integration.fixtures.simpool import SimPoolHandle


def _cm(
    name: str, labels: dict[str, str] | None = None, data: dict[str, str] | None = None
) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {"name": name, "labels": labels or {}},
        "data": data or {"k": "v"},
    }


def _status(err: ApiException) -> dict[str, Any]:
    return dict(json.loads(err.body))


def test_create_get_list_patch_delete_configmap(sim_pool: SimPoolHandle) -> None:
    core = client.CoreV1Api(sim_pool.api_client())
    created = core.create_namespaced_config_map("default", _cm("a", {"app": "x"}))
    assert created.metadata.uid and created.metadata.resource_version and created.metadata.creation_timestamp
    core.create_namespaced_config_map("default", _cm("b", {"app": "y", "tier": "1"}))
    core.create_namespaced_config_map("default", _cm("c", {"tier": "2"}))

    def names(**kw: Any) -> list[str]:
        return [c.metadata.name for c in core.list_namespaced_config_map("default", **kw).items]

    assert names(label_selector="app=x") == ["a"]
    assert names(label_selector="app==y") == ["b"]
    assert names(label_selector="app!=x") == ["b", "c"]
    assert names(label_selector="app in (x,y)") == ["a", "b"]
    assert names(label_selector="tier notin (1)") == ["a", "c"]
    assert names(label_selector="tier") == ["b", "c"]
    assert names(label_selector="!tier") == ["a"]
    assert names(label_selector="app,tier") == ["b"]
    assert names(field_selector="metadata.name=c") == ["c"]
    assert names(field_selector="metadata.name!=c") == ["a", "b"]

    patched = core.patch_namespaced_config_map("a", "default", {"data": {"extra": "1"}})  # strategic merge
    assert patched.data == {"k": "v", "extra": "1"}
    assert int(patched.metadata.resource_version) > int(created.metadata.resource_version)

    core.delete_namespaced_config_map("a", "default", body=client.V1DeleteOptions(grace_period_seconds=0))
    with pytest.raises(ApiException) as err:
        core.read_namespaced_config_map("a", "default")
    assert err.value.status == 404
    status = _status(err.value)
    assert status["reason"] == "NotFound" and status["message"] == 'configmaps "a" not found'


def test_conflicts_and_invalid_objects(sim_pool: SimPoolHandle) -> None:
    core = client.CoreV1Api(sim_pool.api_client())
    core.create_namespaced_config_map("default", _cm("dup"))
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", _cm("dup"))
    assert err.value.status == 409 and _status(err.value)["reason"] == "AlreadyExists"

    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("default", _cm("Bad_Name"))
    assert err.value.status == 422
    assert _status(err.value)["details"]["causes"][0]["field"] == "metadata.name"

    stale = core.read_namespaced_config_map("dup", "default")
    core.patch_namespaced_config_map("dup", "default", {"data": {"k": "new"}})
    stale.data = {"k": "lost update"}
    with pytest.raises(ApiException) as err:
        core.replace_namespaced_config_map("dup", "default", stale)
    assert err.value.status == 409 and _status(err.value)["reason"] == "Conflict"

    pod = {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "npu"},
        "spec": {
            "containers": [
                {
                    "name": "c",
                    "command": ["true"],
                    "resources": {
                        "requests": {"huawei.com/ascend-1980": "2"},
                        "limits": {"huawei.com/ascend-1980": "4"},
                    },
                }
            ]
        },
    }
    with pytest.raises(ApiException) as err:
        core.create_namespaced_pod("default", pod)
    assert err.value.status == 422
    assert _status(err.value)["details"]["causes"][0]["field"] == "spec.containers[0].resources.requests"


def test_patch_content_types_on_custom_resources(sim_pool: SimPoolHandle) -> None:
    api = sim_pool.api_client()
    hn = {
        "apiVersion": "topology.volcano.sh/v1alpha1",
        "kind": "HyperNode",
        "metadata": {"name": "extra"},
        "spec": {"tier": 3, "members": []},
    }
    custom = client.CustomObjectsApi(api)
    created = custom.create_cluster_custom_object("topology.volcano.sh", "v1alpha1", "hypernodes", hn)
    assert created["metadata"]["uid"]
    merged = custom.patch_cluster_custom_object(
        "topology.volcano.sh", "v1alpha1", "hypernodes", "extra", {"spec": {"tierName": "core"}}
    )  # merge patch
    assert merged["spec"] == {"tier": 3, "members": [], "tierName": "core"}
    json_patched = custom.patch_cluster_custom_object(
        "topology.volcano.sh",
        "v1alpha1",
        "hypernodes",
        "extra",
        [{"op": "replace", "path": "/spec/tier", "value": 4}],
        _content_type="application/json-patch+json",
    )
    assert json_patched["spec"]["tier"] == 4
    with pytest.raises(ApiException) as err:
        custom.patch_cluster_custom_object(
            "topology.volcano.sh",
            "v1alpha1",
            "hypernodes",
            "extra",
            {"spec": {"tier": 5}},
            _content_type="application/strategic-merge-patch+json",
        )
    assert err.value.status == 415 and _status(err.value)["reason"] == "UnsupportedMediaType"


def test_token_is_required(sim_pool: SimPoolHandle) -> None:
    import ssl

    context = ssl.create_default_context(cafile=str(sim_pool.state_dir / "server.crt"))
    request = urllib.request.Request(
        f"{sim_pool.url}/api/v1/namespaces", headers={"Authorization": "Bearer wrong"}
    )
    with pytest.raises(urllib.error.HTTPError) as err:
        urllib.request.urlopen(request, context=context, timeout=5)
    assert err.value.code == 401
    assert json.loads(err.value.read())["reason"] == "Unauthorized"
    ok = urllib.request.Request(
        f"{sim_pool.url}/api/v1/namespaces", headers={"Authorization": f"Bearer {sim_pool.token}"}
    )
    with urllib.request.urlopen(ok, context=context, timeout=5) as resp:
        names = [n["metadata"]["name"] for n in json.loads(resp.read())["items"]]
    assert {"default", "kube-system"} <= set(names)
    assert oct(sim_pool.kubeconfig.stat().st_mode & 0o777) == "0o600"


def test_watch_replays_then_streams_and_honours_resource_version(sim_pool: SimPoolHandle) -> None:
    core = client.CoreV1Api(sim_pool.api_client())
    core.create_namespaced_config_map("default", _cm("w1", {"w": "1"}))
    listed = core.list_namespaced_config_map("default", label_selector="w")
    rv = listed.metadata.resource_version
    core.create_namespaced_config_map("default", _cm("w2", {"w": "1"}))
    core.patch_namespaced_config_map("w1", "default", {"data": {"k": "2"}})
    core.create_namespaced_config_map("default", _cm("other"))  # not selected

    w = watch.Watch()
    events = [
        (e["type"], e["object"].metadata.name)
        for e in w.stream(
            core.list_namespaced_config_map,
            "default",
            label_selector="w",
            resource_version=rv,
            timeout_seconds=1,
        )
    ]
    assert events == [("ADDED", "w2"), ("MODIFIED", "w1")]

    fresh = [
        (e["type"], e["object"].metadata.name)
        for e in watch.Watch().stream(
            core.list_namespaced_config_map, "default", label_selector="w", timeout_seconds=1
        )
    ]
    assert sorted(fresh) == [("ADDED", "w1"), ("ADDED", "w2")]


def test_watch_from_expired_resource_version_gets_410(sim_pool_factory: Any) -> None:
    pool = sim_pool_factory(history=20)
    core = client.CoreV1Api(pool.api_client())
    old = core.list_namespaced_config_map("default").metadata.resource_version
    for i in range(30):
        core.create_namespaced_config_map("default", _cm(f"churn-{i}"))
    resp = core.list_namespaced_config_map(
        "default", watch=True, resource_version=old, timeout_seconds=2, _preload_content=False
    )
    lines = [json.loads(line) for line in resp.read().decode().splitlines() if line]
    assert lines[0]["type"] == "ERROR"
    assert lines[0]["object"]["code"] == 410 and lines[0]["object"]["reason"] == "Expired"
    with pytest.raises(ApiException) as err:  # the client's own watch helper raises it too
        list(
            watch.Watch().stream(
                core.list_namespaced_config_map, "default", resource_version=old, timeout_seconds=2
            )
        )
    assert err.value.status == 410
    with pytest.raises(ApiException) as err:  # an exact list at a compacted version is gone as well
        core.list_namespaced_config_map("default", resource_version=old, resource_version_match="Exact")
    assert err.value.status == 410
    assert len(core.list_namespaced_config_map("default", resource_version="0").items) == 30  # any version


def test_status_subresource_and_deletecollection(sim_pool: SimPoolHandle) -> None:
    api = sim_pool.api_client()
    custom, core = client.CustomObjectsApi(api), client.CoreV1Api(api)
    queue = {
        "apiVersion": "scheduling.volcano.sh/v1beta1",
        "kind": "Queue",
        "metadata": {"name": "gold"},
        "spec": {"weight": 2},
        "status": {"state": "Open"},
    }
    custom.create_cluster_custom_object("scheduling.volcano.sh", "v1beta1", "queues", queue)
    ignored = custom.patch_cluster_custom_object(
        "scheduling.volcano.sh",
        "v1beta1",
        "queues",
        "gold",
        {"status": {"state": "Closed"}, "spec": {"weight": 3}},
    )
    assert ignored["status"]["state"] == "Open" and ignored["spec"]["weight"] == 3  # status needs /status
    closed = custom.patch_cluster_custom_object_status(
        "scheduling.volcano.sh", "v1beta1", "queues", "gold", {"status": {"state": "Closed"}}
    )
    assert closed["status"]["state"] == "Closed"
    for i in range(3):
        core.create_namespaced_config_map("default", _cm(f"bulk-{i}", {"bulk": "yes"}))
    core.delete_collection_namespaced_config_map("default", label_selector="bulk=yes")
    assert core.list_namespaced_config_map("default", label_selector="bulk").items == []


def test_watch_reports_objects_entering_and_leaving_a_selection(sim_pool: SimPoolHandle) -> None:
    core = client.CoreV1Api(sim_pool.api_client())
    core.create_namespaced_config_map("default", _cm("mover", {"team": "a"}))
    rv = core.list_namespaced_config_map("default").metadata.resource_version
    core.patch_namespaced_config_map("mover", "default", {"metadata": {"labels": {"team": "b"}}})
    core.patch_namespaced_config_map("mover", "default", {"metadata": {"labels": {"team": "a"}}})
    events = [
        e["type"]
        for e in watch.Watch().stream(
            core.list_namespaced_config_map,
            "default",
            label_selector="team=a",
            resource_version=rv,
            timeout_seconds=1,
        )
    ]
    assert events == ["DELETED", "ADDED"]


def test_deleting_a_namespace_deletes_what_is_in_it(sim_pool: SimPoolHandle) -> None:
    from tests.integration.sim_helpers import eventually

    core = client.CoreV1Api(sim_pool.api_client())
    core.create_namespace({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "team"}})
    core.create_namespaced_config_map("team", _cm("inside"))
    with pytest.raises(ApiException) as err:
        core.create_namespaced_config_map("nowhere", _cm("lost"))
    assert err.value.status == 404
    core.delete_namespace("team")
    eventually(
        lambda: not core.list_config_map_for_all_namespaces(field_selector="metadata.name=inside").items,
        what="objects of the deleted namespace removed",
    )


def test_paged_lists_and_server_side_apply(sim_pool: SimPoolHandle) -> None:
    core = client.CoreV1Api(sim_pool.api_client())
    for i in range(5):
        core.create_namespaced_config_map("default", _cm(f"page-{i}", {"page": "1"}))
    names, token = [], None
    while True:
        page = core.list_namespaced_config_map("default", label_selector="page", limit=2, _continue=token)
        names += [c.metadata.name for c in page.items]
        token = page.metadata._continue
        if not token:
            break
    assert names == [f"page-{i}" for i in range(5)]

    applied = core.patch_namespaced_config_map(
        "ssa", "default", _cm("ssa"), field_manager="me", _content_type="application/apply-patch+yaml"
    )
    assert applied.metadata.uid and applied.data == {"k": "v"}  # created on first apply
    again = core.patch_namespaced_config_map(
        "ssa",
        "default",
        _cm("ssa", data={"k": "w"}),
        field_manager="me",
        _content_type="application/apply-patch+yaml",
    )
    assert again.metadata.uid == applied.metadata.uid and again.data == {"k": "w"}
