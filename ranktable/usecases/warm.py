"""What the warm CLI (`ranktable.cli.warm`) needs from the adapters: a private folder for its socket and
the cluster and planning modules imported once, before it forks a child per command."""

from __future__ import annotations

import os
import stat
import zlib
from collections.abc import Callable
from pathlib import Path

from ranktable.home import ranktable_home


class NoPrivateFolder(Exception):
    """No folder only this user can use (then the CLI runs the command in-process)."""


def _private_dir(path: Path) -> Path:
    """``path`` as a folder only this user can use (made 0700 if absent; never followed as a symlink)."""
    try:
        path.mkdir(mode=0o700)
    except FileExistsError:
        pass
    except OSError as exc:
        raise NoPrivateFolder(str(exc)) from None
    st = os.lstat(path)
    if not stat.S_ISDIR(st.st_mode) or st.st_uid != os.getuid() or stat.S_IMODE(st.st_mode) & 0o077:
        raise NoPrivateFolder(
            f"{path} is not a private folder of this user (mode 0700, owned by uid {os.getuid()})"
        )
    return path


def _home_key() -> str:
    """What decides RANKTABLE_HOME, as text, without resolving the default (that imports jupyter_core:
    ~25 ms on every warm run): the folder is per state home, so two installations never share a server."""
    explicit = os.environ.get("RANKTABLE_HOME")
    if explicit:
        return str(ranktable_home().resolve())
    names = ("JUPYTER_DATA_DIR", "JUPYTER_PLATFORM_DIRS", "XDG_DATA_HOME", "HOME")
    return "\0".join(os.environ.get(name, "") for name in names)


def private_folder() -> Path:
    """This user's folder for RANKTABLE_HOME's warm CLI socket (0700, owned, checked each time), under
    XDG_RUNTIME_DIR or TMPDIR, as the connection agent's. Read without the agent's module: every warm
    run asks for it, and the agent's imports (threads, subprocess, tempfile: ~15 ms) are no part of it."""
    home = _home_key()
    base = Path(os.environ.get("XDG_RUNTIME_DIR") or os.environ.get("TMPDIR") or "/tmp")
    folder = _private_dir(base / f"ranktable-{os.getuid()}")
    return _private_dir(folder / f"cli-{zlib.crc32(home.encode()):08x}")


def preload_cluster() -> None:
    """Import what cluster commands use: the use cases and the cluster client."""
    from ranktable.cluster.preload import preload_cluster as preload_client
    from ranktable.usecases import jobs as _jobs  # noqa: F401
    from ranktable.usecases import logs as _logs  # noqa: F401

    preload_client()


def preload_planning() -> None:
    """Import what `plan` uses: the rank-table reader, the planner and cost model (with numpy)
    and every topology format's reader (YAML's C loader included)."""
    import yaml

    from ranktable import block_yaml  # noqa: F401
    from ranktable.hccl import io as _io  # noqa: F401
    from ranktable.topology import hypernode, k8s_nodes, labels, slurm, tor_file, tor_info  # noqa: F401
    from ranktable.topology import yaml_format as _yaml_format  # noqa: F401
    from ranktable.usecases import layout as _layout  # noqa: F401

    _ = yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader


def warm_up_planning(run: Callable[[list[str]], int]) -> None:
    """Run `plan` once on a 16-server pool (output dropped), so what a first run sets up (the lazily
    imported parts of numpy and of the cost model, compiled patterns, argparse's translations) is set
    up before the server forks: each forked run is otherwise a first run (~10 ms more; issue 28)."""
    import contextlib
    import io
    import tempfile

    from ranktable.hccl import Device, RankTable, Server, dump_rank_table
    from ranktable.topology.export import to_slurm
    from ranktable.topology.synthetic import synthetic_topology

    topology, ids = synthetic_topology(16, 2, 1)
    table = RankTable(status="completed", version="1.0")
    for n, server_id in enumerate(ids):
        devices = [Device(d, n * 8 + d, f"29.0.{n}.{d}") for d in range(8)]
        table.servers.append(Server(server_id, devices, host_ip=server_id))
    with tempfile.TemporaryDirectory() as folder:
        table_file, topology_file = Path(folder, "hccl.json"), Path(folder, "topology.conf")
        table_file.write_text(dump_rank_table(table), encoding="utf-8")
        topology_file.write_text(to_slurm(topology), encoding="utf-8")
        argv = ["plan", "--ranktable", str(table_file), "--topology", str(topology_file), "--json"]
        with contextlib.redirect_stdout(io.StringIO()), contextlib.redirect_stderr(io.StringIO()):
            run(argv)
