"""Job use cases, one per user task: compose, submit, list, describe, stop, resubmit, rank table, layout.

The CLI, the magics and the server extension call these; they hold no HTTP, argparse or display code.
Cluster modules (and so urllib3) are imported on first use, so composing works on a
core-only install and loading the server extension stays fast.
"""

from __future__ import annotations

import threading
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any

from ranktable.compose.names import RANK_TABLE_KEY, configmap_name
from ranktable.errors import InputError, NotReady, RanktableError
from ranktable.limits import KEEP_LOGS_S

if TYPE_CHECKING:
    from ranktable.cluster.client import ClusterClient
    from ranktable.compose.flavours import Flavour
    from ranktable.compose.spec import JobSpec
    from ranktable.compose.validate import Issue
    from ranktable.usecases.logs import LogLines
    from ranktable.usecases.observe import LiveRuns, Observation


@dataclass(frozen=True)
class ClusterSettings:
    """Which cluster and which defaults: from `c.Ranktable.*`, CLI flags or `%ranktable cluster`."""

    kubeconfig: str | None = None
    context: str | None = None
    namespace: str = "default"
    request_timeout: float = 30.0
    topology: str | None = None
    topology_format: str | None = None
    extra_flavours: Mapping[str, Any] = field(default_factory=dict)
    extra_flavours_source: str = "flavours"
    state_dir: str | None = None  # where run logs are archived (None: RANKTABLE_HOME)
    keep_logs_s: float = KEEP_LOGS_S  # a stop's wait for the run's logs to reach the archive (0: keep none)
    owner: str | None = None  # who submits (the Hub user, else the kubeconfig's): the jobs' owner label


def team_settings(
    namespace_setting: str, hub_user: str | None, kubeconfig: str | None, context: str | None
) -> tuple[str | None, str]:
    """(owner, namespace) for a user of a shared pool: the owner is the JupyterHub user, else the
    kubeconfig context's user; the namespace follows `namespace_setting` (`compose.tenancy`)."""
    from ranktable.cluster.access import kubeconfig_identity
    from ranktable.compose.tenancy import resolve_namespace

    identity = kubeconfig_identity(kubeconfig, context)
    owner = hub_user or identity.user
    return owner, resolve_namespace(namespace_setting, owner, identity.namespace)


