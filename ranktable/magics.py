"""`%load_ext ranktable`: the `%ranktable` line magic and the `%%ranktable job` cell magic.

The magics are a thin notebook face on the same layers the CLI and the panel use (jobs, remote, core):
each subcommand parses its options like the CLI, calls one service and shows the result with
one rich result per call (``ranktable.magic_results``: HTML tables, the layout SVG); progress bars
while it runs. Bad input is one `UsageError` line.
"""

from __future__ import annotations

import argparse
import html
import os
import shlex
import time
from dataclasses import dataclass
from pathlib import Path
from typing import TYPE_CHECKING, Any

from IPython.core.error import UsageError
from IPython.core.magic import Magics, line_cell_magic, magics_class
from IPython.display import display

from ranktable.errors import InputError, RanktableError
from ranktable.home import shared_settings
from ranktable.magic_results import ShownDict, ShownList, ShownStr, pre_html, table_html, text_html

if TYPE_CHECKING:
    from ranktable.compose.spec import JobSpec
    from ranktable.usecases.jobs import Jobs


class _Parser(argparse.ArgumentParser):
    """argparse that raises instead of exiting (a magic must never kill the kernel)."""

    def error(self, message: str) -> Any:
        raise UsageError(f"%ranktable {self.prog.split()[-1]}: {message}")

    def exit(self, status: int = 0, message: str | None = None) -> Any:
        if message:
            raise UsageError(message)
        raise _HelpShown


class _HelpShown(Exception):
    """`--help` was printed; nothing else to do."""


@dataclass
class Progress:
    """A progress bar (ipywidgets) with a text line; falls back to plain text without a frontend."""

    label: str
    bar: Any = None
    text: Any = None
    box: Any = None

    def __post_init__(self) -> None:
        try:
            import ipywidgets as w

            self.bar = w.FloatProgress(min=0.0, max=1.0, description=self.label)
            self.text = w.Label("")
            self.box = w.HBox([self.bar, self.text])
            display(self.box)
        except ImportError:  # pragma: no cover - ipywidgets is a declared dependency
            self.bar = None

    def update(self, fraction: float, text: str) -> None:
        if self.bar is not None:
            self.bar.value = max(0.0, min(1.0, fraction))
            self.text.value = text
        else:  # pragma: no cover
            print(f"{self.label}: {text}")

    def close(self) -> None:
        """Remove the bar: the magic's result then is the call's one output."""
        if self.bar is not None:
            self.bar.close()
            self.text.close()
            if self.box is not None:
                self.box.close()

    def finish(self, text: str, ok: bool = True) -> None:
        if self.bar is not None:
            self.bar.value = 1.0
            self.bar.bar_style = "success" if ok else "danger"
            self.text.value = text


