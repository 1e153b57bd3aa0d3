"""JobSpec <-> the platform's ConfigMap + Volcano Job, built as data and dumped with PyYAML.

The defaults reproduce the platform guide's reference manifest exactly; every "keep unchanged" line of
that manifest is a constant here, so users never copy-paste them. ``spec_from_manifests`` is the exact
inverse for composed manifests and names the field when a hand-written one cannot be represented.
"""

from __future__ import annotations

import json
from collections.abc import Iterable
from typing import Any

import yaml

from ranktable.compose.fault_policy import FAULT_LABEL_KEYS, fault_policy, preset_of
from ranktable.compose.flavours import DEFAULT_FLAVOUR
from ranktable.compose.launchers import launcher_command, parse_launcher_command
from ranktable.compose.names import NPU_RESOURCE, RANK_TABLE_KEY, ROUTE_ENV, configmap_name
from ranktable.compose.network_topology import from_volcano, parse_network_topology
from ranktable.compose.spec import PARALLEL_KINDS, EntryPoint, JobSpec, ParallelSpec, SecretRef, VolumeSpec
from ranktable.errors import InputError
from ranktable.limits import load_yaml_all

RING_LABEL = ("ring-controller.cce", "ascend-1980")
FAULT_LABEL = ("fault-scheduling", "force")  # the platform default (on_fault "")
NODE_SELECTOR = ("accelerator/huawei-npu", "ascend-1980")
INITIAL_RANK_TABLE = '{\n    "status":"initializing"\n}\n'
FLAVOUR_ANNOTATION = "jupyter-ranktable/flavour"
METRIC_PATTERNS_ANNOTATION = "jupyter-ranktable/metric-patterns"  # JSON list of the spec's metric_patterns
RESUME_ARGS_ANNOTATION = "jupyter-ranktable/resume-args"  # the spec's resume_args template
HOSTNAME_KEY = "kubernetes.io/hostname"
HCCL_ALGO_ENV = "HCCL_ALGO"  # HCCL's own variable (hicann/hccl docs HCCL_ALGO.md), from spec.hccl_algo
PARALLEL_ENV = "RANKTABLE_PARALLEL"  # spec.parallel, for the layout of a running job and the script
FRAMEWORK_TITLES = {"mindspore": "MindSpore", "pytorch": "PyTorch"}
# Downward-API env the platform guide requires on every container, in its order.
FIXED_ENV_NAMES = ("name", "ip", "framework")
# Driver and tool mounts from the node (name, path); the same path inside and outside the container.
DRIVER_MOUNTS = (
    ("ascend-driver", "/usr/local/Ascend/driver"),
    ("ascend-add-ons", "/usr/local/Ascend/add-ons"),
    ("localtime", "/etc/localtime"),
    ("hccn", "/etc/hccn.conf"),
    ("npu-smi", "/usr/local/sbin/npu-smi"),
)
DRIVER_VOLUME_NAMES = frozenset(name for name, _ in DRIVER_MOUNTS)


def compose(spec: JobSpec) -> list[dict[str, Any]]:
    """The ConfigMap (rank table placeholder) and the Volcano Job for ``spec``."""
    return [compose_configmap(spec), compose_job(spec)]


def compose_configmap(spec: JobSpec) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "ConfigMap",
        "metadata": {
            "name": configmap_name(spec.name),
            "namespace": spec.namespace,
            "labels": {RING_LABEL[0]: RING_LABEL[1]},
        },
        "data": {RANK_TABLE_KEY: INITIAL_RANK_TABLE},
    }


