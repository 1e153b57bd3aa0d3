"""`ranktable job ...` (compose, submit, list, describe, logs, wait-ranktable, stop, layout) and the
in-container `ranktable launch`.

The cluster modules (and so the kubernetes package) are imported inside handlers: `ranktable launch`
must work in a training image that has only the core dependencies.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ranktable.cli.commands import HELP, command_group
from ranktable.errors import InputError
from ranktable.limits import (
    KEEP_LOGS_S,
    load_yaml_all,
)

if TYPE_CHECKING:
    from ranktable.compose.spec import JobSpec
    from ranktable.usecases.jobs import Jobs


def _deferred(parser: argparse.ArgumentParser, build: Callable[[argparse.ArgumentParser], None]) -> None:
    """Add `parser`'s flags only when it parses or prints its help: the JobSpec's flags import the spec
    and its validators (~0.1 s), which `job list` and every other sub-command never need (#28)."""
    built: list[bool] = []

    def ensure() -> None:
        if not built:
            built.append(True)
            build(parser)

    for name in ("parse_known_args", "format_help", "format_usage"):
        original = getattr(parser, name)

        def wrapper(*args: Any, _original: Any = original, **kwargs: Any) -> Any:
            ensure()
            return _original(*args, **kwargs)

        setattr(parser, name, wrapper)


def _compose_flags(p: argparse.ArgumentParser) -> None:
    from ranktable.compose.spec_flags import add_spec_flags

    add_spec_flags(p, required=True)
    p.add_argument("-o", "--output", help="write the YAML to FILE instead of stdout")


def _submit_flags(p: argparse.ArgumentParser) -> None:
    from ranktable.compose.spec_flags import add_spec_flags

    p.add_argument(
        "file",
        nargs="?",
        help="YAML with the ConfigMap and the Volcano Job, or a JobSpec; - reads it from stdin, so "
        "`ranktable job compose ... | ranktable job submit -` works (or use the flags)",
    )
    add_spec_flags(p, required=False)
    _cluster_flags(p)
    p.add_argument("--wait", action="store_true", help="then wait for the rank table and print its status")


def register(sub: Any) -> None:
    from ranktable.launch.launcher import launch_parser

    launch = sub.add_parser(
        "launch",
        help=HELP["launch"],
        description="Runs inside the training image (pip install jupyter-ranktable). Waits for the rank "
        "table, applies the route plan when ROUTE_PLAN=true, then starts the script per local NPU "
        "(MindSpore) or through torchrun (PyTorch).",
    )
    launch_parser(launch)
    launch.set_defaults(handler=_launch)

    group = command_group(sub, "job", "job_command", "JOB_COMMAND")

    _register_submission(group)
    _register_observing(group)
    _register_lifecycle(group)
    p = group.add_parser("layout", help="planned rank layout of a running job (report, SVG)")
    p.add_argument("name")
    p.add_argument("--topology", help="topology file (default: HyperNodes, basic-tor-node-cm or node labels)")
    p.add_argument("--svg", help="write the layout picture to FILE")
    p.add_argument("--json", action="store_true")
    _cluster_flags(p)
    p.set_defaults(handler=_layout)


def _register_submission(group: Any) -> None:
    """`job compose|submit|list|describe`: a job's way in."""
    p = group.add_parser("compose", help="print the ConfigMap + Volcano Job for a job (YAML)")
    _deferred(p, _compose_flags)
    p.set_defaults(handler=_compose)

    p = group.add_parser("submit", help="submit a composed YAML file, or compose from flags and submit")
    _deferred(p, _submit_flags)
    p.set_defaults(handler=_submit)

    p = group.add_parser("list", help="jobs in the namespace (vcctl-like table)")
    _cluster_flags(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_list)

    p = group.add_parser("describe", help="pods, events and hints for one job")
    p.add_argument("name")
    _cluster_flags(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(handler=_describe)


def _register_observing(group: Any) -> None:
    """`job logs|metrics|diagnose|compare`: what a run printed and what it means."""
    p = group.add_parser("logs", help="logs of every pod, tagged with node rank and pod")
    p.add_argument("name")
    p.add_argument("-f", "--follow", action="store_true")
    p.add_argument("--rank", type=int, help="only this node rank (pod index)")
    p.add_argument("--timestamps", action="store_true", help="show each line's timestamp")
    p.add_argument("--run", help="an archived run (job uid or a prefix; `--runs` lists them)")
    p.add_argument("--runs", action="store_true", help="list the job's archived runs")
    p.add_argument("--errors", action="store_true", help="only lines the error catalogue recognises")
    _state_dir_flag(p)
    _cluster_flags(p)
    p.set_defaults(handler=_logs)

    p = group.add_parser("metrics", help="loss, step time, throughput, lr, grad norm per rank, from the logs")
    _name_or_logs(p)
    p.add_argument("--run", help="an archived run (job uid or a prefix)")
    out = p.add_mutually_exclusive_group()
    out.add_argument(
        "--json", action="store_true", help='{"ranks": {"<rank>": {"step": [...], ...}}, "alerts": [...]}'
    )
    out.add_argument("--csv", action="store_true", help="one row per rank and step")
    p.add_argument("--svg", help="write loss / step-time / throughput charts to FILE")
    _state_dir_flag(p)
    _cluster_flags(p)
    p.set_defaults(handler=_metrics)

    p = group.add_parser(
        "diagnose",
        help="first failing rank (NPU, server, leaf, pod), errors per rank, stragglers, hangs, pending",
    )
    _name_or_logs(p)
    p.add_argument("--run", help="an archived run (job uid or a prefix)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--straggler-factor", type=float, help="median step time >= F x the job's (default 1.2)")
    p.add_argument(
        "--hang-floor",
        type=float,
        help="least silence (s) before a rank counts as hung; also 10 x the median step (default 60)",
    )
    _state_dir_flag(p)
    p.add_argument(
        "--svg", help="write the job's layout picture with the diagnosis marked (needs the job's rank table)"
    )
    _cluster_flags(p)
    p.set_defaults(handler=_diagnose)

    p = group.add_parser(
        "compare",
        help="two runs of the job side by side: outcome, duration, loss, step time, throughput, diagnosis",
    )
    p.add_argument("name")
    p.add_argument(
        "--runs", nargs=2, metavar=("A", "B"), help="the runs (uids or prefixes; default: the two newest)"
    )
    p.add_argument("--json", action="store_true")
    _state_dir_flag(p)
    _cluster_flags(p)
    p.set_defaults(handler=_compare)


def _register_lifecycle(group: Any) -> None:
    """`job wait-ranktable|watch|stop|resume|lineage`: a run's course, its end and the next run."""
    p = group.add_parser(
        "wait-ranktable", help="wait until the job's rank table is completed, then validate it"
    )
    p.add_argument("name")
    p.add_argument("--timeout", type=float, default=600.0, help="seconds (default 600)")
    p.add_argument("--print", action="store_true", help="print the completed jobstart_hccl.json")
    _cluster_flags(p)
    p.set_defaults(handler=_wait)

    _named_job_command(
        group,
        "watch",
        _watch,
        lambda p: p.add_argument("--timeout", type=float, default=None, help="stop watching after SECONDS"),
        state_dir=False,
        help="print the job's phase changes until it ends",
    )
    _named_job_command(
        group,
        "stop",
        _stop,
        lambda p: p.add_argument(
            "--keep-logs",
            type=float,
            default=KEEP_LOGS_S,
            metavar="SECONDS",
            help="wait at most this long for the logs to be archived "
            f"(default {KEEP_LOGS_S:g}; 0: keep none)",
        ),
        help="archive the run's logs, then delete the job and its rank-table ConfigMap",
        description="The pods' logs go with the job, so the current run's logs are read into its archive "
        "first (`job logs NAME --runs` lists it afterwards).",
    )
    _named_job_command(
        group,
        "resume",
        _resume,
        lambda p: p.add_argument(
            "--from-scratch", action="store_true", help="resubmit even when the run logged no checkpoint"
        ),
        help="resubmit the latest run from its last checkpoint, avoiding the node a fault was blamed on",
        description="Reads the run's diagnosis and its last finished checkpoint save, then submits the "
        "next run of its lineage: the same spec, the resume arguments appended, the blamed node excluded.",
    )
    _named_job_command(
        group,
        "lineage",
        _lineage,
        lambda p: p.add_argument("--json", action="store_true", help="the lineage as JSON"),
        help="the job's runs as one lineage: each fault, its cost, and the goodput",
        description="Run 1 -> fault on NODE NPU N at step S -> run 2 from checkpoint C ...: per fault the "
        "detection, restart and replayed steps; goodput = training steps kept / wall time.",
    )


def _named_job_command(
    group: Any,
    command: str,
    handler: Callable[[argparse.Namespace], int],
    add_flags: Callable[[argparse.ArgumentParser], object],
    *,
    state_dir: bool = True,
    **texts: str,
) -> None:
    """`job COMMAND NAME [flags]` on one job: `add_flags` after the name, then the state and cluster flags."""
    p = group.add_parser(command, **texts)
    p.add_argument("name")
    add_flags(p)
    if state_dir:
        _state_dir_flag(p)
    _cluster_flags(p)
    p.set_defaults(handler=handler)


def _state_dir_flag(p: argparse.ArgumentParser) -> None:
    p.add_argument("--state-dir", help="where runs are archived (default: $RANKTABLE_HOME)")


# -- flags ----------------------------------------------------------------------------------------
def _cluster_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "--kubeconfig", help="kubeconfig file (default: $KUBECONFIG, ~/.kube/config, simulated pool)"
    )
    p.add_argument("--context", help="kubeconfig context (default: its current context)")
    p.add_argument(
        "-n", "--namespace", default=None, help="namespace (default: the kubeconfig context's, else default)"
    )


def manifests_or_spec(text: str, where: str) -> list[dict[str, Any]]:
    """The ConfigMap + Volcano Job of a job file; a file holding a JobSpec (no `kind`) is composed first."""
    from ranktable.compose.manifests import compose
    from ranktable.compose.spec import JobSpec

    docs = [doc for doc in load_yaml_all(text, where) if doc is not None]
    if not docs:
        raise InputError(
            "is empty", where=where, fix="pipe `ranktable job compose ...` into it, or give a file"
        )
    for i, doc in enumerate(docs):
        if not isinstance(doc, dict):
            raise InputError("each YAML document must be a mapping", where=f"{where}: document {i + 1}")
    if len(docs) == 1 and "kind" not in docs[0]:
        return compose(JobSpec.from_dict(docs[0]))
    return docs


def _checked(spec: JobSpec) -> JobSpec:
    """The spec placed on the profiles' shared storage; every finding printed to stderr; refused (exit 1)
    when any is an error."""
    from ranktable.compose.validate import has_errors
    from ranktable.usecases.storage import placed_and_checked

    spec, issues = placed_and_checked(spec)
    for issue in issues:
        print(issue, file=sys.stderr)
    if has_errors(issues):
        count = sum(1 for i in issues if i.severity == "error")
        raise InputError(f"{count} error(s) in the job spec (listed above)", where=spec.name or "spec")
    return spec


def _jobs(args: argparse.Namespace) -> Jobs:
    """The job use cases against the cluster the flags name (or the simulated pool)."""
    from ranktable.cli.cluster import choose_cluster
    from ranktable.usecases.jobs import ClusterSettings, Jobs, team_settings

    kubeconfig, context = choose_cluster(args.kubeconfig, args.context)
    owner, namespace = team_settings(
        args.namespace or "{context}", os.environ.get("JUPYTERHUB_USER"), kubeconfig, context
    )
    settings = ClusterSettings(
        kubeconfig=kubeconfig,
        context=context,
        namespace=namespace,
        owner=owner,
        state_dir=getattr(args, "state_dir", None),
        keep_logs_s=getattr(args, "keep_logs", KEEP_LOGS_S),
    )
    return Jobs(settings)


def _progress(text: str) -> None:
    print(f"... {text}", file=sys.stderr, flush=True)


# -- handlers -------------------------------------------------------------------------------------
def _launch(args: argparse.Namespace) -> int:
    from ranktable.launch.launcher import run

    return run(args)


def _compose(args: argparse.Namespace) -> int:
    from ranktable.compose.manifests import compose, dump_manifests
    from ranktable.compose.spec_flags import spec_from_args

    spec = _checked(spec_from_args(args))
    text = dump_manifests(compose(spec))
    if args.output:
        Path(args.output).write_text(text)
        print(f"wrote {args.output}", file=sys.stderr)
    else:
        sys.stdout.write(text)
    return 0


def _submit(args: argparse.Namespace) -> int:
    from ranktable.compose.manifests import compose, spec_from_manifests
    from ranktable.compose.spec_flags import read_input, spec_from_args

    if args.file:
        docs = manifests_or_spec(read_input(args.file, "job file"), args.file)
        spec = spec_from_manifests(docs)
        if args.namespace:
            spec.namespace = args.namespace
        placed = _checked(spec)
        if placed is not spec:  # a path on a profile's shared storage: the pods' path, its volume added
            docs = compose(placed)
        namespace = args.namespace or spec.namespace
    else:
        spec = _checked(spec_from_args(args))
        docs = compose(spec)
        namespace = args.namespace or spec.namespace
    args.namespace = namespace
    jobs = _jobs(args)
    result = jobs.submit_manifests(docs)
    print(f"job {result.name} submitted in {result.namespace} (rank table: ConfigMap {result.configmap})")
    if args.wait:
        return _wait_and_report(jobs, result.name, 600.0, False)
    return 0


def _format_age(seconds: float | None) -> str:
    if seconds is None:
        return "?"
    s = int(seconds)
    for unit, size in (("d", 86400), ("h", 3600), ("m", 60)):
        if s >= size:
            return f"{s // size}{unit}"
    return f"{s}s"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths, strict=True)).rstrip() for r in rows)


