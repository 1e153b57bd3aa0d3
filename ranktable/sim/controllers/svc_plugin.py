"""Volcano's `svc` and `env` job plugins: a headless Service, the hosts ConfigMap, and pod env/hostnames."""

from __future__ import annotations

from typing import Any

from ranktable.sim.controllers.common import JOB_NAME, Obj, owner_reference
from ranktable.sim.k8s.resources import CONFIGMAPS, SERVICES
from ranktable.sim.k8s.store import Store


def env_key(task: str) -> str:
    return task.replace("-", "_").upper()


def task_hosts(job: Obj) -> dict[str, list[str]]:
    name = job["metadata"]["name"]
    return {
        t["name"]: [f"{name}-{t['name']}-{i}.{name}" for i in range(int(t.get("replicas", 1)))]
        for t in job["spec"].get("tasks") or []
    }


def ensure_objects(store: Store, job: Obj) -> None:
    """The headless Service `<job>` and ConfigMap `<job>-svc` (`<task>.host` lists), owned by the job."""
    meta = job["metadata"]
    ns, name = meta["namespace"], meta["name"]
    if store.find(SERVICES, ns, name) is None:
        args = job["spec"]["plugins"].get("svc") or []
        store.create(
            SERVICES,
            {
                "metadata": {"name": name, "namespace": ns, "ownerReferences": [owner_reference(job)]},
                "spec": {
                    "clusterIP": "None",
                    "type": "ClusterIP",
                    "selector": {JOB_NAME: name},
                    "publishNotReadyAddresses": "--publish-not-ready-addresses=true" in args
                    or "--publish-not-ready-addresses" in args,
                    "ports": [{"name": "placeholder-volcano", "port": 1, "protocol": "TCP", "targetPort": 1}],
                },
            },
        )
    data = {f"{task}.host": "\n".join(hosts) for task, hosts in task_hosts(job).items()}
    existing = store.find(CONFIGMAPS, ns, f"{name}-svc")
    if existing is None:
        store.create(
            CONFIGMAPS,
            {
                "metadata": {
                    "name": f"{name}-svc",
                    "namespace": ns,
                    "ownerReferences": [owner_reference(job)],
                },
                "data": data,
            },
        )
    elif existing.get("data") != data:
        existing["data"] = data
        store.write(CONFIGMAPS, existing)


def decorate_pod(job: Obj, pod: Obj, task: str, index: int) -> None:
    """Hostname/subdomain and env from the plugins the job names."""
    plugins: dict[str, Any] = job["spec"].get("plugins") or {}
    spec = pod["spec"]
    env: list[Obj] = []
    if "env" in plugins:
        env += [
            {"name": "VK_TASK_INDEX", "value": str(index)},
            {"name": "VC_TASK_INDEX", "value": str(index)},
        ]
    if "svc" in plugins:
        spec.setdefault("hostname", pod["metadata"]["name"])
        spec.setdefault("subdomain", job["metadata"]["name"])
        hosts = task_hosts(job)
        for t, names in hosts.items():
            env += [
                {"name": f"VC_{env_key(t)}_HOSTS", "value": ",".join(names)},
                {"name": f"VC_{env_key(t)}_NUM", "value": str(len(names))},
            ]
        volumes = spec.setdefault("volumes", [])
        vol_name = f"{job['metadata']['name']}-svc"
        if not any(v.get("name") == vol_name for v in volumes):
            volumes.append({"name": vol_name, "configMap": {"name": vol_name}})
        for c in spec.get("containers") or []:
            mounts = c.setdefault("volumeMounts", [])
            if not any(m.get("mountPath") == "/etc/volcano" for m in mounts):
                mounts.append({"name": vol_name, "mountPath": "/etc/volcano"})
    for c in spec.get("containers") or []:
        present = {e.get("name") for e in c.get("env") or []}
        c["env"] = (c.get("env") or []) + [e for e in env if e["name"] not in present]
