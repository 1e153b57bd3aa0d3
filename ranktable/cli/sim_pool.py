"""`ranktable sim start|stop|serve`: the simulated Lite pool (a local Kubernetes API with Volcano)."""

from __future__ import annotations

import argparse
import contextlib
import os
import signal
import sys
from pathlib import Path
from types import FrameType
from typing import Any

from ranktable.errors import InputError

STOP_TIMEOUT = 60.0
REAL_START_TIMEOUT = 600.0  # etcd, kube-apiserver, Volcano on a loaded 2-core machine


def _state_dir(args: argparse.Namespace) -> Path:
    from ranktable.sim.paths import default_state_dir

    return Path(args.state_dir).expanduser().resolve() if args.state_dir else default_state_dir()


def state_dir_flag(parser: argparse.ArgumentParser) -> None:
    """`--state-dir`: which pool a command acts on (the default one when omitted)."""
    parser.add_argument("--state-dir", metavar="DIR", default=None, help="the pool's state directory")


def _pool_options(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--nodes", type=int, default=8, metavar="N", help="number of Snt9B nodes (default 8)")
    parser.add_argument("--leaves", type=int, default=2, metavar="L", help="leaf switches (default 2)")
    parser.add_argument(
        "--tenants",
        type=int,
        default=None,
        metavar="T",
        help="nodes held by other tenants' jobs, as in a shared pool (default: one per 8 nodes; 0 for none)",
    )
    parser.add_argument(
        "--port", type=int, default=0, metavar="P", help="port on 127.0.0.1 (default: a free one)"
    )
    parser.add_argument(
        "--topology",
        metavar="FILE",
        default=None,
        help="build the nodes from a topology file (any format `ranktable` reads)",
    )
    parser.add_argument(
        "--state-dir",
        metavar="DIR",
        default=None,
        help="where the pool keeps its kubeconfig, objects and pod logs (default: $RANKTABLE_HOME/sim)",
    )
    parser.add_argument(
        "--shared-storage",
        action="append",
        default=[],
        metavar="DIR",
        help="a host folder standing for storage every node mounts (SFS Turbo): pods whose hostPath "
        "volume mounts it (or a folder in it) at the same path see it; repeatable",
    )
    parser.add_argument(
        "--user",
        action="append",
        default=[],
        metavar="NAME[:ROLE]",
        help="a team member with their own token and kubeconfig (STATE_DIR/kubeconfig-NAME): an editor "
        "(default) reads the pool and writes in namespace u-NAME, a viewer only reads; repeatable",
    )
    parser.add_argument(
        "--control-plane",
        choices=("python", "real"),
        default="python",
        help="python: the light embedded API server (default); real: kube-apiserver, etcd and Volcano "
        "built by `make controlplane`, with our kubelet and configmap1980 controllers",
    )


def _serve_args(args: argparse.Namespace) -> list[str]:
    out = ["--nodes", str(args.nodes), "--leaves", str(args.leaves), "--port", str(args.port)]
    if getattr(args, "resume", False):
        out.append("--resume")
    out += ["--control-plane", args.control_plane]
    if args.tenants is not None:
        out += ["--tenants", str(args.tenants)]
    for user in args.user:
        out += ["--user", user]
    if args.topology:
        out += ["--topology", str(Path(args.topology).expanduser().resolve())]
    for folder in _shared_storage(args):
        out += ["--shared-storage", str(folder)]
    return out


def _shared_storage(args: argparse.Namespace) -> tuple[Path, ...]:
    return tuple(Path(d).expanduser().resolve() for d in args.shared_storage)


def _check(args: argparse.Namespace) -> None:
    if args.topology and not Path(args.topology).expanduser().is_file():
        raise InputError("no such file", where=f"--topology {args.topology}", fix="give a topology file path")
    if not 0 <= args.port <= 65535:
        raise InputError(f"{args.port} is not a port number", where="--port", fix="use 1..65535 or 0 for any")
    if not args.topology:
        from ranktable.sim.fabric import default_fabric

        default_fabric(args.nodes, args.leaves)  # raises a clear error for bad counts
    for folder in args.shared_storage:
        if not Path(folder).expanduser().is_dir():
            raise InputError(
                "is not a folder", where=f"--shared-storage {folder}", fix="create it or give an existing one"
            )
    _users(args)
    if args.tenants is not None and not 0 <= args.tenants < max(args.nodes, 1):
        raise InputError(
            f"{args.tenants} tenant nodes leave no node free",
            where="--tenants",
            fix=f"use 0..{args.nodes - 1}",
        )


def _users(args: argparse.Namespace) -> tuple[Any, ...]:
    from ranktable.sim.k8s.rbac import parse_user

    users = tuple(parse_user(text) for text in args.user)
    names = [u.name for u in users]
    if len(set(names)) != len(names):
        raise InputError("names a user twice", where="--user", fix="give each user once")
    return users


def _print_access(kubeconfig: Path, context: str, url: str, pods: str = "") -> None:
    print(f"KUBECONFIG={kubeconfig}")
    print(f"context: {context}")
    print(f"server: {url}")
    if pods:
        print(f"pods: {pods}")
    with contextlib.suppress(OSError, ValueError):
        import json

        for user in json.loads((kubeconfig.parent / "server.json").read_text()).get("users") or []:
            print(
                f"user {user['name']} ({user['role']}, namespace {user['namespace']}): {user['kubeconfig']}"
            )


def _start(args: argparse.Namespace) -> int:
    from ranktable.sim.control import find_running, start_background

    _check(args)
    state_dir = _state_dir(args)
    running = find_running(state_dir)
    if running is not None:
        print(
            f"a simulated pool is already running (pid {running.pid}); `ranktable sim stop` ends it",
            file=sys.stderr,
        )
    else:
        _refuse_to_wipe_live_pods(args, state_dir)
        if args.control_plane == "real":
            from ranktable.sim.real.components import bin_dir

            bin_dir()  # a clear error now if it is not built, rather than a start timeout
        timeout = REAL_START_TIMEOUT if args.control_plane == "real" else None
        running = start_background(state_dir, _serve_args(args), timeout=timeout)
    _print_access(running.kubeconfig, running.context, running.url, running.pods)
    if not running.confined:
        print(f"warning: the simulated pool's {running.pods}", file=sys.stderr)
    return 0


def _refuse_to_wipe_live_pods(args: argparse.Namespace, state_dir: Path) -> None:
    """A pool that ended without `sim stop` (kill -9) left its pods running and its objects saved: a plain
    start would silently wipe them (#26.6). Refuse, unless told to resume them or to discard them."""
    from ranktable.sim.control import live_pod_processes

    if args.resume:
        return
    live = live_pod_processes(state_dir)
    if not live:
        return
    if not args.discard:
        raise InputError(
            f"{state_dir} holds {len(live)} pod processes still running, with the jobs and pods of a pool "
            "that ended without `ranktable sim stop`",
            where="--state-dir",
            fix="`ranktable sim start --resume` adopts them; `--discard` ends them and starts empty",
        )
    for pid in live:
        with contextlib.suppress(OSError):
            os.kill(pid, signal.SIGKILL)


def _status(args: argparse.Namespace) -> int:
    from ranktable.sim.control import find_running, recorded_pid

    state_dir = _state_dir(args)
    running = find_running(state_dir)
    if running is None:
        stuck = recorded_pid(state_dir)
        state = f"not answering (pid {stuck} owns it)" if stuck else "not running"
        print(f"simulated pool in {state_dir}: {state}")
        return 1
    print(f"simulated pool in {state_dir}: running (pid {running.pid})")
    _print_access(running.kubeconfig, running.context, running.url, running.pods)
    return 0


def _stop(args: argparse.Namespace) -> int:
    from ranktable.sim.control import stop_running

    stopped = stop_running(_state_dir(args), timeout=STOP_TIMEOUT)
    if stopped is None:
        print("no simulated pool is running", file=sys.stderr)
    else:
        print(f"stopped the simulated pool (pid {stopped.pid}) and its pod processes")
    return 0


def _serve(args: argparse.Namespace) -> int:
    from ranktable.arenas import limit_arenas
    from ranktable.sim.pool import Pool, PoolConfig

    _check(args)
    limit_arenas()  # a thread per log connection: 1,024 pods' followers in 2 arenas, not 16 (#28)
    config = PoolConfig(
        state_dir=_state_dir(args),
        nodes=args.nodes,
        leaves=args.leaves,
        port=args.port,
        topology=Path(args.topology).expanduser().resolve() if args.topology else None,
        resume=args.resume,
        tenants=args.nodes // 8 if args.tenants is None else args.tenants,
        shared_storage=_shared_storage(args),
        users=_users(args),
    )
    if args.control_plane == "real":
        if args.resume:
            raise InputError(
                "a real control plane cannot resume",
                where="--resume",
                fix="drop --resume with --control-plane real",
            )
        from ranktable.sim.real.plane import RealPool

        pool: Pool | RealPool = RealPool(config).start()
    else:
        pool = Pool(config).start()
    keep_pods = {"value": False}

    def on_signal(signum: int, _frame: FrameType | None) -> None:
        keep_pods["value"] = signum == signal.SIGUSR1
        pool.request_stop()

    for sig in (signal.SIGTERM, signal.SIGINT, signal.SIGUSR1):
        signal.signal(sig, on_signal)
    confinement = pool.confinement
    _print_access(pool.kubeconfig, pool.context, pool.url, confinement.describe() if confinement else "")
    if confinement is not None and not confinement.active:
        print(f"warning: the simulated pool's {confinement.describe()}", file=sys.stderr)
    sys.stdout.flush()
    pool.wait()
    pool.stop(kill_pods=not keep_pods["value"])
    return 0


def register(group: Any) -> None:
    start = group.add_parser(
        "start",
        help="start the simulated Lite pool in the background",
        description="Start a local Kubernetes API server with Volcano, the platform's configmap1980 and svc "
        "plugins, and a kubelet that runs pod commands as local processes (images are ignored). Prints the "
        "KUBECONFIG to use; kubectl and `ranktable job` work against it.",
    )
    _pool_options(start)
    choice = start.add_mutually_exclusive_group()
    choice.add_argument(
        "--resume",
        action="store_true",
        help="keep the jobs and pods a pool that ended without `sim stop` left, and adopt its running pods",
    )
    choice.add_argument(
        "--discard", action="store_true", help="end such leftover pod processes and start with an empty pool"
    )
    start.set_defaults(handler=_start)
    status = group.add_parser(
        "status",
        help="is the simulated pool running, where, and are its pods confined",
        description="Say whether a pool serves from the state directory, its KUBECONFIG and server, and how "
        "its pod processes are confined (or why they are not). Exit code 1 when none is running.",
    )
    state_dir_flag(status)
    status.set_defaults(handler=_status)
    stop = group.add_parser("stop", help="stop the simulated pool and its pod processes")
    state_dir_flag(stop)
    stop.set_defaults(handler=_stop)
    serve = group.add_parser(
        "serve",
        help="run the simulated pool in the foreground (Ctrl-C stops it)",
        description="Run the pool in this process. SIGTERM/Ctrl-C stop it and its pods; SIGUSR1 stops only "
        "the server and leaves pod processes running, for `serve --resume`.",
    )
    _pool_options(serve)
    serve.add_argument(
        "--resume",
        action="store_true",
        help="keep the objects, token and port saved in the state directory and adopt running pods",
    )
    serve.set_defaults(handler=_serve)
