"""Resume a failed run by hand: its last checkpoint, minus the nodes its diagnosis blamed, as the next run.

The new run is the same spec with the framework's resume arguments appended to the script's arguments,
node anti-affinity for the node a hardware-class fault was seen on (NPU, link, heartbeat, ECC, RoCE), and
labels linking it to the run it resumes and to the first run of its lineage.
"""

from __future__ import annotations

import contextlib
import re
import time
from dataclasses import replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ranktable.compose.argv import shell_words
from ranktable.compose.manifests import compose
from ranktable.compose.spec import JobSpec
from ranktable.errors import NotFoundError, RanktableError
from ranktable.limits import KEEP_LOGS_S
from ranktable.observe.checkpoints import Checkpoint, last_checkpoint
from ranktable.observe.lineage import (
    LINEAGE_LABEL,
    RESUMED_BY_LABEL,
    RESUMED_FROM_LABEL,
    RESUMED_STEP_LABEL,
)

if TYPE_CHECKING:
    from ranktable.cluster.client import ClusterClient
    from ranktable.observe import ObserveSettings

__all__ = ["LINEAGE_LABEL", "RESUMED_BY_LABEL", "RESUMED_FROM_LABEL", "RESUMED_STEP_LABEL", "resume"]
#: a failure caused by the hardware under a rank (so its node is avoided), by catalogue code or line
POD_GRACE_S = 120.0  # a real kubelet's grace period (30 s) and its teardown, with room
HARDWARE_CODES = frozenset({"ROCE_LINK_DOWN", "DEVICE_IP_UNREACHABLE", "EJ0001"})
HARDWARE_LINE = re.compile(r"lost heartbeat|heartbeat lost|LINK DOWN|link down|\bECC\b|RoCE|HBM", re.I)


def blamed_node(client: ClusterClient, name: str, diagnosis: dict[str, Any]) -> tuple[str | None, str]:
    """(node, why) for the first failing rank when the cause is the hardware, else (None, why not)."""
    first = diagnosis.get("first_failure") or None
    if first is None:
        return _hung_node(client, name, diagnosis)
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


def _hung_node(client: ClusterClient, name: str, diagnosis: dict[str, Any]) -> tuple[str | None, str]:
    """A hang blames a node only when every hung rank is on it (one node's NPUs stopped answering)."""
    hung = diagnosis.get("hung") or []
    pods = {h.get("pod") for h in hung}
    if not hung:
        return None, "no failing rank"
    if len(pods) != 1 or None in pods:
        return None, f"{len(hung)} hung rank(s) on {len(pods)} pods: no one node to blame"
    node = _node_of(client, name, str(next(iter(pods))))
    if node is None:
        return None, "the node of the hung ranks is no longer known"
    return node, f"rank(s) {', '.join(str(h.get('rank')) for h in hung[:8])} hung"


def fault_record(
    node: str | None, diagnosis: dict[str, Any], progress: dict[int, tuple[float, int | None]]
) -> dict[str, Any]:
    """What the lineage keeps of a run's fault: where (node, NPU, rank), what (code), when, and the step
    the failing rank had reached (the steps after the checkpoint up to it are trained again)."""
    from ranktable.observe.text import kube_time

    first = diagnosis.get("first_failure") or {}
    hung = (diagnosis.get("hung") or [{}])[0] if not first else {}
    entry = first or hung
    when = kube_time(str(entry.get("time") or "")) if entry.get("time") else None
    steps = [step for _, step in progress.values() if step is not None]
    rank = entry.get("rank")
    step = progress.get(rank, (0.0, None))[1] if isinstance(rank, int) else None
    return {
        "node": node,
        "device": entry.get("device"),
        "rank": rank,
        "code": first.get("code") if first else ("HANG" if hung else None),
        "time": when,
        "step": step if step is not None else (max(steps) if steps else None),
    }


def _node_of(client: ClusterClient, name: str, pod: str) -> str | None:
    try:
        pods = client.job_pods(name)
    except RanktableError:
        return None
    for p in pods:
        if (p.get("metadata") or {}).get("name") == pod:
            return str((p.get("spec") or {}).get("nodeName") or "") or None
    return None