def compose_job(spec: JobSpec) -> dict[str, Any]:
    faults = fault_policy(spec.on_fault, spec.max_retry)
    metadata: dict[str, Any] = {
        "name": spec.name,
        "namespace": spec.namespace,
        "labels": {RING_LABEL[0]: RING_LABEL[1], **faults.labels, **spec.labels},
    }
    if spec.flavour != DEFAULT_FLAVOUR:
        metadata["annotations"] = {FLAVOUR_ANNOTATION: spec.flavour}
    if spec.metric_patterns:  # read back by the log observer (and by spec_from_manifests)
        metadata.setdefault("annotations", {})[METRIC_PATTERNS_ANNOTATION] = json.dumps(spec.metric_patterns)
    if spec.resume_args:
        metadata.setdefault("annotations", {})[RESUME_ARGS_ANNOTATION] = spec.resume_args
    job: dict[str, Any] = {
        "apiVersion": "batch.volcano.sh/v1alpha1",
        "kind": "Job",
        "metadata": metadata,
        "spec": {
            "minAvailable": spec.nodes,
            "schedulerName": "volcano",
            "policies": faults.policies,
            "plugins": {
                "configmap1980": [f"--rank-table-version={spec.rank_table_version}"],
                "env": [],
                "svc": ["--publish-not-ready-addresses=true"],
            },
            "maxRetry": spec.max_retry,
            "queue": spec.queue,
            "tasks": [
                {
                    "name": spec.task,
                    "replicas": spec.nodes,
                    "template": _pod_template(spec, faults.restart_policy),
                }
            ],
        },
    }
    topology = parse_network_topology(spec.network_topology)
    if topology is not None:  # Volcano keeps the gang inside one HyperNode of tier <= highestTierAllowed
        job["spec"]["networkTopology"] = topology.to_volcano()
    return job


def _avoided(nodes: list[str]) -> dict[str, Any]:
    """Node affinity keeping the pods off `nodes` (the ones a fault was blamed on)."""
    term = {"matchExpressions": [{"key": HOSTNAME_KEY, "operator": "NotIn", "values": list(nodes)}]}
    return {"nodeAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": {"nodeSelectorTerms": [term]}}}


def _avoided_from(affinity: dict[str, Any], where: str) -> list[str]:
    """The nodes `_avoided` excludes (inverse), or an error naming a node affinity it did not write."""
    if "nodeAffinity" not in affinity:
        return []
    terms = (affinity["nodeAffinity"].get("requiredDuringSchedulingIgnoredDuringExecution") or {}).get(
        "nodeSelectorTerms"
    )
    exprs = terms[0].get("matchExpressions") if isinstance(terms, list) and len(terms) == 1 else None
    if (
        not isinstance(exprs, list)
        or len(exprs) != 1
        or exprs[0].get("operator") != "NotIn"
        or exprs[0].get("key") != HOSTNAME_KEY
    ):
        raise InputError(
            "only a kubernetes.io/hostname NotIn node affinity is supported",
            where=f"{where}.affinity.nodeAffinity",
            fix="list the nodes to avoid in avoid_nodes",
        )
    return [str(v) for v in exprs[0].get("values") or []]


def one_pod_per_node(job_name: str) -> dict[str, Any]:
    """The pod anti-affinity that puts each pod of Volcano job `job_name` on a node of its own (the
    platform guide's); the simulator tests' hand-written jobs use it too."""
    return {
        "podAntiAffinity": {
            "requiredDuringSchedulingIgnoredDuringExecution": [
                {
                    "labelSelector": {
                        "matchExpressions": [
                            {"key": "volcano.sh/job-name", "operator": "In", "values": [job_name]}
                        ]
                    },
                    "topologyKey": HOSTNAME_KEY,
                }
            ]
        }
    }


def _pod_template(spec: JobSpec, restart_policy: str) -> dict[str, Any]:
    return {
        "metadata": {"labels": {"app": spec.framework, RING_LABEL[0]: RING_LABEL[1]}},
        "spec": {
            "affinity": {
                **one_pod_per_node(spec.name),
                **(_avoided(spec.avoid_nodes) if spec.avoid_nodes else {}),
            },
            "containers": [_container(spec)],
            "nodeSelector": {NODE_SELECTOR[0]: NODE_SELECTOR[1], **spec.node_selector},
            "volumes": [{"name": n, "hostPath": {"path": p}} for n, p in DRIVER_MOUNTS]
            + [_volume(v) for v in spec.volumes],
            "restartPolicy": restart_policy,
        },
    }