class Jobs:
    """The job use cases against one cluster (a client per namespace, created on first use)."""

    def __init__(self, settings: ClusterSettings) -> None:
        self.settings = settings
        self._clients: dict[str, ClusterClient] = {}
        self._lock = threading.Lock()
        self._kubeconfig_stamp: tuple[Any, ...] | None = None
        self._kubeconfig_files: tuple[str | None, tuple[int, int, int] | None, list[str]] = (None, None, [])

    def flavours(self) -> dict[str, Flavour]:
        from ranktable.compose.flavours import load_flavours, parse_flavours

        table = load_flavours()
        if self.settings.extra_flavours:
            table.update(
                parse_flavours(dict(self.settings.extra_flavours), self.settings.extra_flavours_source)
            )
        return table

    def client(self, namespace: str | None = None) -> ClusterClient:
        from ranktable.cluster.client import ClusterClient

        ns = namespace or self.settings.namespace
        with self._lock:
            # a cluster that came back with a new kubeconfig (address, CA, token), or whose CA, client
            # certificate or token file changed, gets new clients (#26.6)
            stamp = self._cluster_stamp()
            if stamp != self._kubeconfig_stamp:
                self._clients.clear()
                self._kubeconfig_stamp = stamp
            if ns not in self._clients:
                self._clients[ns] = ClusterClient(
                    kubeconfig=self.settings.kubeconfig,
                    context=self.settings.context,
                    namespace=ns,
                    timeout=(5.0, float(self.settings.request_timeout)),
                )
            return self._clients[ns]

    def _cluster_stamp(self) -> tuple[Any, ...]:
        """The kubeconfig in force (explicit, $KUBECONFIG or ~/.kube/config) and the files it names, each
        as (inode, mtime, size): a few stats per call; the kubeconfig is read again only when it changed."""
        path = configured_kubeconfig(self.settings.kubeconfig)
        own = _file_stamp(path)
        known_path, known_stamp, named = self._kubeconfig_files
        if path != known_path or own != known_stamp:
            named = kubeconfig_named_files(path)
            self._kubeconfig_files = (path, own, named)
        return (path, own, *(_file_stamp(f) for f in named))

    def spec(self, raw: Mapping[str, Any]) -> JobSpec:
        """A JobSpec from JSON, in the default namespace unless it names one."""
        from ranktable.compose.spec import JobSpec  # here: listing jobs never composes one (#28)

        return JobSpec.from_dict({"namespace": self.settings.namespace, **raw})

    # -- compose / submit -----------------------------------------------------------------------------
    def compose(self, raw: Mapping[str, Any]) -> dict[str, Any]:
        """Findings, YAML and the normalised spec; a spec that does not parse is one finding, not an error."""
        try:
            spec = self.spec(raw)
        except InputError as exc:
            return {"issues": [exc_issue(exc)], "yaml": "", "spec": None}
        from ranktable.compose.manifests import compose, dump_manifests

        spec, found = self.placed(spec)
        issues = [i.to_json() for i in found]
        return {"issues": issues, "yaml": dump_manifests(compose(spec)), "spec": spec.to_dict()}

    def placed(self, spec: JobSpec) -> tuple[JobSpec, list[Issue]]:
        """`spec` with instance paths on a profile's shared storage turned into the pods' (volume added),
        and its findings."""
        from ranktable.usecases.storage import placed_and_checked

        return placed_and_checked(spec, self.flavours(), state_dir=self.settings.state_dir)

    def submit(self, spec: JobSpec) -> dict[str, Any]:
        """Validate, then create the ConfigMap and the Volcano Job; the first error is raised."""
        from ranktable.compose.manifests import compose
        from ranktable.compose.validate import has_errors

        spec, issues = self.placed(spec)
        if has_errors(issues):
            first = next(i for i in issues if i.severity == "error")
            raise InputError(first.message, where=first.field, fix=first.fix or None)
        return self.submit_manifests(compose(spec), spec.namespace).to_json()

    def submit_yaml(self, text: str, where: str = "yaml") -> dict[str, Any]:
        from ranktable.compose.manifests import load_manifests, spec_from_manifests

        return self.submit(spec_from_manifests(load_manifests(text, where)))

    # -- one job ----------------------------------------------------------------------------------------
    def job_rows(self, namespace: str | None = None) -> list[dict[str, Any]]:
        client = self.client(namespace)
        return [job_row(client, j) for j in client.list_jobs()]

    def describe(
        self,
        namespace: str | None,
        name: str,
        known: tuple[dict[str, Any], list[dict[str, Any]]] | None = None,
    ) -> dict[str, Any]:
        return self.client(namespace).describe(name, known).to_json()

    def stop(self, namespace: str | None, name: str, keep_logs_s: float | None = None) -> dict[str, Any]:
        """Archive the run's logs (so they outlive its pods), then delete the job and its ConfigMap."""
        from ranktable.usecases.runs import stop_job

        self.check_owner(namespace, name, "stop")
        deleted, kept = stop_job(
            self.client(namespace),
            name,
            state_dir=self.settings.state_dir,
            keep_logs_s=self.settings.keep_logs_s if keep_logs_s is None else keep_logs_s,
        )
        return {"deleted": deleted, "logs": kept}

    def resubmit(self, namespace: str | None, name: str, run: str | None = None) -> dict[str, Any]:
        """Run `run` (None: the current one) again with the same spec; a job of that name still on the
        cluster is stopped first, its logs archived. A stopped run's spec comes from its record."""
        from ranktable.usecases.runs import resubmit_run

        self.check_owner(namespace, name, "resubmit")
        return resubmit_run(
            self.client(namespace),
            name,
            run,
            state_dir=self.settings.state_dir,
            keep_logs_s=self.settings.keep_logs_s,
            timeout=float(self.settings.request_timeout),
        )

    def resume(self, namespace: str | None, name: str, from_scratch: bool = False) -> dict[str, Any]:
        """Resubmit the job's latest run from its last checkpoint, avoiding the node a hardware fault
        was blamed on, as the next run of its lineage (`ranktable.usecases.resume`)."""
        from ranktable.usecases.resume import resume

        self.check_owner(namespace, name, "resume")
        return resume(
            self.client(namespace),
            name,
            from_scratch=from_scratch,
            state_dir=self.settings.state_dir,
            keep_logs_s=self.settings.keep_logs_s,
            timeout=float(self.settings.request_timeout),
        )

    def lineage(self, namespace: str | None, name: str, live: LiveRuns | None = None) -> dict[str, Any]:
        """The job's runs as one lineage, the cost of each fault and the goodput (`usecases.lineage`).
        ``live``: the server's followers archive the current run (its stream, shared with every Job view,
        goes on); without, its logs are read once."""
        from ranktable.usecases.lineage import job_lineage
        from ranktable.usecases.observe import observe_run

        client = self.client(namespace)
        state_dir = self.settings.state_dir

        def archive_current() -> Observation:
            if live is not None:
                return live.observation(client, name)
            return observe_run(client, name, state_dir=state_dir)

        return job_lineage(client.namespace, name, archive_current=archive_current, state_dir=state_dir)

    def rank_table(self, namespace: str | None, name: str) -> dict[str, Any]:
        """The job's rank table (as the platform filled it) with its validation report."""
        cm = self.client(namespace).get_configmap(configmap_name(name))
        text = (cm.get("data") or {}).get(RANK_TABLE_KEY) or ""
        out = rank_table_report(text, f"{configmap_name(name)}/{RANK_TABLE_KEY}")
        out["text"] = text
        return out

    def layout(
        self,
        namespace: str | None,
        name: str,
        topology_file: str | None = None,
        diagnosis: dict[str, Any] | None = None,
    ) -> JobLayout:
        return job_layout(self.client(namespace), name, topology_file or self.settings.topology, diagnosis)

    def layout_preview(
        self, spec: JobSpec, topology_file: str | None = None, message_bytes: int | None = None
    ) -> dict[str, Any]:
        """Where a composed job is expected to land (the scheduler's choice on the pool's free nodes,
        plan/forecast.py) and how it would be planned; a range (best and worst) when it cannot be known."""
        from ranktable.usecases.layout import cluster_or_file_topology, placement_forecast, preview_layouts

        client = self.client(spec.namespace)
        nodes = client.list_nodes()
        if topology_file:
            topology = cluster_or_file_topology(client, nodes, topology_file)
        else:
            topology = cluster_or_file_topology(
                client, nodes, self.settings.topology, self.settings.topology_format
            )
        forecast, notes = placement_forecast(client, nodes, topology, spec)
        return preview_layouts(forecast, notes, nodes, topology, spec, message_bytes)

    # -- what a terminal or a notebook shows (the adapters' objects, not JSON) ---------------------------
    def summaries(self, namespace: str | None = None) -> list[Any]:
        return self.client(namespace).list_jobs()

    def description(self, namespace: str | None, name: str) -> Any:
        return self.client(namespace).describe(name)

    def pending(self, namespace: str | None, name: str) -> dict[str, Any] | None:
        from ranktable.usecases.observe import job_pending

        return job_pending(self.client(namespace), name)

    def submit_manifests(self, docs: list[dict[str, Any]], namespace: str | None = None) -> Any:
        """Create already composed (and checked) manifests: the ConfigMap and the Volcano Job, both
        labelled with their owner, in a namespace created first when it is missing (and RBAC allows)."""
        from ranktable.cluster.access import ensure_namespace
        from ranktable.compose.tenancy import OWNER_LABEL, owner_value

        client = self.client(namespace)
        if self.settings.owner:
            for doc in docs:
                labels = doc.setdefault("metadata", {}).setdefault("labels", {})
                labels[OWNER_LABEL] = owner_value(self.settings.owner)
        ensure_namespace(client.kube, client.namespace)
        return client.submit(docs)

    # -- a shared pool ------------------------------------------------------------------------------------
    def check_owner(self, namespace: str | None, name: str, action: str = "stop") -> None:
        """Refuse to act on another user's job unless RBAC grants `stop-others` on Volcano jobs there.

        A job without an owner label (submitted by another tool) is left to the API server's RBAC."""
        from ranktable.cluster.access import can_i
        from ranktable.compose.tenancy import STOP_OTHERS_VERB, owner_of, owner_value
        from ranktable.errors import NotFoundError, PermissionDenied

        if not self.settings.owner:
            return
        client = self.client(namespace)
        try:
            job = client.get_job(name)
        except NotFoundError:
            return  # the action itself says what is missing (or finds a stopped run's record)
        owner = owner_of((job.get("metadata") or {}).get("labels"))
        if owner is None or owner == owner_value(self.settings.owner):
            return
        if can_i(client.kube, STOP_OTHERS_VERB, "batch.volcano.sh", "jobs", client.namespace):
            return
        raise PermissionDenied(
            f"job {name} in {client.namespace} belongs to {owner}; you ({self.settings.owner}) may not "
            f"{action} it",
            fix=f"ask {owner} to {action} it, or ask the pool's admin for the `{STOP_OTHERS_VERB}` verb on "
            "jobs.batch.volcano.sh",
        )

    def permissions(self, namespace: str | None = None) -> dict[str, Any]:
        """What this user may do in their namespace, as the API server's RBAC answers it."""
        from ranktable.cluster.access import permissions
        from ranktable.compose.tenancy import owner_value

        client = self.client(namespace)
        owner = self.settings.owner
        return {
            "user": owner,
            "owner": owner_value(owner) if owner else None,
            "namespace": client.namespace,
            "allowed": permissions(client.kube, client.namespace),
        }

    def team(self, namespace: str | None = None) -> dict[str, Any]:
        """The team's jobs (owner, phase, NPUs), queued jobs and free NPUs per leaf and queue: read-only."""
        from ranktable.cluster.team import team_view
        from ranktable.compose.tenancy import owner_value

        me = owner_value(self.settings.owner) if self.settings.owner else None
        return {"user": self.settings.owner, **team_view(self.client(namespace), me)}

    def wait_rank_table(self, namespace: str | None, name: str, timeout: float, progress: Any = None) -> Any:
        return self.client(namespace).wait_rank_table(name, timeout=timeout, progress=progress)

    def watch_phases(
        self, namespace: str | None, name: str, timeout: float | None, progress: Any = None
    ) -> Iterator[Any]:
        return self.client(namespace).watch_phases(name, timeout=timeout, progress=progress)

    def capacity(self, namespace: str | None = None) -> tuple[str, dict[str, Any], int]:
        """(API server, free NPUs overall and per leaf, node count)."""
        client = self.client(namespace)
        return client.kube.host, client.npu_capacity().to_json(), len(client.list_nodes())

    def log_lines(self, namespace: str | None, name: str, follow: bool, rank: int | None = None) -> LogLines:
        """The job's log lines for a terminal or a notebook; a followed run is archived (`usecases.logs`)."""
        from ranktable.usecases.logs import LogLines

        return LogLines(
            self.client(namespace), name, follow=follow, rank=rank, state_dir=self.settings.state_dir
        )

    def observation(
        self, namespace: str | None, name: str, run: str | None = None, settings: Any = None
    ) -> Observation:
        """The run's metrics and diagnosis: the current run's logs read once (and archived), or an
        archived run."""
        from ranktable.usecases.observe import observe_run

        client = self.client(namespace)
        return observe_run(client, name, run=run, state_dir=self.settings.state_dir, settings=settings)

    def compare(
        self, namespace: str | None, name: str, runs: Sequence[str] | None = None, settings: Any = None
    ) -> dict[str, Any]:
        """Two runs of the job side by side (the newest and the one before, or ``runs``: A then B)."""
        from ranktable.usecases.observe import compare_runs, observe_run

        client = self.client(namespace)
        state_dir = self.settings.state_dir

        def observe(run: str | None) -> Observation:
            return observe_run(client, name, run=run, state_dir=state_dir, settings=settings)

        return compare_runs(client.namespace, name, observe, runs, state_dir)


