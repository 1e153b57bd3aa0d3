"""The cluster side of observability: where each rank runs, pod exits, pending reasons, and a follower
that archives a run's logs while feeding the core's RunObserver.

A run is one Volcano job uid. Its archive (``<state>/logs/<namespace>/<job>/<uid>/``) also stores the
rank layout, so a stopped or deleted job stays triageable.
"""

from __future__ import annotations

import threading
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ranktable.choice.routing import routing_plan
from ranktable.cluster.job_shape import job_uid, npus_per_pod, pod_names, run_created
from ranktable.cluster.results import pod_index
from ranktable.compose.manifests import RANK_TABLE_KEY, configmap_name, metric_patterns_of
from ranktable.errors import NotFoundError, RanktableError
from ranktable.hccl import parse_rank_table
from ranktable.home import ranktable_home
from ranktable.observe import ObserveSettings, RankLayout, RankPlace, RunObserver
from ranktable.observe.archive import RunArchive, RunInfo, read_run, run_meta
from ranktable.observe.pending import pending_reason
from ranktable.observe.text import kube_time
from ranktable.topology import topology_from_tor_file

if TYPE_CHECKING:
    from ranktable.cluster.client import ClusterClient
    from ranktable.cluster.runlog import RunLogs, Subscription

TOR_KEY = "ranktable_tor.json"


def archive_root(state_dir: str | Path | None = None) -> Path:
    return Path(state_dir) / "logs" if state_dir else ranktable_home() / "logs"


def pod_index_of(pod: str) -> int:
    """A Volcano pod's index, the last part of its name (`<job>-<task>-<index>`)."""
    tail = pod.rsplit("-", 1)[-1]
    return int(tail) if tail.isdigit() else 0


def rank_layout(
    client: ClusterClient, name: str, job: dict[str, Any], pods: list[dict[str, Any]]
) -> RankLayout:
    """Rank -> node rank, pod, server, NPU and leaf, from the completed (and, when routed, planned) rank
    table; pods numbered in order when the table is not complete yet."""
    npus = npus_per_pod(job)
    fallback = RankLayout.uniform(pod_names(name, job), npus)
    try:
        data = client.get_configmap(configmap_name(name)).get("data") or {}
        table = parse_rank_table(data.get(RANK_TABLE_KEY) or "", f"{configmap_name(name)}/{RANK_TABLE_KEY}")
    except RanktableError:
        return fallback
    if not table.completed:
        return fallback
    topology = None
    if TOR_KEY in data:
        try:
            topology = topology_from_tor_file(data[TOR_KEY])
        except RanktableError:
            topology = None
    planned = client.planned_node_ranks(name, job)  # {} unless the job routes
    if planned and topology is not None:
        from ranktable.cluster.client import job_env

        table = routing_plan(table, topology, job_env(job)).planned
    node_leaf = client.node_leaves()  # the names the layout view and `job describe` use
    by_host = {}
    for pod in pods:
        host = (pod.get("status") or {}).get("hostIP")
        if host:
            by_host[str(host)] = pod
    places = []
    for index, server in enumerate(table.servers):
        owner = by_host.get(server.server_id) or by_host.get(str(server.host_ip))
        if owner is None:
            continue
        pod_name = str(owner["metadata"]["name"])
        node_rank = planned.get(pod_name, pod_index(owner) if not planned else index)
        node = str((owner.get("spec") or {}).get("nodeName") or "")
        for device in server.devices:
            leaf = node_leaf.get(node)  # the names the layout view and `job describe` use
            if leaf is None and topology is not None:  # else the platform's ToR address
                leaf = topology.leaf_of(server.server_id, device.device_id)
            places.append(
                RankPlace(device.rank_id, node_rank, pod_name, server.server_id, device.device_id, leaf)
            )
    return RankLayout(places) if places else fallback


def pod_exits(observer: RunObserver, pods: list[dict[str, Any]], node_ranks: dict[str, int]) -> None:
    """Feed the pods' terminations (current or last) to the observer: exit 137/139/2, OOMKilled."""
    for pod in pods:
        name = str(pod["metadata"]["name"])
        for status in (pod.get("status") or {}).get("containerStatuses") or []:
            current = (status.get("state") or {}).get("terminated")
            if current:
                observer.pod_ended(name, kube_time(str(current.get("finishedAt") or "")))
            for term in (current, (status.get("lastState") or {}).get("terminated")):
                if term and term.get("exitCode") not in (None, 0):
                    when = kube_time(str(term.get("finishedAt") or ""))
                    observer.pod_exit(
                        name,
                        node_ranks.get(name, pod_index(pod)),
                        int(term["exitCode"]),
                        term.get("reason"),
                        when,
                    )


