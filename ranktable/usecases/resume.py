"""Resume a failed run by hand: its last checkpoint, minus the nodes its diagnosis blamed, as the next run.

The new run is the same spec with the framework's resume arguments appended to the script's arguments,
node anti-affinity for the node a hardware-class fault was seen on (NPU, link, heartbeat, ECC, RoCE), and
labels linking it to the run it resumes and to the first run of its lineage.
"""

from __future__ import annotations

import re
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ranktable.compose.argv import shell_words
from ranktable.compose.manifests import compose
from ranktable.compose.spec import JobSpec
from ranktable.errors import NotFoundError, RanktableError
from ranktable.limits import KEEP_LOGS_S
from ranktable.observe.checkpoints import Checkpoint, last_checkpoint

if TYPE_CHECKING:
    from ranktable.cluster.client import ClusterClient

LINEAGE_LABEL = "ranktable.io/lineage"  # the uid of the lineage's first run
RESUMED_FROM_LABEL = "ranktable.io/resumed-from"  # the uid of the run this one resumes
#: a failure caused by the hardware under a rank (so its node is avoided), by catalogue code or line
HARDWARE_CODES = frozenset({"ROCE_LINK_DOWN", "DEVICE_IP_UNREACHABLE", "EJ0001"})
HARDWARE_LINE = re.compile(r"lost heartbeat|heartbeat lost|LINK DOWN|link down|\bECC\b|RoCE|HBM", re.I)


def blamed_node(client: ClusterClient, name: str, diagnosis: dict[str, Any]) -> tuple[str | None, str]:
    """(node, why) for the first failing rank when the cause is the hardware, else (None, why not)."""
    first = diagnosis.get("first_failure") or None
    if first is None:
        return None, "no failing rank"
    pod = first.get("pod")
    rank_errors = [e for e in diagnosis.get("errors") or [] if e.get("pod") == pod] or [first]
    hardware = any(
        e.get("code") in HARDWARE_CODES
        or "HEARTBEAT" in str(e.get("code"))
        or HARDWARE_LINE.search(e.get("line") or "")
        for e in rank_errors
    )
    if not hardware:
        return None, f"the first failure ({first.get('code')}) is not a hardware fault"
    node = _node_of(client, name, str(pod or ""))
    if node is None:
        return None, f"the node of pod {pod} is no longer known"
    return node, f"rank {first.get('rank')} on NPU {first.get('device')}: {first.get('code')}"


def _node_of(client: ClusterClient, name: str, pod: str) -> str | None:
    try:
        pods = client.job_pods(name)
    except RanktableError:
        return None
    for p in pods:
        if (p.get("metadata") or {}).get("name") == pod:
            return str((p.get("spec") or {}).get("nodeName") or "") or None
    return None


def resumed_spec(spec: JobSpec, checkpoint: Checkpoint | None, avoid: list[str], uid: str) -> JobSpec:
    """`spec` as the next run of its lineage: resume arguments appended, `avoid` nodes excluded."""
    labels = {**spec.labels, LINEAGE_LABEL: spec.labels.get(LINEAGE_LABEL) or uid, RESUMED_FROM_LABEL: uid}
    avoid_nodes = sorted({*spec.avoid_nodes, *avoid})
    resumed = replace(spec, labels=labels, avoid_nodes=avoid_nodes)
    if checkpoint is None:
        return resumed
    extra = shell_words(checkpoint.resume_args(spec.resume_args or None), "spec.resume_args")
    if spec.entry is not None:
        return replace(resumed, entry=replace(spec.entry, args=[*spec.entry.args, *extra]))
    return replace(resumed, command=[*spec.command, *extra])


def resume(
    client: ClusterClient,
    name: str,
    *,
    from_scratch: bool = False,
    state_dir: str | Path | None = None,
    keep_logs_s: float = KEEP_LOGS_S,
    timeout: float = 30.0,
) -> dict[str, Any]:
    """Resubmit job `name`'s latest run from its last checkpoint, avoiding the node a hardware fault was
    blamed on; `from_scratch` allows it without a checkpoint. The result's `message` says what was done."""
    from ranktable.usecases.observe import archived_lines, observe_run
    from ranktable.usecases.runs import _cluster_spec, recorded_spec, stop_job

    try:
        current: dict[str, Any] | None = client.get_job(name)
    except NotFoundError:
        current = None
    observation = observe_run(client, name, state_dir=state_dir)  # live logs read once and archived
    uid = observation.uid
    spec = _cluster_spec(client, name, current) if current is not None else None
    if spec is None:
        spec = recorded_spec(client.namespace, name, uid[:8], state_dir)
    lines = archived_lines(client.namespace, name, uid, state_dir=state_dir)
    checkpoint = last_checkpoint(line["text"] for line in lines)
    if checkpoint is None and not from_scratch:
        raise RanktableError(
            f"run {uid[:8]} of job {name} logged no finished checkpoint save",
            where=name,
            fix="resume with --from-scratch to start it again from step 0",
        )
    node, why = blamed_node(client, name, observation.diagnosis())
    new_spec = resumed_spec(spec, checkpoint, [node] if node else [], uid)
    if current is not None:
        stop_job(
            client, name, state_dir=None if state_dir is None else str(state_dir), keep_logs_s=keep_logs_s
        )
        client.wait_deleted(name, timeout)
    submitted = client.submit(compose(new_spec)).to_json()
    start = f"from checkpoint step {checkpoint.step} ({checkpoint.path})" if checkpoint else "from scratch"
    avoided = f"excluding {node} ({why})" if node else f"excluding no node ({why})"
    lineage = new_spec.labels[LINEAGE_LABEL]
    message = f"resumed {name} {start}, {avoided}; the next run of lineage {lineage[:8]} after {uid[:8]}"
    return {
        **submitted,
        "message": message,
        "checkpoint": None if checkpoint is None else {"step": checkpoint.step, "path": checkpoint.path},
        "avoided": new_spec.avoid_nodes,
        "resumed_from": uid,
        "lineage": lineage,
    }