def _list(args: argparse.Namespace) -> int:
    from ranktable.observe.health import health_text

    jobs = _jobs(args).summaries()
    if args.json:
        print(json.dumps([j.to_json() for j in jobs], indent=2))
        return 0
    rows = [
        [
            "Name",
            "Age",
            "Phase",
            "Queue",
            "Nodes",
            "Min",
            "Pending",
            "Running",
            "Succeeded",
            "Failed",
            "Retries",
            "Health",
        ]
    ]
    for j in jobs:
        rows.append(
            [j.name, _format_age(j.age_seconds), j.phase, j.queue, str(j.nodes), str(j.min_available),
             str(j.pending), str(j.running), str(j.succeeded), str(j.failed), str(j.retries),
             health_text(j.health) or "ok"]
        )  # fmt: skip
    print(_table(rows) if jobs else f"no jobs in {args.namespace or 'default'}")
    return 0


def _describe(args: argparse.Namespace) -> int:
    from ranktable.observe.health import health_text

    jobs = _jobs(args)
    d = jobs.description(None, args.name)
    if args.json:
        print(json.dumps(d.to_json(), indent=2))
        return 0
    j = d.job
    print(f"Job {j.name} ({j.namespace}): {j.phase}, {j.nodes} node(s), queue {j.queue}, retries {j.retries}")
    print(f"Rank table: {d.rank_table_status}")
    if j.health and health_text(j.health):
        print(f"Health: {health_text(j.health)}")
    if j.phase in ("Pending", "Inqueue") or any(not p.node for p in d.pods):
        pending = jobs.pending(None, args.name)
        if pending:
            queue = pending["queue"]
            print(f"Pending: {pending['reason']}")
            position = (
                f", position {queue['position']} of {queue['pending_jobs']}" if queue["position"] else ""
            )
            print(f"  queue {queue['name']}: {queue['state']}{position}")
    if d.pods:
        rows = [["Pod", "Index", "Node", "Host IP", "Leaf", "Phase", "Restarts", "State", "Devices"]]
        for p in d.pods:
            devices = "yes" if p.has_devices else "no"
            rows.append(
                [
                    p.name,
                    str(p.index),
                    p.node or "-",
                    p.host_ip or "-",
                    p.leaf or "-",
                    p.phase,
                    str(p.restarts),
                    p.health or "ok",
                    devices,
                ]
            )
        print(_table(rows))
    else:
        print("No pods yet.")
    if d.events:
        print("Events:")
        shown: set[str] = set()
        for e in d.events:
            count = f" (x{e.count})" if e.count > 1 else ""
            print(f"  {e.type} {e.reason} {e.object}: {e.message}{count}")
            if e.hint and e.hint not in shown:  # one hint per cause, not one per pod
                shown.add(e.hint)
                print(f"    hint: {e.hint}")
    return 0


