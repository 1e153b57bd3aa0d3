"""Admission checks: strict unknown-field detection, names, NPU requests, and Volcano's job webhook rules."""

from __future__ import annotations

import re
from typing import Any

from ranktable.sim.k8s.resources import ResourceType

Obj = dict[str, Any]
Causes = list[tuple[str, str]]

DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?$")
DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$")
KNOWN_PLUGINS = ("svc", "env", "ssh", "configmap1980", "pytorch", "mpi", "tensorflow", "hcclrank", "ray")
NPU = "huawei.com/ascend-1980"
MAX_JOB_PODS = 10_000  # the pool's own limit: one process per pod on one machine
# Volcano's policyEventMap / policyActionMap (pkg/webhooks/admission/jobs/validate/util.go): allowed to users
POLICY_EVENTS = (
    "*",
    "PodFailed",
    "PodEvicted",
    "PodPending",
    "Unknown",
    "TaskCompleted",
    "TaskFailed",
    "JobUpdated",
)
POLICY_ACTIONS = (
    "AbortJob",
    "RestartJob",
    "RestartTask",
    "RestartPod",
    "RestartPartition",
    "TerminateJob",
    "CompleteJob",
    "ResumeJob",
)
VALID_POLICIES = f"valid events are {list(POLICY_EVENTS)}, valid actions are {list(POLICY_ACTIONS)}"

OBJECT_META = {
    "name",
    "generateName",
    "namespace",
    "labels",
    "annotations",
    "uid",
    "resourceVersion",
    "creationTimestamp",
    "generation",
    "ownerReferences",
    "finalizers",
    "managedFields",
    "deletionTimestamp",
    "deletionGracePeriodSeconds",
    "selfLink",
}
TOP = {"apiVersion", "kind", "metadata"}
TOP_BY_KIND = {
    "ConfigMap": TOP | {"data", "binaryData", "immutable"},
    "Secret": TOP | {"data", "stringData", "type", "immutable"},
    "Event": TOP
    | {
        "involvedObject",
        "reason",
        "message",
        "source",
        "firstTimestamp",
        "lastTimestamp",
        "count",
        "type",
        "eventTime",
        "series",
        "action",
        "related",
        "reportingComponent",
        "reportingInstance",
    },
}
POD_SPEC = {
    "volumes",
    "initContainers",
    "containers",
    "ephemeralContainers",
    "restartPolicy",
    "terminationGracePeriodSeconds",
    "activeDeadlineSeconds",
    "dnsPolicy",
    "nodeSelector",
    "serviceAccountName",
    "serviceAccount",
    "automountServiceAccountToken",
    "nodeName",
    "hostNetwork",
    "hostPID",
    "hostIPC",
    "shareProcessNamespace",
    "securityContext",
    "imagePullSecrets",
    "hostname",
    "subdomain",
    "affinity",
    "schedulerName",
    "tolerations",
    "hostAliases",
    "priorityClassName",
    "priority",
    "dnsConfig",
    "readinessGates",
    "runtimeClassName",
    "enableServiceLinks",
    "preemptionPolicy",
    "overhead",
    "topologySpreadConstraints",
    "setHostnameAsFQDN",
    "os",
    "hostUsers",
    "schedulingGates",
    "resourceClaims",
}
CONTAINER = {
    "name",
    "image",
    "command",
    "args",
    "workingDir",
    "ports",
    "envFrom",
    "env",
    "resources",
    "resizePolicy",
    "restartPolicy",
    "volumeMounts",
    "volumeDevices",
    "livenessProbe",
    "readinessProbe",
    "startupProbe",
    "lifecycle",
    "terminationMessagePath",
    "terminationMessagePolicy",
    "imagePullPolicy",
    "securityContext",
    "stdin",
    "stdinOnce",
    "tty",
}
VCJOB_SPEC = {
    "schedulerName",
    "minAvailable",
    "volumes",
    "tasks",
    "policies",
    "plugins",
    "runningEstimate",
    "queue",
    "maxRetry",
    "ttlSecondsAfterFinished",
    "priorityClassName",
    "minSuccess",
    "networkTopology",
}
VCJOB_TASK = {
    "name",
    "replicas",
    "minAvailable",
    "template",
    "policies",
    "topologyPolicy",
    "maxRetry",
    "dependsOn",
    "partitionPolicy",
}


def _unknown(obj: Any, allowed: set[str], prefix: str) -> list[str]:
    if not isinstance(obj, dict):
        return []
    return [f"{prefix}{key}" for key in obj if key not in allowed]


