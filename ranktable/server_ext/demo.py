"""`python -m ranktable.server_ext.demo`: the simulated pool + simulated Notebook instance + JupyterLab.

What `make demo` runs (and the browser tests, with `--test-config`): it starts the embedded defaults
through the public CLI (`ranktable sim start`, `ranktable sim notebook`), points `c.Ranktable` at them,
starts JupyterLab with the extension and prints the URL. The instance's shared folder is mounted into
the pool's pods at the same path; the workspace holds an example project, job file, rank table and
topology (`ranktable.usecases.demo`). Children's output goes to HOME/demo-logs; Ctrl-C (or SIGTERM) stops
all three, JupyterLab's kernels (remote ones included) with it.
"""

from __future__ import annotations

import argparse
import os
import secrets
import shutil
import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

from ranktable.home import ranktable_home


def free_port() -> int:
    """A port nobody listens on now (the OS picks it): fixed defaults collide on shared machines."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


EXAMPLES = Path(__file__).resolve().parents[2] / "examples" / "demo"  # the demo's workspace content
PROFILE = "sim-notebook"  # the SSH profile `ranktable sim notebook` registers


def _ranktable(*args: str) -> list[str]:
    return [sys.executable, "-m", "ranktable", *args]


def start_pool(
    state_dir: Path, nodes: int, leaves: int, tenants: int | None = None, shared: str | None = None
) -> tuple[str, str]:
    """Start the simulated Lite pool in the background; returns (kubeconfig, context). `shared`: the
    instance's shared folder, mounted into the pods that ask for it at the same path."""
    command = _ranktable("sim", "start", "--state-dir", str(state_dir), "--nodes", str(nodes))
    if tenants is not None:
        command += ["--tenants", str(tenants)]
    if shared:
        command += ["--shared-storage", shared]
    out = subprocess.run(
        [*command, "--leaves", str(leaves)],
        check=True,
        capture_output=True,
        text=True,
        timeout=120 + nodes // 4,  # a large pool (the 1,024-node benchmark) takes longer to start
    ).stdout
    kubeconfig = context = ""
    for line in out.splitlines():
        if line.startswith("KUBECONFIG="):
            kubeconfig = line.split("=", 1)[1].strip()
        elif line.startswith("context:"):
            context = line.split(":", 1)[1].strip()
    if not kubeconfig:
        raise SystemExit(f"ranktable sim start printed no KUBECONFIG:\n{out}")
    return kubeconfig, context


def start_notebook(root: Path, log: Path) -> subprocess.Popen[bytes]:
    """The simulated Notebook instance (registers the `sim-notebook` SSH profile, host key pinned)."""
    handle = log.open("wb")
    proc = subprocess.Popen(
        _ranktable("sim", "notebook", "--root", str(root)),
        stdout=handle,
        stderr=handle,
        start_new_session=True,  # Ctrl-C reaches the demo only; it stops the children in order
    )
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if "registered" in log.read_text(errors="replace"):
            return proc
        if proc.poll() is not None:
            raise SystemExit(f"ranktable sim notebook exited:\n{log.read_text(errors='replace')}")
        time.sleep(0.2)
    proc.terminate()
    raise SystemExit("ranktable sim notebook did not start within 60 s")


def wait_listening(port: int, proc: subprocess.Popen[bytes], timeout: float = 180) -> None:
    """Return once JupyterLab accepts connections on `port`, so the URL printed next opens."""
    deadline = time.monotonic() + timeout
    while time.monotonic() < deadline:
        if proc.poll() is not None:
            raise SystemExit("JupyterLab exited at start: see demo-logs/jupyterlab.log")
        with socket.socket() as probe:
            probe.settimeout(1)
            if probe.connect_ex(("127.0.0.1", port)) == 0:
                return
        time.sleep(0.2)
    raise SystemExit(f"JupyterLab did not listen on port {port} within {timeout:.0f} s")


def stop_process(proc: subprocess.Popen[bytes] | None, timeout: float = 20) -> None:
    """SIGTERM (Jupyter shuts its kernels down, remote ones included), then SIGKILL after `timeout`."""
    if proc is None or proc.poll() is not None:
        return
    proc.terminate()
    try:
        proc.wait(timeout=timeout)
    except subprocess.TimeoutExpired:
        proc.kill()
        proc.wait(timeout=5)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m ranktable.server_ext.demo", description=__doc__)
    parser.add_argument(
        "--home", type=Path, default=None, help="RANKTABLE_HOME (default: see ranktable.home)"
    )
    parser.add_argument("--root", type=Path, default=None, help="JupyterLab root (default: HOME/workspace)")
    parser.add_argument(
        "--port", type=int, default=0, help="JupyterLab's port (default 0: a free one, printed with the URL)"
    )
    parser.add_argument("--nodes", type=int, default=8)
    parser.add_argument("--leaves", type=int, default=2)
    parser.add_argument(
        "--tenants",
        type=int,
        default=None,
        help="nodes held by other tenants (default: the simulator's, one per 8 nodes; 0: a job may use all)",
    )
    parser.add_argument("--test-config", type=Path, default=None, help="extra jupyter config (galata)")
    parser.add_argument("--no-browser", action="store_true")
    parser.add_argument(
        "--no-auto-resume",
        action="store_true",
        help="failed jobs wait for a person (c.Ranktable.auto_resume)",
    )
    parser.add_argument("--fresh", action="store_true", help="start from an empty HOME (tests)")
    args = parser.parse_args(argv)
    args.port = args.port or free_port()  # a fixed default collides on a shared machine
    home = (args.home or ranktable_home()).resolve()
    children: list[subprocess.Popen[bytes]] = []
    for signum in (signal.SIGINT, signal.SIGTERM):  # SIGINT too: a background start may ignore it
        signal.signal(signum, _interrupt)
    try:
        return _run(args, home, children)
    except KeyboardInterrupt:  # Ctrl-C (or SIGTERM), wherever it came: stop what was started, quietly
        return 0
    finally:
        signal.signal(signal.SIGINT, signal.SIG_IGN)  # a second Ctrl-C must not cut the clean-up short
        for proc in reversed(children):
            stop_process(proc)
        subprocess.run(
            _ranktable("sim", "stop", "--state-dir", str(home / "sim")),
            check=False,
            capture_output=True,
            timeout=60,
        )
        print("stopped JupyterLab, its kernels, the simulated Notebook instance and the pool.", flush=True)


