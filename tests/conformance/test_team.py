"""A team on one pool (#30.1), on both control planes: the real kube-apiserver's RBAC authorizer (static
tokens, the roles of docs/teams.md) and the simulated one answer the product alike."""

from __future__ import annotations

from typing import Any

import pytest

from ranktable.errors import PermissionDenied
from ranktable.usecases.jobs import ClusterSettings, Jobs, team_settings
from tests.conformance.planes import Plane


def member(plane: Plane, name: str, owner: str | None = "") -> Jobs:
    """`name`'s job use cases from their kubeconfig (`sim start --user NAME`); owner None: no owner check."""
    kubeconfig = str(plane.state_dir / f"kubeconfig-{name}")
    found, namespace = team_settings("{context}", None, kubeconfig, None)
    return Jobs(
        ClusterSettings(
            kubeconfig=kubeconfig,
            namespace=namespace,
            owner=found if owner == "" else owner,
            state_dir=str(plane.home / f"state-{name}"),
        )
    )


def spec(jobs: Jobs, name: str) -> Any:
    return jobs.spec(
        {"name": name, "image": "train:v1", "nodes": 1, "npus_per_node": 8, "command": ["sleep", "120"]}
    )


def test_two_users_and_a_viewer_under_rbac(plane: Plane) -> None:
    alice, bob, carol = member(plane, "alice"), member(plane, "bob"), member(plane, "carol")
    assert (alice.settings.namespace, bob.settings.namespace) == ("u-alice", "u-bob")
    assert alice.submit(spec(alice, "bert"))["namespace"] == "u-alice"
    assert alice.client().get_job("bert")["metadata"]["labels"]["ranktable.io/owner"] == "alice"

    mine = bob.permissions()["allowed"]
    assert mine["submit"] and mine["stop"] and not mine["stop_others"]
    with pytest.raises(PermissionDenied, match="belongs to alice"):
        bob.stop("u-alice", "bert", keep_logs_s=0)
    # without the product's owner check, the API server's RBAC refuses the delete itself
    with pytest.raises(PermissionDenied, match="not allowed"):
        member(plane, "bob", owner=None).client("u-alice").stop("bert")

    viewer = carol.permissions()["allowed"]
    assert viewer["list"] and viewer["logs"] and not (viewer["submit"] or viewer["stop"])
    team = carol.team()
    rows = {(r["namespace"], r["name"]): r["owner"] for r in team["jobs"]}
    assert rows[("u-alice", "bert")] == "alice"
    assert team["scope"] == "cluster" and team["free_npus"] is not None
    with pytest.raises(PermissionDenied):
        carol.submit(spec(carol, "mine"))

    assert "job/bert" in alice.stop(None, "bert", keep_logs_s=0)["deleted"]
