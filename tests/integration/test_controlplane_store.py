"""The controllers' API-server interface over the official client (`KubeStore`), and device assignment.

`KubeStore` is what our kubelet and configmap1980 controller use on a real control plane; here it runs
against the Python pool, which serves the same API (the conformance suite covers the real one).
"""

from __future__ import annotations

import pytest

from ranktable.sim.controllers import devices
from ranktable.sim.k8s import errors
from ranktable.sim.k8s.resources import BY_KEY
from ranktable.sim.real.kube_store import KubeStore
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.sim_helpers import eventually

CONFIGMAPS, PODS = BY_KEY["configmaps"], BY_KEY["pods"]


def test_kube_store_reads_from_its_watch_cache_and_writes_through_the_api(sim_pool: SimPoolHandle) -> None:
    store = KubeStore(sim_pool.api_client(), watched=("configmaps",))
    store.start()
    try:
        seen = store.wait(-1, 0)
        made = store.create(
            CONFIGMAPS, {"metadata": {"name": "ks", "namespace": "default"}, "data": {"a": "1"}}
        )
        assert made["metadata"]["uid"] and made["kind"] == "ConfigMap"
        assert store.wait(seen, 5) > seen
        cached = eventually(lambda: store.find(CONFIGMAPS, "default", "ks"), what="the watch to deliver it")
        assert cached["data"] == {"a": "1"}
        assert store.find(CONFIGMAPS, "default", "missing") is None

        def bump(obj: dict) -> None:
            obj["data"]["a"] = "2"

        assert store.mutate(CONFIGMAPS, "default", "ks", bump)["data"] == {"a": "2"}
        assert store.mutate(CONFIGMAPS, "default", "gone", bump) is None
        eventually(lambda: (store.find(CONFIGMAPS, "default", "ks") or {}).get("data") == {"a": "2"})
        names = [o["metadata"]["name"] for o in store.list(CONFIGMAPS, "default")[0]]
        assert "ks" in names
        with pytest.raises(errors.ApiError) as wrong_uid:
            store.delete(CONFIGMAPS, "default", "ks", uid="not-the-uid")
        assert wrong_uid.value.code == 409
        store.delete(CONFIGMAPS, "default", "ks", uid=made["metadata"]["uid"])
        eventually(lambda: store.find(CONFIGMAPS, "default", "ks") is None, what="the DELETED event")
        with pytest.raises(errors.ApiError) as missing:
            store.delete(CONFIGMAPS, "default", "ks")
        assert missing.value.code == 404
    finally:
        store.stop()


def _pod(uid: str, npus: int, annotation: str | None = None, phase: str = "Running") -> dict:
    meta: dict = {"uid": uid, "name": uid, "annotations": {}}
    if annotation:
        meta["annotations"]["huawei.com/AscendReal"] = annotation
    return {
        "metadata": meta,
        "spec": {"containers": [{"resources": {"limits": {"huawei.com/ascend-1980": str(npus)}}}]},
        "status": {"phase": phase},
    }


def test_devices_are_the_lowest_free_ids_and_finished_pods_release_theirs() -> None:
    node = {"status": {"allocatable": {"huawei.com/ascend-1980": "8"}}}
    others = [_pod("a", 2, "Ascend910-0,Ascend910-1"), _pod("b", 1, "Ascend910-3", phase="Succeeded")]
    assert devices.allocate(_pod("new", 3), node, others) == [2, 3, 4]
    assert devices.annotation_value([2, 3]) == "Ascend910-2,Ascend910-3"
    assert devices.devices_of(others[0]) == [0, 1]
    assert devices.allocate(_pod("big", 7), node, others) is None  # only 6 are free
    assert devices.allocate(_pod("cpu", 0), node, others) == []
