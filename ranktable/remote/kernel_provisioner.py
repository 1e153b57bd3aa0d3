"""``SSHKernelProvisioner``: Jupyter kernels that run on a Notebook instance over a profile's SSH transport.

jupyter_client asks the provisioner to launch, poll, signal and stop "the kernel process"; here that
process is ``python -m ipykernel_launcher`` on the remote, started detached in its own session (its pid is
its process group, which is what we signal), and its five ZMQ ports are reached through ``direct-tcpip``
channels from local 127.0.0.1 listeners. The local ports stay the same across restarts and reconnects, so
clients never need a new connection file; only the remote side changes.

Configured from the kernelspec: ``metadata.kernel_provisioner.config = {"profile": NAME, "python": PATH}``.
"""

from __future__ import annotations

import asyncio
import shlex
import signal
import time
from collections.abc import Callable
from typing import Any, cast

from jupyter_client.connect import KernelConnectionInfo
from jupyter_client.provisioning import KernelProvisionerBase
from traitlets import Bool, Int, Unicode

from ranktable.home import shared_settings
from ranktable.remote import kernel_remote as remote
from ranktable.remote.kernel_link import KernelLink, open_link
from ranktable.remote.kernel_output import DEFAULT_CAP, IopubRelay, RemoteLog, ShellRelay, Throttled
from ranktable.remote.kernel_records import KernelRecords
from ranktable.remote.kernel_remote import PORT_NAMES, RemoteFiles, RemoteKernelError
from ranktable.remote.kernel_tunnel import PortForwarder

REMOTE_KERNEL_DIR = ".ranktable/kernels"
POLL_INTERVAL = 0.5  # seconds between liveness round trips (Jupyter polls every 0.1 s while shutting down)
FAST_POLL_INTERVAL = 0.1  # ... right after we sent a terminating signal, so shutdown is not slowed down
FAST_POLL_WINDOW = 5.0
START_TIMEOUT = 60.0  # seconds for the remote kernel to open its shell port


SHELL_KEEPER = "shell_keeper_port"  # remote_ports' entry of the instance's shell reply keeper