@magics_class
class RanktableMagics(Magics):
    """`%ranktable SUBCOMMAND ...` and `%%ranktable job ...`."""

    def __init__(self, shell: Any = None, **kwargs: Any) -> None:
        super().__init__(shell, **kwargs)
        inherited = shared_settings()  # the JupyterLab server's cluster, when it started this kernel
        self.kubeconfig: str | None = inherited.get("kubeconfig")
        self.context: str | None = inherited.get("context")
        self.namespace = inherited.get("namespace", "default")
        self._jobs: dict[tuple[str | None, str | None, str], Jobs] = {}
        self.manager: Any = None  # SSH connections; None: the process-wide manager
        self.remote: Any = None  # the remote use cases (its port forwards: this kernel's), on first use

    # -- dispatch ------------------------------------------------------------------------------------
    @line_cell_magic
    def ranktable(self, line: str, cell: str | None = None) -> Any:
        """Plan, compose, submit and watch jobs; sync to Notebook instances. `%ranktable help` lists all."""
        try:
            words = shlex.split(line)
        except ValueError as exc:
            raise UsageError(f"%ranktable: {exc}") from None
        if not words or words[0] in ("help", "-h", "--help"):
            print(USAGE)
            return None
        command, rest = words[0], words[1:]
        handler = getattr(self, f"_cmd_{command.replace('-', '_')}", None)
        if handler is None:
            raise UsageError(f"%ranktable: unknown subcommand {command!r}; `%ranktable help` lists them")
        if cell is not None and command != "job":
            raise UsageError("only `%%ranktable job` is a cell magic (the cell is the training command)")
        try:
            return handler(rest, cell) if command == "job" else handler(rest)
        except _HelpShown:
            return None
        except RanktableError as exc:
            raise UsageError(exc.message) from None

    # -- cluster settings --------------------------------------------------------------------------------
    def _cluster_parser(self, name: str) -> _Parser:
        p = _Parser(prog=f"%ranktable {name}", add_help=True)
        p.add_argument("--kubeconfig", default=None)
        p.add_argument("--context", default=None)
        p.add_argument("-n", "--namespace", default=None)
        return p

    def jobs(self, args: argparse.Namespace) -> Jobs:
        """The job use cases for the cluster named by the flags, else by `%ranktable cluster`."""
        from ranktable.usecases.jobs import ClusterSettings, Jobs, team_settings

        kubeconfig = args.kubeconfig or self.kubeconfig
        context = args.context or self.context
        namespace = args.namespace or self.namespace
        key = (kubeconfig, context, namespace)
        if key not in self._jobs:
            # the jobs' owner as the panel's: the Hub user, else the kubeconfig's (a shared pool)
            owner, namespace = team_settings(
                namespace, os.environ.get("JUPYTERHUB_USER"), kubeconfig, context
            )
            self._jobs[key] = Jobs(
                ClusterSettings(kubeconfig=kubeconfig, context=context, namespace=namespace, owner=owner)
            )
        return self._jobs[key]

    def _cmd_cluster(self, argv: list[str]) -> dict[str, Any]:
        """`%ranktable cluster [--kubeconfig F] [--context C] [-n NS]`: set the defaults, show free NPUs."""
        args = self._cluster_parser("cluster").parse_args(argv)
        self.kubeconfig = args.kubeconfig or self.kubeconfig
        self.context = args.context or self.context
        self.namespace = args.namespace or self.namespace
        host, capacity, nodes = self.jobs(args).capacity()
        summary = (
            f"Cluster {host} · namespace {self.namespace} · {nodes} nodes · "
            f"free NPUs per leaf: {capacity.get('per_leaf') or capacity}"
        )
        return ShownDict(capacity, text_html(summary), summary)

    # -- jobs ----------------------------------------------------------------------------------------------
    def _cmd_jobs(self, argv: list[str]) -> list[dict[str, Any]]:
        """`%ranktable jobs [-n NS]`: the jobs table."""
        args = self._cluster_parser("jobs").parse_args(argv)
        jobs = [j.to_json() for j in self.jobs(args).summaries()]
        columns = ["name", "phase", "nodes", "running", "succeeded", "failed", "retries", "queue"]
        if jobs:
            summary = f"{len(jobs)} job(s): " + ", ".join(f"{j['name']} {j['phase']}" for j in jobs)
            return ShownList(jobs, table_html(jobs, columns), summary)
        summary = f"no jobs in {args.namespace or self.namespace}"
        return ShownList(jobs, text_html(summary), summary)

    def _cmd_stop(self, argv: list[str]) -> list[str]:
        """`%ranktable stop NAME [--keep-logs S]`: archive the run's logs, delete the job and ConfigMap."""
        from ranktable.limits import KEEP_LOGS_S

        p = self._cluster_parser("stop")
        p.add_argument("name")
        p.add_argument("--keep-logs", type=float, default=KEEP_LOGS_S, metavar="SECONDS")
        args = p.parse_args(argv)
        if args.keep_logs < 0:
            raise InputError("must be 0 or more seconds", where="--keep-logs")
        stopped = self.jobs(args).stop(None, args.name, keep_logs_s=args.keep_logs)
        deleted, kept = stopped["deleted"], stopped["logs"]
        summary = "deleted " + ", ".join(deleted) + (f"; {kept}" if kept else "")
        return ShownList(deleted, text_html(summary), summary)

    def _cmd_resume(self, argv: list[str]) -> dict[str, Any]:
        """`%ranktable resume NAME [--from-scratch]`: the next run of the lineage from the last checkpoint,
        the node a hardware fault was blamed on excluded."""
        p = self._cluster_parser("resume")
        p.add_argument("name")
        p.add_argument("--from-scratch", action="store_true")
        args = p.parse_args(argv)
        resumed = self.jobs(args).resume(None, args.name, from_scratch=args.from_scratch)
        return ShownDict(resumed, text_html(resumed["message"]), resumed["message"])

    def _cmd_lineage(self, argv: list[str]) -> dict[str, Any]:
        """`%ranktable lineage NAME`: the job's runs as one lineage, what each fault cost, the goodput."""
        p = self._cluster_parser("lineage")
        p.add_argument("name")
        args = p.parse_args(argv)
        found = self.jobs(args).lineage(None, args.name)
        return ShownDict(found, text_html(found["text"]), found["text"])

    def _cmd_logs(self, argv: list[str]) -> list[str]:
        """`%ranktable logs NAME [-f] [--rank R] [--timeout S]`: every pod's log, tagged `[rank pod]`."""
        p = self._cluster_parser("logs")
        p.add_argument("name")
        p.add_argument("-f", "--follow", action="store_true")
        p.add_argument("--rank", type=int, default=None)
        p.add_argument("--timeout", type=float, default=None, help="stop following after S seconds")
        args = p.parse_args(argv)
        stream = self.jobs(args).log_lines(None, args.name, follow=args.follow, rank=args.rank)
        deadline = None if args.timeout is None else time.monotonic() + args.timeout
        lines: list[str] = []
        try:
            for line in stream:
                text = str(line)
                lines.append(text)
                print(text, flush=True)
                if deadline is not None and time.monotonic() > deadline:
                    break
        except KeyboardInterrupt:
            pass
        finally:
            stream.close()
        summary = f"{len(lines)} line(s) from {args.name}"  # the lines themselves were printed as they came
        return ShownList(lines, text_html(summary), summary)

    def _cmd_wait(self, argv: list[str]) -> dict[str, Any]:
        """`%ranktable wait NAME [--timeout S]`: wait for the completed, valid rank table (progress bar)."""
        p = self._cluster_parser("wait")
        p.add_argument("name")
        p.add_argument("--timeout", type=float, default=600.0)
        args = p.parse_args(argv)
        bar = Progress("rank table")
        start = time.monotonic()

        def progress(text: str) -> None:
            bar.update((time.monotonic() - start) / args.timeout, text)

        result = self.jobs(args).wait_rank_table(None, args.name, args.timeout, progress)
        bar.close()
        summary = f"rank table of {args.name}: {result.report.summary()} (after {result.waited_seconds:.0f}s)"
        return ShownDict(result.to_json(), text_html(summary), summary)

    def _cmd_layout(self, argv: list[str]) -> dict[str, Any]:
        """`%ranktable layout NAME [--topology FILE]`: given vs planned layout of a running job."""
        p = self._cluster_parser("layout")
        p.add_argument("name")
        p.add_argument("--topology", default=None)
        args = p.parse_args(argv)
        layout = self.jobs(args).layout(None, args.name, args.topology)
        return ShownDict(layout.report, pre_html(layout.report_text) + layout.svg, layout.report_text)

    def _observation(self, name: str, argv: list[str]) -> Any:
        p = self._cluster_parser(name)
        p.add_argument("name")
        p.add_argument("--run", default=None, help="an archived run (job uid or a prefix)")
        args = p.parse_args(argv)
        return self.jobs(args).observation(None, args.name, run=args.run)

    def _cmd_metrics(self, argv: list[str]) -> dict[str, Any]:
        """`%ranktable metrics NAME [--run UID]`: loss (mean and per rank), step time per rank, throughput."""
        from ranktable.observe.plot import metrics_svg

        observation = self._observation("metrics", argv)
        data = observation.metrics()
        slow = [s["rank"] for s in observation.diagnosis()["stragglers"]]
        summary = (
            f"{observation.name} run {observation.uid} ({observation.source}): "
            f"{len(data['ranks'])} rank(s) with metrics"
        )
        alerts = [f"⚠ {alert['message']}" for alert in data["alerts"][:10]]
        page = text_html(summary) + metrics_svg(data, slow) + "".join(text_html(a) for a in alerts)
        return ShownDict(data, page, "\n".join([summary, *alerts]))

    def _cmd_diagnose(self, argv: list[str]) -> dict[str, Any]:
        """`%ranktable diagnose NAME [--run UID]`: first failing rank, errors per rank, stragglers, hangs."""
        from ranktable.observe.report import diagnosis_html

        result = self._observation("diagnose", argv).diagnosis()
        first = result.get("first_failure")
        summary = (
            f"first failure: rank {first['rank']} ({first.get('code') or 'error'})"
            if first
            else "no failure found"
        )
        return ShownDict(result, diagnosis_html(result), summary)

    def _cmd_compare(self, argv: list[str]) -> dict[str, Any]:
        """`%ranktable compare NAME [--runs A B]`: two runs side by side (default: the two newest)."""
        from ranktable.observe.compare import compare_text

        p = self._cluster_parser("compare")
        p.add_argument("name")
        p.add_argument("--runs", nargs=2, default=None, metavar=("A", "B"))
        args = p.parse_args(argv)
        result = self.jobs(args).compare(None, args.name, args.runs)
        text = f"job {args.name}: run A {result['a']['run']} vs run B {result['b']['run']}\n" + compare_text(
            result
        )
        return ShownDict(result, pre_html(text), text)

    def _cmd_job(self, argv: list[str], cell: str | None) -> dict[str, Any]:
        """`%%ranktable job --name N --image I [--nodes 4 ...] [--submit]`; the cell is the command."""
        from ranktable.compose.manifests import compose, dump_manifests
        from ranktable.compose.spec_flags import add_spec_flags, spec_from_args, with_cell
        from ranktable.compose.validate import has_errors
        from ranktable.usecases.storage import placed_and_checked

        p = _Parser(prog="%%ranktable job", add_help=True)
        add_spec_flags(p, required=True)
        p.add_argument("--kubeconfig", default=None)
        p.add_argument("--context", default=None)
        p.add_argument("--submit", action="store_true", help="submit when the spec has no errors")
        p.add_argument("--no-layout", action="store_true", help="skip the planned-layout preview")
        args = p.parse_args(argv)
        if args.namespace is None:
            args.namespace = self.namespace
        spec: JobSpec = spec_from_args(args)
        notes: list[Any] = []
        if (cell or "").strip() and args.script is None:
            spec, notes = with_cell(spec, cell or "")
        spec, checked = placed_and_checked(spec)
        issues = [*notes, *checked]
        if args.submit and has_errors(issues):
            raise UsageError(
                "not submitted: "
                + "; ".join(f"{i.field}: {i.message}" for i in issues if i.severity == "error")
            )
        docs = compose(spec)
        text = dump_manifests(docs)
        out: dict[str, Any] = {"spec": spec.to_dict(), "issues": [i.to_json() for i in issues], "yaml": text}
        parts = [self._issues_html(issues), pre_html(text, "yaml")]
        if not args.no_layout:
            out["layout"], svg = self._preview(args, spec)
            parts.append(svg)
        summary = f"{spec.name}: {len(issues)} issue(s)"
        if args.submit:
            result = self.jobs(args).submit_manifests(docs)
            out["submitted"] = result.to_json()
            summary = f"submitted {result.name} in {result.namespace}"
            parts.insert(
                0, f"<p>submitted <b>{html.escape(result.name)}</b> in {html.escape(result.namespace)}</p>"
            )
        return ShownDict(out, "".join(parts), summary)

    def _issues_html(self, issues: list[Any]) -> str:
        if not issues:
            return "<p>✅ the job spec is valid</p>"
        rows = [
            f"<li><b>{html.escape(i.severity)}</b> <code>{html.escape(i.field)}</code>: "
            + html.escape(i.message)
            + (f" — <i>{html.escape(i.fix)}</i>" if i.fix else "")
            + "</li>"
            for i in issues
        ]
        return "<ul>" + "".join(rows) + "</ul>"

    def _preview(self, args: argparse.Namespace, spec: JobSpec) -> tuple[dict[str, Any] | None, str]:
        """The planned layout for the nodes the job would likely get (needs a reachable cluster)."""
        try:
            result = self.jobs(args).layout_preview(spec)
        except RanktableError as exc:
            return None, f"<p><i>no layout preview: {html.escape(exc.message)}</i></p>"
        return result["report"], str(result["svg"])

    # -- SSH -----------------------------------------------------------------------------------------------
    def _remote(self) -> Any:
        """The remote use cases over `self.manager` (None: the process-wide connection manager)."""
        from ranktable.usecases.remote import Remote

        if self.remote is None or (self.manager is not None and self.remote.manager is not self.manager):
            self.remote = Remote(manager=self.manager)
        return self.remote

    def _cmd_connect(self, argv: list[str]) -> str:
        """`%ranktable connect PROFILE [--accept-host-key FP | --replace-host-key NEW_FP]`: verify the
        connection; a recreated instance's new key is trusted only with its fingerprint typed or pasted."""

        p = _Parser(prog="%ranktable connect")
        p.add_argument("profile")
        p.add_argument("--accept-host-key", default=None, metavar="FINGERPRINT")
        p.add_argument("--replace-host-key", default=None, metavar="NEW_FINGERPRINT")
        args = p.parse_args(argv)
        remote = self._remote()
        result = remote.test_connection(
            args.profile, accept_host_key=args.accept_host_key, replace_host_key=args.replace_host_key
        )
        status = str(result["status"])
        if status == "unknown-host-key":
            summary = (
                f"unknown host key for {result['host']}: {result['key_type']} {result['fingerprint']}; "
                f"check it, then: %ranktable connect {args.profile} --accept-host-key {result['fingerprint']}"
            )
        elif status == "host-key-changed":  # never offered pre-filled: the new fingerprint must be checked
            summary = (
                f"HOST KEY CHANGED for {result['host']}: recorded {result['key_type']} {result['recorded']}, "
                f"presented {result['presented']}; refused. If the instance was recreated, check the new "
                f"fingerprint with its owner, then: %ranktable connect {args.profile} "
                "--replace-host-key NEW_FINGERPRINT"
            )
        elif status == "error" and result.get("reason"):
            raise UsageError(str(result["message"]))
        else:
            summary = f"{args.profile}: {result['message']}"
        return ShownStr(status, text_html(summary), summary)

    def _cmd_sync(self, argv: list[str]) -> dict[str, Any]:
        """`%ranktable sync PROFILE [LOCAL_DIR] [--force] [--delete] [--dry-run]`: upload, with progress."""
        p = _Parser(prog="%ranktable sync")
        p.add_argument("profile")
        p.add_argument("local_dir", nargs="?", default=".")
        p.add_argument("--force", action="store_true")
        p.add_argument("--delete", action="store_true", default=None)
        p.add_argument("--dry-run", action="store_true")
        args = p.parse_args(argv)
        syncer = self._remote().syncer(args.profile, Path(args.local_dir))
        bar = Progress("sync")

        def progress(event: Any) -> None:
            fraction = event.bytes_done / event.bytes_total if event.bytes_total else 0.0
            eta = f", ETA {event.eta:.0f}s" if event.eta else ""
            bar.update(
                fraction, f"{event.files_done}/{event.files_total} files, {event.rate / 1e6:.1f} MB/s{eta}"
            )

        result = syncer.sync(dry_run=args.dry_run, force=args.force, delete=args.delete, progress=progress)
        bar.close()
        lines = [result.summary(), *(f"conflict: {c.path}: {c.reason}" for c in result.conflicts)]
        data = {"uploaded": result.uploaded, "conflicts": [c.path for c in result.conflicts]}
        return ShownDict(data, "".join(text_html(line) for line in lines), "\n".join(lines))

    def _cmd_forward(self, argv: list[str]) -> Any:
        """`%ranktable forward PROFILE REMOTE_PORT [--local-port P]`, `--list` (this kernel's forwards and
        those of other ranktable processes: CLI, other kernels), `--close ID`."""

        p = _Parser(prog="%ranktable forward")
        p.add_argument("profile", nargs="?")
        p.add_argument("remote_port", nargs="?", type=int)
        p.add_argument("--local-port", type=int, default=0)
        p.add_argument("--list", action="store_true")
        p.add_argument("--close", default=None, metavar="ID")
        args = p.parse_args(argv)
        remote = self._remote()
        if args.close:
            closed = remote.close_forward(args.close)
            summary = (
                f"closed {closed['id']} ({closed['url']} -> {closed['profile']}:{closed['remote_port']})"
            )
            return ShownDict(closed, text_html(summary), summary)
        if not args.list:
            if args.profile is None or args.remote_port is None:
                raise UsageError(
                    "%ranktable forward PROFILE REMOTE_PORT [--local-port P] (or --list, --close ID)"
                )
            fwd = remote.open_forward(args.profile, args.remote_port, args.local_port)
            close = f"close: %ranktable forward --close {fwd['id']}"
            where = f"{fwd['profile']}:{fwd['remote_port']} ({fwd['id']}; {close})"
            url = html.escape(fwd["url"])
            link = f'<a href="{url}" target="_blank" rel="noopener">{url}</a> &rarr; {html.escape(where)}'
            return ShownDict(fwd, link, f"{fwd['url']} -> {where}")
        rows = [
            {**f, "remote": f"{f['profile']}:{f['remote_port']}", "owner": f.get("owner") or "this kernel"}
            for f in remote.list_forwards()
        ]
        summary = f"{len(rows)} forward(s)"
        return ShownList(rows, table_html(rows, ["id", "url", "remote", "owner"]), summary)


