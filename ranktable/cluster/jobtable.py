"""The live job table of one namespace, kept by watches instead of re-reading every pod each second.

A row joins three resources: the Volcano job, its pods (health, ready/total) and its rank-table ConfigMap
(initializing / completed). Each is watched from the resourceVersion of its list (`kube.watch`: resumed
after a dropped stream, relisted after 410 Gone or a reconnect), so the API server sends only what changed;
a row is recomputed only when one of its three inputs changed. A 1,024-pod job costs one pod list when the
table starts, then one small event per pod change.

A Job view's overview (`describe`) is answered from the same table: the first one asked starts two more
watches, the namespace's events and the nodes (their leaf switches read again when a node changes), and
each job's description is built once per change of its inputs (`describe` returns it with a version: the
same version means the same description), not from a list of every node and event every 2 s.
"""

from __future__ import annotations

import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Iterator
from functools import partial
from typing import TYPE_CHECKING, Any

from ranktable.cluster.job_shape import slimmed_pod
from ranktable.cluster.kube import WatchEvent, interrupt, watch
from ranktable.cluster.results import JobSummary, _age
from ranktable.compose.names import CONFIGMAP_PREFIX, RANK_TABLE_KEY
from ranktable.errors import RanktableError
from ranktable.hccl import check_document

if TYPE_CHECKING:
    from ranktable.cluster.client import ClusterClient

JOB_LABEL = "volcano.sh/job-name"
ROW_KINDS = frozenset({"jobs", "pods", "configmaps"})  # the row watches (the overview's two come on demand)
# the switch tree may come from objects no watch follows (HyperNodes, a ConfigMap): read again this often
LEAVES_SECONDS = 10.0
# events arriving together (1,024 pods starting) become one recomputation: well inside the 2 s promise
SETTLE_SECONDS = 0.15


def rank_table_state(configmap: dict[str, Any] | None) -> str:
    """initializing / completed / ... of a rank-table ConfigMap, "missing" without one (as `job list`)."""
    if configmap is None:
        return "missing"
    text = (configmap.get("data") or {}).get(RANK_TABLE_KEY) or ""
    try:
        report = check_document(text, RANK_TABLE_KEY)
    except RanktableError:
        return "unreadable"
    return str(report.table_status or report.status)


def _name(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("name") or "")


def _version(obj: dict[str, Any]) -> str:
    return str((obj.get("metadata") or {}).get("resourceVersion") or "")


def _key(obj: dict[str, Any]) -> str:
    meta = obj.get("metadata") or {}
    return str(meta.get("uid") or f"{meta.get('namespace')}/{meta.get('name')}")


def _applied(
    store: dict[str, dict[str, Any]], event: WatchEvent, key: Callable[[dict[str, Any]], str]
) -> dict[str, dict[str, Any]]:
    """A watched collection after one event: a LIST replaces it, a deletion drops the object."""
    if event.type == "LIST":
        return {key(obj): obj for obj in event.obj.get("items") or []}
    if event.type == "DELETED":
        store.pop(key(event.obj), None)
    else:
        store[key(event.obj)] = event.obj
    return store


def _stale(leaves: tuple[int, float, dict[str, str], int], nodes_version: int) -> bool:
    return leaves[0] != nodes_version or time.monotonic() - leaves[1] > LEAVES_SECONDS


def _job_of_pod(pod: dict[str, Any]) -> str:
    return str(((pod.get("metadata") or {}).get("labels") or {}).get(JOB_LABEL) or "")


