"""Checks a JobSpec before anything reaches the cluster, each finding with field path, reason and fix.

Errors are what the API server, Volcano or the platform would reject (or silently mis-run); warnings and
info are the platform's routing rules and sizing advice the guides state but nothing enforces.
"""

from __future__ import annotations

import re
from collections.abc import Sequence
from dataclasses import dataclass
from decimal import Decimal

from ranktable.compose.fault_policy import FAULT_LABEL_KEYS
from ranktable.compose.flavours import Flavour, load_flavours
from ranktable.compose.k8s_names import (
    CONFIG_KEY,
    DNS1035_LABEL,
    DNS1123_LABEL,
    DNS1123_SUBDOMAIN,
    ENV_NAME,
    LABEL_NAME,
    POD_NAME_MAX,
)
from ranktable.compose.manifests import (
    DRIVER_MOUNTS,
    DRIVER_VOLUME_NAMES,
    FIXED_ENV_NAMES,
    NODE_SELECTOR,
    RING_LABEL,
    ROUTE_ENV,
)
from ranktable.compose.quantity import parse_quantity
from ranktable.compose.spec import FRAMEWORKS, RANK_TABLE_VERSIONS, VOLUME_KINDS, JobSpec
from ranktable.compose.storage import SharedStorage, mounted_at, pod_path

ERROR, WARNING, INFO = "error", "warning", "info"
NPU_COUNTS = (1, 2, 4, 8, 16)
MULTI_NODE_NPUS = 8
ROUTING_MIN_NODES = 3
ROUTING_SUGGESTED_NPUS = 512
LAUNCHER_ENV = ("RANK_TABLE_FILE", "RANK_ID", "DEVICE_ID", "RANK_SIZE", "NODE_RANK", "RANK_AFTER_ACC")


@dataclass(frozen=True)
class Issue:
    field: str
    severity: str
    message: str
    fix: str = ""

    def to_json(self) -> dict[str, str]:
        return {"field": self.field, "severity": self.severity, "message": self.message, "fix": self.fix}

    def __str__(self) -> str:
        fix = f" (fix: {self.fix})" if self.fix else ""
        return f"{self.severity}: {self.field}: {self.message}{fix}"


def has_errors(issues: list[Issue]) -> bool:
    return any(i.severity == ERROR for i in issues)


def validate_spec(
    spec: JobSpec, flavours: dict[str, Flavour] | None = None, shared: Sequence[SharedStorage] = ()
) -> list[Issue]:
    """Every problem found, errors first; an empty list means the spec is ready to submit. `shared`: the
    shared storages known (profiles), so a script outside every volume is told which one to add."""
    out: list[Issue] = []
    table = flavours if flavours is not None else load_flavours()
    _names(spec, out)
    _program(spec, out)
    _script_mounted(spec, shared, out)
    flavour = table.get(spec.flavour)
    if flavour is None:
        out.append(
            Issue(
                "flavour",
                ERROR,
                f"unknown flavour {spec.flavour!r}",
                f"use one of {', '.join(sorted(table))}",
            )
        )
    _npus(spec, flavour, out)
    _cpu_memory(spec, flavour, out)
    _routing(spec, out)
    _env(spec, out)
    _collectives(spec, out)
    _volumes(spec, out)
    _labels("labels", spec.labels, (RING_LABEL[0], *FAULT_LABEL_KEYS), out)
    _labels("node_selector", spec.node_selector, (), out)
    if NODE_SELECTOR[0] in spec.node_selector and spec.node_selector[NODE_SELECTOR[0]] != NODE_SELECTOR[1]:
        out.append(
            Issue(
                f"node_selector.{NODE_SELECTOR[0]}",
                WARNING,
                f"overrides the platform's NPU node selector ({NODE_SELECTOR[1]})",
                "drop it unless your pool labels its NPU nodes differently",
            )
        )
    if spec.rank_table_version not in RANK_TABLE_VERSIONS:
        out.append(
            Issue(
                "rank_table_version",
                ERROR,
                f"unknown rank table version {spec.rank_table_version!r}",
                "use v2 (HCCL 1.0 tables, Atlas 800T A2) or v1",
            )
        )
    if spec.max_retry < 0:
        out.append(
            Issue("max_retry", ERROR, "must not be negative", "use 0 for no retries; Volcano's default is 3")
        )
    if not spec.queue or not DNS1123_SUBDOMAIN.match(spec.queue):
        out.append(
            Issue("queue", ERROR, f"{spec.queue!r} is not a valid queue name", "use 'default' or your queue")
        )
    order = {ERROR: 0, WARNING: 1, INFO: 2}
    return sorted(out, key=lambda i: order[i.severity])


