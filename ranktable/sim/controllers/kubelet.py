"""A kubelet that runs each container's `command` + `args` as a local process (images are ignored).

Each pod gets a sandbox (see `sandbox.py`: working directory, mounted files, env) and log files.
Processes run in their own session and write to files, so they outlive a pool restart and are
adopted again; the exit code comes from a tiny `sh` wrapper. Restart policies, restart counts,
graceful deletion and resource release follow the real kubelet closely enough for jobs to notice.
"""

from __future__ import annotations

import contextlib
import json
import os
import signal
import subprocess
import threading
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ranktable.sim.controllers.api import ObjectStore
from ranktable.sim.controllers.common import JOB_NAME, Obj, record_event
from ranktable.sim.controllers.devices import devices_of
from ranktable.sim.controllers.faults import NO_FAULTS, fault_lines, faults_of
from ranktable.sim.controllers.logs import (
    DEFAULT_LIMIT_BYTES,
    LogPump,
    SyntheticLog,
    SyntheticReader,
    ensure_dir,
    parse_ts,
    read_log,
)
from ranktable.sim.controllers.sandbox import Sandboxes, expand
from ranktable.sim.k8s import errors
from ranktable.sim.k8s.resources import CONFIGMAPS, NODES, PODS, ResourceType
from ranktable.sim.k8s.store import now_rfc3339

MAX_GRACE_SECONDS = 5.0
TRUE_VALUES = ("1", "true", "True")  # how a log request's boolean query parameters say yes
BACKOFF_SECONDS = 10.0  # the real kubelet's initial CrashLoopBackOff delay
MAX_BACKOFF_SECONDS = 300.0
WRAPPER = '"$@"; code=$?; echo "$code" > "$0.tmp"; mv "$0.tmp" "$0"; exit "$code"'


@dataclass
class Run:
    """One run of one container (restart N of container C of a pod)."""

    namespace: str
    pod: str
    uid: str
    container: str
    restart: int
    dir: Path
    pid: int
    proc: subprocess.Popen[bytes] | None
    pump: LogPump
    started_at: str
    exit_code: int | None = None
    drained: bool = False
    kill_deadline: float | None = None
    message: str = ""
    synthetic: SyntheticLog | None = None  # a log the kubelet makes up (no process): see logs.SyntheticLog
    fault_exit: int | None = None  # set when a simulated NPU/link/node fault ended it (sim fault)

    @property
    def exit_file(self) -> Path:
        return self.dir / f"{self.restart}.exit"


def _alive(pid: int) -> bool:
    """Whether `pid` runs (a zombie counts as ended)."""
    try:
        os.kill(pid, 0)
        with open(f"/proc/{pid}/stat") as fh:
            return fh.read().split(")")[-1].split()[0] != "Z"
    except (ProcessLookupError, OSError):
        return False


def _rank_of(pod: Obj, device: int, configmaps: dict[tuple[str, str], Obj]) -> int | None:
    """The rank the rank table gives `device` of `pod` (torch_npu prints it as RankID), if known."""
    job = ((pod["metadata"].get("labels") or {}).get(JOB_NAME)) or ""
    pod_ip = (pod.get("status") or {}).get("podIP")
    for (namespace, name), cm in configmaps.items():
        if namespace != pod["metadata"].get("namespace") or not name.endswith(f"-{job}"):
            continue
        try:
            table = json.loads((cm.get("data") or {}).get("jobstart_hccl.json") or "{}")
        except ValueError:
            continue
        for server in table.get("server_list") or []:
            if server.get("container_ip") != pod_ip:
                continue
            for dev in server.get("device") or []:
                if str(dev.get("device_id")) == str(device) and str(dev.get("rank_id", "")).isdigit():
                    return int(dev["rank_id"])
    return None


def crash_backoff(restart: int, base: float) -> float:
    """The kubelet's CrashLoopBackOff: the first restart at once, then base, 2 x base ... up to 5 min."""
    return 0.0 if restart == 0 else min(MAX_BACKOFF_SECONDS, base * 2 ** (restart - 1))