def _interrupt(*_: object) -> None:
    raise KeyboardInterrupt


def _run(args: argparse.Namespace, home: Path, children: list[subprocess.Popen[bytes]]) -> int:
    from ranktable.usecases.demo import EXAMPLE_JOB, LAYOUT_DIR, prepare_workspace
    from ranktable.usecases.jobs import ClusterSettings
    from ranktable.usecases.storage import known_shared_storage

    if args.fresh and home.exists():
        subprocess.run(
            _ranktable("sim", "stop", "--state-dir", str(home / "sim")), check=False, capture_output=True
        )
        shutil.rmtree(home)
    home.mkdir(parents=True, exist_ok=True)
    os.environ["RANKTABLE_HOME"] = str(home)
    if args.fresh:  # tests: kernelspecs installed from the panel stay inside HOME
        os.environ["JUPYTER_DATA_DIR"] = str(home / "jupyter-data")
    logs = home / "demo-logs"
    logs.mkdir(exist_ok=True)
    children.append(start_notebook(home / "notebook", logs / "sim-notebook.log"))
    shared = next((s.instance_path for s in known_shared_storage() if s.label == f"profile {PROFILE}"), None)
    if shared is None:
        raise SystemExit(f"the simulated instance registered no shared storage in profile {PROFILE!r}")
    kubeconfig, context = start_pool(home / "sim", args.nodes, args.leaves, args.tenants, shared)
    root = (args.root or home / "workspace").resolve()
    settings = ClusterSettings(kubeconfig=kubeconfig, context=context)
    prepare_workspace(root, EXAMPLES, shared, settings)
    lab_cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--port={args.port}",
        "--ip=127.0.0.1",
        f"--ServerApp.root_dir={root}",
        f"--Ranktable.kubeconfig={kubeconfig}",
        f"--Ranktable.context={context}",
        f"--Ranktable.topology={root / LAYOUT_DIR / 'topology.yaml'}",
        "--Ranktable.keep_remote_kernels=False",  # Ctrl-C stops the remote kernels too
    ]
    if not args.no_auto_resume:  # a fault injected with `ranktable sim fault` heals by itself
        lab_cmd += ["--Ranktable.auto_resume=True", "--Ranktable.auto_resume_poll_seconds=1"]
    url = f"http://127.0.0.1:{args.port}/lab"
    if args.test_config:
        lab_cmd.append(f"--config={args.test_config.resolve()}")
    lab_env = dict(os.environ)
    if not args.test_config:  # our own token (through the environment, not argv) so the URL below opens
        token = secrets.token_hex(24)
        lab_env["JUPYTER_TOKEN"] = token
        url += f"?token={token}"
    if args.no_browser:
        lab_cmd.append("--no-browser")
    if hasattr(os, "geteuid") and os.geteuid() == 0:
        lab_cmd.append("--allow-root")  # containers and CI run as root
    with (logs / "jupyterlab.log").open("wb") as lab_log:
        children.append(
            subprocess.Popen(lab_cmd, env=lab_env, stdout=lab_log, stderr=lab_log, start_new_session=True)
        )
    wait_listening(args.port, children[-1])
    print(
        f"""
Ranktable demo: everything below is simulated on this machine.
  JupyterLab        {url}
  simulated pool    {args.nodes} Snt9B nodes under {args.leaves} leaves (KUBECONFIG={kubeconfig})
  Notebook instance SSH profile {PROFILE!r}; its shared storage {shared}
                    (sync goes there, and jobs' pods see it at the same path)
  workspace         {root}
                    project/train.py, {EXAMPLE_JOB}, {LAYOUT_DIR}/ (rank table + topology)
  logs              {logs}
  auto-resume       {"off" if args.no_auto_resume else "on"} (inject a fault: docs/first-hour.md)
Walk-through: docs/first-hour.md. Ctrl-C stops everything.""",
        flush=True,
    )
    return children[-1].wait()


if __name__ == "__main__":
    raise SystemExit(main())