def volume_mounts(job: dict[str, Any]) -> tuple[str, ...]:
    """The mount paths of the job's containers (first task), for advice on a script path that is missing."""
    tasks = (job.get("spec") or {}).get("tasks") or []
    pod = ((tasks[0] if tasks else {}).get("template") or {}).get("spec") or {}
    paths = {
        str(mount.get("mountPath"))
        for container in pod.get("containers") or []
        for mount in container.get("volumeMounts") or []
        if mount.get("mountPath")
    }
    return tuple(sorted(paths))


def entry_script(job: dict[str, Any]) -> str | None:
    """The script the launcher runs (``ranktable launch ... -- SCRIPT ARGS``), as the job gave it."""
    from ranktable.compose.launchers import parse_launcher_command

    tasks = (job.get("spec") or {}).get("tasks") or []
    pod = ((tasks[0] if tasks else {}).get("template") or {}).get("spec") or {}
    for container in pod.get("containers") or []:
        argv = [str(a) for a in [*(container.get("command") or []), *(container.get("args") or [])]]
        entry = parse_launcher_command(argv)
        if entry is not None:
            return entry.script
    return None


def pending_info(
    client: ClusterClient, job: dict[str, Any], pods: list[dict[str, Any]]
) -> dict[str, Any] | None:
    """Why the job waits (None when all its pods are placed)."""
    phase = ((job.get("status") or {}).get("state") or {}).get("phase") or "Pending"
    unplaced = [p for p in pods if not (p.get("spec") or {}).get("nodeName")]
    if phase not in ("Pending", "Inqueue") and not unplaced:
        return None
    capacity = client.npu_capacity()
    queue_name = str((job.get("spec") or {}).get("queue") or "default")
    try:
        queue = client.kube.call(
            client.kube.custom.get_cluster_custom_object,
            "scheduling.volcano.sh",
            "v1beta1",
            "queues",
            queue_name,
            what=f"queue {queue_name}",
        )
    except NotFoundError:
        queue = None
    jobs = (
        client.kube.call(
            client.kube.custom.list_namespaced_custom_object,
            "batch.volcano.sh",
            "v1alpha1",
            client.namespace,
            "jobs",
            what="Volcano jobs",
        ).get("items")
        or []
    )
    labels = {
        str((n.get("metadata") or {}).get("name")): dict((n.get("metadata") or {}).get("labels") or {})
        for n in client.list_nodes()
    }
    return pending_reason(
        job=job,
        npus_per_pod=npus_per_pod(job),
        free_per_node=capacity.per_node,
        node_leaf=capacity.node_leaf,
        queue=queue,
        queue_jobs=jobs,
        total_per_node=capacity.total_per_node,
        node_labels=labels,
    )