def _names(spec: JobSpec, out: list[Issue]) -> None:
    if len(spec.name) > POD_NAME_MAX or not DNS1035_LABEL.match(spec.name):
        out.append(
            Issue(
                "name",
                ERROR,
                f"{spec.name!r} is not a DNS-1035 label (lower-case letters, digits and '-', starting with a "
                "letter, ending alphanumeric); the svc plugin makes a Service of this name",
                "e.g. " + (re.sub(r"[^a-z0-9-]+", "-", spec.name.lower()).strip("-") or "bert-pretrain"),
            )
        )
    if not DNS1123_LABEL.match(spec.namespace) or len(spec.namespace) > POD_NAME_MAX:
        out.append(Issue("namespace", ERROR, f"{spec.namespace!r} is not a DNS-1123 label", "e.g. default"))
    if spec.task_name and (not DNS1123_LABEL.match(spec.task_name) or len(spec.task_name) > POD_NAME_MAX):
        out.append(Issue("task_name", ERROR, f"{spec.task_name!r} is not a DNS-1123 label", "e.g. worker"))
    longest = spec.pod_name(max(spec.nodes - 1, 0))
    if len(longest) > POD_NAME_MAX:
        digits = len(str(max(spec.nodes - 1, 0)))
        if spec.task_name:
            fix = f"shorten name + task_name to at most {POD_NAME_MAX - 2 - digits} characters together"
        else:
            fix = (
                f"shorten the name to at most {(POD_NAME_MAX - 3 - digits) // 2} characters (task: <name>-1)"
            )
        out.append(
            Issue(
                "name",
                ERROR,
                f"pod name {longest!r} is {len(longest)} characters; pod names (<job>-<task>-<index>) are "
                f"host names and must be at most {POD_NAME_MAX}",
                fix,
            )
        )
    if not spec.image or any(c.isspace() for c in spec.image):
        out.append(
            Issue(
                "image", ERROR, f"{spec.image!r} is not an image reference", "e.g. bert_pretrain_mindspore:v1"
            )
        )


SHELL_OPERATORS = frozenset((";", "&&", "||", "|", "&", ">", ">>", "<", "2>&1", "2>"))


def _shell_words(command: Sequence[str], out: list[Issue]) -> None:
    """A command is an argv, run by no shell: `echo started; sleep 300` prints `started; sleep 300` and
    ends at once. A word that is a shell operator, or a bare word ending in `;` before another word, is
    almost always meant for a shell (`--sep=;` and a `sh -c` line are not)."""
    for index, word in enumerate(command):
        ends_a_statement = word.endswith(";") and index < len(command) - 1
        if word in SHELL_OPERATORS or (ends_a_statement and not any(c.isspace() or c == "=" for c in word)):
            out.append(
                Issue(
                    f"command[{index}]",
                    WARNING,
                    f"{word!r} is passed to {command[0]!r} as an argument: the command is not run by a shell",
                    f"to run a shell line, make it one word after sh -c, e.g. sh -c '{' '.join(command)}'",
                )
            )
            return


