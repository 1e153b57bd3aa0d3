"""The `c.Ranktable.*` settings: everything the panel needs to reach a cluster and Notebook instances.

Kept in one traitlets Configurable so `jupyter_server_config.py` (or `--Ranktable.kubeconfig=...`) is the
only place a deployment differs: pointing `kubeconfig` at a real cluster or at the
simulated pool (`ranktable sim start` prints its KUBECONFIG) is the choice, made visibly here.
"""

from __future__ import annotations

from traitlets import Bool, Dict, Enum, Float, Integer, List, Unicode
from traitlets.config import Configurable

from ranktable.limits import KEEP_LOGS_S


class Ranktable(Configurable):
    """Server-side configuration of the Ranktable extension."""

    kubeconfig = Unicode(
        "",
        config=True,
        help="Path of the kubeconfig to use. Empty: $KUBECONFIG, then ~/.kube/config; with neither, job "
        "requests answer 404 naming the fix (e.g. the KUBECONFIG that `ranktable sim start` prints).",
    )
    context = Unicode("", config=True, help="kubeconfig context to use. Empty: the file's current context.")
    namespace = Unicode(
        "",
        config=True,
        help="Namespace for jobs when a request names none: a fixed one (`team-a`), a pattern with "
        "{username} (`u-{username}`, the JupyterHub user, else the kubeconfig's user), or {context}: the "
        "kubeconfig context's namespace. Empty: u-{username} under JupyterHub, else {context} "
        "(docs/teams.md).",
    )
    flavours = Dict(
        default_value={},
        config=True,
        help='Extra node flavours: {"NAME": {"npus": 8, "vcpus": 192, "memory_gib": 1536}}.',
    )
    topology = Unicode(
        "",
        config=True,
        help="Topology file used for the layout of running jobs (any format `ranktable plan` reads). "
        "Empty: node labels / HyperNodes / basic-tor-node-cm from the cluster.",
    )
    topology_format = Unicode("", config=True, help="Format of `topology`; empty: detected from content.")
    sync_mode = Enum(
        ["always", "explicit", "never"],
        default_value="explicit",
        config=True,
        help="Default automatic-upload mode for new SSH profiles.",
    )
    sync_delete = Bool(False, config=True, help="Default for deleting remote files removed locally.")
    state_dir = Unicode(
        "",
        config=True,
        help="Where every record lives (profiles, host keys, sync state, forwards, remote-kernel "
        "records, run archives); exported as RANKTABLE_HOME to terminals and kernels. Empty: RANKTABLE_HOME.",
    )
    observability = Dict(
        {},
        config=True,
        help="Metrics and triage settings: straggler_factor (1.2), hang_factor (10), hang_floor_s (60, "
        "under 10 x the median step), "
        "spike_factor (3), max_points (500), connect_timeout_s (120), patterns (regexes with named groups "
        "step/loss/step_time_s/step_time_ms/throughput/lr/grad_norm/epoch/rank; RE2 syntax).",
    )
    keep_logs_seconds = Float(
        KEEP_LOGS_S,
        config=True,
        help="Stop and Resubmit first archive the run's logs (they go with its pods) for at most this many "
        "seconds; 0 keeps none.",
    )
    archive_every_seconds = Float(
        10.0,
        config=True,
        help="Every this many seconds the server lists the jobs of its namespaces and archives the logs of "
        "every run it sees, followed or not (so a run deleted with kubectl can still be diagnosed); 0: "
        "only runs someone follows or stops through the product are archived.",
    )
    archive_max_streams = Integer(
        64, config=True, help="Runs archived at once by that sweep (one log stream each); more are logged."
    )
    archive_namespaces = List(
        Unicode(),
        default_value=[],
        config=True,
        help="Namespaces whose runs are archived; empty: `namespace`.",
    )
    auto_resume = Bool(
        False,
        config=True,
        help="Resume a job without a person when its run fails on the hardware (NPU, link, heartbeat, ECC, "
        "RoCE) or hangs: from its last checkpoint, the blamed node excluded, as the next run of its "
        "lineage, with a notification. Jobs composed with on_fault stop are left alone.",
    )
    auto_resume_budget = Integer(
        3, config=True, help="Auto-resume resumes a lineage at most this many times (then notifies only)."
    )
    auto_resume_poll_seconds = Float(
        2.0, config=True, help="Auto-resume looks at the namespace's jobs this often."
    )
    request_timeout = Float(30.0, config=True, help="Seconds before a cluster or SSH call is abandoned.")
    log_batch_seconds = Float(
        0.1, config=True, help="Log lines are sent to the browser in batches at most this often."
    )
    stream_buffer = Integer(
        2000, config=True, help="Events kept per background operation for late subscribers."
    )
    jobs_poll_seconds = Float(
        0.15,
        config=True,
        help="The live job list follows watches on jobs, pods and rank-table ConfigMaps; changes arriving "
        "within this many seconds are sent as one snapshot.",
    )
    workers = Integer(16, config=True, help="Threads for blocking cluster/SSH work.")
    keep_remote_kernels = Bool(
        True,
        config=True,
        help="Remote (SSH) kernels keep running when the server stops and are re-attached when it starts "
        "again; output printed meanwhile is replayed. False: they are shut down with the server.",
    )