def _container(spec: JobSpec) -> dict[str, Any]:
    resources = {NPU_RESOURCE: str(spec.npus_per_node)}
    if spec.cpu is not None:
        resources["cpu"] = spec.cpu
    if spec.memory is not None:
        resources["memory"] = spec.memory
    command = launcher_command(spec) if spec.entry is not None else list(spec.command)
    return {
        "image": spec.image,
        "imagePullPolicy": "IfNotPresent",
        "name": spec.framework,
        "env": _env(spec),
        "command": command,
        "resources": {"requests": dict(resources), "limits": dict(resources)},
        "volumeMounts": [{"name": n, "mountPath": p} for n, p in DRIVER_MOUNTS]
        + [_mount(v) for v in spec.volumes],
    }


def _env(spec: JobSpec) -> list[dict[str, Any]]:
    env: list[dict[str, Any]] = [
        {"name": "name", "valueFrom": {"fieldRef": {"fieldPath": "metadata.name"}}},
        {"name": "ip", "valueFrom": {"fieldRef": {"fieldPath": "status.hostIP"}}},
        {"name": "framework", "value": FRAMEWORK_TITLES.get(spec.framework, spec.framework)},
    ]
    if spec.routing:
        env.append({"name": ROUTE_ENV, "value": "true"})
    if spec.hccl_algo:
        env.append({"name": HCCL_ALGO_ENV, "value": spec.hccl_algo})
    if spec.parallel is not None:
        sizes = ",".join(f"{k}={getattr(spec.parallel, k)}" for k in PARALLEL_KINDS)
        env.append({"name": PARALLEL_ENV, "value": sizes})
    env += [{"name": k, "value": v} for k, v in spec.env.items()]
    env += [
        {"name": k, "valueFrom": {"secretKeyRef": {"name": ref.secret, "key": ref.key}}}
        for k, ref in spec.secret_env.items()
    ]
    return env


def _volume(v: VolumeSpec) -> dict[str, Any]:
    if v.kind == "pvc":
        return {"name": v.name, "persistentVolumeClaim": {"claimName": v.claim}}
    if v.kind == "nfs":
        return {"name": v.name, "nfs": {"server": v.server, "path": v.path}}
    return {"name": v.name, "hostPath": {"path": v.path}}


def _mount(v: VolumeSpec) -> dict[str, Any]:
    mount: dict[str, Any] = {"name": v.name, "mountPath": v.mount_path}
    if v.read_only:
        mount["readOnly"] = True
    return mount


# -- YAML ---------------------------------------------------------------------------------------
_SafeDumper: type[yaml.SafeDumper] = getattr(yaml, "CSafeDumper", yaml.SafeDumper)


class _BlockDumper(_SafeDumper):  # type: ignore[valid-type,misc]
    """Writes multi-line strings (the rank table placeholder) as ``|`` blocks, like the guide does."""


def _str_representer(dumper: yaml.SafeDumper, value: str) -> yaml.Node:
    style = "|" if "\n" in value else None
    return dumper.represent_scalar("tag:yaml.org,2002:str", value, style=style)


_BlockDumper.add_representer(str, _str_representer)


def dump_manifests(docs: Iterable[dict[str, Any]]) -> str:
    return yaml.dump_all(list(docs), Dumper=_BlockDumper, sort_keys=False, default_flow_style=False)


def load_manifests(text: str, where: str = "manifest") -> list[dict[str, Any]]:
    """The YAML documents of a manifest file (within the nesting and alias limits of `ranktable.limits`)."""
    docs = [d for d in load_yaml_all(text, where) if d is not None]
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict):
            raise InputError("each YAML document must be a mapping", where=f"{where}: document {i + 1}")
    return docs


# -- manifests -> JobSpec -------------------------------------------------------------------------
_TASK = "Job.spec.tasks[0]"
_POD = f"{_TASK}.template.spec"
_CONTAINER = f"{_POD}.containers[0]"


