"""JobSpec: everything a user decides about a ranktable job, as one typed, JSON-able value.

The web form, the CLI flags and a parsed manifest all meet here, so ``to_dict``/``from_dict`` keep
stable field names and ``from_dict`` names the offending field when the input is wrong.
"""

from __future__ import annotations

from dataclasses import dataclass, field, fields
from typing import Any

from ranktable.compose.argv import shell_words
from ranktable.compose.fault_policy import ON_FAULT_PRESETS
from ranktable.compose.flavours import DEFAULT_FLAVOUR
from ranktable.errors import InputError
from ranktable.limits import MAX_COUNT, MAX_NODES, brief

FRAMEWORKS = ("mindspore", "pytorch")
RANK_TABLE_VERSIONS = ("v1", "v2")
VOLUME_KINDS = ("hostPath", "pvc", "nfs")
DEFAULT_MASTER_PORT = 29500


@dataclass
class EntryPoint:
    """A training script the framework launcher starts once per NPU (MindSpore) or via torchrun."""

    script: str
    args: list[str] = field(default_factory=list)
    master_port: int = DEFAULT_MASTER_PORT
    python: str = ""  # training interpreter (e.g. python3.9 for routing); "" = the launcher's own


@dataclass
class SecretRef:
    """An env value taken from a Secret, so the value never appears in the manifest or the UI."""

    secret: str
    key: str


@dataclass
class VolumeSpec:
    """An extra volume: hostPath uses ``path``; pvc uses ``claim``; nfs uses ``server`` and ``path``."""

    name: str
    kind: str
    mount_path: str
    path: str = ""
    claim: str = ""
    server: str = ""
    read_only: bool = False


@dataclass
class ParallelSpec:
    """Megatron / MindSpeed parallel sizes of the training job (dp is derived from the NPU count); the
    layout preview costs each group's collective with them."""

    tp: int = 1
    cp: int = 1
    ep: int = 1
    pp: int = 1


PARALLEL_KINDS = ("tp", "cp", "ep", "pp")
MAX_PARALLEL_SIZE = 1 << 20


@dataclass
class JobSpec:
    name: str
    image: str
    namespace: str = "default"
    framework: str = "mindspore"
    command: list[str] = field(default_factory=list)
    entry: EntryPoint | None = None
    nodes: int = 1
    npus_per_node: int = 8
    cpu: str | None = None
    memory: str | None = None
    env: dict[str, str] = field(default_factory=dict)
    secret_env: dict[str, SecretRef] = field(default_factory=dict)
    volumes: list[VolumeSpec] = field(default_factory=list)
    queue: str = "default"
    max_retry: int = 3
    labels: dict[str, str] = field(default_factory=dict)
    routing: bool = False
    rank_table_version: str = "v2"
    node_selector: dict[str, str] = field(default_factory=dict)
    flavour: str = DEFAULT_FLAVOUR
    task_name: str = ""
    hccl_algo: str = ""  # HCCL_ALGO exported to the job, e.g. "level0:NA;level1:NHR"; "" = HCCL decides
    parallel: ParallelSpec | None = None
    # regexes with named groups (step, loss, step_time_s, lr...) for metrics the built-in parsers miss
    metric_patterns: list[str] = field(default_factory=list)
    on_fault: str = ""  # a preset of compose.fault_policy: "", restart, resume or stop
    resume_args: str = ""  # arguments that resume from a checkpoint ({path}, {step}); "" = per framework
    avoid_nodes: list[str] = field(default_factory=list)  # nodes the job must not run on (blamed faults)

    @property
    def task(self) -> str:
        """The Volcano task name; the platform guide uses ``<job>-1``."""
        return self.task_name or f"{self.name}-1"

    @property
    def total_npus(self) -> int:
        return self.nodes * self.npus_per_node

    def pod_name(self, index: int) -> str:
        return f"{self.name}-{self.task}-{index}"

    def to_dict(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "image": self.image,
            "namespace": self.namespace,
            "framework": self.framework,
            "command": list(self.command),
            "entry": None
            if self.entry is None
            else {
                "script": self.entry.script,
                "args": list(self.entry.args),
                "master_port": self.entry.master_port,
                "python": self.entry.python,
            },
            "nodes": self.nodes,
            "npus_per_node": self.npus_per_node,
            "cpu": self.cpu,
            "memory": self.memory,
            "env": dict(self.env),
            "secret_env": {k: {"secret": v.secret, "key": v.key} for k, v in self.secret_env.items()},
            "volumes": [{f.name: getattr(v, f.name) for f in fields(VolumeSpec)} for v in self.volumes],
            "queue": self.queue,
            "max_retry": self.max_retry,
            "labels": dict(self.labels),
            "routing": self.routing,
            "rank_table_version": self.rank_table_version,
            "node_selector": dict(self.node_selector),
            "flavour": self.flavour,
            "task_name": self.task_name,
            "hccl_algo": self.hccl_algo,
            "parallel": None
            if self.parallel is None
            else {k: getattr(self.parallel, k) for k in PARALLEL_KINDS},
            "metric_patterns": list(self.metric_patterns),
            "on_fault": self.on_fault,
            "resume_args": self.resume_args,
            "avoid_nodes": list(self.avoid_nodes),
        }

    to_json = to_dict

    @classmethod
    def from_dict(cls, data: Any) -> JobSpec:
        """Build from ``to_dict`` output (or a web form); missing optional fields take their defaults."""
        return _Reader(data).job_spec()