class SSHKernelProvisioner(KernelProvisionerBase):
    """Launches ipykernel on the profile's host and forwards its ports through the profile's SSH transport."""

    profile = Unicode("", config=True, help="ranktable SSH profile the kernel runs on")
    python = Unicode("python3", config=True, help="remote Python interpreter (needs ipykernel)")
    keep_output = Bool(
        True,
        config=True,
        help="record the kernel's output on the instance and replay what clients missed after a "
        "disconnect or a Jupyter server restart",
    )
    output_log_bytes = Int(DEFAULT_CAP, config=True, help="bytes per IOPub log file on the instance (2 kept)")

    def __init__(self, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self._link: KernelLink | None = None
        self._forwarder: PortForwarder | None = None
        self.pid: int | None = None  # the remote kernel while we manage it (None once it has exited)
        self._pgid: int | None = None  # its process group, kept until cleanup kills any leftovers
        self.remote_ports: dict[str, int] = {}
        self.remote_dir: str | None = None
        self._inherited: dict[str, str] = shared_settings()  # the server's settings (pre_launch: its env)
        self._files: RemoteFiles | None = None
        self._exit_code: int | None = None
        self._last_poll = 0.0
        self._fast_poll_until = 0.0
        self._relay: IopubRelay | None = None
        self._keeper_local: int | None = None  # the forwarder's listener to the instance's reply keeper
        self._iopub_seq = 0  # IOPub log records delivered to local clients
        self._shell: ShellRelay | None = None  # the local shell port when replies are kept (#26.2)
        self._shell_seq = 0  # shell reply log records delivered
        self._detached = False  # handed over to a later Jupyter server: never touch the remote kernel
        self._records = KernelRecords()
        self._save_seq = Throttled(self._record_seq)

    # -- helpers ------------------------------------------------------------------------------------
    @property
    def _where(self) -> str:
        return f"kernel {self.kernel_spec.display_name if self.kernel_spec else ''} (profile {self.profile})"

    def _require_profile(self) -> str:
        if not self.profile:
            raise RemoteKernelError(
                "the kernelspec names no SSH profile",
                where="kernel.json metadata.kernel_provisioner.config.profile",
                fix="reinstall it with `ranktable kernel install PROFILE`",
            )
        return self.profile

    def _ensure_link(self) -> KernelLink:
        if self._link is None:
            self._link = open_link(self._require_profile())
        return self._link

    def _run_sync(self, command: str, stdin: bytes | None, timeout: float) -> tuple[int, bytes, bytes]:
        return self._ensure_link().run(command, stdin, timeout)

    def _ensure_forwarder(self, wanted: dict[str, int]) -> dict[str, int]:
        """Listeners on the wanted local ports (0 = any); kept as they are when they already match."""
        if self._forwarder is not None:
            current = [p for p in self._forwarder.ports if p != self._keeper_local]
            current += [r.port for r in (self._relay, self._shell) if r is not None]
            if sorted(current) == sorted(wanted.values()):
                return wanted
            self._forwarder.close()
            self._close_relays()  # free their ports before binding again
        forwarder = PortForwarder(self._open_forward, name=f"ranktable-kernel-{self.kernel_id}")
        relay = shell = None
        keeps_shell = self._keeps_shell
        try:
            ports = {
                name: forwarder.listen(wanted.get(name, 0))
                for name in PORT_NAMES
                if not (self.keep_output and name == "iopub_port")
                and not (keeps_shell and name == "shell_port")
            }
            if self.keep_output:  # IOPub comes from the remote log, not straight from the kernel
                relay = self._new_relay(wanted.get("iopub_port", 0))
                ports["iopub_port"] = relay.port
            if keeps_shell:  # so do shell replies: requests go to the instance's reply keeper
                self._keeper_local = forwarder.listen(0)
                shell = ShellRelay(
                    self._remote_log("shell", self._shell_seq, self._shell_delivered),
                    keeper_port=self._keeper_local,
                    port=wanted.get("shell_port", 0),
                )
                ports["shell_port"] = shell.port
        except (OSError, Exception):
            forwarder.close()
            for r in (relay, shell):
                if r is not None:
                    r.close()
            raise
        forwarder.start()
        self._forwarder = forwarder
        self._close_relays()
        self._relay, self._shell = relay, shell
        return ports

    @property
    def _keeps_shell(self) -> bool:
        """Shell replies kept on the instance: with the output, unless an adopted kernel predates it."""
        return self.keep_output and (not self.remote_ports or SHELL_KEEPER in self.remote_ports)

    def _shell_delivered(self, seq: int) -> None:
        self._shell_seq = seq

    def _close_relays(self) -> None:
        for relay in (self._relay, self._shell):
            if relay is not None:
                relay.close()
        self._relay = self._shell = None

    def _clients_connected(self) -> bool:
        """True unless we run in Jupyter Server and no websocket is connected to this kernel: then
        the server only buffers output (lost if it stops), so it does not count as delivered."""
        multi = getattr(self.parent, "parent", None)
        connections = getattr(multi, "_kernel_connections", None)
        return connections is None or connections.get(self.kernel_id, 0) > 0

    def _new_relay(self, port: int) -> IopubRelay:
        return IopubRelay(self._remote_log("iopub", self._iopub_seq, self._delivered), port=port)

    def _remote_log(self, channel: str, after: int, on_progress: Callable[[int], None]) -> RemoteLog:
        """The kernel's `channel` log on the instance, over this kernel's link; its path is set on start."""
        return RemoteLog(
            lambda: self._ensure_link().connection.open_session(),
            self.python,
            "",
            after=after,
            on_progress=on_progress,
            name=f"ranktable-{channel}-{self.kernel_id}",
        )

    def _start_relay(self) -> None:
        if self._relay is not None and self._files is not None:
            self._relay.log_path = self._files.iopub_log
            self._relay.start()
        if self._shell is not None and self._files is not None:
            self._shell.log_path = self._files.shell_log
            self._shell.start()

    def _delivered(self, seq: int) -> None:
        if self._clients_connected():
            self._save_seq(seq)

    def _record_seq(self, seq: int) -> None:
        self._iopub_seq = seq
        if not self._detached:
            self._records.update(str(self.kernel_id), iopub_seq=seq)

    def _open_forward(self, target: tuple[str, int], origin: tuple[str, int]) -> Any:
        return self._ensure_link().open_forward(target, origin)

    def _local_ports(self) -> dict[str, int]:
        info = cast(dict[str, Any], self.connection_info)
        return {name: int(info[name]) for name in PORT_NAMES}

    def _point_forwarder(self) -> None:
        assert self._forwarder is not None
        local = self._local_ports()
        for name in PORT_NAMES:
            if name in local and local[name] in self._forwarder.ports:
                self._forwarder.point(local[name], ("127.0.0.1", self.remote_ports[name]))
        if self._shell is not None and SHELL_KEEPER in self.remote_ports:
            self._forwarder.point(self._shell.keeper_port, ("127.0.0.1", self.remote_ports[SHELL_KEEPER]))

    # -- launch -------------------------------------------------------------------------------------
    async def pre_launch(self, **kwargs: Any) -> dict[str, Any]:
        """Bind the local forwarding ports and write the local connection file with them."""
        self._require_profile()
        km = self.parent
        kwargs.pop("extra_arguments", None)
        if km is not None:
            if km.transport != "tcp":
                raise RemoteKernelError(
                    f"remote kernels need the tcp transport, not {km.transport!r}",
                    where="KernelManager.transport",
                    fix="use the default transport (tcp)",
                )
            km.ip = "127.0.0.1"
            wanted = {name: int(getattr(km, name) or 0) for name in PORT_NAMES}
            ports = self._ensure_forwarder(wanted)
            for name, port in ports.items():
                setattr(km, name, port)
            km.write_connection_file()
            self.connection_info = km.get_connection_info()
        cmd = list(self.kernel_spec.argv) if self.kernel_spec else []
        launch = await super().pre_launch(cmd=cmd, **kwargs)
        self._inherited = shared_settings(launch.get("env") or {})
        return launch

    async def launch_kernel(self, cmd: list[str], **kwargs: Any) -> KernelConnectionInfo:
        """Start ipykernel on the remote (cmd, env and cwd are local notions and are not used)."""
        if self._forwarder is None:
            ports = self._ensure_forwarder({})
            merged = {
                **cast(dict[str, Any], self.connection_info),
                **ports,
                "ip": "127.0.0.1",
                "transport": "tcp",
            }
            self.connection_info = cast(KernelConnectionInfo, merged)
        try:
            await asyncio.to_thread(self._launch_remote)
        except BaseException:
            # A failed start must not leave listeners or remote files behind (Jupyter may never call
            # cleanup for a kernel that never started).
            await self.cleanup(restart=False)
            raise
        self._exit_code = None
        self._last_poll = time.monotonic()
        return self.connection_info

    def _launch_remote(self) -> None:
        run = self._run_sync
        link = self._ensure_link()
        found = remote.probe(run, self.python, self._where)
        self.remote_dir = link.remote_dir()
        self._files = RemoteFiles(f"{found.home}/{REMOTE_KERNEL_DIR}", str(self.kernel_id))
        self.remote_ports = dict(zip(PORT_NAMES, found.ports[: len(PORT_NAMES)], strict=True))
        shell = None
        if self._shell is not None:  # the instance keeps the shell replies: its keeper's port
            self.remote_ports[SHELL_KEEPER] = found.ports[len(PORT_NAMES)]
            shell = (self.remote_ports["shell_port"], self.remote_ports[SHELL_KEEPER])
        info = {
            key: (value.decode() if isinstance(value, bytes) else value)
            for key, value in self.connection_info.items()
            if key not in ("session",)
        }
        info.update({name: self.remote_ports[name] for name in PORT_NAMES})
        info.update({"ip": "127.0.0.1", "transport": "tcp"})
        remote.write_connection_file(run, self._files, info)
        iopub = self.remote_ports["iopub_port"] if self.keep_output else None
        self.pid = self._pgid = remote.launch(
            run,
            self.python,
            self.remote_dir,
            self._files,
            iopub_port=iopub,
            shell=shell,
            cap=self.output_log_bytes,
            settings=self._inherited,  # the server's cluster: `%ranktable jobs` works at once
        )
        self._wait_until_listening()
        if self.keep_output:
            self._wait_until_recording()
        self._point_forwarder()  # only now: earlier, clients' connects would be refused (and logged)
        self._start_relay()
        self._save_record()

    def _wait_until_recording(self, timeout: float = 10.0) -> None:
        """Until the recorder has subscribed (ipykernel's welcome is its first record)."""
        assert self._files is not None
        deadline = time.monotonic() + timeout
        test = f"test -s {shlex.quote(self._files.iopub_log)}"
        while time.monotonic() < deadline:
            if self._run_sync(test, None, 15.0)[0] == 0:
                return
            time.sleep(0.05)
        self.log.warning(
            "ranktable: the output recorder of %s did not start; output may be lost", self._where
        )

    def _state(self) -> dict[str, Any]:
        """The provisioner's info as plain JSON (what a later server needs to take the kernel over)."""
        info = {
            key: (value.decode() if isinstance(value, bytes) else value)
            for key, value in dict(self.connection_info or {}).items()
        }
        return {
            "kernel_id": str(self.kernel_id),
            "connection_info": info,
            "profile": self.profile,
            "python": self.python,
            "pid": self.pid,
            "remote_ports": dict(self.remote_ports),
            "remote_dir": self.remote_dir,
            "remote_files": None if self._files is None else [self._files.directory, self._files.kernel_id],
            "keep_output": self.keep_output,
            "iopub_seq": self._iopub_seq,
        }

    def _save_record(self) -> None:
        km = self.parent
        self._records.save(
            str(self.kernel_id),
            {
                "kernel_name": getattr(km, "kernel_name", "") or "",
                "profile": self.profile,
                "started": time.time(),
                "provisioner": self._state(),
            },
        )

    def detach(self) -> None:
        """The Jupyter server stops but the kernel keeps running: close our local ends only, and
        record how far its output was delivered so the next server replays the rest."""
        self._close_relays()
        self._save_seq.flush()  # -> self._iopub_seq: the last message a client got
        if self._forwarder is not None:
            self._forwarder.close()
            self._forwarder = None
        self._records.update(str(self.kernel_id), iopub_seq=self._iopub_seq)
        self._detached = True
        self.pid = None  # Jupyter must not poll, signal or clean it up any more

    def _wait_until_listening(self) -> None:
        """Until the kernel's shell port listens; a kernel that dies meanwhile shows its log."""
        assert self.pid is not None and self._files is not None
        deadline = time.monotonic() + START_TIMEOUT
        port = self.remote_ports["shell_port"]
        while time.monotonic() < deadline:
            state = remote.startup_state(self._run_sync, self.pid, port)
            if state == "listening" or (state == "unknown" and self._shell_port_answers(port)):
                return
            if state == "dead":
                tail = remote.log_tail(self._run_sync, self._files)
                remote.remove_files(self._run_sync, self._files, keep_log=True)
                self.pid = None
                raise RemoteKernelError(
                    f"the remote kernel exited during start-up; end of {self._files.log_file}:\n{tail}",
                    where=self._where,
                    fix="fix the error above on the instance (e.g. reinstall ipykernel), then restart",
                )
            time.sleep(0.1)
        raise RemoteKernelError(
            f"the remote kernel did not open its ports within {START_TIMEOUT:.0f}s",
            where=self._where,
            fix=f"look at {self._files.log_file} on the instance",
        )

    def _shell_port_answers(self, port: int) -> bool:
        """Fallback for hosts without /proc/net/tcp: try a forward to the port."""
        try:
            chan = self._ensure_link().open_forward(("127.0.0.1", port), ("127.0.0.1", 0))
        except Exception:
            return False
        chan.close()
        return True

    # -- process-like interface ---------------------------------------------------------------------
    @property
    def has_process(self) -> bool:
        return self.pid is not None

    async def poll(self) -> int | None:
        """None while the remote kernel runs. An unreachable host counts as running (the kernel is
        detached and survives a dropped connection); the tunnel is re-established on the way."""
        if self.pid is None:
            return self._exit_code if self._exit_code is not None else 0
        now = time.monotonic()
        interval = FAST_POLL_INTERVAL if now < self._fast_poll_until else POLL_INTERVAL
        if now - self._last_poll < interval:
            return None
        self._last_poll = now
        try:
            running = await asyncio.to_thread(remote.alive, self._run_sync, self.pid)
        except Exception as exc:
            self.log.warning("ranktable: cannot reach %s to check the kernel: %s", self.profile, exc)
            return None
        if self._forwarder is None and self.connection_info:
            self._restore_forwarder()
        if running:
            return None
        self._exit_code = 1
        return self._exit_code

    async def wait(self) -> int | None:
        while self.pid is not None and await self.poll() is None:
            await asyncio.sleep(0.1)
        code = self._exit_code
        self.pid = None
        self._park_forwarder()
        return code

    def _park_forwarder(self) -> None:
        """No kernel behind the tunnel (any more): refuse locally instead of opening doomed channels."""
        if self._forwarder is not None:
            for port in self._forwarder.ports:
                self._forwarder.point(port, None)

    async def send_signal(self, signum: int) -> None:
        """Signal the remote process group: SIGINT interrupts the running cell (interrupt_mode signal)."""
        if self.pid is None:
            return
        delivered = await asyncio.to_thread(remote.signal_group, self._run_sync, self.pid, signum)
        if not delivered and signum != 0:
            self.log.debug("ranktable: signal %s found no remote process group %s", signum, self.pid)

    async def kill(self, restart: bool = False) -> None:
        await self._end(signal.SIGKILL)

    async def terminate(self, restart: bool = False) -> None:
        await self._end(signal.SIGTERM)

    async def _end(self, signum: int) -> None:
        """`kill` and `terminate`: signal the group (unless detached), then poll fast for its exit."""
        if self._detached:
            return
        await self.send_signal(signum)
        self._expect_exit()
        self._park_forwarder()

    async def shutdown_requested(self, restart: bool = False) -> None:
        self._expect_exit()

    def _expect_exit(self) -> None:
        self._last_poll = 0.0
        self._fast_poll_until = time.monotonic() + FAST_POLL_WINDOW

    async def cleanup(self, restart: bool = False) -> None:
        """Leave nothing behind: stray processes of the kernel's group, remote files, and (unless
        restarting, which keeps the local ports) the forwarders and the connection."""
        if self._detached:
            return
        await asyncio.to_thread(self._cleanup_remote, restart)
        if not restart:
            self._records.remove(str(self.kernel_id))
            self._close_relays()
            if self._forwarder is not None:
                self._forwarder.close()
                self._forwarder = None
            if self._link is not None:
                self._link.close()
                self._link = None
        elif self._forwarder is not None:
            self._forwarder.drop_connections()

    def _cleanup_remote(self, restart: bool = False) -> None:
        files, pgid = self._files, self._pgid
        if files is None and pgid is None:
            return  # nothing was created remotely (e.g. the host was unreachable)
        try:
            if pgid is not None and remote.group_alive(self._run_sync, pgid):
                remote.signal_group(self._run_sync, pgid, signal.SIGKILL)
            if files is not None:  # a restart keeps the output log: the same clients follow it on
                remote.remove_files(self._run_sync, files, keep_output=restart)
        except Exception as exc:  # unreachable host: the detached kernel is still there, say so
            self.log.warning(
                "ranktable: could not clean up the remote kernel (pgid %s) on %s: %s", pgid, self.profile, exc
            )
        self.pid = self._pgid = None
        self._files = None

    # -- persistence (restart of the Jupyter server, reconnect) ---------------------------------------
    async def get_provisioner_info(self) -> dict[str, Any]:
        info = await super().get_provisioner_info()
        info.update(
            {
                "profile": self.profile,
                "python": self.python,
                "pid": self.pid,
                "remote_ports": dict(self.remote_ports),
                "remote_dir": self.remote_dir,
                "remote_files": None
                if self._files is None
                else [self._files.directory, self._files.kernel_id],
                "keep_output": self.keep_output,
                "iopub_seq": self._iopub_seq,
                "shell_seq": self._shell_seq,
            }
        )
        return info

    async def load_provisioner_info(self, provisioner_info: dict[str, Any]) -> None:
        await super().load_provisioner_info(provisioner_info)
        self.profile = provisioner_info.get("profile") or self.profile
        self.python = provisioner_info.get("python") or self.python
        self.pid = self._pgid = provisioner_info.get("pid")
        self.remote_ports = {k: int(v) for k, v in (provisioner_info.get("remote_ports") or {}).items()}
        self.remote_dir = provisioner_info.get("remote_dir")
        files = provisioner_info.get("remote_files")
        self._files = RemoteFiles(files[0], files[1]) if files else None
        self.keep_output = bool(provisioner_info.get("keep_output", self.keep_output))
        self._iopub_seq = int(provisioner_info.get("iopub_seq") or 0)
        self._shell_seq = int(provisioner_info.get("shell_seq") or 0)
        self._last_poll = 0.0

    def _restore_forwarder(self) -> None:
        """After ``load_provisioner_info``: listen on the recorded local ports again."""
        wanted = self._local_ports()
        self._ensure_forwarder(wanted)
        if self.remote_ports:
            self._point_forwarder()
            self._start_relay()

    def get_shutdown_wait_time(self, recommended: float = 5.0) -> float:
        return max(recommended, 5.0)

    def get_stable_start_time(self, recommended: float = 10.0) -> float:
        return max(recommended, 20.0)