def preload_cluster_client() -> None:
    """Import the cluster client now, on the caller's thread, before requests arrive together."""
    from ranktable.cluster.preload import preload_cluster

    preload_cluster()


def configured_kubeconfig(path: str | None) -> str | None:
    """The kubeconfig in force: `path`, $KUBECONFIG or ~/.kube/config; None when there is none."""
    from ranktable.cluster.kube import resolve_kubeconfig

    return resolve_kubeconfig(path)


def exc_issue(exc: InputError) -> dict[str, Any]:
    """A spec that does not parse, as one finding shaped like the validator's."""
    return {"field": exc.where, "severity": "error", "message": exc.reason, "fix": exc.fix or ""}


KUBECONFIG_FILE_KEYS = ("certificate-authority", "client-certificate", "client-key", "tokenFile")


def kubeconfig_named_files(path: str | None) -> list[str]:
    """The files a kubeconfig names (CA, client certificate and key, token file), relative paths taken
    from its folder as kubectl does; [] when it cannot be read (the client's own error says why)."""
    import os

    import yaml

    if not path:
        return []
    try:
        with open(path, encoding="utf-8") as fh:
            doc = yaml.safe_load(fh)
    except (OSError, ValueError, yaml.YAMLError):
        return []
    found: list[str] = []
    if not isinstance(doc, dict):
        return found
    for section, inner in (("clusters", "cluster"), ("users", "user")):
        for entry in doc.get(section) or []:
            body = entry.get(inner) if isinstance(entry, dict) else None
            if not isinstance(body, dict):
                continue
            for key in KUBECONFIG_FILE_KEYS:
                value = body.get(key)
                if isinstance(value, str) and value:
                    found.append(os.path.join(os.path.dirname(path), os.path.expanduser(value)))
    return found


