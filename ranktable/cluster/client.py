"""ClusterClient: submit, list, describe, wait for, watch, stop, stream and lay out ranktable jobs.

One instance per (kubeconfig, context, namespace), on `ranktable.cluster.transport` (the kubeconfig read as
kubectl reads it) and ``_request_timeout`` on every call. Results are small dataclasses with ``to_json()`` so
the CLI and the Jupyter server extension print or serve the same thing.
"""

from __future__ import annotations

import threading
import time
from collections.abc import Callable, Iterator
from typing import TYPE_CHECKING, Any, cast

from ranktable.cluster.describe import NpuCapacity, event_hint, npu_capacity
from ranktable.cluster.job_shape import slimmed_pod
from ranktable.cluster.kube import DEFAULT_TIMEOUT, Kube, WatchEvent, api_error, new_api_client, watch
from ranktable.cluster.results import (
    EventInfo,
    JobDescription,
    JobSummary,
    PhaseChange,
    PodInfo,
    RankTableResult,
    SubmitResult,
    pod_index,
)
from ranktable.cluster.transport import ApiException
from ranktable.compose.names import NPU_RESOURCE, RANK_TABLE_KEY, ROUTE_ENV, configmap_name
from ranktable.errors import ConflictError, InputError, NotFoundError, RanktableError
from ranktable.launch.launcher import ROUTING_MIN_NODES, TOR_FILE
from ranktable.observe.health import pod_health
from ranktable.observe.text import kube_time
from ranktable.plan.forecast import NODE_CHOICE_ANNOTATION, SCHEDULER_CONFIGMAP, SCHEDULER_NAMESPACE

if TYPE_CHECKING:
    from ranktable.cluster.logs import LogStream

GROUP, VERSION, PLURAL = "batch.volcano.sh", "v1alpha1", "jobs"
DEVICE_ANNOTATION = "cce.kubectl.kubernetes.io/ascend-1980-configuration"
TOR_KEY = TOR_FILE
TERMINAL_PHASES = ("Completed", "Failed", "Aborted", "Terminated")
Progress = Callable[[str], None]

POD_GONE_POLL_SECONDS = 0.5
DELETE_RECHECK_SECONDS = 3.0


def _quiet(_: str) -> None:
    return None


def job_env(job: dict[str, Any]) -> dict[str, str]:
    """The literal env values of the job's (first) container: what the launcher's `route` sees."""
    tasks = (job.get("spec") or {}).get("tasks") or [{}]
    containers = ((tasks[0].get("template") or {}).get("spec") or {}).get("containers") or [{}]
    return {str(e.get("name")): str(e["value"]) for e in containers[0].get("env") or [] if "value" in e}


def _routes(job: dict[str, Any]) -> bool:
    """Whether the job's pods apply the route plan (ROUTE_PLAN=true and enough nodes for it)."""
    task = (job.get("spec") or {}).get("tasks", [{}])[0]
    container = ((task.get("template") or {}).get("spec") or {}).get("containers", [{}])[0]
    on = any(
        e.get("name") == ROUTE_ENV and str(e.get("value", "")).lower() == "true"
        for e in container.get("env") or []
    )
    return on and int(task.get("replicas") or 1) >= ROUTING_MIN_NODES


