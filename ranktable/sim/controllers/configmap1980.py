"""The platform's `configmap1980` plugin: per-pod device annotations, then the rank table ConfigMap.

`jobstart_hccl.json` (version 1.0) stays `initializing` until every pod of the job is annotated and
running; a short while later it is written `completed`, servers in pod-index order, devices by id,
rank ids sequential. It goes back to `initializing` only while a replacement pod is on its way (a
restart), never because pods finished. When pods change, surviving servers keep their rank ids and new
devices take the smallest free ones. Switch data goes to `ranktable_tor.json` (gzip + base64).

The controller works through `ObjectStore`, so it runs in the Python pool, on a real control plane and,
via `ranktable controller configmap1980`, on a self-hosted Volcano cluster.
"""

from __future__ import annotations

import base64
import gzip
import json
import time
from typing import Any

from ranktable.sim.controllers.api import ObjectStore
from ranktable.sim.controllers.cluster import INDEX_ANNOTATION, TOR_IP_ANNOTATION
from ranktable.sim.controllers.common import DEVICES_ANNOTATION, JOB_NAME, TASK_INDEX, Obj, record_event
from ranktable.sim.controllers.devices import npus_requested
from ranktable.sim.fabric import LEAF_LABEL
from ranktable.sim.k8s.resources import CONFIGMAPS, JOBS, NODES, PODS

CONFIG_ANNOTATION = "cce.kubectl.kubernetes.io/ascend-1980-configuration"
RING_LABEL = "ring-controller.cce"


def configmap_name(job: str) -> str:
    return f"configmap1980-{job}"


def _pod_order(pod: Obj) -> tuple[str, int]:
    labels = pod["metadata"].get("labels") or {}
    return (labels.get("volcano.sh/task-spec", ""), int(labels.get(TASK_INDEX, "0") or 0))


def encode_tor(doc: dict[str, Any]) -> str:
    return base64.b64encode(gzip.compress(json.dumps(doc).encode(), mtime=0)).decode("ascii")