def spec_from_manifests(docs: list[dict[str, Any]]) -> JobSpec:
    """The JobSpec a ConfigMap + Volcano Job pair describes (inverse of ``compose``)."""
    job = _volcano_job(docs)
    meta = _get(job, "metadata", "Job.metadata")
    name = _req_str(meta, "name", "Job.metadata")
    namespace = str(meta.get("namespace") or "default")
    _check_configmap(docs, name, namespace)
    jspec = _get(job, "spec", "Job.spec")
    task = _gang_task(jspec)
    task_name = str(task.get("name") or "")
    return JobSpec(
        name=name,
        namespace=namespace,
        nodes=task.get("replicas", 1),
        task_name="" if task_name == f"{name}-1" else task_name,
        **_job_fields(meta, jspec),
        **_pod_fields(_get(_get(task, "template", _TASK), "spec", f"{_TASK}.template")),
    )


def _volcano_job(docs: list[dict[str, Any]]) -> dict[str, Any]:
    jobs = [
        d
        for d in docs
        if d.get("kind") == "Job" and str(d.get("apiVersion", "")).startswith("batch.volcano.sh/")
    ]
    if len(jobs) != 1:
        raise InputError(
            f"expected exactly one Volcano Job (batch.volcano.sh/v1alpha1), found {len(jobs)}",
            where="manifest",
            fix="put the ConfigMap and one Volcano Job in the file",
        )
    return jobs[0]


def _gang_task(jspec: dict[str, Any]) -> dict[str, Any]:
    """The job's one task, whose replicas all start together (minAvailable = replicas)."""
    tasks = jspec.get("tasks")
    if not isinstance(tasks, list) or len(tasks) != 1:
        raise InputError(
            "expected exactly one task",
            where="Job.spec.tasks",
            fix="ranktable jobs use one task of N replicas",
        )
    task = tasks[0]
    nodes = task.get("replicas", 1)
    if not isinstance(nodes, int):
        raise InputError(f"replicas must be a number, got {nodes!r}", where=f"{_TASK}.replicas")
    if jspec.get("minAvailable", nodes) != nodes:
        raise InputError(
            f"minAvailable {jspec.get('minAvailable')} differs from replicas {nodes}",
            where="Job.spec.minAvailable",
            fix=f"set minAvailable to {nodes}: a ranktable job needs all its pods at once",
        )
    return dict(task)


def _job_fields(meta: dict[str, Any], jspec: dict[str, Any]) -> dict[str, Any]:
    """The fields the Volcano Job itself carries: labels, annotations, queue, retries and policies."""
    max_retry = int(jspec.get("maxRetry", 3))
    on_fault = preset_of(jspec.get("policies"), max_retry)
    if on_fault is None:
        raise InputError(
            f"these policies match no on_fault preset: {json.dumps(jspec.get('policies'))}",
            where="Job.spec.policies",
            fix="compose the job with on_fault restart, resume or stop (or none: PodEvicted -> RestartJob)",
        )
    labels = meta.get("labels") or {}
    annotations = meta.get("annotations") or {}
    return {
        "labels": {
            k: str(v) for k, v in labels.items() if (k, v) != RING_LABEL and k not in FAULT_LABEL_KEYS
        },
        "queue": str(jspec.get("queue") or "default"),
        "max_retry": max_retry,
        "on_fault": on_fault,
        "rank_table_version": _rank_table_version(jspec.get("plugins") or {}),
        "flavour": str(annotations.get(FLAVOUR_ANNOTATION) or DEFAULT_FLAVOUR),
        "metric_patterns": metric_patterns_of(meta),
        "resume_args": str(annotations.get(RESUME_ARGS_ANNOTATION) or ""),
        "network_topology": from_volcano(jspec.get("networkTopology")),
    }