class ClusterClient:
    def __init__(
        self,
        kubeconfig: str | None = None,
        context: str | None = None,
        namespace: str = "default",
        timeout: tuple[float, float] = DEFAULT_TIMEOUT,
    ) -> None:
        self.namespace = namespace
        self.kube = Kube(new_api_client(kubeconfig, context), timeout)

    # -- plumbing ---------------------------------------------------------------------------------
    def _call(self, fn: Callable[..., Any], *args: Any, what: str, **kwargs: Any) -> dict[str, Any]:
        return self.kube.call(fn, *args, what=what, **kwargs)

    def get_job(self, name: str) -> dict[str, Any]:
        return self._call(
            self.kube.custom.get_namespaced_custom_object,
            GROUP,
            VERSION,
            self.namespace,
            PLURAL,
            name,
            what=f"job {name} in {self.namespace}",
        )

    def job_pods(self, name: str) -> list[dict[str, Any]]:
        pods = (
            self._call(
                self.kube.core.list_namespaced_pod,
                self.namespace,
                label_selector=f"volcano.sh/job-name={name}",
                what=f"pods of job {name}",
            ).get("items")
            or []
        )
        return sorted(map(slimmed_pod, pods), key=pod_index)

    def get_configmap(self, name: str) -> dict[str, Any]:
        return self._call(
            self.kube.core.read_namespaced_config_map, name, self.namespace, what=f"ConfigMap {name}"
        )

    def scheduler_node_choice(self) -> str:
        """How the pool's scheduler picks among equally good nodes (plan/forecast.py): the simulated pool
        says so on Volcano's scheduler ConfigMap; anything else (a real Volcano, or a ConfigMap this
        account may not read) picks at random, as Volcano's allocate action does."""
        from ranktable.plan.forecast import POLICIES, RANDOM_AMONG_EQUALS

        try:
            cm = self._call(
                self.kube.core.read_namespaced_config_map,
                SCHEDULER_CONFIGMAP,
                SCHEDULER_NAMESPACE,
                what=f"ConfigMap {SCHEDULER_NAMESPACE}/{SCHEDULER_CONFIGMAP}",
            )
        except RanktableError:
            return RANDOM_AMONG_EQUALS
        choice = ((cm.get("metadata") or {}).get("annotations") or {}).get(NODE_CHOICE_ANNOTATION, "")
        return choice if choice in POLICIES else RANDOM_AMONG_EQUALS

    # -- submit / stop ------------------------------------------------------------------------------
    def submit(self, docs: list[dict[str, Any]]) -> SubmitResult:
        """Create the rank-table ConfigMap, then the Volcano Job; a rejected Job removes the ConfigMap."""
        job = next((d for d in docs if d.get("kind") == "Job"), None)
        cm = next((d for d in docs if d.get("kind") == "ConfigMap"), None)
        if job is None or cm is None:
            raise InputError("a ranktable job needs a ConfigMap and a Volcano Job", where="manifest")
        name = str(job["metadata"]["name"])
        for doc in (job, cm):
            doc.setdefault("metadata", {})["namespace"] = self.namespace
        try:
            self.kube.core.create_namespaced_config_map(
                self.namespace, cast(Any, cm), _request_timeout=self.kube.timeout, _preload_content=False
            )
        except ApiException as exc:
            if exc.status == 409:
                if self._job_exists(name):
                    raise ConflictError(
                        f"job {name} already exists in {self.namespace}",
                        fix=f"choose another name, or `ranktable job stop {name}` first",
                    ) from None
                raise ConflictError(
                    f"ConfigMap {cm['metadata']['name']} already exists in {self.namespace} "
                    "(left by an earlier job?)",
                    fix=f"`ranktable job stop {name}` removes it",
                ) from None
            raise api_error(exc, f"ConfigMap {cm['metadata']['name']}") from None
        except Exception as exc:
            if isinstance(exc, RanktableError):
                raise
            raise self.kube.unreachable(exc) from None
        try:
            resp = self.kube.custom.create_namespaced_custom_object(
                GROUP, VERSION, self.namespace, PLURAL, job, _request_timeout=self.kube.timeout
            )
        except ApiException as exc:
            self._delete_configmap(str(cm["metadata"]["name"]))
            if exc.status == 409:
                raise ConflictError(
                    f"job {name} already exists in {self.namespace}",
                    fix=f"choose another name, or `ranktable job stop {name}` first",
                ) from None
            raise api_error(exc, f"job {name}") from None
        except Exception as exc:
            self._delete_configmap(str(cm["metadata"]["name"]))
            raise self.kube.unreachable(exc) from None
        uid = str(((cast(dict[str, Any], resp) or {}).get("metadata") or {}).get("uid") or "")
        return SubmitResult(name, self.namespace, str(cm["metadata"]["name"]), uid)

    def _job_exists(self, name: str) -> bool:
        try:
            self.get_job(name)
        except NotFoundError:
            return False
        return True

    def _delete_configmap(self, name: str) -> bool:
        try:
            self.kube.core.delete_namespaced_config_map(
                name, self.namespace, _request_timeout=self.kube.timeout
            )
        except ApiException as exc:
            if exc.status == 404:
                return False
            raise api_error(exc, f"ConfigMap {name}") from None
        return True

    def stop(self, name: str) -> list[str]:
        """Delete the Job (its pods go with it) and its rank-table ConfigMap; returns what was deleted."""
        deleted: list[str] = []
        try:
            self.kube.custom.delete_namespaced_custom_object(
                GROUP,
                VERSION,
                self.namespace,
                PLURAL,
                name,
                propagation_policy="Background",
                _request_timeout=self.kube.timeout,
            )
            deleted.append(f"job/{name}")
        except ApiException as exc:
            if exc.status != 404:
                raise api_error(exc, f"job {name}") from None
        if self._delete_configmap(configmap_name(name)):
            deleted.append(f"configmap/{configmap_name(name)}")
        if not deleted:
            raise NotFoundError(
                f"job {name} not found in {self.namespace}", fix="check `ranktable job list` and -n"
            )
        return deleted

    def wait_deleted(self, name: str, timeout: float) -> None:
        """Return once the job is gone (watching it, re-checking every few seconds); error after `timeout`."""
        deadline = time.monotonic() + timeout
        while self._job_exists(name):
            if time.monotonic() >= deadline:
                raise RanktableError(
                    f"job {name} is still being deleted after {timeout:.0f}s", fix="try again in a moment"
                )
            for event in self._watch_job(name, min(deadline, time.monotonic() + DELETE_RECHECK_SECONDS)):
                if event.type == "DELETED":
                    return

    def wait_pods_gone(self, name: str, timeout: float) -> None:
        """Return once the job's pods are gone too: a new run's pods take the same names, and until the old
        ones finished terminating (a real kubelet's grace period) their logs would read as the new run's."""
        deadline = time.monotonic() + timeout
        while self.job_pods(name):
            if time.monotonic() >= deadline:
                raise RanktableError(
                    f"the pods of job {name} are still terminating after {timeout:.0f}s",
                    fix="try again in a moment",
                )
            time.sleep(POD_GONE_POLL_SECONDS)

    def resubmit(self, name: str, timeout: float = 30.0) -> SubmitResult:
        """Stop the job and submit the same manifests again (what users do after fixing the cause)."""
        from ranktable.compose.manifests import compose, spec_from_manifests

        spec = spec_from_manifests([self.get_configmap(configmap_name(name)), self.get_job(name)])
        self.stop(name)
        self.wait_deleted(name, timeout)
        return self.submit(compose(spec))

    # -- list / describe ----------------------------------------------------------------------------
    def job_objects(self) -> list[dict[str, Any]]:
        """The namespace's Volcano jobs as the API returns them (no pods: a cheap poll)."""
        return list(
            self._call(
                self.kube.custom.list_namespaced_custom_object,
                GROUP,
                VERSION,
                self.namespace,
                PLURAL,
                what=f"Volcano jobs in {self.namespace}",
            ).get("items")
            or []
        )

    def list_jobs(self) -> list[JobSummary]:
        items = self.job_objects()
        pods = (
            self._call(
                self.kube.core.list_namespaced_pod,
                self.namespace,
                label_selector="volcano.sh/job-name",
                what=f"pods in {self.namespace}",
            ).get("items")
            or []
        )
        by_job: dict[str, list[dict[str, Any]]] = {}
        for pod in pods:
            by_job.setdefault(
                str(((pod.get("metadata") or {}).get("labels") or {}).get("volcano.sh/job-name")), []
            ).append(pod)
        summaries = (JobSummary.from_job(j, by_job.get(str(j["metadata"]["name"]), [])) for j in items)
        return sorted(summaries, key=lambda s: s.name)

    def describe(
        self, name: str, known: tuple[dict[str, Any], list[dict[str, Any]]] | None = None
    ) -> JobDescription:
        """``known``: the job and its pods as a live watch holds them (`JobTable.job_and_pods`), so a Job view
        refreshing its overview does not list a 1,024-pod job's pods each time."""
        core = self.kube.core
        reads: list[Callable[[], Any]] = [
            self.node_leaves,
            lambda: self._call(core.list_namespaced_event, self.namespace, what="events").get("items"),
            lambda: self.rank_table_status(name),
        ]
        if known is None:
            reads += [lambda: self.job_pods(name), lambda: self.get_job(name)]
        node_leaf, events, table_status, *read = together(reads)
        job, pods = known if known is not None else (read[1], read[0])
        return describe_job(
            job,
            pods,
            job_events(job, pods, events or []),
            node_leaf,
            table_status,
            lambda: self.npu_capacity(node_leaf),
        )

    def rank_table_status(self, name: str) -> str:
        try:
            cm = self.get_configmap(configmap_name(name))
        except NotFoundError:
            return "missing"
        text = (cm.get("data") or {}).get(RANK_TABLE_KEY) or ""
        try:
            from ranktable.hccl.validate import COLUMNS_FROM_BYTES, check_document  # `job list` reads none

            # a small table as objects (json): the columnar reader imports msgspec and numpy (#28)
            report = check_document(text, RANK_TABLE_KEY, columns=len(text) >= COLUMNS_FROM_BYTES)
        except RanktableError:
            return "unreadable"
        return str(report.table_status or report.status)

    def list_nodes(self) -> list[dict[str, Any]]:
        return self._call(self.kube.core.list_node, what="nodes").get("items") or []

    def node_leaves(self) -> dict[str, str]:
        """Node name -> leaf switch, from whatever topology the cluster publishes ({} if none). The nodes
        and the HyperNodes (the first source tried) are read at once."""
        from ranktable.cluster.topology_source import list_hypernodes

        def hypernodes() -> list[dict[str, Any]] | RanktableError:
            try:
                return list_hypernodes(self.kube)
            except RanktableError as exc:
                return exc

        nodes, listed = together([self.list_nodes, hypernodes])
        return node_leaves(self.kube, nodes, listed)

    def npu_capacity(self, node_leaf: dict[str, str] | None = None) -> NpuCapacity:
        pods = self._call(self.kube.core.list_pod_for_all_namespaces, what="pods").get("items") or []
        return npu_capacity(
            self.list_nodes(), pods, node_leaf if node_leaf is not None else self.node_leaves()
        )

    # -- waiting and watching ---------------------------------------------------------------------------
    def wait_rank_table(
        self, name: str, timeout: float = 600.0, progress: Progress = _quiet
    ) -> RankTableResult:
        """Watch the ConfigMap until the table is completed, then validate it with the core."""
        cm_name = configmap_name(name)
        start = time.monotonic()
        deadline = start + timeout
        last_status = None
        for event in watch(
            self.kube,
            self.kube.core.list_namespaced_config_map,
            self.namespace,
            what=f"ConfigMap {cm_name}",
            deadline=deadline,
            on_resume=progress,
            field_selector=f"metadata.name={cm_name}",
        ):
            if event.type == "DELETED":
                raise NotFoundError(
                    f"ConfigMap {cm_name} was deleted while waiting", fix="was the job stopped?"
                )
            text = (event.obj.get("data") or {}).get(RANK_TABLE_KEY) or ""
            from ranktable.hccl.validate import COLUMNS_FROM_BYTES, check_document

            where = f"{cm_name}/{RANK_TABLE_KEY}"
            report = check_document(text, where, columns=len(text) >= COLUMNS_FROM_BYTES)
            if report.table_status != last_status:
                last_status = report.table_status
                progress(f"rank table {cm_name}: {report.table_status} after {time.monotonic() - start:.0f}s")
            if report.completed:
                return RankTableResult(text, report, time.monotonic() - start)
        raise RanktableError(
            self._missing(name, timeout), fix=f"`ranktable job describe {name}` shows events and hints"
        )

    def _missing(self, name: str, timeout: float) -> str:
        try:
            self.get_configmap(configmap_name(name))
        except NotFoundError:
            return f"ConfigMap {configmap_name(name)} does not exist (was the job submitted with it?)"
        pods = self.job_pods(name)
        job = JobSummary.from_job(self.get_job(name))
        if not pods:
            return (
                f"rank table still initializing after {timeout:.0f}s: job {name} is {job.phase}, no pods yet"
            )
        lacking = [
            f"{p['metadata']['name']} ({(p.get('status') or {}).get('phase', 'Pending')}"
            + (f" on {p['spec']['nodeName']}" if (p.get("spec") or {}).get("nodeName") else ", not scheduled")
            + ")"
            for p in pods
            if DEVICE_ANNOTATION not in ((p.get("metadata") or {}).get("annotations") or {})
        ]
        if len(pods) < job.nodes:
            lacking.append(f"{job.nodes - len(pods)} pod(s) not created")
        return (
            f"rank table still initializing after {timeout:.0f}s; pods without the device annotation "
            f"{DEVICE_ANNOTATION}: {', '.join(lacking) or 'none (the platform has not rewritten the table)'}"
        )

    def _watch_job(
        self, name: str, deadline: float | None, progress: Progress | None = None
    ) -> Iterator[WatchEvent]:
        """Events of one Volcano job (resumable watch, see `kube.watch`) until `deadline`."""
        return watch(
            self.kube,
            self.kube.custom.list_namespaced_custom_object,
            GROUP,
            VERSION,
            self.namespace,
            PLURAL,
            what=f"job {name}",
            deadline=deadline,
            on_resume=progress,
            field_selector=f"metadata.name={name}",
        )

    def watch_phases(
        self,
        name: str,
        timeout: float | None = None,
        progress: Progress = _quiet,
        until_terminal: bool = True,
    ) -> Iterator[PhaseChange]:
        """Phase changes of one job; survives dropped watches and 410 Gone (relists, no repeats)."""
        previous: str | None = None
        deadline = None if timeout is None else time.monotonic() + timeout
        for event in self._watch_job(name, deadline, progress):
            if event.type == "DELETED":
                yield PhaseChange(name, "Deleted", previous, 0, 0)
                return
            summary = JobSummary.from_job(event.obj)
            if summary.phase != previous:
                yield PhaseChange(name, summary.phase, previous, summary.retries, summary.running)
                previous = summary.phase
                if until_terminal and summary.phase in TERMINAL_PHASES:
                    return

    # -- logs ------------------------------------------------------------------------------------
    def logs(
        self,
        name: str,
        follow: bool = False,
        rank: int | None = None,
        queue_size: int = 64,
        previous: bool = False,
        job: dict[str, Any] | None = None,
        plan_later: bool = False,
    ) -> LogStream:
        """Every pod's log, one stream per pod, lines tagged with pod, node rank and timestamp. ``job``: the
        Volcano job as just read (saves reading it again). ``plan_later`` (the Job view): a routed job's
        route plan (its node ranks) is computed in the background after the readers started, so its lines
        start at once; those read before the plan is known carry no node rank."""
        job = job or self.get_job(name)
        task = job["spec"]["tasks"][0]
        pods = [(f"{name}-{task['name']}-{i}", i) for i in range(int(task.get("replicas") or 1))]
        routed = _routes(job)
        later = plan_later and routed and rank is None
        planned = {} if later else self.planned_node_ranks(name, job)
        if planned:
            pods = [(pod, planned.get(pod, index)) for pod, index in pods]
        if rank is not None:
            pods = [(pod, r) for pod, r in pods if r == rank]
            if not pods:
                raise InputError(
                    f"no pod has node rank {rank} (0..{int(task.get('replicas') or 1) - 1})", where="--rank"
                )
        from ranktable.cluster.logs import LogStream  # here: streams need urllib3, `job list` does not

        stream = LogStream(
            self.kube,
            self.namespace,
            name,
            pods,
            follow=follow,
            queue_size=queue_size,
            previous=previous,
            rank_of=(lambda pod: self.planned_node_ranks(name, job).get(pod))
            if routed and not planned and not later
            else None,
            plan=(lambda: self.planned_node_ranks(name, job)) if later else None,
        )
        stream.start()
        return stream

    def planned_node_ranks(self, name: str, job: dict[str, Any] | None = None) -> dict[str, int]:
        """Pod -> node rank as the launcher's route plan numbers it (``RANK_AFTER_ACC``); {} when the job does
        not route or its rank table is not complete yet (then the pod index is the node rank)."""
        job = job or self.get_job(name)
        if not _routes(job):
            return {}
        from ranktable.choice.routing import routing_plan  # here: the planner (numpy) only when routing
        from ranktable.hccl import parse_rank_table
        from ranktable.topology import topology_from_tor_file

        try:
            data = self.get_configmap(configmap_name(name)).get("data") or {}
            table = parse_rank_table(
                data.get(RANK_TABLE_KEY) or "", f"{configmap_name(name)}/{RANK_TABLE_KEY}"
            )
            if not table.completed or TOR_KEY not in data:
                return {}
            plan = routing_plan(table, topology_from_tor_file(data[TOR_KEY]), job_env(job))
        except RanktableError:
            return {}
        hosts = {
            str(p["metadata"]["name"]): (p.get("status") or {}).get("hostIP") for p in self.job_pods(name)
        }
        return {pod: plan.node_rank[ip] for pod, ip in hosts.items() if ip in plan.node_rank}


