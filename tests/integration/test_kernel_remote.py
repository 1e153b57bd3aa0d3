"""Remote kernels through ``SSHKernelProvisioner`` against a real OpenSSH sshd (the ``sshd`` fixture).

The "remote" is this machine seen through sshd: the kernel is started by sshd's shell, so it has
``SSH_CONNECTION`` in its environment, runs in the profile's remote dir, and is a process we can look for
with ``pgrep`` after shutdown.
"""

from __future__ import annotations

import queue
import subprocess
import time
from pathlib import Path

import pytest
from jupyter_client import KernelManager
from jupyter_client.blocking import BlockingKernelClient

from ranktable.remote.kernel_remote import RemoteKernelError
from ranktable.remote.kernelspec import install_kernelspec
from tests.integration.fixtures.sshd import REMOTE_PYTHON, SshServer


def run_code(kc: BlockingKernelClient, code: str, timeout: float = 30) -> tuple[str, dict]:
    """Execute and collect stdout. ipykernel may publish a stream message just after "idle", so late
    stream messages of the same request are collected for a short grace period."""
    msg_id = kc.execute(code)
    out: list[str] = []
    deadline = time.monotonic() + timeout
    idle_at: float | None = None
    while True:
        now = time.monotonic()  # one clock reading per turn: two could straddle the grace period's end
        if idle_at is not None and now >= idle_at + 0.5:
            break
        remaining = deadline - now if idle_at is None else idle_at + 0.5 - now
        if remaining <= 0:
            raise TimeoutError(f"no idle status for {code!r} within {timeout}s")
        try:
            msg = kc.get_iopub_msg(timeout=remaining)
        except queue.Empty:
            continue
        if msg["parent_header"].get("msg_id") != msg_id:
            continue
        if msg["msg_type"] == "stream":
            out.append(msg["content"]["text"])
        elif msg["msg_type"] == "status" and msg["content"]["execution_state"] == "idle":
            idle_at = time.monotonic()
    while True:
        reply = kc.get_shell_msg(timeout=timeout)
        if reply["parent_header"].get("msg_id") == msg_id:
            return "".join(out), reply["content"]


def evaluate(kc: BlockingKernelClient, expression: str, timeout: float = 30) -> str:
    """repr() of an expression evaluated in the kernel, over the shell channel only (no iopub races).
    Right after an error or interrupt ipykernel briefly answers "aborted" (stop_on_error): retry then."""
    deadline = time.monotonic() + timeout
    while True:
        msg_id = kc.execute("", silent=True, user_expressions={"v": expression})
        while True:
            reply = kc.get_shell_msg(timeout=max(deadline - time.monotonic(), 1))
            if reply["parent_header"].get("msg_id") == msg_id:
                break
        if reply["content"]["status"] != "aborted" or time.monotonic() > deadline:
            break
        time.sleep(0.2)
    assert reply["content"]["status"] == "ok", reply["content"]
    result = reply["content"]["user_expressions"]["v"]
    assert result["status"] == "ok", result
    return str(result["data"]["text/plain"])


def group_processes(pgid: int) -> list[str]:
    """Live (non-zombie) processes of a process group, as pgrep sees them."""
    result = subprocess.run(["pgrep", "-g", str(pgid)], capture_output=True, text=True)
    live = []
    for pid in result.stdout.split():
        try:
            state = Path(f"/proc/{pid}/stat").read_text().rsplit(")", 1)[1].split()[0]
        except (OSError, IndexError):
            continue
        if state != "Z":
            live.append(pid)
    return live


