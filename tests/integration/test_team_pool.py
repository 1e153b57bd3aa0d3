"""One simulated pool shared by a team (#30.1): per-user namespaces, owner labels, stop only your own
unless RBAC allows more, permissions read with SelfSubjectAccessReview, a read-only team view."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

import pytest

from ranktable.errors import NotFoundError, PermissionDenied
from ranktable.sim.k8s.rbac import parse_user
from ranktable.usecases.jobs import ClusterSettings, Jobs, team_settings
from tests.integration.fixtures.simpool import SimPoolHandle

USERS = tuple(parse_user(u) for u in ("alice", "bob", "carol:viewer"))


@pytest.fixture
def team_pool(sim_pool_factory: Callable[..., SimPoolHandle]) -> SimPoolHandle:
    return sim_pool_factory(nodes=4, leaves=2, tenants=0, ranktable_delay=0.1, users=USERS)


def jobs_of(pool: SimPoolHandle, user: str, namespace: str = "{context}", owner: str | None = None) -> Jobs:
    """A user's job use cases as the CLI builds them: their kubeconfig, owner and namespace from it."""
    kubeconfig = str(pool.state_dir / f"kubeconfig-{user}")
    found_owner, ns = team_settings(namespace, None, kubeconfig, None)
    return Jobs(ClusterSettings(kubeconfig=kubeconfig, namespace=ns, owner=owner or found_owner))


def spec(jobs: Jobs, name: str, namespace: str | None = None) -> Any:
    raw: dict[str, Any] = {
        "name": name,
        "image": "train:v1",
        "nodes": 1,
        "npus_per_node": 8,
        "command": ["/bin/sh", "-c", "echo step 1 loss 0.5; sleep 60"],
    }
    if namespace:
        raw["namespace"] = namespace
    return jobs.spec(raw)


def test_each_user_works_in_their_own_namespace_refused_on_the_others(
    team_pool: SimPoolHandle,
) -> None:
    alice, bob = jobs_of(team_pool, "alice"), jobs_of(team_pool, "bob")
    assert (alice.settings.owner, alice.settings.namespace) == ("alice", "u-alice")
    assert (bob.settings.owner, bob.settings.namespace) == ("bob", "u-bob")

    # the same job name side by side: no collision
    assert alice.submit(spec(alice, "bert"))["namespace"] == "u-alice"
    assert bob.submit(spec(bob, "bert"))["namespace"] == "u-bob"
    job = alice.client().get_job("bert")
    assert job["metadata"]["labels"]["ranktable.io/owner"] == "alice"
    assert [r["owner"] for r in bob.job_rows()] == ["bob"]

    # bob follows his own logs
    assert "step 1 loss 0.5" in follow_until(bob, "bert", "loss")

    # bob may not stop alice's job (the pool's RBAC refuses; the product says whose it is)
    with pytest.raises(PermissionDenied) as caught:
        bob.stop("u-alice", "bert", keep_logs_s=0)
    assert "alice" in caught.value.message
    assert alice.client().get_job("bert")["metadata"]["name"] == "bert"
    assert alice.stop(None, "bert", keep_logs_s=0)["deleted"]


def follow_until(jobs: Jobs, name: str, word: str, timeout: float = 90.0) -> str:
    """Follow the job's logs (as `ranktable job logs -f`) until a line holds `word`; that line."""
    lines = jobs.log_lines(None, name, follow=True)
    found: list[str] = []

    def read() -> None:
        for line in lines:
            if word in line.text:
                found.append(line.text)
                return

    reader = threading.Thread(target=read, daemon=True)
    reader.start()
    reader.join(timeout)
    lines.close()
    assert found, f"no log line with {word!r} within {timeout}s"
    return found[0]


def test_in_a_shared_namespace_only_the_owner_stops_unless_rbac_grants_stop_others(
    team_pool: SimPoolHandle,
) -> None:
    alice, bob = jobs_of(team_pool, "alice", "team"), jobs_of(team_pool, "bob", "team")
    alice.submit(spec(alice, "shared", "team"))
    assert bob.permissions()["allowed"]["stop"] is True  # RBAC alone would let bob delete it
    assert bob.permissions()["allowed"]["stop_others"] is False
    with pytest.raises(PermissionDenied) as caught:
        bob.stop("team", "shared", keep_logs_s=0)
    assert caught.value.message.startswith("job shared in team belongs to alice")
    assert "stop-others" in (caught.value.fix or "")
    # the pool's administrator holds every verb, stop-others included
    admin = Jobs(ClusterSettings(kubeconfig=str(team_pool.kubeconfig), namespace="team", owner="root"))
    assert admin.permissions()["allowed"]["stop_others"] is True
    assert "job/shared" in admin.stop("team", "shared", keep_logs_s=0)["deleted"]