class Kubelet:
    def __init__(
        self,
        store: ObjectStore,
        state_dir: Path,
        log_limit: int = DEFAULT_LIMIT_BYTES,
        backoff_seconds: float = BACKOFF_SECONDS,
        ready_to_start: Callable[[Obj], bool] | None = None,
        shared: tuple[Path, ...] = (),
    ) -> None:
        self.store = store
        self.backoff_seconds = backoff_seconds
        self.ready_to_start = ready_to_start or (lambda pod: True)  # e.g. devices not yet assigned
        self.root = ensure_dir(state_dir / "pods")
        self.log_limit = log_limit
        self.runs: dict[tuple[str, str, str], Run] = {}  # (uid, container) ... keyed by uid+container+restart
        self.sandboxes = Sandboxes(store, self.root, shared=shared)
        self.backoff: dict[tuple[str, str], float] = {}  # (uid, container) -> restart time
        self.deleting: set[str] = set()
        self._lock = threading.RLock()
        self._cond = threading.Condition()
        self._stop = threading.Event()
        self._thread = threading.Thread(target=self._pump_loop, name="sim-kubelet-pump", daemon=True)
        self._next_ip = 0

    # -- lifecycle ------------------------------------------------------------------------------------
    def start(self) -> None:
        self._adopt()
        self._thread.start()

    def stop(self, kill: bool) -> None:
        self._stop.set()
        self._thread.join(timeout=5)
        if kill:
            with self._lock:
                runs = list(self.runs.values())
            for run in runs:
                self._signal(run, signal.SIGKILL)
            for run in runs:
                if run.proc is not None:
                    with contextlib.suppress(subprocess.TimeoutExpired):
                        run.proc.wait(timeout=2)

    def exec_context(self, pod: Obj, container: str) -> tuple[dict[str, str], str]:
        """Env and working directory for `kubectl exec` into a running container of `pod`."""
        spec = next(c for c in pod["spec"]["containers"] if c["name"] == container)
        box = self.sandboxes.get(pod)
        return self.sandboxes.env(pod, spec, box), str(box.root / "work")

    def exec_argv(self, pod: Obj, argv: list[str]) -> list[str]:
        """An exec command line with the pod's mounted paths pointed into its sandbox, confined as the
        pod's own processes are (same user and namespaces)."""
        box = self.sandboxes.get(pod)
        mapped = [self.sandboxes.map_path(box, a) for a in argv]
        return self.sandboxes.confine(pod, box, mapped, box.root / "work")

    def _pod_ip(self) -> str:
        self._next_ip += 1
        n = self._next_ip
        return f"172.16.{(n // 250) % 250}.{n % 250 + 2}"

    def _addresses(self, pod: Obj) -> tuple[str, str]:
        node = self.store.find(NODES, None, pod["spec"]["nodeName"])
        host_ip = next(
            (
                a["address"]
                for a in ((node or {}).get("status") or {}).get("addresses", [])
                if a.get("type") == "InternalIP"
            ),
            "127.0.0.1",
        )
        return host_ip, (pod.get("status") or {}).get("podIP") or self._pod_ip()

    def _start(self, pod: Obj, container: Obj, restart: int) -> None:
        host_ip, pod_ip = self._addresses(pod)
        pod.setdefault("status", {}).update({"hostIP": host_ip, "podIP": pod_ip})
        box = self.sandboxes.get(pod)
        self.sandboxes.sync_files(pod, box)
        name = container["name"]
        run_dir = ensure_dir(box.root / "logs" / name)
        raw, log = run_dir / f"{restart}.raw", run_dir / f"{restart}.log"
        for stale in (raw, log, run_dir / f"{restart}.offset", run_dir / f"{restart}.exit"):
            stale.unlink(missing_ok=True)
        env = self.sandboxes.env(pod, container, box)
        argv = [
            self.sandboxes.map_path(box, expand(str(a), env))
            for a in (container.get("command") or []) + (container.get("args") or [])
        ]
        pump = LogPump(raw, log, run_dir / f"{restart}.offset", self.log_limit)
        started = now_rfc3339()
        message = ""
        proc: subprocess.Popen[bytes] | None = None
        synthetic: SyntheticLog | None = None
        try:
            synthetic = SyntheticLog.from_argv(argv, time.time_ns())
        except ValueError as exc:
            message = f"failed to start: {exc}"
        if message or synthetic is not None:
            pass  # a bad synthetic-log command fails to start; a good one needs no process
        elif not argv:
            message = "the simulated pool runs commands on the host and ignores images: set command/args"
        else:
            workdir = container.get("workingDir")
            cwd = box.root / "work"
            if workdir:
                mapped = self.sandboxes.map_path(box, workdir)
                cwd = Path(mapped) if mapped != workdir else box.root / "work" / workdir.lstrip("/")
                cwd.mkdir(parents=True, exist_ok=True)
            with open(raw, "ab") as out:
                try:
                    proc = subprocess.Popen(
                        self.sandboxes.confine(
                            pod, box, ["/bin/sh", "-c", WRAPPER, str(run_dir / f"{restart}.exit"), *argv], cwd
                        ),
                        stdin=subprocess.DEVNULL,
                        stdout=out,
                        stderr=subprocess.STDOUT,
                        cwd=cwd,
                        env=env,
                        start_new_session=True,
                    )
                except OSError as exc:
                    message = f"failed to start: {exc}"
        run = Run(
            pod["metadata"]["namespace"],
            pod["metadata"]["name"],
            pod["metadata"]["uid"],
            name,
            restart,
            run_dir,
            proc.pid if proc else 0,
            proc,
            pump,
            started,
            message=message,
            synthetic=synthetic,
        )
        if proc is None and synthetic is None:
            run.exit_code = 128
            raw.write_text(message + "\n")
        self._save_run(run)
        with self._lock:
            self.runs[(run.uid, name, str(restart))] = run
        self._set_running(pod, run)

    @staticmethod
    def _save_run(run: Run) -> None:
        """What adoption after a pool restart needs: the pid, the start, a synthetic log's description."""
        info: dict[str, Any] = {"pid": run.pid, "startedAt": run.started_at}
        if run.synthetic is not None:
            info["synthetic"] = run.synthetic.to_json()
        tmp = run.dir / f"{run.restart}.run.json.tmp"
        tmp.write_text(json.dumps(info))
        tmp.replace(run.dir / f"{run.restart}.run.json")

    def _set_running(self, pod: Obj, run: Run) -> None:
        host_ip, pod_ip = self._addresses(pod)

        def update(p: Obj) -> None:
            status = p.setdefault("status", {})
            status.update(
                {
                    "phase": "Running",
                    "hostIP": host_ip,
                    "hostIPs": [{"ip": host_ip}],
                    "podIP": pod_ip,
                    "podIPs": [{"ip": pod_ip}],
                }
            )
            status.setdefault("startTime", run.started_at)
            statuses = {c["name"]: c for c in status.get("containerStatuses") or []}
            old = statuses.get(run.container, {})
            statuses[run.container] = {
                "name": run.container,
                "image": next(
                    (c.get("image", "") for c in p["spec"]["containers"] if c["name"] == run.container), ""
                ),
                "imageID": "",
                "containerID": f"sim://{run.pid}",
                "restartCount": run.restart,
                "ready": True,
                "started": True,
                "state": {"running": {"startedAt": run.started_at}},
                **({"lastState": old["lastState"]} if old.get("lastState") else {}),
            }
            status["containerStatuses"] = [
                statuses[c["name"]] for c in p["spec"]["containers"] if c["name"] in statuses
            ]
            self._conditions(p)

        started = self.store.mutate(PODS, run.namespace, run.pod, update)
        if started is not None:
            what = f"Started container {run.container}" if not run.message else run.message
            record_event(
                self.store,
                started,
                "Started" if not run.message else "Failed",
                what,
                "Normal" if not run.message else "Warning",
                "kubelet",
            )

    @staticmethod
    def _conditions(p: Obj) -> None:
        status = p["status"]
        names = [c["name"] for c in p["spec"]["containers"]]
        statuses = {c["name"]: c for c in status.get("containerStatuses") or []}
        ready = all(statuses.get(n, {}).get("ready") for n in names)
        now = now_rfc3339()
        conds = {c["type"]: c for c in status.get("conditions") or []}
        for ctype, value in (
            ("Initialized", True),
            ("Ready", ready),
            ("ContainersReady", ready),
            ("PodScheduled", True),
        ):
            text = "True" if value else "False"
            if conds.get(ctype, {}).get("status") != text:
                conds[ctype] = {"type": ctype, "status": text, "lastTransitionTime": now}
        status["conditions"] = list(conds.values())

    # -- the sync pass (controller thread) ----------------------------------------------------------------
    def sync(self) -> None:
        pods, _ = self.store.list(PODS)
        configmaps = {
            (c["metadata"]["namespace"], c["metadata"]["name"]): c for c in self.store.list(CONFIGMAPS)[0]
        }
        self._fail_faulty(pods, configmaps)
        now = time.monotonic()
        with self._lock:  # one look at the runs, not one per pod and container (1,024^2 a pass)
            active = {(r.uid, r.container) for r in self.runs.values() if not r.drained}
        for pod in pods:
            meta, spec = pod["metadata"], pod.get("spec") or {}
            if not spec.get("nodeName"):
                continue
            uid = meta["uid"]
            if meta.get("deletionTimestamp"):
                self._terminate(pod)
                continue
            if (pod.get("status") or {}).get("phase") in ("Succeeded", "Failed"):
                continue
            if not self.ready_to_start(pod):
                continue
            box = self.sandboxes.get(pod)
            self.sandboxes.sync_files(pod, box, configmaps)
            statuses = {c["name"]: c for c in (pod.get("status") or {}).get("containerStatuses") or []}
            for container in spec.get("containers") or []:
                name = container["name"]
                if (uid, name) in active:
                    continue
                st = statuses.get(name)
                if st is None:
                    self._start(pod, container, 0)
                elif "waiting" in (st.get("state") or {}) and now >= self.backoff.get((uid, name), 0):
                    self.backoff.pop((uid, name), None)
                    self._start(pod, container, int(st.get("restartCount", 0)) + 1)

    # -- faults (ranktable sim fault) ---------------------------------------------------------------------
    def _fail_faulty(self, pods: list[Obj], configmaps: dict[tuple[str, str], Obj]) -> None:
        """End the runs whose NPU, link or node is faulty with the lines a real fault prints (exit 1), as
        the training process would; a restarted container on a faulty NPU fails again."""
        faulty = {
            n["metadata"]["name"]: f for n in self.store.list(NODES)[0] if (f := faults_of(n)) != NO_FAULTS
        }
        if not faulty:
            return
        with self._lock:
            live = [r for r in self.runs.values() if not r.drained and r.fault_exit is None]
        by_uid: dict[str, list[Run]] = {}
        for run in live:
            by_uid.setdefault(run.uid, []).append(run)
        for pod in pods:
            node = (pod.get("spec") or {}).get("nodeName") or ""
            runs = by_uid.get(pod["metadata"]["uid"])
            if node not in faulty or not runs:
                continue
            hit = faulty[node].hits(devices_of(pod))
            if not hit:
                continue
            device = hit[0]
            for run in runs:
                lines = fault_lines(
                    faulty[node].kind_of(device), device, _rank_of(pod, device, configmaps), run.pid
                )
                with open(run.dir / f"{run.restart}.raw", "ab") as raw:
                    raw.write(("\n".join(lines) + "\n").encode())
                run.fault_exit = 1
                self._signal(run, signal.SIGKILL)

    # -- deletion ----------------------------------------------------------------------------------------
    def delete_hook(self, rtype: ResourceType, obj: Obj, options: dict[str, Any]) -> Obj | None:
        """Graceful pod deletion: mark the pod, stop its processes, remove it once they are gone."""
        if rtype is not PODS:
            return None
        uid = obj["metadata"]["uid"]
        with self._lock:
            running = [r for r in self.runs.values() if r.uid == uid and not r.drained]
        if not running:
            self._forget(uid)
            return None
        grace = options.get("gracePeriodSeconds")
        if grace is None:
            grace = (obj.get("spec") or {}).get("terminationGracePeriodSeconds", 30)
        grace = min(float(grace), MAX_GRACE_SECONDS)

        def mark(p: Obj) -> None:
            if not p["metadata"].get("deletionTimestamp"):
                p["metadata"]["deletionTimestamp"] = now_rfc3339()
                p["metadata"]["deletionGracePeriodSeconds"] = int(grace)

        marked = self.store.mutate(PODS, obj["metadata"].get("namespace"), obj["metadata"]["name"], mark)
        for run in running:
            self._signal(run, signal.SIGKILL if grace <= 0 else signal.SIGTERM)
            run.kill_deadline = time.monotonic() + grace
        with self._cond:
            self._cond.notify_all()
        return marked

    def delete_pod(self, namespace: str, name: str) -> None:
        """Delete a pod the way the API would (used by controllers)."""
        pod = self.store.find(PODS, namespace, name)
        if pod is None:
            return
        if self.delete_hook(PODS, pod, {}) is None:
            with contextlib.suppress(errors.ApiError):
                self.store.delete(PODS, namespace, name)

    def _terminate(self, pod: Obj) -> None:
        uid = pod["metadata"]["uid"]
        with self._lock:
            running = [r for r in self.runs.values() if r.uid == uid and not r.drained]
        for run in running:
            if run.kill_deadline is None:
                self._signal(run, signal.SIGTERM)
                run.kill_deadline = time.monotonic() + MAX_GRACE_SECONDS
        if not running:
            with contextlib.suppress(errors.ApiError):
                self.store.delete(PODS, pod["metadata"]["namespace"], pod["metadata"]["name"], uid=uid)
            self._forget(uid)

    def _forget(self, uid: str) -> None:
        with self._lock:
            for run_key in [k for k, r in self.runs.items() if r.uid == uid and r.drained]:
                del self.runs[run_key]
            for backoff_key in [k for k in self.backoff if k[0] == uid]:
                del self.backoff[backoff_key]
            self.sandboxes.forget(uid)

    @staticmethod
    def _signal(run: Run, sig: int) -> None:
        if run.synthetic is not None:  # no process: the log stops here, the exit code as a signal's
            if run.synthetic.exit_code is None:
                run.synthetic.end_ns = time.time_ns()
                run.synthetic.exit_code = 128 + sig
            return
        if run.pid <= 0 or run.exit_code is not None:
            return
        with contextlib.suppress(ProcessLookupError, PermissionError):
            os.killpg(run.pid, sig)

    # -- the pump thread -----------------------------------------------------------------------------------
    def _pump_loop(self) -> None:
        while not self._stop.is_set():
            moved = self.pump_once()
            with self._cond:
                if moved:
                    self._cond.notify_all()
                self._cond.wait(0.05)

    def pump_once(self) -> bool:
        with self._lock:
            runs = [r for r in self.runs.values() if not r.drained]
        moved = False
        for run in runs:
            if run.exit_code is None:
                run.exit_code = self._poll_exit(run)
                if run.exit_code is not None and run.fault_exit is not None:
                    run.exit_code = run.fault_exit  # the process failed on the fault, it was not OOM-killed
                if (
                    run.exit_code is None
                    and run.kill_deadline is not None
                    and time.monotonic() > run.kill_deadline
                ):
                    self._signal(run, signal.SIGKILL)
            finished = run.exit_code is not None
            if run.synthetic is None:
                moved |= run.pump.pump(final=finished)
            elif finished:
                self._save_run(run)  # its end, for reading its log after a pool restart
            if finished:
                run.drained = True
                moved = True
                self._on_exit(run)
        return moved

    @staticmethod
    def _poll_exit(run: Run) -> int | None:
        synthetic = run.synthetic
        if synthetic is not None:
            done_at = synthetic.done_at()
            if synthetic.exit_code is None and done_at is not None and time.time_ns() >= done_at:
                synthetic.end_ns, synthetic.exit_code = done_at, 0
            return synthetic.exit_code
        if run.proc is not None:
            code = run.proc.poll()
            if code is None:
                return None
            if run.exit_file.is_file():
                return int(run.exit_file.read_text().strip() or 0)
            return 128 - code if code < 0 else code
        # adopted after a restart: our child only when the pool restarted in this same process
        if run.pid <= 0:
            return 128  # it never started (waitpid/kill on pid 0 would mean the whole process group)
        with contextlib.suppress(ChildProcessError):
            os.waitpid(run.pid, os.WNOHANG)  # reap it if it is ours and has ended: no zombie stays behind
        if _alive(run.pid):
            return None
        # Dead (or a zombie): the wrapper writes the exit file before it exits, so read it only now.
        # Reading it first raced with a process ending between the two checks: it was reported as
        # killed (137) though it had exited normally.
        if run.exit_file.is_file():
            return int(run.exit_file.read_text().strip() or 0)
        return 137

    def _on_exit(self, run: Run) -> None:
        code = run.exit_code if run.exit_code is not None else 137
        reason = "Completed" if code == 0 else ("StartError" if run.message.startswith("failed") else "Error")
        finished_at = now_rfc3339()
        pod = self.store.find(PODS, run.namespace, run.pod)
        if pod is None or pod["metadata"]["uid"] != run.uid:
            self._forget(run.uid)
            return
        if pod["metadata"].get("deletionTimestamp"):
            self._terminate(pod)
            return
        policy = (pod.get("spec") or {}).get("restartPolicy") or "Always"
        restart = policy == "Always" or (policy == "OnFailure" and code != 0)
        terminated = {
            "exitCode": code,
            "reason": reason,
            "startedAt": run.started_at,
            "finishedAt": finished_at,
            "containerID": f"sim://{run.pid}",
        }
        if run.message:
            terminated["message"] = run.message
        delay = crash_backoff(run.restart, self.backoff_seconds)
        if restart:
            self.backoff[(run.uid, run.container)] = time.monotonic() + delay

        def update(p: Obj) -> None:
            status = p.setdefault("status", {})
            statuses = {c["name"]: c for c in status.get("containerStatuses") or []}
            st = statuses.setdefault(run.container, {"name": run.container, "restartCount": run.restart})
            st["ready"] = False
            st["started"] = False
            if restart:
                st["lastState"] = {"terminated": terminated}
                st["state"] = {
                    "waiting": {
                        "reason": "CrashLoopBackOff",
                        "message": f"back-off {delay:g}s restarting failed container={run.container} "
                        f"pod={run.pod}_{run.namespace}({run.uid})",
                    }
                }
            else:
                st["state"] = {"terminated": terminated}
            status["containerStatuses"] = [
                statuses[c["name"]] for c in p["spec"]["containers"] if c["name"] in statuses
            ]
            all_done = all(
                "terminated" in (statuses.get(c["name"], {}).get("state") or {})
                for c in p["spec"]["containers"]
            )
            if all_done:
                codes = [
                    statuses[c["name"]]["state"]["terminated"]["exitCode"] for c in p["spec"]["containers"]
                ]
                status["phase"] = "Succeeded" if all(c == 0 for c in codes) else "Failed"
            self._conditions(p)

        updated = self.store.mutate(PODS, run.namespace, run.pod, update)
        if updated is not None and restart and code != 0:
            record_event(
                self.store,
                updated,
                "BackOff",
                f"Back-off restarting failed container {run.container}",
                "Warning",
                "kubelet",
            )

    # -- adoption after a restart --------------------------------------------------------------------------
    def _adopt(self) -> None:
        pods, _ = self.store.list(PODS)
        for pod in pods:
            uid = pod["metadata"]["uid"]
            self._next_ip += 1
            for st in (pod.get("status") or {}).get("containerStatuses") or []:
                if "running" not in (st.get("state") or {}):
                    if "waiting" in (st.get("state") or {}):
                        self.backoff[(uid, st["name"])] = 0
                    continue
                box = self.sandboxes.get(pod)
                restart = int(st.get("restartCount", 0))
                run_dir = box.root / "logs" / st["name"]
                info_file = run_dir / f"{restart}.run.json"
                info: dict[str, Any] = json.loads(info_file.read_text()) if info_file.is_file() else {}
                pump = LogPump(
                    run_dir / f"{restart}.raw",
                    run_dir / f"{restart}.log",
                    run_dir / f"{restart}.offset",
                    self.log_limit,
                )
                run = Run(
                    pod["metadata"]["namespace"],
                    pod["metadata"]["name"],
                    uid,
                    st["name"],
                    restart,
                    run_dir,
                    int(info.get("pid") or 0),
                    None,
                    pump,
                    str(info.get("startedAt") or now_rfc3339()),
                    synthetic=SyntheticLog.from_json(info["synthetic"]) if info.get("synthetic") else None,
                )
                self.runs[(uid, st["name"], str(restart))] = run

    # -- logs ----------------------------------------------------------------------------------------------
    def read_log(self, pod: Obj, query: dict[str, str]) -> Iterable[bytes]:
        meta = pod["metadata"]
        container, restart = _log_instance(pod, query)
        box = self.sandboxes.get(pod)
        path = box.root / "logs" / container / f"{restart}.log"
        uid = meta["uid"]

        def finished() -> bool:
            with self._lock:
                run = self.runs.get((uid, container, str(restart)))
            return run is None or run.drained

        with self._lock:
            run = self.runs.get((uid, container, str(restart)))
        synthetic = run.synthetic if run is not None else None
        info_file = box.root / "logs" / container / f"{restart}.run.json"
        if run is None and info_file.is_file():  # ended before a pool restart: its description is on disk
            saved = json.loads(info_file.read_text()).get("synthetic")
            synthetic = SyntheticLog.from_json(saved) if saved else None

        def wait(timeout: float) -> None:
            with self._cond:
                self._cond.wait(timeout)

        since_ns, tail, limit = _log_window(query)
        if synthetic is not None:
            live = run
            return SyntheticReader(
                synthetic,
                follow=query.get("follow") in TRUE_VALUES,
                # its own run's flag, without the kubelet's lock: 1,024 followers check it 10 times a second
                finished=lambda: live is None or live.drained,
                wait=self._stop.wait,  # not the pump's condition: process output must not wake these
                timestamps=query.get("timestamps") in TRUE_VALUES,
                since_ns=since_ns,
                tail=tail,
                limit_bytes=limit,
                stopping=self._stop.is_set,
            )
        return read_log(
            path,
            follow=query.get("follow") in TRUE_VALUES,
            finished=finished,
            wait=wait,
            timestamps=query.get("timestamps") in TRUE_VALUES,
            since_ns=since_ns,
            tail=tail,
            limit_bytes=limit,
            stopping=self._stop.is_set,
        )


