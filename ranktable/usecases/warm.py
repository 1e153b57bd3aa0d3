"""What the warm CLI (`ranktable.cli.warm`) needs from the adapters: a private folder for its socket and
the cluster and planning modules imported once, before it forks a child per command."""

from __future__ import annotations

from pathlib import Path


class NoPrivateFolder(Exception):
    """No folder only this user can use (then the CLI runs the command in-process)."""


def private_folder() -> Path:
    """The connection agent's folder for this user and RANKTABLE_HOME (0700, owned, checked each time)."""
    from ranktable.remote.agent import AgentUnavailable, socket_path

    try:
        return socket_path().parent
    except (AgentUnavailable, OSError) as exc:
        raise NoPrivateFolder(str(exc)) from None


def preload_cluster() -> None:
    """Import what cluster commands use: the use cases, the cluster client and the kubernetes APIs it
    reaches (imported lazily by the kubernetes package, so touched here)."""
    from ranktable.cluster.preload import preload_kubernetes
    from ranktable.usecases import jobs as _jobs  # noqa: F401
    from ranktable.usecases import logs as _logs  # noqa: F401

    preload_kubernetes()


def preload_planning() -> None:
    """Import what `plan` uses: the rank-table reader, the planner and cost model (with numpy)
    and every topology format's reader (YAML's C loader included)."""
    import yaml

    from ranktable.hccl import io as _io  # noqa: F401
    from ranktable.topology import hypernode, k8s_nodes, labels, slurm, tor_file, tor_info  # noqa: F401
    from ranktable.topology import yaml_format as _yaml_format  # noqa: F401
    from ranktable.usecases import layout as _layout  # noqa: F401

    _ = yaml.CSafeLoader if hasattr(yaml, "CSafeLoader") else yaml.SafeLoader
