"""The simulated Notebook instance, driven through the real client stack (profile store, known_hosts,
``ConnectionManager``) and through a bare paramiko client where the test needs to misbehave."""

from __future__ import annotations

import io
import socket
import sys
import threading
from collections.abc import Iterator
from pathlib import Path

import paramiko
import pytest

from ranktable.remote import manager as manager_module
from ranktable.remote.errors import HostKeyChanged, KeyNotAccepted
from ranktable.remote.hostkeys import fingerprint
from ranktable.sim.notebook import SimulatedNotebook
from ranktable.sim.notebook_profile import profile_of, start_simulated_notebook
from ranktable.usecases.remote import Remote


@pytest.fixture
def sim(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Iterator[SimulatedNotebook]:
    monkeypatch.setenv("RANKTABLE_HOME", str(tmp_path / "home"))
    monkeypatch.setenv("RANKTABLE_USER_KNOWN_HOSTS", str(tmp_path / "no-user-known-hosts"))
    monkeypatch.setenv("RANKTABLE_SSH_CONFIG", str(tmp_path / "no-ssh-config"))
    monkeypatch.setattr(manager_module, "_default", None)
    instance = start_simulated_notebook(root=tmp_path / "sandbox", state_dir=tmp_path / "state")
    Remote().register_instance("sim-notebook", **profile_of(instance))
    try:
        yield instance
    finally:
        manager_module.default_manager().close()
        instance.stop()


def bare_client(sim: SimulatedNotebook, key_path: Path | None = None) -> paramiko.SSHClient:
    """A paramiko client that trusts only the simulator's host key (RejectPolicy otherwise)."""
    client = paramiko.SSHClient()
    key = sim.keys.host_key()
    client.get_host_keys().add(f"[127.0.0.1]:{sim.port}", key.get_name(), key)
    client.set_missing_host_key_policy(paramiko.RejectPolicy())
    client.connect(
        "127.0.0.1",
        sim.port,
        username=sim.user,
        key_filename=str(key_path or sim.keys.client_key_path),
        look_for_keys=False,
        allow_agent=False,
        timeout=10,
        banner_timeout=10,
    )
    return client


def test_exec_streams_output_and_exit_code(sim: SimulatedNotebook) -> None:
    conn = manager_module.default_manager().get("sim-notebook")
    result = conn.run("pwd; echo $HOME; echo oops >&2; exit 7")
    assert result.exit_status == 7
    assert result.stdout.decode().split() == [str(sim.root), str(sim.root)]
    assert result.stderr == b"oops\n"
    big = conn.run("head -c 3000000 /dev/zero", timeout=30)  # more than the channel windows
    assert big.exit_status == 0 and len(big.stdout) == 3_000_000
    assert conn.remote_root() == str(sim.shared)  # the profile's shared folder: where jobs see the code


def test_closing_the_channel_kills_the_command(sim: SimulatedNotebook) -> None:
    client = bare_client(sim)
    try:
        transport = client.get_transport()
        assert transport is not None
        chan = transport.open_session()
        chan.exec_command("sleep 300 & echo $!; wait")
        pid = int(chan.makefile("r").readline())
        assert Path(f"/proc/{pid}").exists()
        chan.close()
        for _ in range(50):
            if not Path(f"/proc/{pid}").exists():
                break
            threading.Event().wait(0.1)
        assert not Path(f"/proc/{pid}").exists()
    finally:
        client.close()


def test_sftp_put_get_confined_to_root(sim: SimulatedNotebook, tmp_path: Path) -> None:
    outside = tmp_path / "outside.txt"
    outside.write_text("secret")
    (sim.root / "escape").symlink_to(tmp_path)
    conn = manager_module.default_manager().get("sim-notebook")
    with conn.sftp() as sftp:
        sftp.mkdir("work")
        sftp.putfo(io.BytesIO(b"hello"), "work/a.txt")
        assert (sim.root / "work" / "a.txt").read_bytes() == b"hello"
        assert sftp.open(str(sim.root / "work" / "a.txt")).read() == b"hello"
        for path in (str(outside), "../outside.txt", "work/../../outside.txt", "escape/outside.txt"):
            with pytest.raises(PermissionError):
                sftp.open(path).read()
            with pytest.raises(PermissionError):
                sftp.putfo(io.BytesIO(b"x"), path)
        with pytest.raises(PermissionError):
            sftp.symlink(str(tmp_path), "work/link-out")
        with pytest.raises(PermissionError):
            sftp.listdir("..")
        assert sftp.normalize(".") == str(sim.root)
    assert outside.read_text() == "secret"


def test_port_forward_to_loopback_only(sim: SimulatedNotebook) -> None:
    server = socket.create_server(("127.0.0.1", 0))
    port = server.getsockname()[1]

    def echo_once() -> None:
        conn, _ = server.accept()
        with conn:
            conn.sendall(conn.recv(100).upper())

    threading.Thread(target=echo_once, daemon=True).start()
    client = bare_client(sim)
    try:
        transport = client.get_transport()
        assert transport is not None
        chan = transport.open_channel("direct-tcpip", ("127.0.0.1", port), ("127.0.0.1", 0))
        chan.sendall(b"ping")
        assert chan.recv(100) == b"PING"
        chan.close()
        with pytest.raises(paramiko.ChannelException):
            transport.open_channel("direct-tcpip", ("192.0.2.1", 80), ("127.0.0.1", 0))
    finally:
        client.close()
        server.close()


def test_host_key_is_pinned_and_persists(sim: SimulatedNotebook, tmp_path: Path) -> None:
    home = tmp_path / "home"
    known = (home / "known_hosts").read_text()
    key = sim.keys.host_key()
    assert f"[127.0.0.1]:{sim.port} {key.get_name()} {key.get_base64()}" in known
    # a restarted simulator presents the same key (state dir reused)
    again = SimulatedNotebook(sim.root, sim.keys.state_dir).start()
    try:
        assert fingerprint(again.keys.host_key()) == fingerprint(key)
    finally:
        again.stop()
    # an impostor on the pinned address is refused
    (home / "known_hosts").write_text(known.replace(key.get_base64(), _other_host_key_b64(tmp_path)))
    manager_module.default_manager().close()
    with pytest.raises(HostKeyChanged):
        manager_module.default_manager().get("sim-notebook").run("true")


def _other_host_key_b64(tmp_path: Path) -> str:
    from ranktable.sim.notebook_keys import ensure_ed25519_key

    return ensure_ed25519_key(tmp_path / "other_key", "other").split()[1]


def test_wrong_key_is_refused(sim: SimulatedNotebook, tmp_path: Path) -> None:
    from ranktable.sim.notebook_keys import ensure_ed25519_key

    stranger = tmp_path / "stranger_key"
    ensure_ed25519_key(stranger, "stranger")
    with pytest.raises(paramiko.AuthenticationException):
        bare_client(sim, stranger)
    from ranktable.remote.profiles import Profile, ProfileStore

    ProfileStore().add(
        Profile(name="stranger", host="127.0.0.1", port=sim.port, user=sim.user, key_file=str(stranger))
    )
    with pytest.raises(KeyNotAccepted, match="key pair is not"):
        manager_module.default_manager().get("stranger").run("true")


def test_connection_cap_of_ten(sim: SimulatedNotebook) -> None:
    clients = [bare_client(sim) for _ in range(10)]
    try:
        assert sim.active_connections == 10
        with pytest.raises((paramiko.SSHException, EOFError, ConnectionError)):
            bare_client(sim)
        clients.pop().close()
        for _ in range(50):
            if sim.active_connections < 10:
                break
            threading.Event().wait(0.1)
        extra = bare_client(sim)  # a slot freed: accepted again
        clients.append(extra)
    finally:
        for client in clients:
            client.close()


def test_remote_kernel_on_the_simulator(
    sim: SimulatedNotebook, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    from jupyter_client import KernelManager

    from ranktable.remote.kernelspec import install_kernelspec

    monkeypatch.setenv("JUPYTER_DATA_DIR", str(tmp_path / "jupyter-data"))
    monkeypatch.setenv("JUPYTER_PATH", str(tmp_path / "jupyter-data"))
    monkeypatch.setenv("JUPYTER_RUNTIME_DIR", str(tmp_path / "jupyter-runtime"))
    # what the JupyterLab server exports from c.Ranktable: the kernel inherits it, a missing path left out
    kubeconfig = tmp_path / "kubeconfig"
    kubeconfig.write_text("apiVersion: v1\n")
    monkeypatch.setenv("RANKTABLE_KUBECONFIG", str(kubeconfig))
    monkeypatch.setenv("RANKTABLE_NAMESPACE", "team-a")
    monkeypatch.setenv("RANKTABLE_HOME", str(tmp_path / "home"))
    (tmp_path / "home").mkdir(exist_ok=True)
    km = KernelManager(kernel_name=install_kernelspec("sim-notebook", python=sys.executable))
    km.start_kernel()
    kc = km.client()
    kc.start_channels()
    try:
        kc.wait_for_ready(timeout=60)
        out: list[str] = []
        reply = kc.execute_interactive(
            "import os; print(os.getcwd(), os.environ['HOME'], os.environ.get('RANKTABLE_KUBECONFIG'), "
            "os.environ.get('RANKTABLE_NAMESPACE'), os.environ.get('RANKTABLE_HOME'))",
            output_hook=lambda m: out.append(m["content"].get("text", "")),
            timeout=30,
        )
        assert reply["content"]["status"] == "ok"
        assert "".join(out).split() == [
            str(sim.shared),
            str(sim.root),
            str(kubeconfig),
            "team-a",
            str(tmp_path / "home"),
        ]
    finally:
        kc.stop_channels()
        km.shutdown_kernel(now=True)


def test_cli_runs_in_foreground_and_registers_the_profile(tmp_path: Path) -> None:
    import json
    import os
    import signal
    import subprocess

    env = {**os.environ, "RANKTABLE_HOME": str(tmp_path / "home")}
    cli = Path(sys.executable).parent / "ranktable"
    proc = subprocess.Popen(
        [str(cli), "sim", "notebook", "--root", str(tmp_path / "box")],
        env=env,
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
    )
    try:
        assert proc.stdout is not None
        first = proc.stdout.readline()
        assert first.startswith("simulated Notebook instance on 127.0.0.1:")
        port = int(first.split("127.0.0.1:")[1].split()[0])
        profile = json.loads((tmp_path / "home" / "profiles.json").read_text())["profiles"]["sim-notebook"]
        assert (profile["host"], profile["port"], profile["user"]) == ("127.0.0.1", port, "ma-user")
        shared = str((tmp_path / "box" / "shared").resolve())
        assert profile["remote_dir"] == "~/work" and profile["shared"]["instance_path"] == shared
        assert profile["shared"]["volume"] == {
            "name": "shared",
            "kind": "hostPath",
            "mount_path": shared,
            "path": shared,
            "claim": "",
            "server": "",
            "read_only": False,
        }
        with socket.create_connection(("127.0.0.1", port), timeout=5) as sock:
            assert sock.recv(8).startswith(b"SSH-2.0")
    finally:
        proc.send_signal(signal.SIGTERM)
        assert proc.wait(10) == 0


def test_openssh_clients_interoperate(sim: SimulatedNotebook, tmp_path: Path) -> None:
    """The real `ssh` and `scp` (SFTP mode) work against the simulator, with strict host-key checking."""
    import subprocess

    key_type, blob = sim.keys.host_key_line()
    known = tmp_path / "openssh_known_hosts"
    known.write_text(f"[127.0.0.1]:{sim.port} {key_type} {blob}\n")
    opts = ["-i", str(sim.keys.client_key_path), "-o", f"UserKnownHostsFile={known}", "-o", "BatchMode=yes"]
    opts += ["-o", "StrictHostKeyChecking=yes", "-o", "IdentitiesOnly=yes"]
    target = f"{sim.user}@127.0.0.1"
    ssh = subprocess.run(
        ["ssh", "-p", str(sim.port), *opts, target, "pwd; exit 5"], capture_output=True, text=True, timeout=30
    )
    assert (ssh.returncode, ssh.stdout.strip()) == (5, str(sim.root))
    local = tmp_path / "up.txt"
    local.write_text("uploaded")
    put = subprocess.run(
        ["scp", "-P", str(sim.port), *opts, str(local), f"{target}:{sim.root}/up.txt"],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert put.returncode == 0, put.stderr
    assert (sim.root / "up.txt").read_text() == "uploaded"
    escape = subprocess.run(
        ["scp", "-P", str(sim.port), *opts, f"{target}:/etc/hostname", str(tmp_path / "stolen")],
        capture_output=True,
        text=True,
        timeout=30,
    )
    assert escape.returncode != 0 and not (tmp_path / "stolen").exists()
