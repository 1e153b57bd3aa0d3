"""The remote half of a kernel session: small POSIX-sh/python steps run through one ``run`` callable.

Every step is one exec round trip with arguments quoted by ``shlex.quote``; secrets (the kernel's HMAC key)
travel only on stdin, never on a command line (which other users could read in ``ps``).
"""

from __future__ import annotations

import json
import shlex
import signal
from collections.abc import Callable
from dataclasses import dataclass

from ranktable.errors import RanktableError

# run(command, stdin, timeout) -> (exit status, stdout, stderr)
Run = Callable[[str, bytes | None, float], tuple[int, bytes, bytes]]

PORT_NAMES = ("shell_port", "iopub_port", "stdin_port", "control_port", "hb_port")
INSTALL_IPYKERNEL = "python -m pip install ipykernel"

# Runs on the remote: does ipykernel import, where is home, and six free loopback ports (the kernel's five,
# then the shell reply keeper's).
_PROBE = r"""
import importlib.util, json, os, socket, sys
# find_spec, not import: importing ipykernel pulls in zmq, tornado and IPython (seconds on a busy host);
# a broken install still shows up, with the kernel's own traceback, when the launch fails.
has_ipykernel = importlib.util.find_spec("ipykernel") is not None
socks = [socket.socket() for _ in range(6)]
for s in socks:
    s.bind(("127.0.0.1", 0))
ports = [s.getsockname()[1] for s in socks]
for s in socks:
    s.close()
print(json.dumps({"ipykernel": has_ipykernel, "home": os.path.expanduser("~"), "ports": ports,
                  "executable": sys.executable}))
"""


class RemoteKernelError(RanktableError):
    """The remote side cannot run a kernel (no python, no ipykernel, start failure)."""


@dataclass(frozen=True)
class ProbeResult:
    home: str
    ports: list[int]
    executable: str


@dataclass(frozen=True)
class RemoteFiles:
    """Where one kernel's files live on the remote (under ``~/.ranktable/kernels``, mode 700)."""

    directory: str
    kernel_id: str

    @property
    def stem(self) -> str:
        """Every file's path but its ending."""
        return f"{self.directory}/kernel-{self.kernel_id}"

    @property
    def connection_file(self) -> str:
        return f"{self.stem}.json"

    @property
    def log_file(self) -> str:
        return f"{self.stem}.log"

    @property
    def iopub_log(self) -> str:
        """The bounded IOPub log (``.iopub`` and its rotated ``.iopub.1``), see ``kernel_output``."""
        return f"{self.stem}.iopub"

    @property
    def shell_log(self) -> str:
        """The bounded log of the kernel's shell replies (``.shell``, ``.shell.1``), see ``kernel_output``."""
        return f"{self.stem}.shell"

    @property
    def pid_file(self) -> str:
        return f"{self.stem}.pid"


def probe(run: Run, python: str, where: str) -> ProbeResult:
    """Check the remote interpreter and ipykernel, and get six free ports on the remote loopback."""
    code, out, err = run(f"{shlex.quote(python)} -c {shlex.quote(_PROBE)}", None, 30.0)
    if code == 127 or (code != 0 and not out.strip()):
        detail = err.decode(errors="replace").strip().splitlines()[-1:] or [f"exit status {code}"]
        raise RemoteKernelError(
            f"the remote Python {python!r} cannot run ({detail[0]})",
            where=where,
            fix="install Python 3 on the instance or point the kernel at it: "
            "ranktable kernel install NAME --python /path/to/python",
        )
    try:
        info = json.loads(out.decode().strip().splitlines()[-1])
    except (ValueError, IndexError) as exc:
        raise RemoteKernelError(
            f"unexpected answer from the remote Python {python!r}: {out[:200]!r}", where=where
        ) from exc
    if not info["ipykernel"]:
        raise RemoteKernelError(
            f"ipykernel is not installed for the remote Python {python!r} ({info['executable']})",
            where=where,
            fix=f"on the instance run: {INSTALL_IPYKERNEL.replace('python', shlex.quote(python), 1)}",
        )
    return ProbeResult(
        home=info["home"], ports=[int(p) for p in info["ports"]], executable=info["executable"]
    )