def _logs(args: argparse.Namespace) -> int:
    if args.run or args.runs:
        return _archived_logs(args)
    lines = _jobs(args).log_lines(None, args.name, follow=args.follow, rank=args.rank)
    try:
        for line in lines:
            stamp = f"{line.timestamp} " if args.timestamps else ""
            sys.stdout.write(f"{stamp}[{line.node_rank} {line.pod}] {line.text}\n")
            sys.stdout.flush()
    finally:
        lines.close()  # a followed run's lines reach its archive before the command returns
    for problem in lines.problems:
        print(f"ranktable job logs: {problem}", file=sys.stderr)
    return 1 if lines.problems else 0


def _archived_logs(args: argparse.Namespace) -> int:
    from ranktable.limits import amount_text
    from ranktable.usecases.observe import archived_lines, job_runs

    namespace = args.namespace or "default"
    if args.runs:
        runs = job_runs(namespace, args.name, args.state_dir)
        rows = [["Run", "Submitted", "Ended", "Phase", "Pods", "Size"]] + [
            [
                r.uid,
                _iso(r.created),
                _iso(r.ended) if r.ended is not None else "-",
                r.phase or "?",
                str(len(r.pods)),
                amount_text(r.bytes),
            ]
            for r in runs
        ]
        print(_table(rows) if runs else f"no archived runs of {args.name} in {namespace}")
        return 0
    lines = archived_lines(
        namespace,
        args.name,
        args.run,
        state_dir=args.state_dir,
        node_rank=args.rank,
        errors_only=args.errors,
        limit=10**9,
    )
    for line in lines:
        prefix = f"{line['timestamp']} " if args.timestamps else ""
        sys.stdout.write(f"{prefix}[{line['node_rank']} {line['pod']}] {line['text']}\n")
    return 0