def _pod_fields(pod: dict[str, Any]) -> dict[str, Any]:
    """The fields the pod template carries: its one container, volumes, node selector and affinity."""
    containers = pod.get("containers")
    if not isinstance(containers, list) or len(containers) != 1:
        raise InputError("expected exactly one container", where=f"{_POD}.containers")
    container = containers[0]
    if container.get("args"):
        raise InputError(
            "container args are not supported",
            where=f"{_CONTAINER}.args",
            fix="put the whole command line in command",
        )
    npus, cpu, memory = _resources(container, _CONTAINER)
    env, secret_env, routing = _env_from(container.get("env") or [], f"{_CONTAINER}.env")
    command = [str(c) for c in container.get("command") or []]
    entry: EntryPoint | None = parse_launcher_command(command)
    selector = {k: str(v) for k, v in (pod.get("nodeSelector") or {}).items() if (k, v) != NODE_SELECTOR}
    return {
        "image": _req_str(container, "image", _CONTAINER),
        "framework": str(container.get("name") or "mindspore"),
        "command": [] if entry is not None else command,
        "entry": entry,
        "npus_per_node": npus,
        "cpu": cpu,
        "memory": memory,
        "hccl_algo": env.pop(HCCL_ALGO_ENV, ""),
        "parallel": _parallel_from(env.pop(PARALLEL_ENV, None), f"{_CONTAINER}.env.{PARALLEL_ENV}"),
        "env": env,
        "secret_env": secret_env,
        "routing": routing,
        "volumes": _volumes_from(pod, container, _POD),
        "node_selector": selector,
        "avoid_nodes": _avoided_from(pod.get("affinity") or {}, _POD),
    }


def metric_patterns_of(meta: dict[str, Any]) -> list[str]:
    """The metric regexes a composed Job carries in its annotation ([] when none or unreadable)."""
    raw = (meta.get("annotations") or {}).get(METRIC_PATTERNS_ANNOTATION)
    try:
        value = json.loads(raw) if raw else []
    except ValueError:
        return []
    return [str(p) for p in value] if isinstance(value, list) else []


def _get(doc: dict[str, Any], key: str, where: str) -> dict[str, Any]:
    value = doc.get(key)
    if not isinstance(value, dict):
        raise InputError(f"{key} is missing or not a mapping", where=f"{where}.{key}")
    return value


def _req_str(doc: dict[str, Any], key: str, where: str) -> str:
    value = doc.get(key)
    if not isinstance(value, str) or not value:
        raise InputError(f"{key} is required", where=f"{where}.{key}")
    return value


def _check_configmap(docs: list[dict[str, Any]], name: str, namespace: str) -> None:
    want = configmap_name(name)
    maps = [d for d in docs if d.get("kind") == "ConfigMap"]
    found = next((d for d in maps if (d.get("metadata") or {}).get("name") == want), None)
    if found is None:
        names = ", ".join(str((d.get("metadata") or {}).get("name")) for d in maps) or "none"
        raise InputError(
            f"no ConfigMap named {want} (found: {names})",
            where="ConfigMap.metadata.name",
            fix=f"name the rank-table ConfigMap {want}: the platform finds it by that name",
        )
    if str((found.get("metadata") or {}).get("namespace") or "default") != namespace:
        raise InputError(
            "ConfigMap and Job are in different namespaces",
            where="ConfigMap.metadata.namespace",
            fix=f"put both in {namespace}",
        )


def _resources(container: dict[str, Any], cpath: str) -> tuple[int, str | None, str | None]:
    res = container.get("resources") or {}
    requests = {k: str(v) for k, v in (res.get("requests") or {}).items()}
    limits = {k: str(v) for k, v in (res.get("limits") or {}).items()}
    if requests != limits:
        diff = sorted(k for k in set(requests) | set(limits) if requests.get(k) != limits.get(k))
        raise InputError(
            f"requests and limits differ for {', '.join(diff)}",
            where=f"{cpath}.resources",
            fix="set limits equal to requests: NPU pods are scheduled whole",
        )
    if NPU_RESOURCE not in requests:
        raise InputError(
            f"no {NPU_RESOURCE} request",
            where=f"{cpath}.resources.requests",
            fix=f"request NPUs with {NPU_RESOURCE}",
        )
    try:
        npus = int(requests[NPU_RESOURCE])
    except ValueError:
        raise InputError(
            f"{NPU_RESOURCE} must be a whole number, got {requests[NPU_RESOURCE]!r}",
            where=f"{cpath}.resources.requests.{NPU_RESOURCE}",
        ) from None
    unknown = sorted(set(requests) - {NPU_RESOURCE, "cpu", "memory"})
    if unknown:
        raise InputError(f"unsupported resource(s) {', '.join(unknown)}", where=f"{cpath}.resources.requests")
    return npus, requests.get("cpu"), requests.get("memory")