def write_connection_file(run: Run, files: RemoteFiles, info: dict[str, object]) -> None:
    """Write the remote connection file with mode 600 in a 700 directory (content goes through stdin)."""
    directory, target = shlex.quote(files.directory), shlex.quote(files.connection_file)
    script = (
        f"umask 077 && mkdir -p {directory} && chmod 700 {directory} && cat > {target}.tmp "
        f"&& chmod 600 {target}.tmp && mv -f {target}.tmp {target}"
    )
    code, _out, err = run(script, json.dumps(info).encode(), 30.0)
    if code != 0:
        raise RemoteKernelError(
            f"cannot write the connection file {files.connection_file}: {err.decode(errors='replace')}",
            where="remote",
            fix="check the remote home directory is writable and not full",
        )


# Runs on the remote as the kernel's first process: detaches into its own session (so its pid is the pgid
# we signal), undoes the SIGINT/SIGQUIT ignore that `&` imposes on background jobs (else interrupts would
# be lost), ignores SIGHUP like nohup, records the pid, then becomes ipykernel.
_LAUNCHER = (
    "import os, signal, sys\n"
    "if os.getpid() == os.getpgrp() and os.fork():\n"
    "    os._exit(0)\n"
    "os.setsid()\n"
    "signal.signal(signal.SIGINT, signal.SIG_DFL)\n"
    "signal.signal(signal.SIGQUIT, signal.SIG_DFL)\n"
    "signal.signal(signal.SIGHUP, signal.SIG_IGN)\n"
    "with open(sys.argv[1] + '.tmp', 'w') as fh:\n"
    "    fh.write(str(os.getpid()))\n"
    "os.replace(sys.argv[1] + '.tmp', sys.argv[1])\n"
    "if len(sys.argv) > 3 and os.fork() == 0:\n"  # the IOPub recorder: a child of the kernel (same pid)
    "    signal.signal(signal.SIGINT, signal.SIG_IGN)\n"
    "    os.execv(sys.executable, [sys.executable, '-c', sys.argv[3]] + sys.argv[4:])\n"
    "os.execv(sys.executable, [sys.executable, '-m', 'ipykernel_launcher', '-f', sys.argv[2]])\n"
)


def inherited_exports(settings: dict[str, str]) -> str:
    """Shell that exports the JupyterLab server's cluster settings (`ranktable.home.shared_settings`) to
    the remote kernel; a kubeconfig or state folder that is not on the instance is left out, so a real
    instance keeps its own."""
    from ranktable.home import SHARED_SETTINGS_ENV

    q = shlex.quote
    out = []
    for key, value in sorted(settings.items()):
        name = SHARED_SETTINGS_ENV[key]
        test = {"kubeconfig": "-f", "state_dir": "-d"}.get(key)
        export = f"export {name}={q(value)}; "
        out.append(f"if [ {test} {q(value)} ]; then {export}fi; " if test else export)
    return "".join(out)


def launch(
    run: Run,
    python: str,
    root: str,
    files: RemoteFiles,
    *,
    iopub_port: int | None = None,
    shell: tuple[int, int] | None = None,
    cap: int = 0,
    settings: dict[str, str] | None = None,
) -> int:
    """Start ipykernel detached (own session, SIGHUP ignored) in ``root``; returns its pid (= its pgid).

    With ``iopub_port``, the kernel's IOPub output is also recorded to ``files.iopub_log`` (bounded by
    ``cap`` bytes per file) by a recorder in the kernel's process group; with ``shell`` (the kernel's
    shell port, the keeper's port) the recorder also keeps the shell replies in ``files.shell_log``.
    ``settings``: the server's cluster settings the kernel inherits.
    """
    from ranktable.remote.kernel_output import DEFAULT_CAP, RECORDER

    q = shlex.quote
    recorder = ""
    if iopub_port:
        recorder = f" {q(RECORDER)} {q(files.iopub_log)} {int(iopub_port)} {int(cap or DEFAULT_CAP)}"
        if shell is not None:
            recorder += f" {int(shell[0])} {int(shell[1])} {q(files.shell_log)}"
    script = (
        f"{inherited_exports(settings or {})}"
        f"mkdir -p {q(root)} && cd {q(root)} && rm -f {q(files.pid_file)} && "
        f"{{ {q(python)} -c {q(_LAUNCHER)} {q(files.pid_file)} {q(files.connection_file)}{recorder} "
        f"> {q(files.log_file)} 2>&1 < /dev/null & }} && "
        f"i=0; while [ ! -s {q(files.pid_file)} ] && [ $i -lt 200 ]; do sleep 0.05; i=$((i+1)); done; "
        f"cat {q(files.pid_file)}"
    )
    code, out, err = run(script, None, 30.0)
    text = out.decode().strip()
    if code != 0 or not text.isdigit():
        tail = log_tail(run, files)
        raise RemoteKernelError(
            f"the remote kernel did not start in {root}: "
            f"{err.decode(errors='replace').strip() or text or 'no pid reported'}"
            + (f"; kernel log:\n{tail}" if tail else ""),
            where="remote",
            fix="check the profile's remote dir is writable and the remote Python works",
        )
    return int(text)