def _iso(when: float) -> str:
    from ranktable.observe.triage import iso

    return iso(when) or "?"


def _observe_settings(args: argparse.Namespace) -> Any:
    from ranktable.observe import ObserveSettings

    values = {}
    if getattr(args, "straggler_factor", None) is not None:
        values["straggler_factor"] = args.straggler_factor
    if getattr(args, "hang_floor", None) is not None:
        values["hang_floor_s"] = args.hang_floor
    return ObserveSettings.from_mapping(values, where="flags")


def _name_or_logs(p: argparse.ArgumentParser) -> None:
    p.add_argument("name", nargs="?", help="the job (omit with --logs)")
    p.add_argument(
        "--logs",
        nargs="+",
        metavar="PATH",
        help="log files, folders or a .tar export instead of a live job (a file per rank or pod)",
    )
    p.add_argument(
        "--rank-from",
        metavar="REGEX",
        help=r"regex whose first group (or (?P<rank>...)) is a file's rank (default: rank_3, worker_3 ...)",
    )


def _title(observation: Any) -> str:
    if observation.uid == "files":
        return f"{observation.name} ({observation.source})"
    return f"job {observation.name} run {observation.uid} ({observation.source})"


def _observation(args: argparse.Namespace, jobs: Jobs | None = None) -> Any:
    """The run to read: log files (no cluster at all, not even the simulated pool), else the job's."""
    settings = _observe_settings(args)
    if args.logs:
        from ranktable.usecases.log_files import observe_log_files

        if args.name or args.run:
            raise InputError("give a job name or --logs, not both", where="--logs", fix="drop one")
        return observe_log_files(args.logs, args.rank_from, settings)
    if not args.name:
        raise InputError("no job given", where="name", fix="name the job, or pass --logs PATH...")
    return (jobs or _jobs(args)).observation(None, args.name, run=args.run, settings=settings)