def test_a_viewer_sees_the_team_and_may_not_write(team_pool: SimPoolHandle) -> None:
    alice, carol = jobs_of(team_pool, "alice"), jobs_of(team_pool, "carol")
    alice.submit(spec(alice, "bert"))
    allowed = carol.permissions()["allowed"]
    assert allowed["list"] and allowed["logs"]
    assert not (allowed["submit"] or allowed["stop"] or allowed["exec"])
    team = carol.team()
    assert team["scope"] == "cluster"
    rows = {(r["namespace"], r["name"]): r for r in team["jobs"]}
    assert rows[("u-alice", "bert")]["owner"] == "alice"
    assert rows[("u-alice", "bert")]["mine"] is False
    assert sum(team["free_per_leaf"].values()) == team["free_npus"]
    assert [q["name"] for q in team["queues"]] == ["default"]
    with pytest.raises(PermissionDenied):
        carol.submit(spec(carol, "mine"))
    with pytest.raises(PermissionDenied):
        carol.stop("u-alice", "bert", keep_logs_s=0)


def test_a_missing_namespace_is_created_or_reported_clearly(team_pool: SimPoolHandle) -> None:
    bob = jobs_of(team_pool, "bob", "u-nobody")
    with pytest.raises(NotFoundError) as caught:
        bob.submit(spec(bob, "x"))
    assert caught.value.where == "namespace"
    assert "namespace u-nobody does not exist and you may not create it" in caught.value.message
    assert "ConfigMap" not in caught.value.message
    admin = Jobs(ClusterSettings(kubeconfig=str(team_pool.kubeconfig), namespace="fresh", owner="root"))
    assert admin.submit(spec(admin, "x"))["namespace"] == "fresh"


def test_the_documented_rbac_is_what_the_real_control_plane_creates() -> None:
    """docs/teams.md's roles are the ones `sim start --control-plane real --user` binds (conformance)."""
    import re
    from pathlib import Path

    import yaml

    from ranktable.sim.real.team import EDIT_RULES, READ_RULES

    text = (Path(__file__).parents[2] / "docs" / "teams.md").read_text()
    block = re.search(r"```yaml\n(.*?)```", text, re.S)
    assert block is not None
    roles = {
        d["metadata"]["name"]: d["rules"]
        for d in yaml.safe_load_all(block.group(1))
        if d["kind"] == "ClusterRole"
    }
    assert roles == {"ranktable-user": EDIT_RULES, "ranktable-team-reader": READ_RULES}


def test_the_cli_works_in_the_kubeconfig_users_namespace_and_stops_only_their_jobs(
    team_pool: SimPoolHandle, tmp_path: Any
) -> None:
    """`ranktable job ...` in bob's terminal: his namespace by default, one clear line on alice's job."""
    import json
    import os
    import subprocess
    import sys

    alice, bob = jobs_of(team_pool, "alice"), jobs_of(team_pool, "bob")
    alice.submit(spec(alice, "bert"))
    bob.submit(spec(bob, "gpt"))
    env = {
        **os.environ,
        "KUBECONFIG": str(team_pool.state_dir / "kubeconfig-bob"),
        "RANKTABLE_HOME": str(tmp_path / "home"),
    }
    env.pop("JUPYTERHUB_USER", None)

    def cli(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ranktable", "job", *args],
            capture_output=True,
            text=True,
            env=env,
            timeout=120,
            check=False,
        )

    listed = cli("list", "--json")
    assert listed.returncode == 0, listed.stderr
    rows = [(j["namespace"], j["name"], j["owner"]) for j in json.loads(listed.stdout)]
    assert rows == [("u-bob", "gpt", "bob")]
    stopped = cli("stop", "bert", "-n", "u-alice", "--keep-logs", "0")
    assert stopped.returncode != 0
    assert len(stopped.stderr.strip().splitlines()) == 1, stopped.stderr
    assert "belongs to alice" in stopped.stderr
    assert alice.client().get_job("bert")["metadata"]["labels"]["ranktable.io/owner"] == "alice"


def test_sim_start_with_users_prints_their_kubeconfigs_and_refuses_a_bad_name(tmp_path: Any) -> None:
    import os
    import subprocess
    import sys

    def sim(*args: str) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [sys.executable, "-m", "ranktable", "sim", *args, "--state-dir", str(tmp_path / "sim")],
            capture_output=True,
            text=True,
            env={**os.environ, "RANKTABLE_HOME": str(tmp_path / "home")},
            timeout=120,
            check=False,
        )

    bad = sim("start", "--nodes", "2", "--user", "Alice")
    assert bad.returncode != 0
    assert bad.stderr.strip().splitlines() == [
        "ranktable sim start: --user: 'Alice': a user name must be lowercase letters, digits and '-' "
        "(e.g. --user alice or --user carol:viewer)"
    ]
    started = sim("start", "--nodes", "2", "--tenants", "0", "--user", "alice", "--user", "carol:viewer")
    try:
        assert started.returncode == 0, started.stderr
        lines = [line for line in started.stdout.splitlines() if line.startswith("user ")]
        assert lines == [
            f"user alice (editor, namespace u-alice): {tmp_path / 'sim' / 'kubeconfig-alice'}",
            f"user carol (viewer, namespace default): {tmp_path / 'sim' / 'kubeconfig-carol'}",
        ]
        assert (tmp_path / "sim" / "kubeconfig-alice").stat().st_mode & 0o077 == 0  # it holds her token
    finally:
        sim("stop")