def resumed_spec(
    spec: JobSpec, checkpoint: Checkpoint | None, avoid: list[str], uid: str, by: str = "hand"
) -> JobSpec:
    """`spec` as the next run of its lineage: resume arguments appended, `avoid` nodes excluded."""
    labels = {
        **spec.labels,
        LINEAGE_LABEL: spec.labels.get(LINEAGE_LABEL) or uid,
        RESUMED_FROM_LABEL: uid,
        RESUMED_BY_LABEL: by,
    }
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
    by: str = "hand",
    labels: dict[str, str] | None = None,
    settings: ObserveSettings | None = None,
) -> dict[str, Any]:
    """Resubmit job `name`'s latest run from its last checkpoint, avoiding the node a hardware fault was
    blamed on; `from_scratch` allows it without a checkpoint. The result's `message` says what was done.

    Both runs' records keep the link for the lineage: the fault blamed on the old run (node, NPU, code,
    when, its last step), and on the new one the run it resumed, the checkpoint step and `by` (hand/auto).
    """
    from ranktable.cluster.observing import archive_root
    from ranktable.observe.archive import record_run
    from ranktable.usecases.observe import archived_lines, observe_run
    from ranktable.usecases.runs import _cluster_spec, recorded_spec

    try:
        current: dict[str, Any] | None = client.get_job(name)
    except NotFoundError:
        current = None
    # live logs read once and archived; `settings`: the caller's (the server's hang thresholds...)
    observation = observe_run(client, name, state_dir=state_dir, settings=settings)
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
    diagnosis = observation.diagnosis()
    node, why = blamed_node(client, name, diagnosis)
    with observation.lock:
        progress = dict(observation.observer.progress)
    fault = fault_record(node, diagnosis, progress)
    if current is not None:
        checkpoint = _stop_for_resume(client, name, uid, checkpoint, state_dir, keep_logs_s, timeout)
    new_spec = resumed_spec(spec, checkpoint, [node] if node else [], uid, by)
    extra = {**(labels or {})}
    if checkpoint is not None:
        extra[RESUMED_STEP_LABEL] = str(checkpoint.step)
    new_spec = replace(new_spec, labels={**new_spec.labels, **extra})
    root = archive_root(state_dir)
    record_run(root, client.namespace, name, uid, fault=fault)
    submitted = client.submit(compose(new_spec)).to_json()
    resumed = {
        "from_run": uid,
        "checkpoint_step": None if checkpoint is None else checkpoint.step,
        "by": by,
        "avoided": new_spec.avoid_nodes,
        "at": time.time(),
    }
    if submitted.get("uid"):
        record_run(root, client.namespace, name, str(submitted["uid"]), resumed=resumed, created=time.time())
    return _resumed(name, submitted, new_spec, checkpoint, (node, why), uid, by, fault)


def _stop_for_resume(
    client: ClusterClient,
    name: str,
    uid: str,
    checkpoint: Checkpoint | None,
    state_dir: str | Path | None,
    keep_logs_s: float,
    timeout: float,
) -> Checkpoint | None:
    """Stop the running job (its logs archived) and wait for its pods to go; the last checkpoint then."""
    from ranktable.usecases.observe import archived_lines
    from ranktable.usecases.runs import stop_job

    stop_job(client, name, state_dir=None if state_dir is None else str(state_dir), keep_logs_s=keep_logs_s)
    client.wait_deleted(name, timeout)
    # the new run's pods take the old names: its logs must not be the old pods' last lines (submitted
    # anyway after the wait: Volcano creates the new pods once the names are free)
    with contextlib.suppress(RanktableError):
        client.wait_pods_gone(name, max(timeout, POD_GRACE_S))
    if checkpoint is not None:  # a run still training may have saved again before it stopped
        lines = archived_lines(client.namespace, name, uid, state_dir=state_dir)
        checkpoint = last_checkpoint(line["text"] for line in lines) or checkpoint
    return checkpoint


def _resumed(
    name: str,
    submitted: dict[str, Any],
    new_spec: JobSpec,
    checkpoint: Checkpoint | None,
    blamed: tuple[str | None, str],
    uid: str,
    by: str,
    fault: dict[str, Any],
) -> dict[str, Any]:
    """The resume's answer: the submitted job, the one-line `message` and the lineage's links."""
    node, why = blamed
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
        "by": by,
        "fault": fault,
    }
