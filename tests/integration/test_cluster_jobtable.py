"""The live job table (`cluster.jobtable.JobTable`) against the simulated pool: listed once, then followed by
watches; only the rows whose job, pods or rank table changed are recomputed; a lost API server is reported."""

from __future__ import annotations

import threading
import time
from collections import Counter
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

import pytest
from kubernetes.client import CoreV1Api
from kubernetes.config import new_client_from_config

from ranktable.cluster.client import ClusterClient
from ranktable.cluster.jobtable import JOB_LABEL, JobTable
from ranktable.cluster.kube import WATCH_SECONDS, UnreachableError
from ranktable.compose.manifests import compose
from ranktable.compose.spec import JobSpec
from tests.integration.fixtures.simpool import SimPoolHandle


def job(name: str, command: str) -> JobSpec:
    return JobSpec(
        name=name,
        image="bert_pretrain_mindspore:v1",
        nodes=2,
        npus_per_node=8,
        command=["/bin/bash", "-c", command],
    )


@contextmanager
def following(client: ClusterClient) -> Iterator[tuple[JobTable, Iterator[list[dict[str, Any]]]]]:
    """A started table and its rows, followed until the block ends; then stopped and closed."""
    table = JobTable(client, settle=0.05)
    stop = threading.Event()
    table.start()
    try:
        yield table, table.follow(stop)
    finally:
        stop.set()
        table.close()


def rows_until(
    rows: Iterator[list[dict[str, Any]]],
    check: Callable[[dict[str, dict[str, Any]]], bool],
    timeout: float = 60,
) -> Any:
    """The job table's rows by name once `check` holds for them (within `timeout` seconds)."""
    deadline = time.monotonic() + timeout
    for snapshot in rows:
        by_name = {r["name"]: r for r in snapshot}
        if check(by_name):
            return by_name
        assert time.monotonic() < deadline, f"timed out; last {by_name}"
    raise AssertionError("the table ended")


@pytest.fixture
def client(sim_pool_factory: Callable[..., SimPoolHandle]) -> Iterator[ClusterClient]:
    pool = sim_pool_factory(ranktable_delay=0.2)
    yield ClusterClient(str(pool.kubeconfig), pool.context, "default")


def count_calls(client: ClusterClient) -> Counter[str]:
    """From now on, every API call of `client` counted by what it reads (`what=`)."""
    lists: Counter[str] = Counter()
    call = client.kube.call

    def counting(fn: Any, *args: Any, what: str, **kwargs: Any) -> Any:
        lists[what] += 1
        return call(fn, *args, what=what, **kwargs)

    client.kube.call = counting  # type: ignore[method-assign]
    return lists


def test_listed_once_then_followed_recomputing_only_the_changed_job(client: ClusterClient) -> None:
    lists = count_calls(client)
    client.submit(compose(job("idle", "sleep 120")))
    client.submit(compose(job("busy", "echo up; sleep 2; exit 3")))
    try:
        with following(client) as (table, rows):
            running = rows_until(
                rows,
                lambda r: all(
                    r.get(n, {}).get("health", {}).get("ready") == 2 and r[n]["rank_table"] == "completed"
                    for n in ("idle", "busy")
                ),
            )
            assert running["idle"]["phase"] == "Running"
            listed = dict(lists)
            idle_before = table.recomputed["idle"]
            # busy's pods crash and restart: several changes, none of them touches idle's row
            # the back-off can show before the restart count moves (CI once saw it at 0): wait for both
            crashed = rows_until(
                rows,
                lambda r: (
                    "CrashLoopBackOff" in r["busy"]["health"]["reasons"]
                    and r["busy"]["health"]["restarts"] >= 1
                ),
            )
            assert crashed["busy"]["health"]["exit_code"] == 3
            client.stop("busy")
            gone = rows_until(rows, lambda r: "busy" not in r)
            assert set(gone) == {"idle"}
            assert table.recomputed["idle"] == idle_before, "an unchanged job's row was recomputed"
            assert table.recomputed["busy"] > 2
            # nothing was listed again: each resource was listed once, the rest came as watch events
            assert dict(lists) == listed
            assert sorted(w for w in lists if "in default" in w) == [
                "ConfigMaps in default",
                "Volcano jobs in default",
                "pods in default",
            ]
            assert all(lists[w] == 1 for w in lists if "in default" in w), lists
    finally:
        client.stop("idle")


def test_a_lost_api_server_ends_the_table_with_the_reason(
    sim_pool_factory: Callable[..., SimPoolHandle],
) -> None:
    pool = sim_pool_factory()
    client = ClusterClient(str(pool.kubeconfig), pool.context, "default")
    with following(client) as (_table, rows):
        assert next(rows) == []
        pool.stop()
        started = time.monotonic()
        with pytest.raises(UnreachableError, match="cannot reach the Kubernetes API"):
            next(rows)
        assert time.monotonic() - started < 10


def test_close_ends_the_watch_threads_at_once(client: ClusterClient) -> None:
    table = JobTable(client, settle=0.05)
    table.start()
    next(table.follow(threading.Event()))
    threads = [t for t in threading.enumerate() if t.name.startswith("ranktable-jobtable")]
    assert len(threads) == 4
    table.close()
    # Joined, not polled against a tight clock: a thread left in its blocked read would only end when
    # the watch request times out (WATCH_SECONDS, 60 s), well past this bound even on a loaded machine.
    assert WATCH_SECONDS >= 60
    deadline = time.monotonic() + 20  # one bound for all four joins
    for thread in threads:
        thread.join(timeout=max(0.0, deadline - time.monotonic()))
    assert [t.name for t in threads if t.is_alive()] == []