def _log_instance(pod: Obj, query: dict[str, str]) -> tuple[str, int]:
    """The container a log request names (or the pod's only one) and which run of it: the current
    one, or with `previous` the one before; the API server's errors when there is none."""
    meta, spec = pod["metadata"], pod.get("spec") or {}
    names = [c["name"] for c in spec.get("containers") or []]
    container = query.get("container") or (names[0] if len(names) == 1 else "")
    if not container:
        raise errors.bad_request(
            f"a container name must be specified for pod {meta['name']}, choose one of: [{' '.join(names)}]"
        )
    if container not in names:
        raise errors.bad_request(f"container {container} is not valid for pod {meta['name']}")
    statuses = {c["name"]: c for c in (pod.get("status") or {}).get("containerStatuses") or []}
    st = statuses.get(container)
    previous = query.get("previous") in TRUE_VALUES
    if st is None:
        reason = "ContainerCreating" if spec.get("nodeName") else "PodInitializing"
        raise errors.bad_request(
            f'container "{container}" in pod "{meta["name"]}" is waiting to start: {reason}'
        )
    restart = int(st.get("restartCount", 0))
    if "waiting" in (st.get("state") or {}) or previous:
        # waiting after a crash: the current instance is the last one that ran
        if previous and "waiting" not in (st.get("state") or {}):
            restart -= 1
        elif previous:
            restart = restart if st.get("lastState") else -1
        if restart < 0:
            raise errors.bad_request(
                f'previous terminated container "{container}" in pod "{meta["name"]}" not found'
            )
    return container, restart


def _log_window(query: dict[str, str]) -> tuple[int | None, int | None, int | None]:
    """The part of a log a request asks for: (since, in ns since the epoch; last lines; bytes)."""
    since_ns = None
    if query.get("sinceTime"):
        try:
            since_ns = parse_ts(query["sinceTime"])
        except ValueError as exc:
            raise errors.bad_request(f"invalid sinceTime {query['sinceTime']!r}: {exc}") from exc
    elif query.get("sinceSeconds"):
        since_ns = time.time_ns() - int(query["sinceSeconds"]) * 1_000_000_000
    tail = int(query["tailLines"]) if query.get("tailLines") else None
    limit = int(query["limitBytes"]) if query.get("limitBytes") else None
    return since_ns, tail, limit