def node_leaves(
    kube: Kube, nodes: list[dict[str, Any]], hypernodes: list[dict[str, Any]] | RanktableError | None = None
) -> dict[str, str]:
    """Node name -> leaf switch of `nodes`, from whatever topology the cluster publishes ({} if none);
    ``hypernodes``: already read (see `cluster_topology`)."""
    from ranktable.cluster.topology_source import cluster_topology

    try:
        topo = cluster_topology(kube, nodes, hypernodes)
    except RanktableError:
        return {}
    out: dict[str, str] = {}
    for node in nodes:
        meta = node.get("metadata") or {}
        addresses = [a.get("address") for a in (node.get("status") or {}).get("addresses") or []]
        server = topo.resolve(str(meta.get("name")), *addresses)
        leaf = topo.leaf_of(server) if server else None
        if leaf:
            out[str(meta.get("name"))] = leaf
    return out


def job_events(
    job: dict[str, Any], pods: list[dict[str, Any]], events: list[dict[str, Any]]
) -> list[dict[str, Any]]:
    """The namespace's events about this run of the job: its Volcano job, pods and PodGroup.

    A resubmit reuses the job's and pods' names, so names alone mix the runs (a healthy run listed the
    BackOff events of the run stopped before it): an event is this run's when it names one of its objects'
    uids, or names one of its objects and happened since the run was created (a pod Volcano recreated)."""
    meta = job.get("metadata") or {}
    name, uid = str(meta.get("name") or ""), str(meta.get("uid") or "")
    uids = {uid, *(str((p.get("metadata") or {}).get("uid") or "") for p in pods)} - {""}
    names = {str((p.get("metadata") or {}).get("name")) for p in pods}
    tasks = (job.get("spec") or {}).get("tasks") or []
    names |= {f"{name}-{t.get('name')}-{i}" for t in tasks for i in range(int(t.get("replicas") or 0))}
    since = kube_time(str(meta.get("creationTimestamp") or ""))
    podgroup = f"{name}-{uid}" if uid else None
    out = []
    for e in events:
        involved = e.get("involvedObject") or {}
        who, whose = str(involved.get("name") or ""), str(involved.get("uid") or "")
        ours = (whose and whose in uids) or who == podgroup
        named = who in names or (who == name and not whose)  # the job of another run has another uid
        # another uid under one of our names: a pod recreated since, or the stopped run's pod of that name
        # in the same second (event times are whole seconds): only strictly later counts then
        if ours or (named and _since(e, since, strictly=bool(whose))):
            out.append(e)
    return out