def test_kernel_runs_code_remotely_in_remote_root(
    remote_kernel: tuple[KernelManager, BlockingKernelClient], remote_profile: Path
) -> None:
    km, kc = remote_kernel
    out, reply = run_code(kc, "import os; print(os.getcwd())")
    assert reply["status"] == "ok"
    assert out.strip() == str(remote_profile.resolve())
    assert evaluate(kc, "os.getcwd()") == repr(str(remote_profile.resolve()))
    assert int(evaluate(kc, "os.getpid()")) == km.provisioner.pid  # the process launched over SSH
    assert evaluate(kc, "'SSH_CONNECTION' in os.environ") == "True"  # started by sshd's session, not by us
    # the client talks to local forwarded ports only
    info = km.get_connection_info()
    assert info["ip"] == "127.0.0.1"
    remote_ports = set(km.provisioner.remote_ports.values())
    assert not remote_ports & {
        info[p] for p in ("shell_port", "iopub_port", "stdin_port", "hb_port", "control_port")
    }


def test_interrupt_stops_sleep(remote_kernel: tuple[KernelManager, BlockingKernelClient]) -> None:
    km, kc = remote_kernel
    msg_id = kc.execute("import time; time.sleep(60)")
    # wait until the kernel is busy with it
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        msg = kc.get_iopub_msg(timeout=10)
        if msg["msg_type"] == "execute_input":
            break
    time.sleep(0.5)
    started = time.monotonic()
    km.interrupt_kernel()
    reply = kc.get_shell_msg(timeout=10)
    while reply["parent_header"].get("msg_id") != msg_id:  # skip stale replies (wait_for_ready's)
        reply = kc.get_shell_msg(timeout=10)
    assert reply["content"]["status"] == "error"
    assert reply["content"]["ename"] == "KeyboardInterrupt"
    assert time.monotonic() - started < 8
    assert evaluate(kc, "6 * 7") == "42"  # the kernel survived the interrupt