class JobTable:
    """Rows like `Jobs.job_rows`, followed by three watches and shared by every subscriber of a namespace.

    `start()` starts the watches and a thread that recomputes the changed rows; `follow()` yields the rows
    to one subscriber on each change; `close()` ends the watches at once (their blocked reads are shut down).
    """

    def __init__(self, client: ClusterClient, settle: float = SETTLE_SECONDS) -> None:
        self.client = client
        self.settle = settle
        self.stop = threading.Event()
        self.users = 0  # subscribers (kept by the owner, which closes the table when the last leaves)
        self.rows: list[dict[str, Any]] = []
        self.version = 0  # bumped whenever `rows` changed
        self.error: BaseException | None = None
        self._published = threading.Condition()
        self._lock = threading.Lock()
        self._changed = threading.Event()
        self._jobs: dict[str, dict[str, Any]] = {}
        self._pods: dict[str, dict[str, dict[str, Any]]] = {}  # job name -> pod name -> pod
        self._tables: dict[str, str] = {}  # job name -> rank-table state
        self._table_versions: dict[str, str] = {}  # job name -> ConfigMap resourceVersion (state cached)
        self._dirty: set[str] = set()
        self._listed: set[str] = set()  # which of the three watches have their first list
        self._responses: set[Any] = set()
        self.recomputed: Counter[str] = Counter()  # rows computed per job: only what changed is recomputed
        # the overview's watches (started by the first `describe`): events of the namespace, the nodes
        self._overview_started = False
        self.overview_error: BaseException | None = None
        self._events: dict[str, dict[str, Any]] = {}
        self._nodes: dict[str, dict[str, Any]] = {}
        self._events_version = 0
        self._nodes_version = 0
        self._leaves: tuple[int, float, dict[str, str], int] = (
            -1,
            0.0,
            {},
            0,
        )  # (nodes version, when, leaves, hash)
        self._described: dict[
            str, tuple[tuple[Any, ...], int, dict[str, Any]]
        ] = {}  # job -> (inputs, seq, it)
        self._built = 0
        # versions are this table's (a random prefix): a browser's ETag from before a server restart, or
        # from another table, never matches a description built here
        self._etag_prefix = uuid.uuid4().hex[:12]
        self.described: Counter[str] = Counter()  # descriptions built per job: only when an input changed

    # -- the three watches --------------------------------------------------------------------------
    def start(self) -> None:
        from ranktable.cluster.client import GROUP, PLURAL, VERSION

        kube, ns = self.client.kube, self.client.namespace
        self._watch(
            "jobs",
            self._on_job,
            kube.custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            ns,
            PLURAL,
            what=f"Volcano jobs in {ns}",
        )
        self._watch(
            "pods",
            self._on_pod,
            kube.core.list_namespaced_pod,
            ns,
            what=f"pods in {ns}",
            label_selector=JOB_LABEL,
        )
        self._watch(
            "configmaps",
            self._on_configmap,
            kube.core.list_namespaced_config_map,
            ns,
            what=f"ConfigMaps in {ns}",
        )
        threading.Thread(target=self._publish, name="ranktable-jobtable-rows", daemon=True).start()

    def close(self) -> None:
        """Stop the watches now: their blocked reads are shut down, so no thread or connection lingers."""
        self.stop.set()
        with self._lock:
            responses = list(self._responses)
        for resp in responses:
            interrupt(resp)
        with self._published:
            self._published.notify_all()

    def _watch(
        self,
        kind: str,
        apply: Callable[[WatchEvent], None],
        list_fn: Callable[..., Any],
        *args: Any,
        fail: Callable[[BaseException], None] | None = None,
        **kw: Any,
    ) -> None:
        def on_response(resp: Any) -> None:
            with self._lock:
                self._responses = {r for r in self._responses if not getattr(r, "closed", False)}
                self._responses.add(resp)

        def run() -> None:
            try:
                for event in watch(
                    self.client.kube,
                    list_fn,
                    *args,
                    stop=self.stop,
                    on_response=on_response,
                    whole_lists=True,
                    strict=True,
                    **kw,
                ):
                    with self._lock:
                        apply(event)
                        if event.type == "LIST":
                            self._listed.add(kind)
                    self._changed.set()
            except BaseException as exc:  # reported by snapshots(): the subscriber sees the reason
                if not self.stop.is_set():
                    (fail or self._fail)(exc)

        threading.Thread(target=run, name=f"ranktable-jobtable-{kind}", daemon=True).start()

    # -- applying events (under the lock) ------------------------------------------------------------
    def _on_job(self, event: WatchEvent) -> None:
        if event.type == "LIST":
            self._dirty |= set(self._jobs)
            self._jobs = {_name(j): j for j in event.obj.get("items") or []}
            self._dirty |= set(self._jobs)
        elif event.type == "DELETED":
            self._jobs.pop(_name(event.obj), None)
            self._described.pop(_name(event.obj), None)
            self._dirty.add(_name(event.obj))
        else:
            self._jobs[_name(event.obj)] = event.obj
            self._dirty.add(_name(event.obj))

    def _on_pod(self, event: WatchEvent) -> None:
        if event.type == "LIST":
            self._dirty |= set(self._pods)
            self._pods = {}
            for pod in event.obj.get("items") or []:
                self._pods.setdefault(_job_of_pod(pod), {})[_name(pod)] = slimmed_pod(pod)
            self._dirty |= set(self._pods)
            return
        job = _job_of_pod(event.obj)
        pods = self._pods.setdefault(job, {})
        if event.type == "DELETED":
            pods.pop(_name(event.obj), None)
        else:
            pods[_name(event.obj)] = slimmed_pod(event.obj)
        self._dirty.add(job)

    def _on_configmap(self, event: WatchEvent) -> None:
        if event.type == "LIST":
            self._dirty |= set(self._tables)
            self._tables, versions, self._table_versions = {}, self._table_versions, {}
            for cm in event.obj.get("items") or []:
                self._set_table(cm, versions)
            self._dirty |= set(self._tables)
            return
        name = _name(event.obj)
        if not name.startswith(CONFIGMAP_PREFIX):
            return
        job = name.removeprefix(CONFIGMAP_PREFIX)
        if event.type == "DELETED":
            self._tables.pop(job, None)
            self._table_versions.pop(job, None)
            self._dirty.add(job)
        else:
            self._set_table(event.obj, self._table_versions)

    def _set_table(self, cm: dict[str, Any], cached: dict[str, str]) -> None:
        name = _name(cm)
        if not name.startswith(CONFIGMAP_PREFIX):
            return
        job = name.removeprefix(CONFIGMAP_PREFIX)
        version = str((cm.get("metadata") or {}).get("resourceVersion") or "")
        if version and cached.get(job) == version and job in self._tables:
            state = self._tables[job]  # unchanged since the last list: not validated again
        else:
            state = rank_table_state(cm)
        self._tables[job] = state
        self._table_versions[job] = version
        self._dirty.add(job)

    def job_and_pods(self, name: str) -> tuple[dict[str, Any], list[dict[str, Any]]] | None:
        """The job and its pods as the watches hold them now; None unless the table is live and has the job
        (then the caller reads the API: a job not seen yet, or a failed table, is not answered from here)."""
        with self._lock:
            if not self._live():
                return None
            job = self._jobs.get(name)
            if job is None:
                return None
            return job, list((self._pods.get(name) or {}).values())

    def _live(self) -> bool:
        return self._listed >= ROW_KINDS and self.error is None and not self.stop.is_set()

    # -- the overview (a Job view's `describe`) --------------------------------------------------------
    def _start_overview(self) -> None:
        with self._lock:
            if self._overview_started:
                return
            self._overview_started = True
        kube, ns = self.client.kube, self.client.namespace
        self._watch(
            "events",
            self._on_event,
            kube.core.list_namespaced_event,
            ns,
            what=f"events in {ns}",
            fail=self._fail_overview,
        )
        self._watch("nodes", self._on_node, kube.core.list_node, what="nodes", fail=self._fail_overview)

    def _fail_overview(self, exc: BaseException) -> None:
        """The overview's watches failed (e.g. nodes not readable): the job list goes on, `describe` reads
        the API again."""
        with self._lock:
            self.overview_error = exc

    def _on_event(self, event: WatchEvent) -> None:
        self._events_version += 1
        self._events = _applied(self._events, event, _key)

    def _on_node(self, event: WatchEvent) -> None:
        self._nodes_version += 1
        self._nodes = _applied(self._nodes, event, _name)

    def describe(self, name: str) -> tuple[str, dict[str, Any]] | None:
        """(version, description) of job `name` from the watches, built again only when its job, pods, rank
        table, the namespace's events or the nodes' leaves changed (the same version: the same description);
        None when the table cannot answer (not live, the job not in it, the overview's watches not listed
        yet or failed): the caller reads the API. The first call starts the overview's watches."""
        from ranktable.cluster.client import describe_job, job_events, node_leaves

        self._start_overview()
        with self._lock:
            if not self._live() or self.overview_error is not None or not {"events", "nodes"} <= self._listed:
                return None
            nodes_version = self._nodes_version
            nodes = list(self._nodes.values()) if _stale(self._leaves, nodes_version) else None
        if nodes is not None:  # the switch tree once per node change (or LEAVES_SECONDS), not per call
            leaves = node_leaves(self.client.kube, nodes)
            with self._lock:
                self._leaves = (nodes_version, time.monotonic(), leaves, hash(frozenset(leaves.items())))
        with self._lock:
            job = self._jobs.get(name)
            if job is None:
                return None
            pods = list((self._pods.get(name) or {}).values())
            table = self._tables.get(name, "missing")
            leaves, digest = self._leaves[2], self._leaves[3]
            inputs = (_version(job), tuple(_version(p) for p in pods), table, self._events_version, digest)
            cached = self._described.get(name)
            events = list(self._events.values()) if cached is None or cached[0] != inputs else []
        if cached is not None and cached[0] == inputs:
            seq, out = cached[1], cached[2]
        else:
            out = describe_job(
                job,
                pods,
                job_events(job, pods, events),
                leaves,
                table,
                lambda: self.client.npu_capacity(leaves),
            ).to_json()
            with self._lock:
                self._built += 1
                seq = self._built
                self._described[name] = (inputs, seq, out)
            self.described[name] += 1
        out = {**out, "job": {**out["job"], "age_seconds": _age(out["job"].get("created"))}}
        return f"{self._etag_prefix}-{seq}", out

    # -- rows --------------------------------------------------------------------------------------------
    def _fail(self, exc: BaseException) -> None:
        with self._published:
            if self.error is None:
                self.error = exc
            self._published.notify_all()
        self._changed.set()

    def _publish(self) -> None:
        try:
            self._recompute_rows()
        except BaseException as exc:  # a bug here must reach the subscribers, not hang them
            self._fail(exc)

    def _recompute_rows(self) -> None:
        """Wait for all three lists, then recompute the rows whose inputs changed and publish the table."""
        rows: dict[str, dict[str, Any]] = {}
        sent = False
        while not self.stop.is_set() and self.error is None:
            self._changed.wait(0.5)
            with self._lock:
                ready = self._listed >= ROW_KINDS
            if not ready or not self._changed.is_set():
                continue
            self.stop.wait(self.settle)  # let a burst of events land: one recomputation for all of them
            self._changed.clear()
            with self._lock:
                dirty, self._dirty = self._dirty, set()
                inputs = {
                    name: (self._jobs.get(name), list((self._pods.get(name) or {}).values()))
                    for name in dirty
                }
                tables = dict(self._tables)
            changed = False
            for name, (job, pods) in inputs.items():
                if job is None:
                    changed |= rows.pop(name, None) is not None
                    continue
                row: dict[str, Any] = JobSummary.from_job(job, pods).to_json()
                row["rank_table"] = tables.get(name, "missing")
                self.recomputed[name] += 1
                old = rows.get(name)
                if old is None or {**old, "age_seconds": None} != {**row, "age_seconds": None}:
                    rows[name] = row
                    changed = True
            if changed or not sent:
                sent = True
                with self._published:
                    self.rows = [rows[n] for n in sorted(rows)]
                    self.version += 1
                    self._published.notify_all()

    def _news(self, seen: int) -> bool:
        return self.version != seen or self.error is not None or self.stop.is_set()

    def follow(self, stop: threading.Event) -> Iterator[list[dict[str, Any]]]:
        """The rows once all three lists are in, then again whenever a row changed (ages fresh in each)."""
        seen = 0
        while not stop.is_set():
            with self._published:
                self._published.wait_for(partial(self._news, seen), 0.25)
                error, version, rows = self.error, self.version, self.rows
            if error is not None:
                raise error
            if self.stop.is_set():
                return
            if version != seen:
                seen = version
                yield [{**r, "age_seconds": _age(r.get("created"))} for r in rows]