class _Reader:
    """Type-checks a JSON-like mapping field by field so errors name the exact path."""

    def __init__(self, data: Any) -> None:
        self.data = _mapping(data, "spec")

    def job_spec(self) -> JobSpec:
        d = self.data
        known = {f.name for f in fields(JobSpec)}
        unknown = sorted(set(d) - known)
        if unknown:
            raise InputError(
                f"unknown field(s) {', '.join(unknown)}",
                where="spec",
                fix=f"use only: {', '.join(sorted(known))}",
            )
        for required in ("name", "image"):
            if not d.get(required):
                raise InputError("is required", where=f"spec.{required}", fix=f"give the job's {required}")
        defaults = JobSpec(name="x", image="x")
        entry = d.get("entry")
        return JobSpec(
            name=_str(d["name"], "spec.name"),
            image=_str(d["image"], "spec.image"),
            namespace=_str(d.get("namespace", defaults.namespace), "spec.namespace"),
            framework=_str(d.get("framework", defaults.framework), "spec.framework"),
            command=_str_list(d.get("command") or [], "spec.command"),
            entry=None if entry is None else _entry(entry),
            nodes=_int(d.get("nodes", defaults.nodes), "spec.nodes", MAX_NODES),
            npus_per_node=_int(d.get("npus_per_node", defaults.npus_per_node), "spec.npus_per_node"),
            cpu=_opt_quantity(d.get("cpu"), "spec.cpu"),
            memory=_opt_quantity(d.get("memory"), "spec.memory"),
            env=_str_map(d.get("env") or {}, "spec.env"),
            secret_env={
                k: _secret(v, f"spec.secret_env.{k}")
                for k, v in _mapping(d.get("secret_env") or {}, "spec.secret_env").items()
            },
            volumes=[
                _volume(v, f"spec.volumes[{i}]")
                for i, v in enumerate(_list(d.get("volumes") or [], "spec.volumes"))
            ],
            queue=_str(d.get("queue", defaults.queue), "spec.queue"),
            max_retry=_int(d.get("max_retry", defaults.max_retry), "spec.max_retry"),
            labels=_str_map(d.get("labels") or {}, "spec.labels"),
            routing=_bool(d.get("routing", defaults.routing), "spec.routing"),
            rank_table_version=_str(
                d.get("rank_table_version", defaults.rank_table_version), "spec.rank_table_version"
            ),
            node_selector=_str_map(d.get("node_selector") or {}, "spec.node_selector"),
            flavour=_str(d.get("flavour") or defaults.flavour, "spec.flavour"),
            task_name=_str(d.get("task_name") or "", "spec.task_name"),
            hccl_algo=_hccl_algo(d.get("hccl_algo") or ""),
            parallel=None if d.get("parallel") is None else _parallel(d["parallel"]),
            metric_patterns=_metric_patterns(d.get("metric_patterns") or []),
            on_fault=_choice(d.get("on_fault") or "", "spec.on_fault", ON_FAULT_PRESETS),
            resume_args=_str(d.get("resume_args") or "", "spec.resume_args"),
            avoid_nodes=_str_list(d.get("avoid_nodes") or [], "spec.avoid_nodes"),
        )


def _choice(value: Any, where: str, choices: tuple[str, ...]) -> str:
    text = _str(value, where)
    if text not in choices:
        raise InputError(
            f"unknown value {text!r}",
            where=where,
            fix=f"use one of {', '.join(c or '(empty)' for c in choices)}",
        )
    return text


def _metric_patterns(value: Any) -> list[str]:
    """User metric regexes, checked now (RE2 syntax, known group names, count and length limits)."""
    from ranktable.observe.parsers import compile_user_patterns

    patterns = _str_list(value, "spec.metric_patterns")
    compile_user_patterns(patterns, where="spec.metric_patterns")
    return patterns