def _program(spec: JobSpec, out: list[Issue]) -> None:
    if spec.framework not in FRAMEWORKS:
        out.append(
            Issue("framework", ERROR, f"unknown framework {spec.framework!r}", f"use one of {FRAMEWORKS}")
        )
    if spec.command and spec.entry is not None:
        out.append(
            Issue(
                "command",
                ERROR,
                "both a command and an entry point are given",
                "keep one: entry runs the launcher",
            )
        )
    elif not spec.command and spec.entry is None:
        out.append(
            Issue(
                "command",
                ERROR,
                "neither a command nor an entry point is given",
                "set entry.script to run it with the framework launcher, or give a command",
            )
        )
    _shell_words(spec.command, out)
    if spec.entry is not None:
        if not spec.entry.script:
            out.append(Issue("entry.script", ERROR, "is empty", "name the training script, e.g. train.py"))
        elif not spec.entry.script.startswith(("/", "$")):
            out.append(
                Issue(
                    "entry.script",
                    WARNING,
                    f"{spec.entry.script!r} is relative: the container resolves it in its working dir, "
                    "where synced code usually is not (the pod would crash-loop with `can't open file`)",
                    "use its absolute path in the image or a mounted volume, e.g. /home/ma-user/train.py",
                )
            )
        if not 1 <= spec.entry.master_port <= 65535:
            out.append(
                Issue("entry.master_port", ERROR, f"{spec.entry.master_port} is not a port", "e.g. 29500")
            )


def _script_mounted(spec: JobSpec, shared: Sequence[SharedStorage], out: list[Issue]) -> None:
    """An absolute script path no volume mounts is found only if the image holds it: say which volume
    would show it to the pods (the shared storage it is on), before the pods crash-loop on it."""
    script = spec.entry.script if spec.entry is not None else ""
    if not script.startswith("/") or mounted_at(script, spec.volumes) is not None:
        return
    mounted = ", ".join(f"{v.name} at {v.mount_path}" for v in spec.volumes) or "none"
    on = pod_path(script, shared) or next(
        ((script, s) for s in shared if mounted_at(script, [s.volume]) is not None), None
    )
    if on is not None:
        fix = f"add the {on[1].describe()}"
        if on[0] != script:
            fix += f" and run {on[0]}, its path in the pods"
    else:
        fix = "add the volume holding it (--hostpath / --pvc), or give a profile its shared storage"
    out.append(
        Issue(
            "entry.script",
            WARNING,
            f"{script} lies outside every mounted volume (mounted: {mounted}): the pods find it only if "
            "the image holds it",
            fix,
        )
    )


def _npus(spec: JobSpec, flavour: Flavour | None, out: list[Issue]) -> None:
    if spec.nodes < 1:
        out.append(
            Issue("nodes", ERROR, f"must be at least 1, got {spec.nodes}", "use 1 for a single-node job")
        )
    if spec.npus_per_node not in NPU_COUNTS:
        out.append(
            Issue(
                "npus_per_node",
                ERROR,
                f"{spec.npus_per_node} NPUs per pod is not allowed (use {', '.join(map(str, NPU_COUNTS))})",
                "use 8 for a whole Snt9B server",
            )
        )
    elif spec.nodes > 1 and spec.npus_per_node != MULTI_NODE_NPUS:
        out.append(
            Issue(
                "npus_per_node",
                ERROR,
                f"a {spec.nodes}-node job must use {MULTI_NODE_NPUS} NPUs per pod, got {spec.npus_per_node}",
                f"set npus_per_node to {MULTI_NODE_NPUS}, or use nodes: 1",
            )
        )
    if flavour is not None and spec.npus_per_node > flavour.npus:
        out.append(
            Issue(
                "npus_per_node",
                ERROR,
                f"{spec.npus_per_node} NPUs per pod exceeds the {flavour.name} server's {flavour.npus}",
                f"use at most {flavour.npus}",
            )
        )


def _quantity(value: str, field: str, out: list[Issue], example: str) -> Decimal | None:
    try:
        return parse_quantity(value)
    except ValueError:
        out.append(Issue(field, ERROR, f"{value!r} is not a Kubernetes quantity", f"e.g. {example}"))
        return None


