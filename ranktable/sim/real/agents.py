"""Our parts as controllers of a real API server: the virtual kubelet (NPU nodes) and `configmap1980`.

Both are level-triggered loops over a `KubeStore` (watch-fed cache) and reuse the Python pool's
controller code: `Kubelet` runs bound pods' commands and posts their status, `RankTablePlugin` writes
the rank table, `devices.allocate` plays the Ascend device plugin.
"""

from __future__ import annotations

import contextlib
import datetime
import threading
import time
import traceback
from pathlib import Path
from typing import Any

from ranktable.sim.controllers import devices
from ranktable.sim.controllers.cluster import node_object
from ranktable.sim.controllers.common import DEVICES_ANNOTATION, JOB_NAME, Obj
from ranktable.sim.controllers.configmap1980 import RankTablePlugin, job_uses_plugin
from ranktable.sim.controllers.kubelet import NODES, PODS, Kubelet
from ranktable.sim.fabric import SimNode
from ranktable.sim.k8s import errors
from ranktable.sim.k8s.resources import JOBS
from ranktable.sim.real.kube_store import KubeStore

LEASE_SECONDS = 40
RENEW_SECONDS = 10.0
PASS_SECONDS = 0.5
FINISHED_PHASES = ("Completed", "Failed", "Terminated", "Aborted")


def _micro_now() -> str:
    return datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%S.%fZ")


class Loop:
    """A daemon thread that runs `pass_once` after each cache change (and every PASS_SECONDS)."""

    name = "loop"

    def __init__(self, store: KubeStore, error_log: Path) -> None:
        self.store = store
        self.error_log = error_log
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._run, name=self.name, daemon=True)

    def start(self) -> None:
        self._thread.start()

    def stop(self) -> None:
        self._stop.set()
        if self._thread.is_alive():
            self._thread.join(timeout=5)

    def _run(self) -> None:
        seen = -1
        while not self._stop.is_set():
            seen = self.store.wait(seen, PASS_SECONDS)
            try:
                self.pass_once()
            except Exception:  # keep the controller alive; the log says what broke
                with open(self.error_log, "a") as fh:
                    fh.write(traceback.format_exc())
                self._stop.wait(1.0)

    def pass_once(self) -> None:
        raise NotImplementedError


class RankTableController(Loop):
    """`configmap1980`: the rank table of every Volcano Job that asks for the plugin."""

    name = "configmap1980"

    def __init__(self, store: KubeStore, error_log: Path, delay: float = 0.5) -> None:
        super().__init__(store, error_log)
        self.plugin = RankTablePlugin(store, delay)

    def pass_once(self) -> None:
        jobs, _ = self.store.list(JOBS)
        pods, _ = self.store.list(PODS)
        for job in jobs:
            phase = ((job.get("status") or {}).get("state") or {}).get("phase")
            if not job_uses_plugin(job) or phase in FINISHED_PHASES:
                continue
            meta = job["metadata"]
            mine = [
                p
                for p in pods
                if p["metadata"].get("namespace") == meta["namespace"]
                and (p["metadata"].get("labels") or {}).get(JOB_NAME) == meta["name"]
                and any(o.get("uid") == meta["uid"] for o in p["metadata"].get("ownerReferences") or [])
            ]
            self.plugin.sync(job, mine)


