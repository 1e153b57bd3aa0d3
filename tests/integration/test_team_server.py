"""The panel's server on a shared pool (#30.1): the Hub user's own namespace, owner labels, the user's
permissions (Jupyter's authorizer and the pool's RBAC) and the team's read-only view, over REST."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any, ClassVar

import pytest
from jupyter_server.auth.authorizer import Authorizer

from ranktable.sim.k8s.rbac import parse_user
from ranktable.usecases.jobs import ClusterSettings, Jobs
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.server_helpers import call


class ReadOnly(Authorizer):
    """JupyterHub's `read:servers`-style viewer: read on everything, no write, no execute."""

    active: ClassVar[bool] = False

    def is_authorized(self, handler: Any, user: Any, action: str, resource: str) -> bool:
        return action == "read" or not self.active


@pytest.fixture
def team_pool(sim_pool_factory: Callable[..., SimPoolHandle]) -> SimPoolHandle:
    users = tuple(parse_user(u) for u in ("alice", "bob"))
    return sim_pool_factory(nodes=4, leaves=2, tenants=0, ranktable_delay=0.1, users=users)


@pytest.fixture
def jp_server_config(
    team_pool: SimPoolHandle, tmp_path: Path, monkeypatch: pytest.MonkeyPatch, request: Any
) -> dict[str, Any]:
    monkeypatch.setenv("JUPYTERHUB_USER", "alice")  # a single-user server spawned by JupyterHub
    ReadOnly.active = bool(getattr(request, "param", False))
    return {
        "ServerApp": {"jpserver_extensions": {"ranktable": True}, "authorizer_class": ReadOnly},
        "Ranktable": {
            "kubeconfig": str(team_pool.state_dir / "kubeconfig-alice"),
            "state_dir": str(tmp_path / "state"),
        },
    }


def spec(name: str) -> dict[str, Any]:
    return {
        "name": name,
        "image": "train:v1",
        "nodes": 1,
        "npus_per_node": 8,
        "command": ["/bin/sh", "-c", "sleep 60"],
    }


async def test_the_hub_user_works_in_their_namespace_and_cannot_stop_a_colleagues_job(
    jp_fetch: Any, team_pool: SimPoolHandle
) -> None:
    config = await call(jp_fetch, "ranktable", "config")
    assert (config["namespace"], config["user"]) == ("u-alice", "alice")
    perms = await call(jp_fetch, "ranktable", "permissions")
    assert (perms["namespace"], perms["user"], perms["owner"]) == ("u-alice", "alice", "alice")
    assert perms["allowed"]["submit"] and perms["allowed"]["stop"] and not perms["allowed"]["stop_others"]
    assert perms["jupyter"] == {"read": True, "write": True, "execute": True}

    submitted = await call(
        jp_fetch, "ranktable", "jobs", method="POST", body={"spec": spec("bert")}, expect=201
    )
    assert submitted["namespace"] == "u-alice"
    bob = Jobs(
        ClusterSettings(
            kubeconfig=str(team_pool.state_dir / "kubeconfig-bob"), namespace="u-bob", owner="bob"
        )
    )
    bob.submit(bob.spec(spec("gpt")))

    mine = await call(jp_fetch, "ranktable", "jobs")
    assert [(j["name"], j["owner"]) for j in mine["jobs"]] == [("bert", "alice")]
    team = await call(jp_fetch, "ranktable", "team")
    rows = {(j["namespace"], j["name"]): (j["owner"], j["mine"]) for j in team["jobs"]}
    assert rows[("u-alice", "bert")] == ("alice", True)
    assert rows[("u-bob", "gpt")] == ("bob", False)

    refused = await jp_fetch("ranktable", "jobs", "u-bob", "gpt", method="DELETE", raise_error=False)
    assert refused.code == 403
    body = json.loads(refused.body)
    assert "bob" in body["message"] and body["fix"]
    assert bob.client().get_job("gpt")["metadata"]["name"] == "gpt"


@pytest.mark.parametrize("jp_server_config", [True], indirect=True)
async def test_a_viewer_reads_the_team_and_is_told_what_they_may_not_do(jp_fetch: Any) -> None:
    perms = await call(jp_fetch, "ranktable", "permissions")
    assert perms["jupyter"] == {"read": True, "write": False, "execute": False}
    team = await call(jp_fetch, "ranktable", "team")
    assert team["scope"] == "cluster" and team["free_npus"] == 32
    refused = await jp_fetch(
        "ranktable", "jobs", method="POST", body=json.dumps({"spec": spec("x")}), raise_error=False
    )
    assert refused.code == 403