def _pod_spec_unknown(spec: Any, prefix: str) -> list[str]:
    out = _unknown(spec, POD_SPEC, prefix)
    if isinstance(spec, dict):
        for kind in ("containers", "initContainers"):
            for i, c in enumerate(spec.get(kind) or []):
                out += _unknown(c, CONTAINER, f"{prefix}{kind}[{i}].")
    return out


def unknown_fields(rtype: ResourceType, obj: Obj) -> list[str]:
    """Field paths a strict decoder would reject (known shapes only; nested free-form parts are open)."""
    out = _unknown(obj.get("metadata"), OBJECT_META, "metadata.")
    top = TOP_BY_KIND.get(rtype.kind, TOP | {"spec", "status"})
    out += _unknown(obj, top, "")
    if rtype.kind == "Pod" and rtype.group == "":
        out += _pod_spec_unknown(obj.get("spec"), "spec.")
    if rtype.key == "batch.volcano.sh/jobs":
        spec = obj.get("spec")
        out += _unknown(spec, VCJOB_SPEC, "spec.")
        for i, task in enumerate((spec or {}).get("tasks") or [] if isinstance(spec, dict) else []):
            out += _unknown(task, VCJOB_TASK, f"spec.tasks[{i}].")
            template = task.get("template") if isinstance(task, dict) else None
            if isinstance(template, dict):
                out += _unknown(template, {"metadata", "spec"}, f"spec.tasks[{i}].template.")
                out += _pod_spec_unknown(template.get("spec"), f"spec.tasks[{i}].template.spec.")
    return out


def validate_name(rtype: ResourceType, name: str) -> Causes:
    if not name:
        return [("metadata.name", "Required value: name or generateName is required")]
    pattern = DNS_LABEL if rtype.plural in ("namespaces", "services") else DNS_SUBDOMAIN
    limit = 63 if pattern is DNS_LABEL else 253
    if len(name) > limit or not pattern.match(name):
        return [
            (
                "metadata.name",
                f'Invalid value: "{name}": a lowercase RFC 1123 '
                f"{'label' if limit == 63 else 'subdomain'} must consist of lower case alphanumeric "
                "characters, '-' or '.', and must start and end with an alphanumeric character",
            )
        ]
    return []


def validate_pod_spec(spec: Any, prefix: str) -> Causes:
    causes: Causes = []
    if not isinstance(spec, dict):
        return [(prefix.rstrip("."), "Required value")]
    containers = spec.get("containers")
    if not containers:
        return [(f"{prefix}containers", "Required value")]
    for i, c in enumerate(containers):
        where = f"{prefix}containers[{i}]"
        if not isinstance(c, dict) or not c.get("name"):
            causes.append((f"{where}.name", "Required value"))
            continue
        resources = c.get("resources") or {}
        requests, limits = resources.get("requests") or {}, resources.get("limits") or {}
        for key in sorted(set(requests) | set(limits)):
            if "/" not in key or key.startswith("kubernetes.io/"):
                continue  # only extended resources must have requests == limits
            if key in requests and key in limits and str(requests[key]) != str(limits[key]):
                causes.append(
                    (
                        f"{where}.resources.requests",
                        f'Invalid value: "{requests[key]}": must be equal to {key} limit of {limits[key]}',
                    )
                )
            elif key in requests and key not in limits:
                causes.append(
                    (
                        f"{where}.resources.limits",
                        f"Required value: Limit must be set for non overcommitable resources ({key})",
                    )
                )
    return causes


def _count(value: Any, where: str, causes: Causes) -> int:
    """An integer field; a bad one is a cause (and counts as 0)."""
    if isinstance(value, bool) or not isinstance(value, int):
        causes.append((where, f"Invalid value: {value!r}: must be an integer"))
        return 0
    return value


