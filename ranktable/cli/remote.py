"""`ranktable ssh|sync|download|exec`: profiles, host keys, sync and remote commands from a terminal."""

from __future__ import annotations

import argparse
import getpass
import shlex
import signal
import sys
import threading
import time
from pathlib import Path
from typing import Any

from ranktable.cli.commands import HELP, command_group
from ranktable.errors import InputError

WATCH_DEBOUNCE = 0.1  # seconds of quiet before `sync --watch` uploads (a checkout's burst still batches up)


def register(sub: Any) -> None:
    group = command_group(
        sub,
        "ssh",
        "ssh_command",
        "SSH_COMMAND",
        description="Manage SSH profiles (stored under RANKTABLE_HOME, never with passwords or passphrases).",
    )
    _register_add(group)
    _register_profile_commands(group)
    _register_transfers(sub)


def _register_add(group: Any) -> None:
    """`ssh add`: a profile's host, user, key, remote folder, jump host and shared storage."""
    add = group.add_parser(
        "add",
        help="add a profile",
        description="Add an SSH profile. Unset values "
        "come from ~/.ssh/config (HostName, User, Port, IdentityFile, ProxyJump).",
    )
    add.add_argument("name", metavar="NAME", help="letters, digits, _ and -, starting with a letter (<= 64)")
    add.add_argument("--host", required=True, help="host name, IP address or ~/.ssh/config Host alias")
    add.add_argument("--port", type=int, default=None, help="SSH port (default 22 or ~/.ssh/config)")
    add.add_argument("--user", default=None, help="login user (default ~/.ssh/config User, else ma-user)")
    add.add_argument(
        "--key", default=None, metavar="FILE", help="private key of the instance's key pair (.pem)"
    )
    add.add_argument("--remote-dir", default=None, metavar="D", help="remote root for sync and runs (~/work)")
    add.add_argument("--jump", default=None, metavar="NAME", help="profile to jump through (ProxyJump)")
    add.add_argument(
        "--shared",
        default=None,
        metavar="DIR",
        help="the instance's folder on shared storage (SFS Turbo, OBS) that jobs mount too: sync, runs and "
        "kernels default to it, and job scripts under it run from the volume below",
    )
    volume = add.add_mutually_exclusive_group()
    volume.add_argument(
        "--shared-hostpath", metavar="NAME:HOST_PATH:MOUNT_PATH", help="how pods mount it: a hostPath volume"
    )
    volume.add_argument("--shared-pvc", metavar="NAME:CLAIM:MOUNT_PATH", help="how pods mount it: a PVC")
    add.set_defaults(handler=_add)


def _register_profile_commands(group: Any) -> None:
    """`ssh list`, `test`, `forward`, `agent` and `remove`."""
    lst = group.add_parser("list", help="list profiles")
    lst.set_defaults(handler=_list)

    test = group.add_parser(
        "test",
        help="connect, verify the host key and log in",
        description="Connect to the profile's "
        "host. An unknown host key is shown with its fingerprint; check it, then accept it with "
        "--accept-host-key (saved only if the server presents exactly that key).",
    )
    test.add_argument("name", metavar="NAME")
    test.add_argument("--accept-host-key", metavar="FINGERPRINT", default=None, help="SHA256:... to trust")
    test.add_argument(
        "--replace-host-key",
        metavar="NEW_FINGERPRINT",
        default=None,
        help="the instance was recreated: trust its new key instead of the recorded one (type or paste the "
        "new SHA256:... fingerprint shown in the refusal, after checking it; never done automatically)",
    )
    test.set_defaults(handler=_test)

    forward = group.add_parser(
        "forward",
        help="forward a port of the instance (TensorBoard, a web app) to 127.0.0.1",
        description="Forward REMOTE_PORT on the instance's loopback to a port on this machine's 127.0.0.1 "
        "(never another interface), through the profile's SSH connection (ProxyJump included). Runs until "
        "Ctrl+C.",
    )
    forward.add_argument("name", metavar="NAME")
    forward.add_argument("remote_port", metavar="REMOTE_PORT", type=int, help="e.g. 6006 for TensorBoard")
    forward.add_argument("--local-port", type=int, default=0, metavar="P", help="default: a free port")
    forward.set_defaults(handler=_forward)

    agent = group.add_parser(
        "agent",
        help="the connection agent that lets CLI syncs reuse one connection: status or stop",
        description="CLI syncs go through a per-user background agent holding each profile's verified "
        "connection (like OpenSSH's ControlMaster); it exits after 10 idle minutes. RANKTABLE_AGENT=0 "
        "turns it off.",
    )
    agent.add_argument("action", choices=("status", "stop"))
    agent.set_defaults(handler=_agent)

    remove = group.add_parser("remove", help="remove a profile")
    remove.add_argument("name", metavar="NAME")
    remove.set_defaults(handler=_remove)