def test_describe_from_the_table_matches_the_api_without_listing_pods(client: ClusterClient) -> None:
    client.submit(compose(job("seen", "echo up; sleep 120")))
    try:
        with following(client) as (table, rows):
            rows_until(rows, lambda r: r.get("seen", {}).get("health", {}).get("ready") == 2)
            assert table.job_and_pods("nope") is None  # not in the table: the caller reads the API
            lists = count_calls(client)
            known = table.job_and_pods("seen")
            assert known is not None
            from_table = client.describe("seen", known).to_json()
            assert "pods of job seen" not in lists and "job seen in default" not in lists
            from_api = client.describe("seen").to_json()
            assert lists["pods of job seen"] == 1
            assert from_table["job"]["uid"] == from_api["job"]["uid"]
            for mine, theirs in zip(from_table["pods"], from_api["pods"], strict=True):
                assert {k: mine[k] for k in ("name", "index", "node", "leaf", "phase", "ready")} == {
                    k: theirs[k] for k in ("name", "index", "node", "leaf", "phase", "ready")
                }
            table.close()
            assert table.job_and_pods("seen") is None  # a closed table answers nothing
    finally:
        client.stop("seen")


def described(table: JobTable, name: str, check: Callable[[dict[str, Any]], bool] = lambda d: True) -> Any:
    """(version, description) from the table once it answers and `check` holds (within 2 s of a change)."""
    deadline = time.monotonic() + 60
    while True:
        got = table.describe(name)
        if got is not None and check(got[1]):
            return got
        assert time.monotonic() < deadline, f"timed out; last {got}"
        time.sleep(0.02)


def test_describe_from_the_watches_is_built_once_per_change_and_follows_the_cluster(
    client: ClusterClient,
) -> None:
    """#8: the Job view's overview every 2 s: no node, event, pod or rank-table read once the table holds the
    job, the same version (and no rebuild) while nothing changed, a new event in it within 2 s."""
    client.submit(compose(job("told", "echo up; sleep 120")))
    try:
        with following(client) as (table, rows):
            rows_until(rows, lambda r: r.get("told", {}).get("health", {}).get("ready") == 2)
            version, first = described(table, "told", lambda d: d["rank_table_status"] == "completed")
            assert table.describe("nope") is None  # not in the table: the caller reads the API
            lists = count_calls(client)
            built = table.described["told"]
            for _ in range(5):
                again_version, again = table.describe("told") or ("", {})
                assert again_version == version and again["pods"] == first["pods"]
            assert table.described["told"] == built and not lists  # no rebuild, no API read at all
            from_api = client.describe("told").to_json()
            assert {k: first[k] for k in ("pods", "rank_table_status")} == {
                k: from_api[k] for k in ("pods", "rank_table_status")
            }
            assert [(e["reason"], e["object"]) for e in first["events"]] == [
                (e["reason"], e["object"]) for e in from_api["events"]
            ]
            assert all(p["leaf"] for p in first["pods"])  # the nodes' leaves, from the watched nodes

            pod = first["pods"][1]["name"]
            CoreV1Api(
                new_client_from_config(config_file=client.kube.api.config.where)
            ).create_namespaced_event(
                "default",
                {
                    "metadata": {"name": f"{pod}.oom", "namespace": "default"},
                    "involvedObject": {"kind": "Pod", "name": pod, "namespace": "default"},
                    "reason": "OOMKilling",
                    "message": "Memory cgroup out of memory",
                    "type": "Warning",
                },
            )
            seen = time.monotonic()
            new_version, _ = described(
                table, "told", lambda d: any(e["reason"] == "OOMKilling" for e in d["events"])
            )
            assert time.monotonic() - seen < 2.0 and new_version != version
            assert table.describe("nope") is None and table.overview_error is None

            # another table (e.g. after a server restart) builds its first description as version 1 too: its
            # versions must differ, or a browser's old ETag would get a 304 for a different description
            with following(client) as (other, other_rows):
                rows_until(other_rows, lambda r: "told" in r)
                other_version, _ = described(other, "told")
                assert other_version.rsplit("-", 1)[1] == "1" and other_version not in (version, new_version)
    finally:
        client.stop("told")


def test_the_pods_held_leave_out_their_containers_env_which_volcano_makes_big(client: ClusterClient) -> None:
    """Volcano's svc plugin writes every pod's host name into each pod's `VC_<TASK>_HOSTS`: at 1,024 pods
    33 KB a pod, ~110 MB a copy of the job's pods (#28). Nothing reads a pod's env (the job's own comes
    from the Volcano job), so the table's watch and `job_pods` hold pods without it."""
    from ranktable.cluster.client import job_env

    spec = job("envy", "sleep 120")
    spec.env = {"MODEL": "bert"}
    client.submit(compose(spec))
    try:
        raw = client.kube.call(
            client.kube.core.list_namespaced_pod, "default", label_selector=JOB_LABEL, what="raw pods"
        )["items"]
        assert raw and all(any(c.get("env") for c in p["spec"]["containers"]) for p in raw)  # as served
        with following(client) as (table, rows):
            rows_until(rows, lambda r: r.get("envy", {}).get("health", {}).get("total") == 2)
            held = table.job_and_pods("envy")
            assert held is not None and len(held[1]) == 2
            listed = client.job_pods("envy")
            for pod in [*held[1], *listed]:
                assert all("env" not in c for c in pod["spec"]["containers"]), pod["spec"]["containers"]
                assert pod["spec"]["containers"][0]["resources"]  # what the capacity reads stays
            assert job_env(held[0])["MODEL"] == "bert"  # the job's env is read from the job
    finally:
        client.stop("envy")