USAGE = """%ranktable — plan, compose, submit and watch ranktable-routed jobs; sync to Notebook instances

  %ranktable cluster [--kubeconfig F] [--context C] [-n NS]   set defaults, show free NPUs per leaf
  %ranktable jobs | stop NAME | logs NAME [-f] [--rank R] | wait NAME | layout NAME [--topology F]
  %ranktable metrics NAME [--run UID] | diagnose NAME [--run UID]   plots and triage from the logs
  %ranktable compare NAME [--runs A B]   two runs side by side: outcome, loss, step time, throughput
  %ranktable resume NAME [--from-scratch] | lineage NAME   resume from a checkpoint; runs, faults, goodput
  %ranktable connect PROFILE [--accept-host-key FP | --replace-host-key NEW_FP]   verify an SSH profile
  %ranktable sync PROFILE [LOCAL_DIR] [--force] [--delete] [--dry-run]
  %ranktable forward PROFILE REMOTE_PORT [--local-port P] | --list | --close ID   (127.0.0.1 only)
  %%ranktable job --name N --image I [--nodes 4] [--npus 8] [--routing] ... [--submit]
      (the cell is the training command; validation, YAML and the planned layout are shown)
"""


def load_ipython_extension(ipython: Any) -> None:
    ipython.register_magics(RanktableMagics)