def _register_transfers(sub: Any) -> None:
    """`sync`, `download` and `exec`: what goes to and runs on the instance."""
    sync = sub.add_parser(
        "sync",
        help=HELP["sync"],
        description="Upload what changed (gitignore rules from .gitignore and .ranktableignore apply). "
        "Remote changes are never overwritten silently: they are reported as conflicts (exit 1) unless "
        "--force. Remote files are deleted only with --delete (or the profile's setting), and only files "
        "this tool uploaded.",
    )
    sync.add_argument("name", metavar="NAME")
    sync.add_argument(
        "local_dir", metavar="LOCAL_DIR", nargs="?", default=".", help="default: current folder"
    )
    sync.add_argument(
        "--watch", action="store_true", help="keep running and upload every change (Ctrl+C stops)"
    )
    sync.add_argument("--delete", action="store_true", help="delete remote files deleted locally")
    sync.add_argument("--dry-run", action="store_true", help="show what would be uploaded or deleted")
    sync.add_argument(
        "--force",
        action="store_true",
        help="overwrite remote files changed since the last upload; confirm deleting most remote files",
    )
    sync.set_defaults(handler=_sync)

    download = sub.add_parser("download", help=HELP["download"])
    download.add_argument("name", metavar="NAME")
    download.add_argument("remote_path", metavar="REMOTE_PATH", help="relative to the remote directory")
    download.add_argument("local_path", metavar="LOCAL_PATH")
    download.set_defaults(handler=_download)

    run = sub.add_parser(
        "exec",
        help=HELP["exec"],
        description="Run CMD ARGS on the instance in the profile's remote directory, streaming its output. "
        "The arguments reach the command exactly as given, as with kubectl exec "
        "(`exec nb -- sh -c 'echo x; exit 7'`); use --shell 'STRING' for a shell command line with "
        "pipes, ; or globs. Ctrl+C kills the remote process group.",
    )
    run.add_argument(
        "--shell",
        metavar="STRING",
        help="run STRING with the remote sh -c instead of CMD ARGS (also accepted right after NAME)",
    )
    run.add_argument("name", metavar="NAME")
    run.add_argument(
        "cmd", metavar="CMD", nargs=argparse.REMAINDER, help="after --, kept as separate arguments"
    )
    run.set_defaults(handler=_exec)


def _remote() -> Any:
    """The remote use cases over the user's profiles (one SSH transport per profile)."""
    from ranktable.usecases.remote import Remote

    return Remote()


def _ask_passphrase(key: str, retry: bool, why: Exception) -> str:
    """A key's passphrase from the terminal (kept in memory only); none without a terminal."""
    if not sys.stdin.isatty():
        raise InputError(
            "needs its passphrase and there is no terminal to ask for it",
            where=f"key file {key}",
            fix="run the command in a terminal (the passphrase is asked for and kept in memory only)",
        ) from why
    if retry:
        print("wrong passphrase, try again", file=sys.stderr)
    return getpass.getpass(f"Passphrase for {key}: ")


def _connected(name: str, remote: Any = None) -> Any:
    """The profile's connection, asking for a key passphrase on a terminal."""
    return (remote or _remote()).connected(name, _ask_passphrase)


def _add(args: argparse.Namespace) -> int:
    if args.key and not Path(args.key).expanduser().is_file():
        raise InputError(
            f"key file {args.key} not found", where="--key", fix="give the private key file path"
        )
    fields = {"name": args.name, "host": args.host, "port": args.port, "user": args.user}
    fields.update(key_file=args.key, jump=args.jump, remote_dir=args.remote_dir)
    shared = _shared_storage(args)
    if shared is not None:
        fields["shared"] = shared.to_json()
    saved = _remote().add_profile(fields)
    print(f"added profile {saved['name']}; next: ranktable ssh test {saved['name']}")
    return 0


def _shared_storage(args: argparse.Namespace) -> Any:
    """`--shared DIR` with `--shared-hostpath`/`--shared-pvc` as a SharedStorage (None without --shared)."""
    from ranktable.compose.storage import SharedStorage

    flag, text = (
        ("--shared-pvc", args.shared_pvc) if args.shared_pvc else ("--shared-hostpath", args.shared_hostpath)
    )
    if args.shared is None:
        if text:
            raise InputError("names how pods mount a shared folder, but no --shared DIR is given", where=flag)
        return None
    if not text:
        raise InputError(
            "needs the volume pods mount it with",
            where="--shared",
            fix="add --shared-hostpath NAME:HOST_PATH:MOUNT_PATH (e.g. sfs:/mnt/sfs_turbo:/mnt/sfs_turbo) or "
            "--shared-pvc NAME:CLAIM:MOUNT_PATH",
        )
    parts = text.split(":")
    if len(parts) != 3:
        source_name = "CLAIM" if args.shared_pvc else "HOST_PATH"
        raise InputError(f"expected NAME:{source_name}:MOUNT_PATH, got {text!r}", where=flag)
    name, source, mount_path = parts
    kind, key = ("pvc", "claim") if args.shared_pvc else ("hostPath", "path")
    volume = {"name": name, "kind": kind, key: source, "mount_path": mount_path}
    return SharedStorage.from_json({"instance_path": args.shared, "volume": volume}, where="--shared")