def alive(run: Run, pid: int) -> bool:
    """``kill -0`` — but a zombie counts as dead: a killed kernel whose new parent (the remote's init)
    has not reaped it yet must not look alive to Jupyter."""
    pid = int(pid)
    script = (
        f"kill -0 {pid} 2>/dev/null || exit 1; "
        f"if [ -r /proc/{pid}/stat ]; then s=$(cat /proc/{pid}/stat 2>/dev/null); s=${{s##*) }}; "
        '[ "${s%% *}" != Z ] || exit 1; fi; exit 0'
    )
    code, _out, _err = run(script, None, 15.0)
    return code == 0


def startup_state(run: Run, pid: int, port: int) -> str:
    """``listening`` once something listens on the remote loopback ``port``, ``starting`` while the kernel
    runs but does not listen yet, ``dead`` if it exited; ``unknown`` where /proc/net/tcp is missing.
    One round trip, and no failed channel opens (which paramiko logs as errors) while the kernel boots."""
    pid, hexport = int(pid), f"{int(port):04X}"
    script = (
        f"kill -0 {pid} 2>/dev/null || exit 2; "
        f"if [ -r /proc/{pid}/stat ]; then s=$(cat /proc/{pid}/stat 2>/dev/null); s=${{s##*) }}; "
        '[ "${s%% *}" != Z ] || exit 2; fi; '
        "[ -r /proc/net/tcp ] || exit 3; "
        f"grep -q ':{hexport} 00000000:0000 0A' /proc/net/tcp /proc/net/tcp6 2>/dev/null && exit 0; exit 1"
    )
    code, _out, _err = run(script, None, 15.0)
    return {0: "listening", 1: "starting", 2: "dead"}.get(code, "unknown")


def group_alive(run: Run, pgid: int) -> bool:
    code, _out, _err = run(f"kill -0 -{int(pgid)}", None, 15.0)
    return code == 0


def signal_group(run: Run, pgid: int, signum: int) -> bool:
    """Send a signal to the kernel's process group (the kernel and anything it started); True if delivered."""
    # `kill -NAME -PGID` (no `--`: dash's kill does not take it) works in dash, bash, busybox and zsh.
    name = signal.Signals(signum).name.removeprefix("SIG") if signum else "0"
    code, _out, _err = run(f"kill -{name} -{int(pgid)}", None, 15.0)
    return code == 0


def log_tail(run: Run, files: RemoteFiles, lines: int = 20) -> str:
    code, out, _err = run(f"tail -n {int(lines)} {shlex.quote(files.log_file)} 2>/dev/null", None, 15.0)
    return out.decode(errors="replace").strip() if code == 0 else ""


def remove_files(run: Run, files: RemoteFiles, *, keep_log: bool = False, keep_output: bool = False) -> None:
    paths = [files.connection_file, files.pid_file, f"{files.connection_file}.tmp"]
    if not keep_log:
        paths.append(files.log_file)
    if not keep_output:
        paths += [files.iopub_log, f"{files.iopub_log}.1", files.shell_log, f"{files.shell_log}.1"]
    run("rm -f " + " ".join(shlex.quote(p) for p in paths), None, 15.0)
