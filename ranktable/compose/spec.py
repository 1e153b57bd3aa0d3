"""JobSpec: everything a user decides about a ranktable job, as one typed, JSON-able value.

The web form, the CLI flags and a parsed manifest all meet here, so ``to_dict``/``from_dict`` keep
stable field names and ``from_dict`` names the offending field when the input is wrong.
"""

from __future__ import annotations

from dataclasses import asdict, dataclass, field
from typing import Any

from ranktable.compose.fault_policy import ON_FAULT_PRESETS, ON_FAULT_TEXT
from ranktable.compose.field_info import info
from ranktable.compose.flavours import DEFAULT_FLAVOUR
from ranktable.compose.k8s_names import DNS1035_LABEL, DNS1123_LABEL, DNS1123_SUBDOMAIN, POD_NAME_MAX
from ranktable.compose.network_topology import HELP as NETWORK_TOPOLOGY_HELP
from ranktable.compose.network_topology import PATTERN as NETWORK_TOPOLOGY_PATTERN
from ranktable.compose.network_topology import checked_network_topology
from ranktable.compose.spec_reader import read_record
from ranktable.limits import MAX_NODES

FRAMEWORKS = ("mindspore", "pytorch")
RANK_TABLE_VERSIONS = ("v1", "v2")
VOLUME_KINDS = ("hostPath", "pvc", "nfs")
DEFAULT_MASTER_PORT = 29500
PARALLEL_KINDS = ("tp", "cp", "ep", "pp")
MAX_PARALLEL_SIZE = 1 << 20


def _hccl_algo(value: str, where: str) -> str:
    """HCCL_ALGO as HCCL reads it; checked here so a typo fails before submission, not in training."""
    from ranktable.collectives.choice import parse_hccl_algo

    text = value.strip()
    if text:
        parse_hccl_algo(text, where)
    return text


def _metric_patterns(patterns: list[str], where: str) -> list[str]:
    """User metric regexes, checked now (RE2 syntax, known group names, count and length limits)."""
    from ranktable.observe.parsers import compile_user_patterns

    compile_user_patterns(patterns, where=where)
    return patterns


@dataclass
class EntryPoint:
    """A training script the framework launcher starts once per NPU (MindSpore) or via torchrun."""

    script: str = field(metadata=info("Script", required_fix="name the training script", example="train.py"))
    args: list[str] = field(
        default_factory=list,
        metadata=info(
            "Arguments",
            help="a list, or one line split as a shell does: --steps 300 is two arguments",
            flag_style="line",
            schema={"type": ["array", "string"]},
        ),
    )
    master_port: int = field(
        default=DEFAULT_MASTER_PORT, metadata=info("Master port", minimum=1, maximum=65535, limit=65535)
    )
    python: str = field(
        default="",
        metadata=info("Python", help="training interpreter (empty: the launcher's own), e.g. python3.9"),
    )


@dataclass
class SecretRef:
    """An env value taken from a Secret, so the value never appears in the manifest or the UI."""

    secret: str = field(metadata=info("Secret"))
    key: str = field(metadata=info("Key"))


@dataclass
class VolumeSpec:
    """An extra volume: hostPath uses ``path``; pvc uses ``claim``; nfs uses ``server`` and ``path``."""

    name: str = field(metadata=info("Name"))
    kind: str = field(metadata=info("Kind", choices=VOLUME_KINDS))
    mount_path: str = field(metadata=info("Mount path"))
    path: str = field(default="", metadata=info("Path (hostPath, nfs)"))
    claim: str = field(default="", metadata=info("Claim (pvc)"))
    server: str = field(default="", metadata=info("Server (nfs)"))
    read_only: bool = field(default=False, metadata=info("Read only"))


def _size(kind: str) -> Any:
    return field(
        default=1,
        metadata=info(
            f"{kind.upper()} size", minimum=1, maximum=MAX_PARALLEL_SIZE, floor=1, limit=MAX_PARALLEL_SIZE
        ),
    )


@dataclass
class ParallelSpec:
    """Megatron / MindSpeed parallel sizes of the training job (dp is derived from the NPU count); the
    layout preview costs each group's collective with them."""

    tp: int = _size("tp")
    cp: int = _size("cp")
    ep: int = _size("ep")
    pp: int = _size("pp")


