"""Import the cluster client (its transport, urllib3 and the YAML loader) now, on the caller's thread: a
process about to fork or to start threads pays the imports once, before any request (#28)."""

from __future__ import annotations


def preload_cluster() -> None:
    from ranktable.cluster import client as _client  # noqa: F401
    from ranktable.cluster import logs as _logs  # noqa: F401