def validate_policies(policies: Any, where: str) -> Causes:
    """Volcano's `validatePolicies`: known events and actions, no event twice, `*` alone, exit codes."""
    if not isinstance(policies, list):
        return [] if policies is None else [(where, "Invalid value: must be a list")]
    seen: set[str] = set()
    codes: set[int] = set()
    for i, policy in enumerate(policies):
        at = f"{where}[{i}]"
        if not isinstance(policy, dict):
            return [(at, "Invalid value: must be an object")]
        events = list(
            dict.fromkeys(
                [*(policy.get("events") or []), *([policy["event"]] if policy.get("event") else [])]
            )
        )
        code = policy.get("exitCode")
        if events and code is not None:
            return [(at, "Invalid value: must not specify event and exitCode simultaneously")]
        if not events and code is None:
            return [(at, "Required value: either event and exitCode should be specified")]
        if code is not None:
            if code == 0:
                return [(f"{at}.exitCode", "Invalid value: 0: 0 is not a valid error code")]
            if code in codes:
                return [(f"{at}.exitCode", f"Duplicate value: {code}: duplicate exitCode {code}")]
            codes.add(code)
            continue
        for event in events:
            if event not in POLICY_EVENTS:
                return [(f"{at}.event", f'Invalid value: "{event}": invalid policy event; {VALID_POLICIES}')]
            if policy.get("action") not in POLICY_ACTIONS:
                action = policy.get("action")
                return [
                    (f"{at}.action", f'Invalid value: "{action}": invalid policy action; {VALID_POLICIES}')
                ]
            if event in seen:
                return [
                    (
                        f"{at}.event",
                        f'Duplicate value: "{event}": duplicate event {event} across different policy',
                    )
                ]
            seen.add(event)
    if "*" in seen and len(seen) > 1:
        return [(where, "Invalid value: if there's * here, no other policy should be here")]
    return []


def _depends_on(tasks: list[Any]) -> Causes:
    """Every `dependsOn.name` is a task of the job, and the dependencies form a DAG."""
    names = {t.get("name") for t in tasks if isinstance(t, dict)}
    edges: dict[str, list[str]] = {}
    causes: Causes = []
    for i, task in enumerate(tasks):
        depends = task.get("dependsOn") if isinstance(task, dict) else None
        if depends is None:
            continue
        wanted = depends.get("name") if isinstance(depends, dict) else None
        if not isinstance(wanted, list) or not all(isinstance(n, str) for n in wanted):
            causes.append((f"spec.tasks[{i}].dependsOn.name", "Required value: a list of task names"))
            continue
        for name in wanted:
            if name not in names:
                causes.append(
                    (f"spec.tasks[{i}].dependsOn.name", f'Not found: "{name}": no task of that name')
                )
        if depends.get("iteration", "all") not in ("any", "all"):
            causes.append(
                (
                    f"spec.tasks[{i}].dependsOn.iteration",
                    f'Unsupported value: "{depends["iteration"]}": "any", "all"',
                )
            )
        edges[str(task.get("name"))] = wanted
    state: dict[str, int] = {}

    def cyclic(node: str) -> bool:  # depth-first, 1 = on the path, 2 = done
        state[node] = 1
        for nxt in edges.get(node, []):
            if state.get(nxt) == 1 or (state.get(nxt) is None and cyclic(nxt)):
                return True
        state[node] = 2
        return False

    if not causes and any(state.get(n) is None and cyclic(n) for n in list(edges)):
        causes.append(
            ("spec.tasks", "Invalid value: job has dependencies between tasks, but doesn't form a DAG")
        )
    return causes


def _network_topology(spec: Obj) -> Causes:
    topology = spec.get("networkTopology")
    if topology is None:
        return []
    if not isinstance(topology, dict):
        return [("spec.networkTopology", "Invalid value: must be an object")]
    causes: Causes = []
    if topology.get("mode", "hard") not in ("hard", "soft"):
        causes.append(
            ("spec.networkTopology.mode", f'Unsupported value: "{topology["mode"]}": "hard", "soft"')
        )
    if topology.get("highestTierAllowed") is not None and topology.get("highestTierName"):
        causes.append(
            (
                "spec.networkTopology",
                "Invalid value: must not specify 'highestTierAllowed' and 'highestTierName' "
                "in networkTopology simultaneously",
            )
        )
    tier = topology.get("highestTierAllowed")
    if tier is not None and (isinstance(tier, bool) or not isinstance(tier, int) or tier < 1):
        causes.append(("spec.networkTopology.highestTierAllowed", f"Invalid value: {tier!r}: must be >= 1"))
    return causes