def _file_stamp(path: str | None) -> tuple[int, int, int] | None:
    """(inode, mtime, size) of a file, or None: cheap to compare before every cluster call (a file
    replaced by a rename has a new inode even within the mtime's granularity)."""
    import os

    if not path:
        return None
    try:
        st = os.stat(path)
    except OSError:
        return None
    return (st.st_ino, st.st_mtime_ns, st.st_size)


def job_row(client: ClusterClient, summary: Any) -> dict[str, Any]:
    """A job summary plus its rank-table status (initializing / completed / missing...), for the table."""
    row: dict[str, Any] = summary.to_json()
    try:
        row["rank_table"] = client.rank_table_status(summary.name)
    except RanktableError:
        row["rank_table"] = "unknown"
    return row


def rank_table_report(data: str | bytes | dict[str, Any], source: str) -> dict[str, Any]:
    """The validation report of one rank table document, with `ok`, a summary and its size."""
    from ranktable.hccl.validate import check_document

    report = check_document(data, source)
    out = report.to_json()
    out["ok"] = report.ok
    out["summary"] = report.summary()
    if report.table is not None:
        out["servers"] = len(report.table.servers)
        out["ranks"] = report.table.rank_size
    return out


@dataclass
class JobLayout:
    name: str
    topology_source: str
    report_text: str
    report: dict[str, Any]
    svg: str
    marks: dict[int, str] = field(default_factory=dict)
    placement: dict[str, Any] | None = None  # the actual nodes beside the preview's forecast

    def to_json(self) -> dict[str, Any]:
        """The JSON answer: the name, where the topology came from, the report and the placement."""
        return {name: getattr(self, name) for name in ("name", "topology_source", "report", "placement")}