def _metrics(args: argparse.Namespace) -> int:
    from ranktable.observe.export import metrics_csv
    from ranktable.observe.plot import metrics_svg

    observation = _observation(args)
    data = observation.metrics()
    if args.svg:
        Path(args.svg).write_text(metrics_svg(data))
        print(f"wrote {args.svg}", file=sys.stderr)
    if args.json:
        print(json.dumps(data, indent=1))
        return 0
    if args.csv:
        sys.stdout.write(metrics_csv(data))
        return 0
    ranks = data["ranks"]
    if not ranks:
        print(f"no metric lines in {_title(observation)} yet")
        return 0
    rows = [["Rank", "Steps", "Last step", "Loss", "Step time (s)", "Throughput", "LR", "Grad norm"]]
    for rank, series in ranks.items():
        last = _last_value(series)
        rows.append(
            [
                rank,
                str(len(series["step"])),
                last("step"),
                last("loss"),
                last("step_time_s"),
                last("throughput"),
                last("lr"),
                last("grad_norm"),
            ]
        )
    print(_title(observation))
    print(_table(rows))
    for alert in data["alerts"]:
        print(f"alert: {alert['message']}" + (f" (x{alert['count']})" if alert["count"] > 1 else ""))
    return 0


def _compare(args: argparse.Namespace) -> int:
    from ranktable.observe.compare import compare_text

    result = _jobs(args).compare(None, args.name, args.runs)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"job {args.name}: run A {result['a']['run']} vs run B {result['b']['run']}")
    print(compare_text(result))
    return 0