class VirtualKubelet(Loop):
    """Snt9B nodes with `huawei.com/ascend-1980` capacity whose pods run as local processes."""

    name = "virtual-kubelet"

    def __init__(
        self,
        store: KubeStore,
        error_log: Path,
        nodes: list[SimNode],
        state_dir: Path,
        kubelet_port: int = 0,
        shared: tuple[Path, ...] = (),
    ) -> None:
        super().__init__(store, error_log)
        self.nodes = nodes
        self.names = {n.name for n in nodes}
        self.kubelet = Kubelet(store, state_dir, ready_to_start=self._devices_ready, shared=shared)
        self.kubelet_port = kubelet_port
        self._last_renew = 0.0

    def start(self) -> None:
        self.kubelet.start()
        super().start()

    def stop_all(self, kill_pods: bool = True) -> None:
        started = self._thread.is_alive()
        self.stop()
        if started:
            self.kubelet.stop(kill=kill_pods)

    # -- nodes and leases ---------------------------------------------------------------------------------
    def node_body(self, node: SimNode) -> Obj:
        obj = node_object(node)
        status = obj["status"]
        # the API server reaches every node's kubelet API at 127.0.0.1 (ExternalIP comes first in
        # --kubelet-preferred-address-types); InternalIP stays the fabric address the rank table uses
        status["addresses"].append({"type": "ExternalIP", "address": "127.0.0.1"})
        status["daemonEndpoints"] = {"kubeletEndpoint": {"Port": self.kubelet_port}}
        now = obj["status"]["conditions"][0]["lastHeartbeatTime"]
        for ctype, reason in (
            ("MemoryPressure", "KubeletHasSufficientMemory"),
            ("DiskPressure", "KubeletHasNoDiskPressure"),
            ("PIDPressure", "KubeletHasSufficientPID"),
        ):
            status["conditions"].append(
                {
                    "type": ctype,
                    "status": "False",
                    "reason": reason,
                    "lastHeartbeatTime": now,
                    "lastTransitionTime": now,
                }
            )
        return obj

    def register(self) -> None:
        """Create (or refresh) every node with its status, as a kubelet does at start."""
        for node in self.nodes:
            body = self.node_body(node)
            try:
                self.store.create(NODES, body)
            except errors.ApiError as exc:
                if exc.code != 409:
                    raise
            status = body["status"]

            def refresh(obj: Obj, status: dict[str, Any] = status) -> None:
                obj["status"] = status
                # no node-lifecycle controller runs: drop the not-ready taint the admission plugin adds
                taints = [
                    t for t in (obj.get("spec") or {}).get("taints") or [] if "not-ready" not in t["key"]
                ]
                obj.setdefault("spec", {})["taints"] = taints or None
                if obj["spec"]["taints"] is None:
                    del obj["spec"]["taints"]

            self.store.mutate(NODES, None, node.name, refresh)
        self.renew_leases()

    def renew_leases(self) -> None:
        for node in self.nodes:
            path = f"/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases/{node.name}"
            spec = {
                "holderIdentity": node.name,
                "leaseDurationSeconds": LEASE_SECONDS,
                "renewTime": _micro_now(),
            }
            try:
                lease = self.store.call("GET", path)
                lease["spec"].update(spec)
                self.store.call("PUT", path, lease)
            except errors.ApiError as exc:
                if exc.code != 404:
                    raise
                owner = self.store.call("GET", f"/api/v1/nodes/{node.name}")
                body = {
                    "apiVersion": "coordination.k8s.io/v1",
                    "kind": "Lease",
                    "metadata": {
                        "name": node.name,
                        "namespace": "kube-node-lease",
                        "ownerReferences": [
                            {
                                "apiVersion": "v1",
                                "kind": "Node",
                                "name": node.name,
                                "uid": owner["metadata"].get("uid"),
                            }
                        ],
                    },
                    "spec": spec,
                }
                self.store.call(
                    "POST", "/apis/coordination.k8s.io/v1/namespaces/kube-node-lease/leases", body
                )
        self._last_renew = time.monotonic()

    # -- pods ----------------------------------------------------------------------------------------
    def _devices_ready(self, pod: Obj) -> bool:
        return devices.npus_requested(pod) == 0 or DEVICES_ANNOTATION in (
            pod["metadata"].get("annotations") or {}
        )

    def assign_devices(self) -> None:
        pods, _ = self.store.list(PODS)
        nodes = {n["metadata"]["name"]: n for n in self.store.list(NODES)[0]}
        for pod in pods:
            node_name = (pod.get("spec") or {}).get("nodeName")
            if (
                node_name not in self.names
                or self._devices_ready(pod)
                or pod["metadata"].get("deletionTimestamp")
            ):
                continue
            same_node = [p for p in pods if (p.get("spec") or {}).get("nodeName") == node_name]
            chosen = devices.allocate(pod, nodes.get(node_name) or {}, same_node)
            if chosen is None:
                continue  # the devices of a finishing pod are not free yet

            def annotate(p: Obj, value: str = devices.annotation_value(chosen)) -> None:
                p["metadata"].setdefault("annotations", {})[DEVICES_ANNOTATION] = value

            with contextlib.suppress(errors.ApiError):
                self.store.mutate(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"], annotate)
            pods = [
                p if p["metadata"]["uid"] != pod["metadata"]["uid"] else self._annotated(p, chosen)
                for p in pods
            ]

    @staticmethod
    def _annotated(pod: Obj, chosen: list[int]) -> Obj:
        pod["metadata"].setdefault("annotations", {})[DEVICES_ANNOTATION] = devices.annotation_value(chosen)
        return pod

    def pass_once(self) -> None:
        if time.monotonic() - self._last_renew > RENEW_SECONDS:
            self.renew_leases()
        self.assign_devices()
        self.kubelet.sync()