def job_layout(
    client: ClusterClient,
    name: str,
    topology_file: str | None = None,
    diagnosis: dict[str, Any] | None = None,
) -> JobLayout:
    """The rank layout of a running job: its completed rank table, the cluster's switch tree, the plan;
    with a `diagnosis`, its first failing rank, stragglers and hung ranks marked on the picture."""
    from ranktable.hccl import parse_rank_table
    from ranktable.usecases.layout import cluster_or_file_topology, plan_report, query_for_spec

    cm_name = configmap_name(name)
    cm = client.get_configmap(cm_name)
    text = (cm.get("data") or {}).get(RANK_TABLE_KEY) or ""
    table = parse_rank_table(text, f"{cm_name}/{RANK_TABLE_KEY}")
    if not table.completed:
        raise NotReady(
            f"the rank table of {name} is still {table.status}",
            where=cm_name,
            fix=f"wait with `ranktable job wait-ranktable {name}`",
        )
    nodes = client.list_nodes()
    topology = cluster_or_file_topology(client, nodes, topology_file)
    source = topology_file or topology.source
    spec = _running_spec(client, name, cm)
    planned = plan_report(table, topology, query=query_for_spec(spec))
    text_report = f"topology: {source}\n" + planned.text
    if planned.result.warnings:
        text_report += "\n" + "\n".join(f"warning: {w}" for w in planned.result.warnings)
    from ranktable.usecases.layout import placement_beside_forecast
    from ranktable.usecases.observe import diagnosis_marks

    placement = placement_beside_forecast(client, name, spec, nodes, topology, planned.to_json())
    if placement is not None:
        text_report += "\n" + placement["summary"]
    marks = diagnosis_marks(diagnosis, planned.result.planned)
    return JobLayout(name, source, text_report, planned.to_json(), planned.svg(marks), marks, placement)


def _running_spec(client: ClusterClient, name: str, configmap: dict[str, Any]) -> JobSpec | None:
    """The job's own spec (its HCCL_ALGO and parallel sizes shape the estimate); None when the job
    object is gone or was not composed by us (the layout is still shown, with HCCL's defaults)."""
    from ranktable.compose.manifests import spec_from_manifests

    try:
        return spec_from_manifests([configmap, client.get_job(name)])
    except RanktableError:
        return None
