"""`python -m ranktable.server_ext.demo`: the simulated pool + simulated Notebook instance + JupyterLab.

What `make demo` runs (and the browser tests, with `--test-config`): it starts the embedded defaults
through the public CLI (`ranktable sim start`, `ranktable sim notebook`), points `c.Ranktable` at them,
starts JupyterLab with the extension and prints the URL. Ctrl-C (or SIGTERM) stops all three.
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


EXAMPLES = Path(__file__).resolve().parents[2] / "examples"


def _ranktable(*args: str) -> list[str]:
    return [sys.executable, "-m", "ranktable", *args]


def start_pool(state_dir: Path, nodes: int, leaves: int, tenants: int | None = None) -> tuple[str, str]:
    """Start the simulated Lite pool in the background; returns (kubeconfig, context)."""
    command = _ranktable("sim", "start", "--state-dir", str(state_dir), "--nodes", str(nodes))
    if tenants is not None:
        command += ["--tenants", str(tenants)]
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
    proc = subprocess.Popen(_ranktable("sim", "notebook", "--root", str(root)), stdout=handle, stderr=handle)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline:
        if "registered" in log.read_text(errors="replace"):
            return proc
        if proc.poll() is not None:
            raise SystemExit(f"ranktable sim notebook exited:\n{log.read_text(errors='replace')}")
        time.sleep(0.2)
    proc.terminate()
    raise SystemExit("ranktable sim notebook did not start within 60 s")


def workspace(root: Path) -> Path:
    """A folder to open JupyterLab in, holding the example training script the demo jobs run."""
    root.mkdir(parents=True, exist_ok=True)
    project = root / "project"
    project.mkdir(exist_ok=True)
    if EXAMPLES.is_dir():
        for item in EXAMPLES.iterdir():
            if item.is_file() and not (project / item.name).exists():
                shutil.copy2(item, project / item.name)
    return root


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
    parser.add_argument("--fresh", action="store_true", help="start from an empty HOME (tests)")
    args = parser.parse_args(argv)
    args.port = args.port or free_port()  # a fixed default collides on a shared machine

    home = (args.home or ranktable_home()).resolve()
    if args.fresh and home.exists():
        subprocess.run(_ranktable("sim", "stop", "--state-dir", str(home / "sim")), check=False, timeout=60)
        shutil.rmtree(home)
    home.mkdir(parents=True, exist_ok=True)
    os.environ["RANKTABLE_HOME"] = str(home)
    if args.fresh:  # tests: kernelspecs installed from the panel stay inside HOME
        os.environ["JUPYTER_DATA_DIR"] = str(home / "jupyter-data")
    root = workspace((args.root or home / "workspace").resolve())
    kubeconfig, context = start_pool(home / "sim", args.nodes, args.leaves, args.tenants)
    notebook = start_notebook(home / "notebook", home / "sim-notebook.log")
    lab_cmd = [
        sys.executable,
        "-m",
        "jupyterlab",
        f"--port={args.port}",
        "--ip=127.0.0.1",
        f"--ServerApp.root_dir={root}",
        f"--Ranktable.kubeconfig={kubeconfig}",
        f"--Ranktable.context={context}",
    ]
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
    lab = subprocess.Popen(lab_cmd, env=lab_env)

    def stop(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    print(f"\nsimulated pool: KUBECONFIG={kubeconfig} (context {context})", flush=True)
    print(f"simulated Notebook instance: SSH profile 'sim-notebook' (log {home / 'sim-notebook.log'})")
    print(f"JupyterLab with the Ranktable panel: {url}")
    print("open the Ranktable panel in the left sidebar; Ctrl-C stops everything.", flush=True)
    try:
        return lab.wait()
    except KeyboardInterrupt:
        return 0
    finally:
        for proc in (lab, notebook):
            if proc.poll() is None:
                proc.terminate()
                try:
                    proc.wait(timeout=15)
                except subprocess.TimeoutExpired:
                    proc.kill()
        subprocess.run(_ranktable("sim", "stop", "--state-dir", str(home / "sim")), check=False, timeout=60)


if __name__ == "__main__":
    raise SystemExit(main())