def test_shutdown_leaves_no_remote_process(remote_kernel: tuple[KernelManager, BlockingKernelClient]) -> None:
    km, kc = remote_kernel
    pgid = km.provisioner.pid
    assert pgid is not None
    # a child process in the kernel's group must not outlive the kernel either
    run_code(kc, "import subprocess; p = subprocess.Popen(['sleep', '300'])")
    assert len(group_processes(pgid)) >= 2
    files = km.provisioner._files
    assert files is not None and Path(files.connection_file).exists()
    assert oct(Path(files.connection_file).stat().st_mode & 0o777) == "0o600"
    kc.stop_channels()
    km.shutdown_kernel()
    deadline = time.monotonic() + 5
    while group_processes(pgid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert group_processes(pgid) == []
    assert not Path(files.connection_file).exists()


def test_restart_keeps_local_ports_and_replaces_remote_process(
    remote_kernel: tuple[KernelManager, BlockingKernelClient],
) -> None:
    km, kc = remote_kernel
    before = km.get_connection_info()
    old_pid = km.provisioner.pid
    km.restart_kernel(now=True)
    kc.wait_for_ready(timeout=60)
    assert int(evaluate(kc, "__import__('os').getpid()")) == km.provisioner.pid != old_pid
    assert group_processes(old_pid) == []
    after = km.get_connection_info()
    assert {k: after[k] for k in ("shell_port", "iopub_port", "control_port")} == {
        k: before[k] for k in ("shell_port", "iopub_port", "control_port")
    }


@pytest.mark.fault
def test_reconnects_after_dropped_connection(
    remote_kernel: tuple[KernelManager, BlockingKernelClient], sshd: SshServer
) -> None:
    km, kc = remote_kernel
    run_code(kc, "x = 41")
    pid = km.provisioner.pid
    assert sshd.kill_connections() >= 1  # every per-connection sshd dies: channels and transport gone
    assert group_processes(pid)  # the detached kernel survives a dropped connection
    assert km.is_alive()  # poll reconnects and finds it
    # shell round trip through a fresh tunnel; state kept, so it is the same kernel
    assert evaluate(kc, "x + 1", timeout=60) == "42"
    # iopub re-subscribes too (a message published before it reconnects may be missed: retry)
    deadline = time.monotonic() + 30
    out = ""
    while out.strip() != "43":
        assert time.monotonic() < deadline, "iopub output never came back"
        try:
            out, _ = run_code(kc, "print(x + 2)", timeout=5)
        except TimeoutError:
            continue
    assert km.provisioner.pid == pid


def test_missing_ipykernel_gives_install_command(remote_profile: Path) -> None:
    probe = subprocess.run(["/usr/bin/python3", "-c", "import ipykernel"], capture_output=True)
    python = "/usr/bin/python3"
    if probe.returncode == 0:  # make a wrapper whose import fails instead
        wrapper = remote_profile.parent / "py-without-ipykernel"
        wrapper.write_text('#!/bin/sh\nexec /usr/bin/python3 -S -I "$@"\n')
        wrapper.chmod(0o755)
        python = str(wrapper)
    name = install_kernelspec("box", python=python)
    km = KernelManager(kernel_name=name)
    with pytest.raises(RemoteKernelError) as err:
        km.start_kernel()
    message = str(err.value)
    assert "ipykernel is not installed" in message
    assert f"{python} -m pip install ipykernel" in message
    assert not km.has_kernel
    assert km.provisioner._forwarder is None  # no local listeners left behind
    km.cleanup_resources()


def test_missing_remote_python_is_named(remote_profile: Path) -> None:
    name = install_kernelspec("box", python="/nonexistent/python3")
    km = KernelManager(kernel_name=name)
    with pytest.raises(RemoteKernelError, match="/nonexistent/python3"):
        km.start_kernel()
    km.cleanup_resources()


def test_provisioner_info_lets_a_new_provisioner_take_over(
    remote_kernel: tuple[KernelManager, BlockingKernelClient],
) -> None:
    """What a restarted Jupyter server does: a fresh provisioner loads the saved info, re-opens the
    tunnel on the same local ports and manages the still-running remote kernel."""
    import asyncio

    from ranktable.remote.kernel_provisioner import SSHKernelProvisioner

    km, kc = remote_kernel
    evaluate(kc, "globals().setdefault('marker', 'kept')")
    old = km.provisioner
    info = asyncio.run(old.get_provisioner_info())
    pid = old.pid
    # the old server goes away without stopping the kernel: its tunnel and output relay close
    old.detach()
    assert group_processes(pid)

    async def take_over() -> SSHKernelProvisioner:
        new = SSHKernelProvisioner(kernel_id=info["kernel_id"], kernel_spec=km.kernel_spec)
        await new.load_provisioner_info(info)
        assert new.has_process and new.pid == pid
        assert await new.poll() is None  # alive, and the tunnel is back on the recorded ports
        return new

    new = asyncio.run(take_over())
    assert evaluate(kc, "marker", timeout=60) == "'kept'"  # same client, same ports, same kernel
    km.provisioner = new
    kc.stop_channels()
    km.shutdown_kernel(now=True)
    deadline = time.monotonic() + 5
    while group_processes(pid) and time.monotonic() < deadline:
        time.sleep(0.1)
    assert group_processes(pid) == []


def test_start_failure_shows_the_remote_log(remote_profile: Path) -> None:
    # `python -m` looks in the cwd (the remote root) first: a module shadowing ipykernel_launcher that dies
    remote_profile.mkdir(parents=True, exist_ok=True)
    (remote_profile / "ipykernel_launcher.py").write_text(
        "import sys\nprint('boom: this ipykernel is broken', file=sys.stderr)\nsys.exit(3)\n"
    )
    km = KernelManager(kernel_name=install_kernelspec("box", python=REMOTE_PYTHON))
    with pytest.raises(RemoteKernelError) as err:
        km.start_kernel()
    assert "exited during start-up" in str(err.value)
    assert "boom: this ipykernel is broken" in str(err.value)  # the tail of the remote log
    assert km.provisioner._forwarder is None
    km.cleanup_resources()