def _last_value(series: dict[str, Any]) -> Callable[[str], str]:
    def last(key: str) -> str:
        values = [v for v in series.get(key) or [] if v is not None]
        if not values:
            return "-"
        return f"{values[-1]:.4g}" if isinstance(values[-1], float | int) else str(values[-1])

    return last


def _where(entry: dict[str, Any]) -> str:
    from ranktable.observe.report import place_text

    return place_text(entry)


def _diagnose(args: argparse.Namespace) -> int:
    from ranktable.observe.report import place_text

    if args.svg and args.logs:
        raise InputError("--svg draws a job's layout: it needs a job, not --logs", where="--svg")
    jobs = None if args.logs or not args.name else _jobs(args)
    observation = _observation(args, jobs)
    result = observation.diagnosis()
    if args.svg and jobs is not None:
        layout = jobs.layout(None, args.name, diagnosis=result)
        Path(args.svg).write_text(layout.svg)
        print(f"wrote {args.svg} ({len(layout.marks)} marked ranks)", file=sys.stderr)
    if args.json:
        print(json.dumps(result, indent=1))
        return 0
    print(f"{_title(observation)}: {result['summary']}")
    first = result["first_failure"]
    if first:
        print(f"first failure: rank {first['rank']} ({place_text(first)}) at {first['time']}")
        print(f"  {first['code']}: {first['title']}")
        print(f"  line: {first['line']}")
        print(f"  why: {first['explanation']}")
        print(f"  fix: {first['fix']}")
    for hint in result["advice"]:
        print(f"advice: {hint}")
    if result["errors"]:
        rows = [["Rank", "Node rank", "Pod", "Leaf", "Time", "Code"]]
        rows += [
            [str(e["rank"]), str(e["node_rank"]), e["pod"], e["leaf"] or "-", e["time"] or "-", e["code"]]
            for e in result["errors"][:50]
        ]
        print("first error per rank:")
        print(_table(rows))
        if len(result["errors"]) > 50:
            print(f"... {len(result['errors']) - 50} more (--json shows all)")
    for s in result["stragglers"]:
        print(f"straggler: rank {s['rank']} ({_where(s)}) {s['ratio']:.2f}x the job's median step time")
    for h in result["hung"]:
        print(
            f"hung: rank {h['rank']} ({_where(h)}) silent for {h['silent_s']:.0f} s "
            f"after step {h['last_step']}"
        )
    if result["pending"]:
        print(f"pending: {result['pending']['reason']}")
    return 0