def _mapping(value: Any, where: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise InputError(f"expected an object, got {type(value).__name__}", where=where)
    return value


def _list(value: Any, where: str) -> list[Any]:
    if not isinstance(value, list):
        raise InputError(f"expected a list, got {type(value).__name__}", where=where)
    return value


def _str(value: Any, where: str) -> str:
    if not isinstance(value, str):
        raise InputError(f"expected a string, got {value!r}", where=where)
    return value


def _int(value: Any, where: str, maximum: int = MAX_COUNT) -> int:
    """A whole number (or its decimal text) no larger than `maximum`, the limit named in the error."""
    if isinstance(value, bool) or not isinstance(value, int):
        if isinstance(value, str) and value.strip().isdigit() and len(value.strip()) <= 20:
            value = int(value)
        else:
            raise InputError(f"expected a whole number, got {brief(value)}", where=where)
    if value > maximum:
        raise InputError(f"must be at most {maximum:,} (the limit), got {brief(value)}", where=where)
    return value


def _bool(value: Any, where: str) -> bool:
    if isinstance(value, bool):
        return value
    if isinstance(value, str) and value.lower() in ("true", "false"):
        return value.lower() == "true"
    raise InputError(f"expected true or false, got {value!r}", where=where)


def _opt_quantity(value: Any, where: str) -> str | None:
    if value is None or value == "":
        return None
    if isinstance(value, int | float) and not isinstance(value, bool):
        return str(value)
    return _str(value, where)


def _str_list(value: Any, where: str) -> list[str]:
    return [_str(v, f"{where}[{i}]") for i, v in enumerate(_list(value, where))]


def _argv(value: Any, where: str) -> list[str]:
    """Arguments as a list, or as one line split as a shell does (the form's Arguments field)."""
    if isinstance(value, str):
        return shell_words(value, where)
    return _str_list(value, where)


def _str_map(value: Any, where: str) -> dict[str, str]:
    out: dict[str, str] = {}
    for k, v in _mapping(value, where).items():
        if isinstance(v, int | float) and not isinstance(v, bool):
            v = str(v)
        out[str(k)] = _str(v, f"{where}.{k}")
    return out


def _entry(value: Any) -> EntryPoint:
    d = _mapping(value, "spec.entry")
    if not d.get("script"):
        raise InputError(
            "is required with an entry point", where="spec.entry.script", fix="name the training script"
        )
    return EntryPoint(
        script=_str(d["script"], "spec.entry.script"),
        args=_argv(d.get("args") or [], "spec.entry.args"),
        master_port=_int(d.get("master_port", DEFAULT_MASTER_PORT), "spec.entry.master_port", 65535),
        python=_str(d.get("python") or "", "spec.entry.python"),
    )


def _secret(value: Any, where: str) -> SecretRef:
    d = _mapping(value, where)
    return SecretRef(secret=_str(d.get("secret"), f"{where}.secret"), key=_str(d.get("key"), f"{where}.key"))


def _volume(value: Any, where: str) -> VolumeSpec:
    d = _mapping(value, where)
    kind = _str(d.get("kind"), f"{where}.kind")
    if kind not in VOLUME_KINDS:
        raise InputError(
            f"unknown volume kind {kind!r}", where=f"{where}.kind", fix=f"use one of {VOLUME_KINDS}"
        )
    return VolumeSpec(
        name=_str(d.get("name"), f"{where}.name"),
        kind=kind,
        mount_path=_str(d.get("mount_path"), f"{where}.mount_path"),
        path=_str(d.get("path") or "", f"{where}.path"),
        claim=_str(d.get("claim") or "", f"{where}.claim"),
        server=_str(d.get("server") or "", f"{where}.server"),
        read_only=_bool(d.get("read_only", False), f"{where}.read_only"),
    )


def _hccl_algo(value: Any) -> str:
    """HCCL_ALGO as HCCL reads it; checked here so a typo fails before submission, not in training."""
    from ranktable.collectives.choice import parse_hccl_algo

    text = _str(value, "spec.hccl_algo").strip()
    if text:
        parse_hccl_algo(text, "spec.hccl_algo")
    return text


def _parallel(value: Any) -> ParallelSpec:
    d = _mapping(value, "spec.parallel")
    unknown = sorted(set(d) - set(PARALLEL_KINDS))
    if unknown:
        raise InputError(
            f"unknown field(s) {', '.join(unknown)}",
            where="spec.parallel",
            fix="use tp, cp, ep and pp (dp is derived from the NPU count)",
        )
    sizes: dict[str, int] = {}
    for kind in PARALLEL_KINDS:
        size = _int(d.get(kind, 1), f"spec.parallel.{kind}")
        if not 1 <= size <= MAX_PARALLEL_SIZE:
            raise InputError(
                f"must be from 1 to {MAX_PARALLEL_SIZE}; got {size}", where=f"spec.parallel.{kind}"
            )
        sizes[kind] = size
    return ParallelSpec(**sizes)


def volume_from_dict(value: Any, where: str) -> VolumeSpec:
    """One volume from JSON (a profile's shared storage uses the same shape as `spec.volumes[i]`)."""
    return _volume(value, where)