def _cpu_memory(spec: JobSpec, flavour: Flavour | None, out: list[Issue]) -> None:
    if spec.cpu is not None:
        cpu = _quantity(spec.cpu, "cpu", out, "96")
        if cpu is not None and cpu <= 0:
            out.append(Issue("cpu", ERROR, "must be positive", "e.g. 96"))
        elif cpu is not None and flavour is not None and cpu > flavour.vcpus:
            out.append(
                Issue(
                    "cpu",
                    ERROR,
                    f"{spec.cpu} CPUs per pod exceed the {flavour.name} server's {flavour.vcpus} vCPUs; "
                    "the pod would never be scheduled",
                    f"request at most {flavour.vcpus} (leave room for system pods)",
                )
            )
    if spec.memory is not None:
        mem = _quantity(spec.memory, "memory", out, "1024Gi")
        gib = Decimal(2**30)
        if mem is not None and mem <= 0:
            out.append(Issue("memory", ERROR, "must be positive", "e.g. 1024Gi"))
        elif mem is not None and flavour is not None and mem > flavour.memory_gib * gib:
            out.append(
                Issue(
                    "memory",
                    ERROR,
                    f"{spec.memory} per pod exceeds the {flavour.name} server's {flavour.memory_gib}Gi",
                    f"request at most {flavour.memory_gib}Gi (leave room for system pods)",
                )
            )
    if spec.cpu is None or spec.memory is None:
        out.append(
            Issue(
                "cpu" if spec.cpu is None else "memory",
                INFO,
                "no CPU/memory request: requests equal limits, so the pod gets only the namespace defaults",
                "size CPU and memory for the flavour, e.g. cpu 180 and memory 1400Gi for a whole Snt9B",
            )
        )


def _routing(spec: JobSpec, out: list[Issue]) -> None:
    if spec.routing:
        if spec.nodes < ROUTING_MIN_NODES:
            out.append(
                Issue(
                    "routing",
                    WARNING,
                    f"routing needs {ROUTING_MIN_NODES} or more nodes; with {spec.nodes} it will be skipped",
                    f"turn routing off, or use at least {ROUTING_MIN_NODES} nodes",
                )
            )
        out.append(
            Issue(
                "routing",
                INFO,
                "the platform's route planning applies only when training runs on Python 3.7 or 3.9, and the "
                "script's working directory must not be on shared storage",
                "check the image's python3 --version; the launcher itself needs Python 3.10+, so set "
                "entry.python to the training interpreter (e.g. python3.9) when they differ",
            )
        )
        if spec.entry is None:
            out.append(
                Issue(
                    "routing",
                    INFO,
                    "with a verbatim command your script must apply the plan itself",
                    "run `ranktable route` before training, or use an entry point so the launcher does it",
                )
            )
    elif spec.total_npus >= ROUTING_SUGGESTED_NPUS:
        out.append(
            Issue(
                "routing",
                INFO,
                f"{spec.total_npus} NPUs without routing: the platform recommends route planning from "
                f"{ROUTING_SUGGESTED_NPUS} NPUs",
                "turn routing on so ranks follow the switch topology",
            )
        )


def _collectives(spec: JobSpec, out: list[Issue]) -> None:
    """HCCL_ALGO given twice, and parallel sizes that don't fit the job's NPU count."""
    from ranktable.errors import InputError

    if spec.hccl_algo and "HCCL_ALGO" in spec.env:
        out.append(Issue("env.HCCL_ALGO", ERROR, "HCCL_ALGO is also set by hccl_algo", "keep one of the two"))
    if spec.parallel is not None:
        from ranktable.collectives.groups import ParallelSizes  # numpy: only for a job that sets parallel

        p = spec.parallel
        try:
            ParallelSizes(p.tp, p.cp, p.ep, p.pp).resolved(spec.total_npus, "parallel")
        except InputError as exc:
            out.append(Issue("parallel", ERROR, exc.reason, exc.fix or "fix the sizes"))


