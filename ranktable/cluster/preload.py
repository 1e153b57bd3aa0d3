"""Import the kubernetes APIs the cluster client reaches now, on the caller's thread: the package imports
them lazily (and itself circularly), so a process about to fork or to start threads touches them first."""

from __future__ import annotations


def preload_kubernetes() -> None:
    import kubernetes.client

    from ranktable.cluster import client as _client  # noqa: F401

    _ = kubernetes.client.ApiClient, kubernetes.client.Configuration