def _list(args: argparse.Namespace) -> int:
    listed = _remote().list_profiles()
    profiles, invalid = listed["profiles"], listed["invalid"]
    for bad in invalid:
        name, why = bad["name"], bad["message"]
        print(f"invalid stored profile {name!r}: {why}; remove it with: ranktable ssh remove {name}")
    if not profiles and not invalid:
        print("no profiles; add one with: ranktable ssh add NAME --host HOST --key FILE")
        return 0
    rows = [("NAME", "HOST", "PORT", "USER", "KEY", "REMOTE_DIR", "JUMP")]
    for p in profiles:
        rows.append(
            (p["name"], p["host"], str(p.get("port") or ""), p.get("user") or "", p.get("key_file") or "",
             p["remote_dir"], p.get("jump") or "")
        )  # fmt: skip
    if len(rows) == 1:
        return 0
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    for row in rows:
        print("  ".join(cell.ljust(w) for cell, w in zip(row, widths, strict=True)).rstrip())
    return 0


def _test(args: argparse.Namespace) -> int:
    remote = _remote()
    if args.replace_host_key:
        host_id, old, new = remote.replace_host_key(args.name, args.replace_host_key)
        print(f"host key of {host_id} replaced: was {old}, now {new}")
    if args.accept_host_key:
        host_id = remote.accept_host_key(args.name, args.accept_host_key)
        print(f"host key {args.accept_host_key} saved for {host_id}")
    result = remote.check_connection(args.name, ask_passphrase=_ask_passphrase, exec_check=True)
    if result["status"] == "host-key-changed":
        print(
            f"HOST KEY CHANGED for {result['host']}: refused.\n"
            f"    recorded: {result['recorded']}\n"
            f"    presented: {result['key_type']} {result['presented']}\n"
            "Someone may be intercepting the connection, or the instance was recreated. If it was recreated, "
            "check the new fingerprint with the instance owner (on the instance: "
            "ssh-keygen -lf /etc/ssh/ssh_host_ed25519_key.pub), then trust it by typing or pasting it:\n"
            f"    ranktable ssh test {args.name} --replace-host-key NEW_FINGERPRINT",
            file=sys.stderr,
        )
        return 1
    if result["status"] == "unknown-host-key":
        print(
            f"The host {result['host']} is not known. Its {result['key_type']} key fingerprint is:\n"
            f"    {result['fingerprint']}\n"
            "Check it with the instance owner (on the instance: ssh-keygen -lf /etc/ssh/ssh_host_*_key.pub), "
            f"then accept it:\n    ranktable ssh test {args.name} --accept-host-key {result['fingerprint']}",
            file=sys.stderr,
        )
        return 1
    print(
        f"ok: {result['user']}@{result['host']} (exec round trip {result['round_trip_ms']:.0f} ms), "
        f"remote directory {result['remote_dir']}"
    )
    return 0 if result["status"] == "ok" else 1


def _agent(args: argparse.Namespace) -> int:
    from ranktable.usecases.remote import agent_status, stop_agent

    if args.action == "stop":
        print("agent stopped" if stop_agent() else "no agent running")
        return 0
    print(agent_status())
    return 0


def _forward(args: argparse.Namespace) -> int:
    remote = _remote()
    _connected(args.name, remote)  # asks for a passphrase on a terminal, reports host-key problems
    registry = remote.forwards
    forward = registry.open(args.name, args.remote_port, args.local_port)
    print(f"forwarding {forward.url} -> {args.name}:{forward.remote_port} (Ctrl+C stops)", flush=True)
    try:
        while not registry.wait_closed(3600):  # until Ctrl+C, or closed from the panel
            pass
        print("forward closed from another process")
    except KeyboardInterrupt:
        print("forward closed")
    finally:
        registry.close_all()
    return 0


def _remove(args: argparse.Namespace) -> int:
    _remote().remove_profile(args.name)
    print(f"removed profile {args.name}")
    return 0


def _progress_printer() -> Any:
    if not sys.stderr.isatty():
        return None

    def show(event: Any) -> None:
        eta = f", ETA {event.eta:.0f}s" if event.eta is not None else ""
        sys.stderr.write(
            f"\r{event.phase}: {event.files_done}/{event.files_total} files, "
            f"{event.bytes_done / 1e6:.1f}/{event.bytes_total / 1e6:.1f} MB, "
            f"{event.rate / 1e6:.1f} MB/s{eta}   "
        )
        if event.phase == "done":
            sys.stderr.write("\n")

    return show