@dataclass
class JobSpec:
    """A ranktable job: what runs, on how many NPUs, with what environment, storage and fault policy.

    Each field's ``metadata`` (``field_info.info``) is its one description: the JSON Schema, the CLI flags,
    the form's sections, the widget and the docs' field table are derived from it. A new field costs this
    declaration plus its lines in ``compose.manifests`` (compose and read back).
    """

    name: str = field(
        metadata=info(
            "Job name",
            help="DNS-1035 label: lower-case letters, digits and '-', starting with a letter",
            group="Basics",
            flag="--name",
            pattern=DNS1035_LABEL.pattern,
            max_length=POD_NAME_MAX,
            required_fix="give the job's name",
            example="bert-pretrain",
        )
    )
    image: str = field(
        metadata=info(
            "Image",
            help="the training container image",
            group="Basics",
            flag="--image",
            required_fix="give the job's image",
            example="swr.example.com/team/llm:2.1",
        )
    )
    namespace: str = field(
        default="default",
        metadata=info(
            "Namespace",
            help="the Kubernetes namespace the job runs in",
            group="Basics",
            flag="--namespace",
            pattern=DNS1123_LABEL.pattern,
            max_length=POD_NAME_MAX,
            example="team-a",
        ),
    )
    framework: str = field(
        default="mindspore",
        metadata=info(
            "Framework",
            help="how the launcher starts the script: once per NPU (mindspore) or torchrun (pytorch)",
            group="Basics",
            flag="--framework",
            choices=FRAMEWORKS,
        ),
    )
    command: list[str] = field(
        default_factory=list,
        metadata=info(
            "Command",
            help="the container command as a list (empty when an entry point is given)",
            group="What runs",
            flag="--command",
            flag_style="line",
            example=["python", "train.py", "--lr", "0.1"],
        ),
    )
    entry: EntryPoint | None = field(
        default=None,
        metadata=info(
            "Entry point",
            help="a training script the framework launcher starts (instead of a command)",
            group="What runs",
            flag="--script",
            example={"script": "train.py", "args": ["--epochs", "3"]},
        ),
    )
    nodes: int = field(
        default=1,
        metadata=info(
            "Nodes",
            help="servers the job runs on, one pod each",
            group="Resources",
            flag="--nodes",
            minimum=1,
            maximum=4096,
            limit=MAX_NODES,
        ),
    )
    npus_per_node: int = field(
        default=8,
        metadata=info(
            "NPUs per node",
            help="NPUs each pod asks for (8 for multi-node jobs)",
            group="Resources",
            flag="--npus",
            minimum=1,
            maximum=16,
        ),
    )
    cpu: str | None = field(
        default=None,
        metadata=info("CPU per pod", help="a Kubernetes quantity, e.g. 180", group="Resources", flag="--cpu"),
    )
    memory: str | None = field(
        default=None,
        metadata=info(
            "Memory per pod", help="a Kubernetes quantity, e.g. 1400Gi", group="Resources", flag="--memory"
        ),
    )
    env: dict[str, str] = field(
        default_factory=dict,
        metadata=info(
            "Environment",
            help="variables set in every container",
            group="Environment and secrets",
            flag="--env",
            metavar="NAME=VALUE",
            example={"GLOG_v": "2"},
        ),
    )
    secret_env: dict[str, SecretRef] = field(
        default_factory=dict,
        metadata=info(
            "Environment from Secrets",
            help="NAME -> {secret, key}; the value never appears in the manifest",
            group="Environment and secrets",
            flag="--secret-env",
            metavar="NAME=SECRET:KEY",
        ),
    )
    volumes: list[VolumeSpec] = field(
        default_factory=list,
        metadata=info(
            "Volumes",
            help="extra volumes mounted in every pod (hostPath, pvc or nfs)",
            group="Storage",
            flag="--hostpath/--pvc/--nfs",
        ),
    )
    queue: str = field(
        default="default",
        metadata=info(
            "Volcano queue",
            help="the Volcano queue the job waits in",
            group="Scheduling and faults",
            flag="--queue",
            pattern=DNS1123_SUBDOMAIN.pattern,
        ),
    )
    max_retry: int = field(
        default=3,
        metadata=info(
            "Max retries",
            help="restarts Volcano allows the job",
            group="Scheduling and faults",
            flag="--max-retry",
            minimum=0,
            maximum=100,
        ),
    )
    labels: dict[str, str] = field(
        default_factory=dict,
        metadata=info(
            "Labels", help="labels of the Volcano Job", group="Advanced", flag="--label", metavar="KEY=VALUE"
        ),
    )
    routing: bool = field(
        default=False,
        metadata=info(
            "Route plan",
            help="renumber ranks after the planned layout (3+ nodes)",
            group="Advanced",
            flag="--routing",
        ),
    )
    rank_table_version: str = field(
        default="v2",
        metadata=info(
            "Rank table version",
            help="the rank table format Volcano's configmap1980 plugin writes",
            group="Advanced",
            flag="--rank-table-version",
            choices=RANK_TABLE_VERSIONS,
        ),
    )
    node_selector: dict[str, str] = field(
        default_factory=dict,
        metadata=info(
            "Node selector",
            help="node labels the pods must match",
            group="Scheduling and faults",
            flag="--node-selector",
            metavar="KEY=VALUE",
        ),
    )
    flavour: str = field(
        default=DEFAULT_FLAVOUR,
        metadata=info(
            "Node flavour",
            help="the node type sizing is checked against",
            group="Resources",
            flag="--flavour",
        ),
    )
    task_name: str = field(
        default="",
        metadata=info(
            "Task name",
            help="the Volcano task name (empty: <job>-1)",
            group="Advanced",
            flag="--task-name",
            pattern=f"^$|{DNS1123_LABEL.pattern}",
        ),
    )
    hccl_algo: str = field(
        default="",
        metadata=info(
            "HCCL algorithm",
            help="HCCL_ALGO for the job, e.g. level0:NA;level1:NHR (empty: HCCL decides)",
            group="Advanced",
            flag="--hccl-algo",
            check=_hccl_algo,
        ),
    )
    parallel: ParallelSpec | None = field(
        default=None,
        metadata=info(
            "Parallel sizes",
            help="tensor/context/expert/pipeline parallel sizes; the layout preview costs each group",
            group="Advanced",
            flag="--parallel",
            metavar="tp=N,cp=N,ep=N,pp=N",
        ),
    )
    metric_patterns: list[str] = field(
        default_factory=list,
        metadata=info(
            "Metric patterns",
            help="regexes with named groups (step, loss, step_time_s, lr, ...) for the job's metrics",
            group="Advanced",
            flag="--metric-pattern",
            metavar="REGEX",
            check=_metric_patterns,
        ),
    )
    on_fault: str = field(
        default="",
        metadata=info(
            "On fault",
            help=ON_FAULT_TEXT,
            group="Scheduling and faults",
            flag="--on-fault",
            choices=ON_FAULT_PRESETS,
        ),
    )
    resume_args: str = field(
        default="",
        metadata=info(
            "Resume arguments",
            help="appended to the script's arguments to resume from a checkpoint, {path} and {step} filled, "
            "e.g. --load {path} (empty: the framework's own)",
            group="Scheduling and faults",
            flag="--resume-args",
            metavar="TEMPLATE",
        ),
    )
    network_topology: str = field(
        default="",
        metadata=info(
            "Network topology",
            help=NETWORK_TOPOLOGY_HELP,
            group="Scheduling and faults",
            flag="--network-topology",
            metavar="MODE:TIER",
            pattern=NETWORK_TOPOLOGY_PATTERN,
            example="hard:1",
            check=checked_network_topology,
        ),
    )
    avoid_nodes: list[str] = field(
        default_factory=list,
        metadata=info(
            "Nodes to avoid",
            help="node names the job must not run on (resume adds the nodes a fault was blamed on)",
            group="Scheduling and faults",
            flag="--avoid-node",
            metavar="NODE",
        ),
    )

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
        """Every field by name, records as objects: what ``from_dict`` reads back."""
        return asdict(self)

    to_json = to_dict

    @classmethod
    def from_dict(cls, data: Any) -> JobSpec:
        """Build from ``to_dict`` output (or a web form); missing optional fields take their defaults."""
        return read_record(cls, data, "spec")


def volume_from_dict(value: Any, where: str) -> VolumeSpec:
    """One volume from JSON (a profile's shared storage uses the same shape as `spec.volumes[i]`)."""
    return read_record(VolumeSpec, value, where)
