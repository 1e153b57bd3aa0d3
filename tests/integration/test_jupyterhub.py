"""A team on JupyterHub (#30): the Hub (PyPI) and configurable-http-proxy (npm) run docs/teams.md's own
`jupyterhub_config.py` and single-user authorizer; alice and bob have their own namespaces on one
simulated pool, each submits, follows logs and is refused on the other's job; carol, a read-only viewer
of alice's server, sees the team's jobs and cannot write."""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from tornado.httpclient import HTTPRequest
from tornado.websocket import websocket_connect

from ranktable.sim.k8s.rbac import parse_user
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.hub_helpers import Hub, fetch, request, spec, start_hub, start_server

pytestmark = pytest.mark.timeout(600)


@pytest.fixture
def team_pool(sim_pool_factory: Callable[..., SimPoolHandle]) -> SimPoolHandle:
    users = tuple(parse_user(u) for u in ("alice", "bob", "carol:viewer"))
    return sim_pool_factory(nodes=4, leaves=2, tenants=0, ranktable_delay=0.1, users=users)


@pytest.fixture
def hub(team_pool: SimPoolHandle, tmp_path: Path) -> Iterator[Hub]:
    with start_hub(team_pool.state_dir, tmp_path) as handle:
        yield handle


async def follow_logs(hub: Hub, owner: str, token: str, job: str, namespace: str, word: str) -> str:
    """The owner's panel stream (websocket through the proxy): the first log text holding `word`."""
    url = f"{hub.url.replace('http', 'ws', 1)}/user/{owner}/ranktable/stream"
    conn = await websocket_connect(HTTPRequest(url, headers={"Authorization": f"token {token}"}))
    try:
        conn.write_message(
            json.dumps({"op": "subscribe", "id": "s1", "channel": "logs", "job": job, "namespace": namespace})
        )
        deadline = time.monotonic() + 90
        while time.monotonic() < deadline:
            raw = await asyncio.wait_for(conn.read_message(), timeout=90)
            assert raw is not None, "the stream closed"
            msg = json.loads(raw)
            assert msg.get("type") != "error", msg
            for group in (msg.get("data") or {}).get("pods") or []:
                for text in str(group.get("text", "")).split("\n"):
                    if word in text:
                        return text
        raise AssertionError(f"no {word!r} in {job}'s logs")
    finally:
        conn.close()


async def test_two_users_and_a_viewer_on_one_hub_and_one_pool(hub: Hub) -> None:
    alice, bob = await start_server(hub, "alice"), await start_server(hub, "bob")
    carol = str((await hub.api("POST", "users/carol/tokens", {"note": "test"}))["token"])
    on = lambda user: f"{hub.url}/user/{user}/ranktable"  # noqa: E731 - a URL per server

    # each in their own namespace, derived from the Hub user
    assert (await request("GET", f"{on('alice')}/config", token=alice))["namespace"] == "u-alice"
    mine = await request("POST", f"{on('alice')}/jobs", {"spec": spec("bert")}, alice, expect=(201,))
    theirs = await request("POST", f"{on('bob')}/jobs", {"spec": spec("bert")}, bob, expect=(201,))
    assert (mine["namespace"], theirs["namespace"]) == ("u-alice", "u-bob")  # same name, no collision

    # each follows their own logs through the proxy
    assert "loss" in await follow_logs(hub, "alice", alice, "bert", "u-alice", "loss")
    assert "loss" in await follow_logs(hub, "bob", bob, "bert", "u-bob", "loss")

    # bob is refused on alice's job: by the Hub on her server, by RBAC and ownership on his own
    code, _ = await fetch("DELETE", f"{on('alice')}/jobs/u-alice/bert", token=bob)
    assert code in (403, 404), code  # the Hub does not let bob reach alice's server at all
    code, body = await fetch("DELETE", f"{on('bob')}/jobs/u-alice/bert", token=bob)
    assert code == 403 and "alice" in body["message"], body
    listed = await request("GET", f"{on('alice')}/jobs", token=alice)
    assert [(j["name"], j["owner"]) for j in listed["jobs"]] == [("bert", "alice")]

    # carol reads alice's server (granular scopes: read only) and sees the team; she cannot write
    perms = await request("GET", f"{on('alice')}/permissions", token=carol)
    assert perms["jupyter"] == {"read": True, "write": False, "execute": False}
    team = await request("GET", f"{on('alice')}/team", token=carol)
    owners = {(j["namespace"], j["name"]): j["owner"] for j in team["jobs"]}
    assert owners == {("u-alice", "bert"): "alice", ("u-bob", "bert"): "bob"}
    code, _ = await fetch("POST", f"{on('alice')}/jobs", {"spec": spec("x")}, carol)
    assert code == 403
    code, _ = await fetch("DELETE", f"{on('alice')}/jobs/u-alice/bert", token=carol)
    assert code == 403
    # and alice herself still may
    stopped = await request("DELETE", f"{on('alice')}/jobs/u-alice/bert", token=alice)
    assert "job/bert" in stopped["deleted"]
