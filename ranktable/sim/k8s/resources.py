"""The resource types this server serves, with the discovery facts kubectl and the client read."""

from __future__ import annotations

from dataclasses import dataclass, field

ALL_VERBS = ("create", "delete", "deletecollection", "get", "list", "patch", "update", "watch")


@dataclass(frozen=True)
class Column:
    """A `kubectl get` column: header, JSON path (dotted, `[]` not supported), priority (1 = wide only)."""

    name: str
    path: str
    type: str = "string"
    priority: int = 0


@dataclass(frozen=True)
class ResourceType:
    group: str
    version: str
    plural: str
    singular: str
    kind: str
    namespaced: bool
    short_names: tuple[str, ...] = ()
    subresources: tuple[str, ...] = ()
    categories: tuple[str, ...] = ()
    columns: tuple[Column, ...] = field(default_factory=tuple)
    builtin: bool = True  # core Kubernetes types accept strategic merge patch; custom resources do not
    verbs: tuple[str, ...] = ALL_VERBS
    stored: bool = True  # reviews are answered, never stored

    @property
    def key(self) -> str:
        return f"{self.group}/{self.plural}" if self.group else self.plural

    @property
    def api_version(self) -> str:
        return f"{self.group}/{self.version}" if self.group else self.version

    @property
    def group_version(self) -> str:
        return self.api_version


RESOURCES: tuple[ResourceType, ...] = (
    ResourceType(
        "",
        "v1",
        "namespaces",
        "namespace",
        "Namespace",
        False,
        ("ns",),
        ("status",),
        columns=(Column("Status", "status.phase"),),
    ),
    ResourceType(
        "",
        "v1",
        "nodes",
        "node",
        "Node",
        False,
        ("no",),
        ("status",),
        columns=(
            Column("Status", "!node-ready"),
            Column("Roles", "!node-roles"),
            Column("Version", "status.nodeInfo.kubeletVersion"),
            Column("Internal-IP", "!node-ip", priority=1),
        ),
    ),
    ResourceType(
        "",
        "v1",
        "configmaps",
        "configmap",
        "ConfigMap",
        True,
        ("cm",),
        columns=(Column("Data", "!data-count", "integer"),),
    ),
    ResourceType(
        "",
        "v1",
        "pods",
        "pod",
        "Pod",
        True,
        ("po",),
        ("log", "status", "exec"),
        ("all",),
        columns=(
            Column("Ready", "!pod-ready"),
            Column("Status", "!pod-status"),
            Column("Restarts", "!pod-restarts", "string"),
            Column("IP", "status.podIP", priority=1),
            Column("Node", "spec.nodeName", priority=1),
        ),
    ),
    ResourceType(
        "",
        "v1",
        "services",
        "service",
        "Service",
        True,
        ("svc",),
        ("status",),
        ("all",),
        columns=(Column("Type", "spec.type"), Column("Cluster-IP", "spec.clusterIP")),
    ),
    ResourceType(
        "",
        "v1",
        "events",
        "event",
        "Event",
        True,
        ("ev",),
        columns=(
            Column("Type", "type"),
            Column("Reason", "reason"),
            Column("Object", "!event-object"),
            Column("Message", "message"),
        ),
    ),
    ResourceType("", "v1", "secrets", "secret", "Secret", True, (), columns=(Column("Type", "type"),)),
    ResourceType(
        "batch.volcano.sh",
        "v1alpha1",
        "jobs",
        "job",
        "Job",
        True,
        ("vcjob", "vj"),
        ("status",),
        columns=(
            Column("Status", "status.state.phase"),
            Column("minAvailable", "status.minAvailable", "integer"),
            Column("Runnings", "status.running", "integer"),
            Column("Queue", "spec.queue", priority=1),
        ),
        builtin=False,
    ),
    ResourceType(
        "scheduling.volcano.sh",
        "v1beta1",
        "podgroups",
        "podgroup",
        "PodGroup",
        True,
        ("pg", "podgroup-v1beta1"),
        ("status",),
        columns=(
            Column("Status", "status.phase"),
            Column("minMember", "spec.minMember", "integer"),
            Column("Runnings", "status.running", "integer"),
        ),
        builtin=False,
    ),
    ResourceType(
        "scheduling.volcano.sh",
        "v1beta1",
        "queues",
        "queue",
        "Queue",
        False,
        ("q", "queue-v1beta1"),
        ("status",),
        columns=(Column("State", "status.state"),),
        builtin=False,
    ),
    ResourceType(
        "topology.volcano.sh",
        "v1alpha1",
        "hypernodes",
        "hypernode",
        "HyperNode",
        False,
        ("hn",),
        columns=(
            Column("Tier", "spec.tier", "integer"),
            Column("TierName", "spec.tierName"),
            Column("NodeCount", "status.nodeCount", "integer"),
        ),
        builtin=False,
    ),
)

SELF_SUBJECT_ACCESS_REVIEWS = ResourceType(
    "authorization.k8s.io",
    "v1",
    "selfsubjectaccessreviews",
    "selfsubjectaccessreview",
    "SelfSubjectAccessReview",
    False,
    verbs=("create",),
    stored=False,
)
RESOURCES = (*RESOURCES, SELF_SUBJECT_ACCESS_REVIEWS)

BY_KEY = {r.key: r for r in RESOURCES}

# The types the controllers and agents name, each spelt once here.
NAMESPACES = BY_KEY["namespaces"]
NODES = BY_KEY["nodes"]
CONFIGMAPS = BY_KEY["configmaps"]
PODS = BY_KEY["pods"]
SERVICES = BY_KEY["services"]
SECRETS = BY_KEY["secrets"]
JOBS = BY_KEY["batch.volcano.sh/jobs"]
PODGROUPS = BY_KEY["scheduling.volcano.sh/podgroups"]
QUEUES = BY_KEY["scheduling.volcano.sh/queues"]
HYPERNODES = BY_KEY["topology.volcano.sh/hypernodes"]


def find(group: str, version: str, plural: str) -> ResourceType | None:
    r = BY_KEY.get(f"{group}/{plural}" if group else plural)
    return r if r is not None and r.version == version else None


def by_kind(api_version: str, kind: str) -> ResourceType | None:
    return next((r for r in RESOURCES if r.api_version == api_version and r.kind == kind), None)


def groups() -> list[str]:
    seen: list[str] = []
    for r in RESOURCES:
        if r.group and r.group not in seen:
            seen.append(r.group)
    return seen


def resources_of(group_version: str) -> list[ResourceType]:
    return [r for r in RESOURCES if r.group_version == group_version]