def _task(task: Obj, where: str, names: set[str], total: int, causes: Causes) -> int:
    """One task's rules (name, replicas within the pool's limit with the `total` before it, its
    policies, minAvailable, pod spec), its causes added to `causes`; the replicas it counts for."""
    name = task.get("name", "")
    if not name or not DNS_LABEL.match(name) or len(name) > 63:
        causes.append(
            (
                f"{where}.name",
                f'Invalid value: "{name}": a lowercase RFC 1123 label must consist '
                "of lower case alphanumeric characters or '-', and must start and end with an "
                "alphanumeric character",
            )
        )
    if name in names:
        causes.append((f"{where}.name", f'Duplicate value: "{name}": duplicated task name {name}'))
    names.add(name)
    replicas = _count(task.get("replicas", 1), f"{where}.replicas", causes)
    if replicas < 0:
        causes.append((f"{where}.replicas", f"Invalid value: {replicas}: must be >= 0"))
    if replicas > MAX_JOB_PODS or total + replicas > MAX_JOB_PODS:
        causes.append(
            (
                f"{where}.replicas",
                f"Invalid value: {replicas}: the simulated pool runs at most {MAX_JOB_PODS} pods "
                "per job (all tasks together)",
            )
        )
        replicas = 0
    causes += validate_policies(task.get("policies"), f"{where}.policies")
    task_min = task.get("minAvailable")
    if task_min is not None:
        task_min = _count(task_min, f"{where}.minAvailable", causes)
    if task_min is not None and task_min > replicas:
        causes.append(
            (
                f"{where}.minAvailable",
                f"Invalid value: {task_min}: taskMinAvailable should not be "
                f"greater than task replicas {replicas}",
            )
        )
    causes += validate_pod_spec((task.get("template") or {}).get("spec"), f"{where}.template.spec.")
    return replicas


def _job_fields(spec: Obj, total: int, queues: set[str]) -> Causes:
    """The job-level rules once the tasks are counted: minAvailable, plugins, queue, maxRetry."""
    causes: Causes = []
    min_available = spec.get("minAvailable")
    if min_available is not None:
        min_available = _count(min_available, "spec.minAvailable", causes)
    if min_available is not None and int(min_available) > total:
        causes.append(
            (
                "spec.minAvailable",
                f"Invalid value: {min_available}: job 'minAvailable' should not be "
                f"greater than total replicas in tasks {total}",
            )
        )
    if min_available is not None and int(min_available) < 0:
        causes.append(
            ("spec.minAvailable", f"Invalid value: {min_available}: job 'minAvailable' must be >= 0")
        )
    for plugin in spec.get("plugins") or {}:
        if plugin not in KNOWN_PLUGINS:
            causes.append(
                (
                    f"spec.plugins.{plugin}",
                    f'Unsupported value: "{plugin}": unable to find job plugin '
                    f"{plugin}; supported values: {', '.join(KNOWN_PLUGINS)}",
                )
            )
    queue = spec.get("queue") or "default"
    if queue not in queues:
        causes.append(("spec.queue", f'Not found: "{queue}": unable to find job queue {queue}'))
    max_retry = spec.get("maxRetry")
    if max_retry is not None:
        max_retry = _count(max_retry, "spec.maxRetry", causes)
    if max_retry is not None and int(max_retry) < 0:
        causes.append(("spec.maxRetry", f"Invalid value: {max_retry}: 'maxRetry' cannot be less than zero"))
    return causes


def validate_volcano_job(job: Obj, queues: set[str]) -> Causes:
    """The rules of Volcano's `validatejob` admission webhook that users actually trip over, and the
    pool's own limit on pods per job."""
    spec = job.get("spec") or {}
    causes: Causes = []
    tasks = spec.get("tasks") or []
    if not isinstance(tasks, list) or not all(isinstance(t, dict) for t in tasks):
        return [("spec.tasks", "Invalid value: must be a list of task objects")]
    if not tasks:
        return [("spec.tasks", "Required value: No task specified in job spec")]
    causes += validate_policies(spec.get("policies"), "spec.policies")
    causes += _network_topology(spec)
    causes += _depends_on(tasks)
    total = 0
    names: set[str] = set()
    for i, task in enumerate(tasks):
        total += _task(task, f"spec.tasks[{i}]", names, total, causes)
    return causes + _job_fields(spec, total, queues)


def default_volcano_job(job: Obj) -> None:
    """Volcano's mutating webhook: queue, maxRetry, minAvailable and per-task defaults."""
    spec = job.setdefault("spec", {})
    spec.setdefault("queue", "default")
    spec.setdefault("maxRetry", 3)
    spec.setdefault("schedulerName", "volcano")
    tasks = (
        [t for t in spec.get("tasks") or [] if isinstance(t, dict)]
        if isinstance(spec.get("tasks"), list)
        else []
    )
    for task in tasks:
        task.setdefault("replicas", 1)
        partitions = task.get("partitionPolicy")
        if isinstance(partitions, dict):  # Volcano: minPartitions x partitionSize (0 when not given)
            size, least = partitions.get("partitionSize", 0), partitions.get("minPartitions", 0)
            if isinstance(size, int) and isinstance(least, int):
                task.setdefault("minAvailable", size * least)
        task.setdefault("minAvailable", task["replicas"])
    minimums = [m for t in tasks if isinstance(m := t.get("minAvailable"), int)]
    if len(minimums) == len(tasks):
        spec.setdefault("minAvailable", sum(minimums))