class RunFollower:
    """Follows one run's logs into its archive and a RunObserver (a thread; ``stop()`` ends it)."""

    def __init__(
        self,
        client: ClusterClient,
        name: str,
        *,
        state_dir: str | Path | None = None,
        settings: ObserveSettings | None = None,
        follow: bool = True,
        on_update: Callable[[RunFollower], None] | None = None,
        observe: bool = True,
        logs: RunLogs | None = None,
        known: tuple[dict[str, Any], list[dict[str, Any]]] | None = None,
    ) -> None:
        self.client = client
        self.name = name
        # `known`: the job and pods a live watch holds (the server's job list): no second copy of 1,024
        # pods read from the API and kept for the follower's life (#28)
        self.job = known[0] if known is not None else client.get_job(name)
        self.uid = job_uid(self.job)
        self.pods = sorted(known[1], key=pod_index) if known is not None else client.job_pods(name)
        self.layout = rank_layout(client, name, self.job, self.pods)
        patterns = metric_patterns_of(self.job.get("metadata") or {})
        self.observer = RunObserver(self.layout, settings, patterns)
        self.observer.mounts = volume_mounts(self.job)  # named by a missing-script diagnosis
        self.observer.script = entry_script(self.job)
        self.follow = follow
        self.on_update = on_update
        self.root = archive_root(state_dir)
        self.observe = observe  # False: only archive (before a stop), no metrics or triage
        self.taken = 0  # lines archived by this follower
        self.lock = threading.Lock()  # the observer is fed by the stream thread and read by requests
        # following with `logs` (the server): the run's one shared stream, which archives; its
        # subscription replays the archive to the observer first, then every new line
        self._sub: Subscription | None = None
        if logs is not None and follow:
            self._sub = logs.subscribe(client, name, self.job, catch_up=True)
            self.archive = self._sub.archive
            self.archive_lock = self._sub.lock
            self._resume: dict[str, str] = {}
            self._set_layout()
        else:
            self.archive = RunArchive(
                self.root,
                client.namespace,
                name,
                self.uid or "unknown",
                dict(pod_names(name, self.job)),
                extra={
                    "patterns": patterns,
                    "layout": [p.to_json() for p in self.layout.by_rank.values()],
                    "npus_per_pod": npus_per_pod(self.job),
                    **run_created(self.job),
                },
            )
            self.archive_lock = threading.Lock()
            self._resume = self.archive.last_stamps()
            if observe:
                self._replay()
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self.done = threading.Event()
        self.caught_up = threading.Event()  # set at the first quiet second (the backlog is read)
        self.error: str | None = None

    def _replay(self) -> None:
        """What an earlier follower archived for this run feeds the observer first."""
        feed_archive(self.observer, self.root, self.archive.info())

    def run(self) -> None:
        """Read the logs (until they end when following), archiving and observing each batch."""
        try:
            source = self._sub or self.client.logs(self.name, follow=self.follow, previous=True)
            with source as stream:
                self._stream = stream
                for batch in stream.batches(idle=1.0):
                    if self._stop.is_set():
                        break
                    if batch:
                        self._take(batch)
                    else:
                        self.caught_up.set()
                    if self.on_update is not None:
                        self.on_update(self)
        except RanktableError as exc:
            self.error = str(exc)
        finally:
            with self.archive_lock:
                self.archive.flush()
            self.caught_up.set()
            self.done.set()

    def _take(self, batch: list[Any]) -> None:
        pod, node_rank = batch[0].pod, batch[0].node_rank
        if self._sub is not None:  # archived by the shared stream, each line once
            if node_rank is None:  # a routed job's plan not made yet: the layout's node rank
                places = self.layout.by_pod.get(pod)
                node_rank = places[0].node_rank if places else pod_index_of(pod)
            with self.lock:
                self.taken += len(batch)
                self.observer.feed(pod, node_rank, [(line.timestamp, line.text) for line in batch])
            return
        since = self._resume.get(pod)
        lines = [(line.timestamp, line.text) for line in batch if since is None or line.timestamp > since]
        if not lines:
            return
        self._resume.pop(pod, None)
        with self.lock:
            self.archive.append(pod, node_rank, lines)
            self.taken += len(lines)
            if self.observe:
                self.observer.feed(pod, node_rank, lines)

    def start(self) -> RunFollower:
        self._thread = threading.Thread(target=self.run, name=f"observe-{self.name}", daemon=True)
        self._thread.start()
        return self

    def stop(self) -> None:
        self._stop.set()
        stream = getattr(self, "_stream", None)
        if stream is not None:
            stream.close()
        if self._thread is not None:
            self._thread.join(timeout=5)
        if self._sub is not None:
            self._sub.close()  # the shared stream goes on for its other readers, and closes the archive
        else:
            self.archive.close()

    def set_phase(self, phase: str, ended: float | None = None) -> None:
        with self.archive_lock:
            self.archive.set_phase(phase, ended)

    def _set_layout(self) -> None:
        with self.archive_lock:
            self.archive.meta["layout"] = [p.to_json() for p in self.layout.by_rank.values()]

    def refresh_pods(self, watched: list[dict[str, Any]] | None = None) -> list[dict[str, Any]]:
        """The pods again: `watched` as a live watch holds them (no API list: at 1,024 pods one cost the
        server ~0.5 s of CPU and the API server more, on every diagnosis poll), else read from the API."""
        self.pods = sorted(watched, key=pod_index) if watched is not None else self.client.job_pods(self.name)
        self._place()
        return self.pods

    def _place(self) -> None:
        """A follower that started before the rank table was complete (or the pods placed) numbered the
        ranks by pod order, with no server or leaf: take the real layout once there is one."""
        if any(p.server is not None for p in self.layout.by_rank.values()):
            return
        layout = rank_layout(self.client, self.name, self.job, self.pods)
        if not any(p.server is not None for p in layout.by_rank.values()):
            return
        with self.lock:
            self.layout = self.observer.layout = layout
        self._set_layout()


def feed_archive(observer: RunObserver, root: Path, run: RunInfo) -> None:
    """Feed an archived run's lines to an observer, pod by pod in batches."""
    batch: list[tuple[str, str]] = []
    current: tuple[str, int] | None = None
    for pod, node_rank, stamp, text in read_run(root, run):
        if (current != (pod, node_rank) or len(batch) >= 500) and batch and current:
            observer.feed(current[0], current[1], batch)
            batch = []
        current = (pod, node_rank)
        batch.append((stamp, text))
    if batch and current:
        observer.feed(current[0], current[1], batch)


def archived_observer(root: Path, run: RunInfo, settings: ObserveSettings | None = None) -> RunObserver:
    """A RunObserver fed from an archived run (its stored layout locates the ranks)."""
    meta = run_meta(root, run)
    places = [RankPlace(**p) for p in meta.get("layout") or [] if isinstance(p, dict)]
    patterns = [str(p) for p in meta.get("patterns") or []]
    observer = RunObserver(RankLayout(places), settings, patterns)
    feed_archive(observer, root, run)
    return observer