def _env(spec: JobSpec, out: list[Issue]) -> None:
    reserved = {*FIXED_ENV_NAMES, ROUTE_ENV}
    for name in [*spec.env, *spec.secret_env]:
        field = f"env.{name}" if name in spec.env else f"secret_env.{name}"
        if not ENV_NAME.match(name):
            out.append(
                Issue(
                    field,
                    ERROR,
                    f"{name!r} is not a valid environment variable name",
                    "use letters, digits, '_', '-' and '.', not starting with a digit",
                )
            )
        elif name in reserved:
            how = "the routing switch" if name == ROUTE_ENV else "the platform (downward API)"
            out.append(
                Issue(
                    field,
                    ERROR,
                    f"{name} is set by {how}",
                    "remove it" + (" and set routing" if name == ROUTE_ENV else ""),
                )
            )
        elif spec.entry is not None and name in LAUNCHER_ENV:
            out.append(Issue(field, WARNING, f"the launcher sets {name} for each process", "remove it"))
    for name in set(spec.env) & set(spec.secret_env):
        out.append(
            Issue(f"secret_env.{name}", ERROR, f"{name} is also a plain env value", "keep one of them")
        )
    for name, ref in spec.secret_env.items():
        if not DNS1123_SUBDOMAIN.match(ref.secret):
            out.append(
                Issue(
                    f"secret_env.{name}.secret",
                    ERROR,
                    f"{ref.secret!r} is not a Secret name",
                    "e.g. my-token",
                )
            )
        if not CONFIG_KEY.match(ref.key):
            out.append(
                Issue(f"secret_env.{name}.key", ERROR, f"{ref.key!r} is not a Secret key", "e.g. token")
            )


def _volumes(spec: JobSpec, out: list[Issue]) -> None:
    seen: set[str] = set()
    driver_paths = {path for _, path in DRIVER_MOUNTS}
    for i, vol in enumerate(spec.volumes):
        f = f"volumes[{i}]"
        if not DNS1123_LABEL.match(vol.name) or len(vol.name) > POD_NAME_MAX:
            out.append(Issue(f"{f}.name", ERROR, f"{vol.name!r} is not a DNS-1123 label", "e.g. data"))
        if vol.name in DRIVER_VOLUME_NAMES:
            out.append(
                Issue(
                    f"{f}.name",
                    ERROR,
                    f"{vol.name!r} clashes with the fixed NPU driver mount",
                    "rename the volume",
                )
            )
        elif vol.name in seen:
            out.append(
                Issue(f"{f}.name", ERROR, f"volume name {vol.name!r} is used twice", "give each a new name")
            )
        seen.add(vol.name)
        if not vol.mount_path.startswith("/"):
            out.append(Issue(f"{f}.mount_path", ERROR, f"{vol.mount_path!r} is not absolute", "e.g. /data"))
        elif vol.mount_path.rstrip("/") in driver_paths:
            out.append(
                Issue(f"{f}.mount_path", ERROR, f"{vol.mount_path} is an NPU driver mount", "mount elsewhere")
            )
        if vol.kind not in VOLUME_KINDS:
            out.append(Issue(f"{f}.kind", ERROR, f"unknown kind {vol.kind!r}", f"use one of {VOLUME_KINDS}"))
        elif vol.kind == "pvc" and not DNS1123_SUBDOMAIN.match(vol.claim):
            out.append(
                Issue(f"{f}.claim", ERROR, f"{vol.claim!r} is not a claim name", "name an existing PVC")
            )
        elif vol.kind in ("hostPath", "nfs") and not vol.path.startswith("/"):
            out.append(Issue(f"{f}.path", ERROR, f"{vol.path!r} is not an absolute path", "e.g. /mnt/data"))
        if vol.kind == "nfs" and not vol.server:
            out.append(Issue(f"{f}.server", ERROR, "an NFS volume needs a server", "e.g. 192.168.0.10"))


def _labels(field: str, labels: dict[str, str], fixed: tuple[str, ...], out: list[Issue]) -> None:
    for key, value in labels.items():
        prefix, _, name = key.rpartition("/")
        if (
            (prefix and (len(prefix) > 253 or not DNS1123_SUBDOMAIN.match(prefix)))
            or len(name) > 63
            or not (LABEL_NAME.match(name))
        ):
            out.append(
                Issue(
                    f"{field}.{key}",
                    ERROR,
                    f"{key!r} is not a valid label key",
                    "use [prefix/]name, e.g. team",
                )
            )
        if len(value) > 63 or (value and not LABEL_NAME.match(value)):
            out.append(
                Issue(
                    f"{field}.{key}",
                    ERROR,
                    f"{value!r} is not a valid label value",
                    "at most 63 letters, digits, '-', '_' or '.', alphanumeric at both ends",
                )
            )
        if key in fixed:
            out.append(Issue(f"{field}.{key}", ERROR, f"{key} is fixed by the platform", "remove it"))