def _wait_and_report(jobs: Jobs, name: str, timeout: float, show: bool) -> int:
    result = jobs.wait_rank_table(None, name, timeout, _progress)
    if show:
        print(result.text)
    print(result.report.summary(), file=sys.stderr if show else sys.stdout)
    for problem in result.report.problems:
        print(f"  {problem}", file=sys.stderr)
    return 0 if result.ok else 1


def _wait(args: argparse.Namespace) -> int:
    return _wait_and_report(_jobs(args), args.name, args.timeout, args.print)


def _watch(args: argparse.Namespace) -> int:
    last = None
    for change in _jobs(args).watch_phases(None, args.name, args.timeout, _progress):
        print(
            f"{change.name}: {change.phase} (running {change.running}, retries {change.retries})", flush=True
        )
        last = change.phase
    return 0 if last in ("Completed", "Deleted") else 1


def _stop(args: argparse.Namespace) -> int:
    from ranktable.cli import CliError

    if args.keep_logs < 0:
        raise CliError(f"--keep-logs must be 0 or more seconds; got {args.keep_logs:g}")
    stopped = _jobs(args).stop(None, args.name)
    print(f"deleted {', '.join(stopped['deleted'])}")
    if stopped["logs"]:
        print(stopped["logs"])
    return 0


def _resume(args: argparse.Namespace) -> int:
    print(_jobs(args).resume(None, args.name, from_scratch=args.from_scratch)["message"])
    return 0


def _lineage(args: argparse.Namespace) -> int:
    found = _jobs(args).lineage(None, args.name)
    if args.json:
        print(json.dumps(found, indent=2))
        return 0
    print(found["text"])
    for fault in found["faults"]:
        print(
            f"  {fault['text']} at step {_num(fault['at_step'])}: detected in {_secs(fault['detection_s'])}, "
            f"restarted in {_secs(fault['restart_s'])} ({fault['resumed_by'] or 'hand'}), "
            f"{_num(fault['replayed_steps'])} step(s) replayed, {_secs(fault['lost_s'])} lost"
        )
    return 0


def _num(value: int | None) -> str:
    return "?" if value is None else f"{value:,}"


def _secs(value: float | None) -> str:
    return "?" if value is None else f"{value:.1f} s"


def _layout(args: argparse.Namespace) -> int:
    layout = _jobs(args).layout(None, args.name, args.topology)
    if args.svg:
        Path(args.svg).write_text(layout.svg)
        print(f"wrote {args.svg}", file=sys.stderr)
    if args.json:
        print(json.dumps(layout.to_json(), indent=2))
    else:
        print(layout.report_text)
    return 0
