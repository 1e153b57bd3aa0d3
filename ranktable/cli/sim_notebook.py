"""`ranktable sim notebook`: run the SIMULATED Notebook instance (SSH on 127.0.0.1) in the foreground."""

from __future__ import annotations

import argparse
import signal
import threading
from pathlib import Path
from typing import Any

from ranktable.errors import InputError


def register(group: Any) -> None:
    parser: argparse.ArgumentParser = group.add_parser(
        "notebook",
        help="simulated Notebook instance: SSH server on 127.0.0.1 (demo/tests, not a real instance)",
        description="Start a SIMULATED Notebook instance: an SSH server on 127.0.0.1 (key auth only, exec, "
        "SFTP, port forwarding to loopback, at most 10 connections) rooted in a sandbox folder, and "
        "register an SSH profile for it (host key pinned). Commands run as you, locally: it is a stand-in "
        "for demos and tests, not a security boundary.",
    )
    parser.add_argument("--port", type=int, default=0, help="TCP port on 127.0.0.1 (default: any free port)")
    parser.add_argument(
        "--root",
        type=Path,
        default=None,
        help="sandbox folder = the instance's home (default: under RANKTABLE_HOME)",
    )
    parser.add_argument("--name", default="sim-notebook", help="profile to register (default: sim-notebook)")
    parser.set_defaults(handler=_serve)


def _serve(args: argparse.Namespace) -> int:
    from ranktable.sim.notebook_profile import profile_of, start_simulated_notebook
    from ranktable.usecases.remote import Remote

    if not 0 <= args.port < 65536:
        raise InputError(
            f"port {args.port} out of range", where="--port", fix="use 1-65535, or 0 for any free port"
        )
    stop = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop.set())  # before anything is printed: a clean stop
    try:
        instance = start_simulated_notebook(port=args.port, root=args.root)
    except OSError as exc:
        raise InputError(
            f"cannot listen on 127.0.0.1:{args.port}: {exc.strerror}",
            where="--port",
            fix="pick another port, or 0 for any free port",
        ) from exc
    try:  # the profile with what the simulator returned (the simulator knows nothing of SSH profiles)
        Remote().register_instance(args.name, **profile_of(instance))
    except BaseException:
        instance.stop()
        raise
    key = instance.keys.client_key_path
    print(f"simulated Notebook instance on 127.0.0.1:{instance.port} (sandbox {instance.root})")
    print(f"profile {args.name!r} registered: user {instance.user}, key {key}")
    print(f"shared storage (jobs see it at the same path; sync goes there): {instance.shared}")
    print(f"try: ranktable exec {args.name} -- pwd")
    print(f" or: ssh -p {instance.port} -i {key} {instance.user}@127.0.0.1 pwd")
    print("Ctrl-C stops it.", flush=True)
    try:
        while not stop.wait(0.5):
            pass
    except KeyboardInterrupt:
        pass
    finally:
        instance.stop()
    return 0