def _print_result(result: Any) -> int:
    print(result.summary())
    for conflict in result.conflicts:
        print(f"  conflict: {conflict.path}: {conflict.reason}")
    if result.dry_run:
        for rel in result.uploaded:
            print(f"  upload: {rel}")
        for rel in result.deleted:
            print(f"  delete: {rel}")
    return 1 if result.conflicts else 0


def _sync(args: argparse.Namespace) -> int:
    if not args.watch:
        result = _sync_through_agent(args)
        if result is not None:
            return _print_result(result)
    remote = _remote()
    _connected(args.name, remote)
    syncer = remote.syncer(args.name, Path(args.local_dir), delete_remote=bool(args.delete))
    result = syncer.sync(dry_run=args.dry_run, force=args.force, progress=_progress_printer())
    code = _print_result(result)
    if not args.watch or args.dry_run:
        return code

    def report(res: Any, err: BaseException | None) -> None:
        stamp = time.strftime("%H:%M:%S")
        if err is not None:
            print(f"[{stamp}] upload failed (will retry): {err}", file=sys.stderr)
        elif res is not None and (res.uploaded or res.deleted or res.conflicts):
            print(f"[{stamp}] ", end="")
            _print_result(res)

    uploader = remote.watch_uploads(syncer, report, WATCH_DEBOUNCE)
    print(f"watching {syncer.local_root} (Ctrl+C to stop)")
    stop = threading.Event()
    try:
        while not stop.wait(3600):
            pass
    except KeyboardInterrupt:
        print("stopped watching")
    finally:
        uploader.stop()
    return 0


def _sync_through_agent(args: argparse.Namespace) -> Any:
    """The sync done by the user's connection agent (an established connection: no login per run);
    None when the agent cannot be used (turned off, a key needing a passphrase, a host key to check):
    then the CLI syncs itself, asking and explaining as usual."""
    from types import SimpleNamespace

    from ranktable.usecases.remote import agent_sync

    show = _progress_printer()
    message = {
        "profile": args.name,
        "local_dir": str(Path(args.local_dir).resolve()),
        "dry_run": args.dry_run,
        "force": args.force,
        "delete": args.delete,
        "progress": show is not None,
    }
    data = agent_sync(message, (lambda event: show(SimpleNamespace(**event))) if show else None)
    if data is None:
        return None
    # A plain view of the result: importing the sync engine (and paramiko) would cost more than the sync.
    summary = data.pop("summary")
    data["conflicts"] = [SimpleNamespace(**c) for c in data["conflicts"]]
    return SimpleNamespace(**data, summary=lambda: summary)


def _download(args: argparse.Namespace) -> int:
    remote = _remote()
    _connected(args.name, remote)
    syncer = remote.syncer(args.name, Path("."))
    written = syncer.download(args.remote_path, args.local_path, progress=_progress_printer())
    print(f"downloaded {len(written)} file(s) to {args.local_path}")
    return 0


def exec_command_line(name: str, cmd: list[str], shell: str | None) -> str:
    """The remote shell line for `exec`: CMD ARGS quoted so the remote argv is exactly them (kubectl exec),
    or the --shell STRING as written."""
    if cmd and cmd[0] == "--":
        cmd = cmd[1:]
    if cmd[:1] == ["--shell"] and shell is None:  # `exec NB --shell STRING`: argparse left it in CMD
        if len(cmd) != 2:
            raise InputError(
                "takes exactly one string", where="--shell", fix=f"ranktable exec {name} --shell 'a | b; c'"
            )
        shell, cmd = cmd[1], []
    if shell is not None:
        if cmd:
            raise InputError(
                "give either --shell STRING or -- CMD ARGS, not both",
                where="--shell",
                fix=f"ranktable exec {name} --shell 'CMD ARGS'",
            )
        if not shell.strip():
            raise InputError("is empty", where="--shell", fix=f"ranktable exec {name} --shell 'ls -l | head'")
        return shell
    if not cmd:
        raise InputError("no command given", where="CMD", fix=f"ranktable exec {name} -- COMMAND [ARGS...]")
    return shlex.join(cmd)


def _exec(args: argparse.Namespace) -> int:
    command = exec_command_line(args.name, list(args.cmd), args.shell)
    remote = _remote()
    _connected(args.name, remote)

    def out(text: str) -> None:
        sys.stdout.write(text)
        sys.stdout.flush()

    def err(text: str) -> None:
        sys.stderr.write(text)
        sys.stderr.flush()

    process = remote.process(args.name, command, out, err)
    try:
        return process.wait()
    except KeyboardInterrupt:
        process.cancel()
        process.wait(timeout=30)
        return 128 + signal.SIGINT