def _since(event: dict[str, Any], created: float | None, strictly: bool = False) -> bool:
    """Whether the event happened at or after `created` (after it, `strictly`; unknown times: yes)."""
    stamp = (
        event.get("firstTimestamp")
        or event.get("eventTime")
        or (event.get("metadata") or {}).get("creationTimestamp")
    )
    when = kube_time(str(stamp or ""))
    return created is None or when is None or when > created or (when == created and not strictly)


def together(reads: list[Callable[[], Any]]) -> list[Any]:
    """Each read on its own thread, at once: `job describe` makes 5-8 API calls where `kubectl describe`
    makes ~3, and one after another their round trips added up (#28). The results in order; the last
    read's error, if any, is raised (the job's own 404 is the last, so "job X not found" wins)."""
    results: list[Any] = [None] * len(reads)
    errors: list[BaseException | None] = [None] * len(reads)

    def run(i: int) -> None:
        try:
            results[i] = reads[i]()
        except BaseException as exc:  # handed to the caller's thread
            errors[i] = exc

    threads = [threading.Thread(target=run, args=(i,), daemon=True) for i in range(1, len(reads))]
    for thread in threads:
        thread.start()
    run(0)
    for thread in threads:
        thread.join()
    for exc in reversed(errors):
        if exc is not None:
            raise exc
    return results