class RankTablePlugin:
    def __init__(self, store: ObjectStore, delay: float = 0.5) -> None:
        self.store = store
        self.delay = delay
        self._ready_since: dict[str, float] = {}
        # per job: the store's versions when its complete table was last written or found current; the
        # same versions again mean the same table (a Store can tell; a real control plane's cannot)
        self._current: dict[str, tuple[int, ...]] = {}

    def _nodes(self) -> dict[str, Obj]:
        nodes, _ = self.store.list(NODES)
        return {n["metadata"]["name"]: n for n in nodes}

    def annotate(self, pod: Obj, node: Obj) -> None:
        devices = [
            int(p.rsplit("-", 1)[1])
            for p in (pod["metadata"].get("annotations") or {}).get(DEVICES_ANNOTATION, "").split(",")
            if "-" in p
        ]
        ip = next(a["address"] for a in node["status"]["addresses"] if a["type"] == "InternalIP")
        index = int((node["metadata"].get("annotations") or {}).get(INDEX_ANNOTATION, "0"))
        tor_ip = (node["metadata"].get("annotations") or {}).get(TOR_IP_ANNOTATION, "")
        npus = int(node["status"]["capacity"].get("huawei.com/ascend-1980", 8))
        value = {
            "pod_name": pod["metadata"]["name"],
            "server_id": ip,
            "devices": [
                {
                    "device_id": str(d),
                    "super_device_id": str(index * npus + d),
                    "device_ip": f"29.{1 + index // 250}.{index % 250}.{d + 1}",
                    "tor_ip": tor_ip,
                    "tor_port": str(d),
                }
                for d in devices
            ],
        }

        def set_annotation(p: Obj) -> None:
            p["metadata"].setdefault("annotations", {})[CONFIG_ANNOTATION] = json.dumps(value)

        self.store.mutate(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"], set_annotation)

    def sync(self, job: Obj, pods: list[Obj]) -> None:
        meta = job["metadata"]
        key = meta["uid"]
        ns, name = meta["namespace"], meta["name"]
        changed_at = getattr(self.store, "changed_at", None)
        versions = changed_at(JOBS, PODS, NODES, CONFIGMAPS) if changed_at is not None else None
        if versions is not None and self._current.get(key) == versions:
            return  # nothing it reads changed since the table was written (or found current)
        self._current.pop(key, None)
        nodes = self._nodes()
        live = [
            p
            for p in pods
            if not p["metadata"].get("deletionTimestamp")
            and (p.get("status") or {}).get("phase") not in ("Succeeded", "Failed")
        ]
        for pod in live:
            node = nodes.get((pod.get("spec") or {}).get("nodeName") or "")
            annotations = pod["metadata"].get("annotations") or {}
            devices_known = DEVICES_ANNOTATION in annotations or npus_requested(pod) == 0
            if node is not None and devices_known and CONFIG_ANNOTATION not in annotations:
                self.annotate(pod, node)  # once the device plugin's ids are there
        total = sum(int(t.get("replicas", 1)) for t in job["spec"].get("tasks") or [])
        ready = [
            p
            for p in live
            if CONFIG_ANNOTATION in (p["metadata"].get("annotations") or {})
            and (p.get("status") or {}).get("podIP")
        ]
        complete = len(ready) == total and total > 0
        # Pods that ran to their end keep their place: the table of a job whose pods finished stays
        # `completed` (only a pod replaced or still starting makes it `initializing` again).
        ended = [
            p
            for p in pods
            if not p["metadata"].get("deletionTimestamp")
            and (p.get("status") or {}).get("phase") in ("Succeeded", "Failed")
        ]
        cm = self.store.find(CONFIGMAPS, ns, configmap_name(name))
        old = self._old_table(cm)
        if not complete:
            self._ready_since.pop(key, None)
            if old.get("status") == "completed" and ended and len(ready) + len(ended) >= total:
                return
            if old.get("status") == "completed":
                table = dict(old, status="initializing")  # keeps the old server list
                self._write(job, cm, table, None)
            return
        since = self._ready_since.setdefault(key, time.monotonic())
        if time.monotonic() - since < self.delay:
            return
        table, tor = self._build(sorted(ready, key=_pod_order), old, nodes)
        self._write(job, cm, table, tor)
        if versions is not None:
            self._current[key] = versions  # taken before the reads: a change since makes the next pass look

    @staticmethod
    def _old_table(cm: Obj | None) -> dict[str, Any]:
        try:
            doc = json.loads(((cm or {}).get("data") or {}).get("jobstart_hccl.json") or "{}")
        except ValueError:
            return {}
        return doc if isinstance(doc, dict) else {}

    def _build(
        self, pods: list[Obj], old: dict[str, Any], nodes: dict[str, Obj]
    ) -> tuple[dict[str, Any], dict[str, Any]]:
        previous: dict[tuple[str, str], str] = {}
        for server in old.get("server_list") or []:
            for dev in server.get("device") or []:
                previous[(server.get("server_id", ""), dev.get("device_id", ""))] = dev.get("rank_id", "")
        entries = []
        for pod in pods:
            config = json.loads(pod["metadata"]["annotations"][CONFIG_ANNOTATION])
            devices = sorted(config["devices"], key=lambda d: int(d["device_id"]))
            entries.append((pod, config, devices))
        wanted = {(c["server_id"], d["device_id"]) for _, c, devs in entries for d in devs}
        kept = {k: v for k, v in previous.items() if k in wanted}
        used = {int(v) for v in kept.values()}
        free = (i for i in range(len(wanted) + len(used) + 1) if i not in used)
        servers, tor_servers = [], []
        for pod, config, devices in entries:
            node = nodes.get(pod["spec"].get("nodeName") or "") or {}
            device_list, tor_list = [], []
            for d in devices:
                rank = kept.get((config["server_id"], d["device_id"]))
                if rank is None:
                    rank = str(next(free))
                device_list.append(
                    {"device_id": d["device_id"], "device_ip": d["device_ip"], "rank_id": rank}
                )
                tor_list.append(
                    {
                        "device_id": d["device_id"],
                        "device_ip": d["device_ip"],
                        "rank_id": rank,
                        "tor_ip": d["tor_ip"],
                        "tor_port": d.get("tor_port", ""),
                    }
                )
            servers.append(
                {
                    "server_id": config["server_id"],
                    "host_ip": config["server_id"],
                    "container_ip": pod["status"].get("podIP", ""),
                    "device": device_list,
                }
            )
            tor_servers.append(
                {
                    "pod_name": pod["metadata"]["name"],
                    "server_id": config["server_id"],
                    "leaf": (node.get("metadata", {}).get("labels") or {}).get(LEAF_LABEL, ""),
                    "device": tor_list,
                }
            )
        table = {
            "status": "completed",
            "version": "1.0",
            "server_count": str(len(servers)),
            "server_list": servers,
        }
        tor = {
            "status": "completed",
            "version": "1.0",
            "server_count": str(len(servers)),
            "server_list": [{k: v for k, v in s.items() if k != "leaf"} for s in tor_servers],
        }
        return table, tor

    def _write(self, job: Obj, cm: Obj | None, table: dict[str, Any], tor: dict[str, Any] | None) -> None:
        ns, name = job["metadata"]["namespace"], job["metadata"]["name"]
        data = dict((cm or {}).get("data") or {})
        text = json.dumps(table, indent=4)
        if data.get("jobstart_hccl.json") == text and (
            tor is None or data.get("ranktable_tor.json") == encode_tor(tor)
        ):
            return
        data["jobstart_hccl.json"] = text
        if tor is not None:
            data["ranktable_tor.json"] = encode_tor(tor)
        if cm is None:
            self.store.create(
                CONFIGMAPS,
                {
                    "metadata": {
                        "name": configmap_name(name),
                        "namespace": ns,
                        "labels": {RING_LABEL: "ascend-1980"},
                    },
                    "data": data,
                },
            )
        else:
            cm["data"] = data
            self.store.write(CONFIGMAPS, cm)
        if table["status"] == "completed":
            record_event(
                self.store,
                job,
                "RankTableCompleted",
                f"rank table {configmap_name(name)} completed with {table['server_count']} servers",
                "Normal",
                "configmap1980",
            )


def job_uses_plugin(job: Obj) -> bool:
    return "configmap1980" in ((job.get("spec") or {}).get("plugins") or {})


__all__ = ["CONFIG_ANNOTATION", "JOB_NAME", "RankTablePlugin", "configmap_name", "job_uses_plugin"]