def _parallel_from(text: str | None, where: str) -> ParallelSpec | None:
    """RANKTABLE_PARALLEL="tp=8,cp=1,ep=1,pp=4" (as `_env` writes it) back to the spec's sizes."""
    if text is None:
        return None
    from ranktable.collectives.groups import parse_parallel

    sizes = parse_parallel(text, where)
    return ParallelSpec(sizes.tp, sizes.cp, sizes.ep, sizes.pp)


def _env_from(items: list[Any], where: str) -> tuple[dict[str, str], dict[str, SecretRef], bool]:
    env: dict[str, str] = {}
    secrets: dict[str, SecretRef] = {}
    routing = False
    for i, item in enumerate(items):
        name = str(item.get("name"))
        if name in FIXED_ENV_NAMES:
            continue
        if name == ROUTE_ENV and str(item.get("value", "")).lower() == "true":
            routing = True
            continue
        if "value" in item:
            env[name] = str(item["value"])
            continue
        ref = ((item.get("valueFrom") or {}).get("secretKeyRef")) or {}
        if ref.get("name") and ref.get("key"):
            secrets[name] = SecretRef(secret=str(ref["name"]), key=str(ref["key"]))
            continue
        raise InputError(
            "only literal values and secretKeyRef are supported",
            where=f"{where}[{i}]",
            fix="use value or secretKeyRef",
        )
    return env, secrets, routing


def _volumes_from(pod: dict[str, Any], container: dict[str, Any], ppath: str) -> list[VolumeSpec]:
    mounts = {m.get("name"): m for m in container.get("volumeMounts") or []}
    out: list[VolumeSpec] = []
    for i, vol in enumerate(pod.get("volumes") or []):
        name = str(vol.get("name"))
        if name in DRIVER_VOLUME_NAMES:
            continue
        mount = mounts.get(name)
        if mount is None:
            raise InputError(
                f"volume {name} is not mounted",
                where=f"{ppath}.volumes[{i}]",
                fix="add a volumeMount or drop it",
            )
        common: dict[str, Any] = {
            "name": name,
            "mount_path": str(mount.get("mountPath")),
            "read_only": bool(mount.get("readOnly")),
        }
        if "hostPath" in vol:
            out.append(VolumeSpec(kind="hostPath", path=str(vol["hostPath"].get("path")), **common))
        elif "persistentVolumeClaim" in vol:
            out.append(
                VolumeSpec(kind="pvc", claim=str(vol["persistentVolumeClaim"].get("claimName")), **common)
            )
        elif "nfs" in vol:
            nfs = vol["nfs"]
            out.append(
                VolumeSpec(kind="nfs", server=str(nfs.get("server")), path=str(nfs.get("path")), **common)
            )
        else:
            raise InputError(
                "unsupported volume type",
                where=f"{ppath}.volumes[{i}]",
                fix="use hostPath, persistentVolumeClaim or nfs",
            )
    return out


def _rank_table_version(plugins: dict[str, Any]) -> str:
    for arg in plugins.get("configmap1980") or []:
        if str(arg).startswith("--rank-table-version="):
            return str(arg).split("=", 1)[1]
    raise InputError(
        "the configmap1980 plugin with --rank-table-version is missing",
        where="Job.spec.plugins.configmap1980",
        fix="add configmap1980: [--rank-table-version=v2]: it fills the rank table",
    )