def describe_job(
    job: dict[str, Any],
    pods: list[dict[str, Any]],
    events: list[dict[str, Any]],
    node_leaf: dict[str, str],
    rank_table_status: str,
    capacity: Callable[[], NpuCapacity],
) -> JobDescription:
    """The job's description from what was read (the API, or a live table's watches); `capacity` is
    called only when an event says NPUs were short."""
    pods = sorted(pods, key=pod_index)
    summary = JobSummary.from_job(job, pods)
    healths = [pod_health(p) for p in pods]
    pod_infos = [
        PodInfo(
            name=str(p["metadata"]["name"]),
            index=pod_index(p),
            node=(p.get("spec") or {}).get("nodeName"),
            host_ip=(p.get("status") or {}).get("hostIP"),
            leaf=node_leaf.get(str((p.get("spec") or {}).get("nodeName"))),
            phase=str((p.get("status") or {}).get("phase") or "Pending"),
            restarts=sum(
                int(c.get("restartCount") or 0)
                for c in (p.get("status") or {}).get("containerStatuses") or []
            ),
            has_devices=DEVICE_ANNOTATION in ((p.get("metadata") or {}).get("annotations") or {}),
            state=h.state,
            reason=h.reason,
            exit_code=h.exit_code,
            last_reason=h.last_reason,
            last_exit_code=h.last_exit_code,
            ready=h.ready,
        )
        for p, h in zip(pods, healths, strict=True)
    ]
    template = job["spec"]["tasks"][0]["template"]["spec"]["containers"][0]
    npus = int(str(((template.get("resources") or {}).get("requests") or {}).get(NPU_RESOURCE, 0)))
    short = any("Insufficient" in str(e.get("message")) for e in events)
    found = capacity() if short else None
    event_infos = [
        EventInfo(
            type=str(e.get("type") or "Normal"),
            reason=str(e.get("reason") or ""),
            object="{kind}/{name}".format(**{"kind": "", "name": "", **(e.get("involvedObject") or {})}),
            message=str(e.get("message") or ""),
            count=int(e.get("count") or 1),
            last_seen=e.get("lastTimestamp")
            or e.get("eventTime")
            or (e.get("metadata") or {}).get("creationTimestamp"),
            hint=event_hint(
                e,
                nodes=summary.nodes,
                npus_per_pod=npus,
                capacity=found,
                image=str(template.get("image", "")),
            ),
        )
        for e in events
    ]
    event_infos.sort(key=lambda e: str(e.last_seen or ""))
    return JobDescription(summary, pod_infos, event_infos, rank_table_status, found)
