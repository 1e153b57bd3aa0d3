"""The cluster client (its own kubeconfig reader and transport) against the simulated Lite pool; the official
kubernetes client makes the changes the product does not (typed API calls)."""

from __future__ import annotations

import gc
import re
import sys
import threading
import time
from collections import defaultdict
from collections.abc import Callable
from pathlib import Path

import pytest
from kubernetes.client import CoreV1Api

from ranktable.cluster.client import ClusterClient
from ranktable.cluster.kube import watch
from ranktable.cluster.logs import LogLine, LogStream
from ranktable.compose.manifests import compose
from ranktable.compose.spec import EntryPoint, JobSpec
from ranktable.errors import ConflictError, InputError, NotFoundError, RanktableError
from ranktable.hccl import check_document
from tests.integration.fixtures.simpool import SimPoolHandle

TRAIN = str(Path(__file__).resolve().parents[2] / "examples" / "train.py")
STEP = re.compile(r"^(?:\[rank\d+\]: )?rank (\d+) step (\d+) loss")  # the launcher tags its children


def client_for(pool: SimPoolHandle) -> ClusterClient:
    return ClusterClient(str(pool.kubeconfig), pool.context, "default")


def train_job(name: str, nodes: int, steps: int, interval: float, routing: bool = False) -> JobSpec:
    return JobSpec(
        name=name,
        image="bert_pretrain_mindspore:v1",
        nodes=nodes,
        npus_per_node=8 if nodes > 1 else 1,
        routing=routing,
        entry=EntryPoint(TRAIN, ["--steps", str(steps), "--interval", str(interval)]),
    )


def steps_by_rank(lines: list[LogLine]) -> dict[int, list[int]]:
    out: dict[int, list[int]] = defaultdict(list)
    for line in lines:
        m = STEP.match(line.text)
        if m:
            out[int(m.group(1))].append(int(m.group(2)))
    return out


def follow_in_background(
    client: ClusterClient, name: str
) -> tuple[LogStream, list[LogLine], threading.Thread]:
    """Once the rank table is complete, follow the job's logs on a thread while the test disturbs the pool."""
    client.wait_rank_table(name, timeout=30)
    lines: list[LogLine] = []
    stream = client.logs(name, follow=True)
    reader = threading.Thread(target=lambda: lines.extend(stream), daemon=True)
    reader.start()
    return stream, lines, reader


@pytest.fixture
def pool(sim_pool_factory: Callable[..., SimPoolHandle]) -> SimPoolHandle:
    return sim_pool_factory(ranktable_delay=0.2)


def test_four_node_job_end_to_end(pool: SimPoolHandle) -> None:
    client = client_for(pool)
    result = client.submit(compose(train_job("bert", nodes=4, steps=5, interval=0.02, routing=True)))
    assert result.configmap == "configmap1980-bert" and result.uid

    progress: list[str] = []
    table = client.wait_rank_table("bert", timeout=30, progress=progress.append)
    assert table.ok, table.report.problems
    assert any("completed" in p for p in progress)
    # validated again, independently, by the core: 4 servers x 8 devices, ranks 0..31
    report = check_document(table.text, "jobstart_hccl.json")
    assert report.ok and report.table is not None
    assert [len(s.devices) for s in report.table.servers] == [8, 8, 8, 8]

    with client.logs("bert", follow=True) as stream:
        lines = list(stream)
    # the gang is spread over both leaves (pods 0, 2 under leaf-0; 1, 3 under leaf-1), so the route
    # plan numbers the servers leaf by leaf
    pods = {"bert-bert-1-0": 0, "bert-bert-1-1": 2, "bert-bert-1-2": 1, "bert-bert-1-3": 3}
    assert {line.pod for line in lines} == set(pods)
    assert all(line.node_rank == pods[line.pod] for line in lines)
    assert all(re.match(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d", line.timestamp) for line in lines)
    # every rank of every pod printed its 5 steps exactly once, in order
    assert steps_by_rank(lines) == {rank: [1, 2, 3, 4, 5] for rank in range(32)}
    intro = [line for line in lines if re.match(r"(?:\[rank8\]: )?rank 8/32 ", line.text)]
    assert len(intro) == 1 and intro[0].pod == "bert-bert-1-2"
    assert any("route plan applied" in line.text for line in lines)

    summary = next(j for j in client.list_jobs() if j.name == "bert")
    assert summary.nodes == 4 and summary.queue == "default"
    assert summary.image == "bert_pretrain_mindspore:v1"  # a new job in the panel starts from it
    phases = [c.phase for c in client.watch_phases("bert", timeout=30)]
    assert phases[-1] == "Completed"
    described = client.describe("bert")
    assert [p.index for p in described.pods] == [0, 1, 2, 3]
    assert all(p.node and p.host_ip and p.leaf and p.has_devices for p in described.pods)

    assert client.stop("bert") == ["job/bert", "configmap/configmap1980-bert"]
    with pytest.raises(NotFoundError):
        client.get_configmap("configmap1980-bert")
    with pytest.raises(NotFoundError):
        client.stop("bert")


def test_unschedulable_job_gets_events_and_a_free_npu_hint(pool: SimPoolHandle) -> None:
    client = client_for(pool)
    client.submit(compose(JobSpec(name="small", image="i", nodes=6, command=["sleep", "60"])))
    client.wait_rank_table("small", timeout=30)
    client.submit(compose(JobSpec(name="big", image="i", nodes=4, command=["sleep", "60"])))
    deadline = time.monotonic() + 20
    described = client.describe("big")
    while not any(e.reason == "FailedScheduling" for e in described.events) and time.monotonic() < deadline:
        time.sleep(0.2)
        described = client.describe("big")
    failed = [e for e in described.events if e.reason == "FailedScheduling"]
    assert failed and "Insufficient huawei.com/ascend-1980" in failed[0].message
    assert "2 node(s) have 8 free" in failed[0].hint
    assert "per leaf:" in failed[0].hint and "use at most 2 node(s)" in failed[0].hint
    assert described.capacity is not None and sum(described.capacity.per_node.values()) == 16
    with pytest.raises(RanktableError) as err:
        client.wait_rank_table("big", timeout=1)
    assert "big-big-1-0 (Pending, not scheduled)" in err.value.reason


def test_rejected_job_names_the_field_and_leaves_no_configmap(pool: SimPoolHandle) -> None:
    client = client_for(pool)
    docs = compose(JobSpec(name="bad", image="i", nodes=1, command=["true"]))
    docs[1]["spec"]["tasks"][0]["replicas"] = -1
    with pytest.raises(InputError) as err:
        client.submit(docs)
    assert "spec.tasks[0].replicas" in (err.value.where or "")
    with pytest.raises(NotFoundError):
        client.get_configmap("configmap1980-bad")


def test_second_submit_says_the_job_exists(pool: SimPoolHandle) -> None:
    client = client_for(pool)
    docs = compose(JobSpec(name="twice", image="i", nodes=1, npus_per_node=1, command=["sleep", "30"]))
    client.submit(docs)
    with pytest.raises(ConflictError) as err:
        client.submit(compose(JobSpec(name="twice", image="i", nodes=1, npus_per_node=1, command=["true"])))
    assert err.value.reason == "job twice already exists in default"
    assert client.get_configmap("configmap1980-twice")  # the first job's ConfigMap is untouched


@pytest.mark.fault
def test_logs_survive_a_pool_restart_without_loss_or_repeats(sim_pool_process: SimPoolHandle) -> None:
    pool = sim_pool_process  # `ranktable sim serve` in a subprocess, restarted the way `sim start` would be
    client = client_for(pool)
    client.submit(compose(train_job("steady", nodes=2, steps=40, interval=0.05)))
    stream, lines, reader = follow_in_background(client, "steady")
    phases: list[str] = []
    notes: list[str] = []
    watcher = threading.Thread(
        target=lambda: phases.extend(
            c.phase for c in client.watch_phases("steady", 60, progress=notes.append)
        ),
        daemon=True,
    )
    watcher.start()
    deadline = time.monotonic() + 20
    while not any(STEP.match(line.text) for line in lines) and time.monotonic() < deadline:
        time.sleep(0.05)
    pool.restart(down_seconds=0.5)  # streams break mid-job; pod processes keep writing their logs
    reader.join(timeout=60)
    stream.close()
    assert not reader.is_alive()
    assert stream.stats.reconnects >= 2
    assert not stream.stats.problems
    assert steps_by_rank(lines) == {rank: list(range(1, 41)) for rank in range(16)}
    watcher.join(timeout=30)
    assert phases == ["Running", "Completed"]  # resumed across the restart: nothing lost, nothing repeated
    assert notes, "the watch should have noticed the dropped connection"
    assert len(lines) == len({(line.pod, line.timestamp, line.text) for line in lines})


def test_watch_relists_after_410_gone(sim_pool_factory: Callable[..., SimPoolHandle]) -> None:
    pool = sim_pool_factory(history=5)
    client = client_for(pool)
    core = CoreV1Api(pool.api_client())  # the typed API: the product's `kube.core` has only what it calls
    core.create_namespaced_config_map("default", {"metadata": {"name": "first"}, "data": {"a": "1"}})
    notes: list[str] = []
    events = watch(
        client.kube,
        client.kube.core.list_namespaced_config_map,  # the product's REST call, watched
        "default",
        what="configmaps",
        on_resume=notes.append,
        deadline=time.monotonic() + 20,
    )
    listed = [
        next(events).obj["metadata"]["name"]
        for _ in range(len(core.list_namespaced_config_map("default").items))
    ]
    assert "first" in listed
    for i in range(20):  # more changes than the server keeps: the listed resourceVersion expires
        core.create_namespaced_config_map("default", {"metadata": {"name": f"cm-{i}"}})
    after = next(events)
    assert any("410" in n for n in notes)
    assert after.type == "SYNC"  # the relist, not a gap
    total = len(core.list_namespaced_config_map("default").items)
    names = {after.obj["metadata"]["name"]} | {next(events).obj["metadata"]["name"] for _ in range(total - 1)}
    assert {"first", *(f"cm-{i}" for i in range(20))} <= names


def test_a_watch_keeps_no_listing_once_it_streams(sim_pool_factory: Callable[..., SimPoolHandle]) -> None:
    """The listing a watch starts from is the watcher's (`LIST`): the watch itself lets go of it, else every
    object changed since stays alive twice, the listed copy and the new one (1,024 pods, #28)."""
    pool = sim_pool_factory()
    client = client_for(pool)
    core = CoreV1Api(pool.api_client())
    core.create_namespaced_config_map("default", {"metadata": {"name": "listed"}, "data": {"a": "1"}})
    events = watch(
        client.kube,
        client.kube.core.list_namespaced_config_map,
        "default",
        what="configmaps",
        whole_lists=True,
        deadline=time.monotonic() + 20,
    )
    listing = next(events).obj
    assert [i["metadata"]["name"] for i in listing["items"]] == ["listed"]
    core.create_namespaced_config_map("default", {"metadata": {"name": "later"}})
    assert next(events).obj["metadata"]["name"] == "later"  # streaming now
    assert not any(r is events for r in gc.get_referrers(listing)), "the watch still holds its listing"
    events.close()


def test_following_readers_hold_no_pod(pool: SimPoolHandle) -> None:
    """A pod's reader reads the pod to know where its log stands, then follows the log for the pod's life:
    it must not keep the pod meanwhile (1,024 readers held 1,024 whole pods, each with Volcano's 33 KB host
    list, #28)."""
    client = client_for(pool)
    spec = JobSpec(
        name="held", image="i", nodes=2, npus_per_node=1, command=["/bin/sh", "-c", "echo up; sleep 30"]
    )
    client.submit(compose(spec))
    try:
        with client.logs("held", follow=True) as stream:
            lines = iter(stream)
            assert [next(lines).text, next(lines).text] == ["up", "up"]  # both readers follow now
            readers = {t.ident for t in threading.enumerate() if t.name.startswith("log-held-")}
            assert len(readers) == 2
            held = []
            for ident, frame in sys._current_frames().items():
                while ident in readers and frame is not None:
                    held += [
                        f"{frame.f_code.co_name}.{name}"
                        for name, value in frame.f_locals.items()
                        if type(value) is dict and value.get("kind") == "Pod"
                    ]
                    frame = frame.f_back
            assert held == []
    finally:
        client.stop("held")


def test_logs_follow_a_container_restart(pool: SimPoolHandle) -> None:
    client = client_for(pool)
    script = (
        'for i in 1 2 3; do echo "run $(cat runs 2>/dev/null || echo 1) line $i"; sleep 0.2; done; '
        "if [ -f runs ]; then exit 0; fi; echo 2 > runs; exit 3"
    )
    spec = JobSpec(name="flaky", image="i", nodes=1, npus_per_node=1, command=["/bin/sh", "-c", script])
    client.submit(compose(spec))
    with client.logs("flaky", follow=True) as stream:
        texts = [line.text for line in stream]
    assert texts == [f"run {run} line {i}" for run in (1, 2) for i in (1, 2, 3)]
    pod = client.describe("flaky").pods[0]
    assert pod.restarts == 1 and pod.phase == "Succeeded"


INTERLEAVED = """kind: RanktableTopology
version: 1
switches:
  - {name: spine-0, tier: 2}
  - {name: leaf-a, tier: 1, parent: spine-0}
  - {name: leaf-b, tier: 1, parent: spine-0}
servers:
""" + "".join(f"  - {{name: n{i}, leaf: leaf-{'ab'[i % 2]}}}\n" for i in range(6))


def test_routed_job_logs_carry_the_planned_node_rank(
    sim_pool_factory: Callable[..., SimPoolHandle], tmp_path: Path
) -> None:
    from ranktable.usecases.jobs import job_layout

    topology = tmp_path / "interleaved.yaml"
    topology.write_text(INTERLEAVED)
    pool = sim_pool_factory(ranktable_delay=0.2, topology=topology)
    client = client_for(pool)
    client.submit(compose(train_job("routed", nodes=4, steps=3, interval=0.5, routing=True)))
    client.wait_rank_table("routed", timeout=30)
    layout = job_layout(client, "routed")  # while it runs: the plan report of the job's real placement
    report = layout.report
    assert report["planned"]["crossings_per_tier"][0] < report["given"]["crossings_per_tier"][0]
    assert layout.svg.lstrip().startswith("<")
    assert [p.leaf for p in client.describe("routed").pods] == ["leaf-a", "leaf-b", "leaf-a", "leaf-b"]
    with client.logs("routed", follow=True) as stream:
        lines = list(stream)
    # pods 0 and 2 share leaf-a: the plan numbers them 0 and 1, then pods 1 and 3 on leaf-b
    planned = {"routed-routed-1-0": 0, "routed-routed-1-1": 2, "routed-routed-1-2": 1, "routed-routed-1-3": 3}
    assert {(line.pod, line.node_rank) for line in lines} == set(planned.items())
    for pod, node_rank in planned.items():
        started = {
            int(m.group(1))
            for line in lines
            if line.pod == pod
            for m in [re.match(r"(?:\[rank\d+\]: )?rank (\d+)/32 ", line.text)]
            if m
        }
        assert started == set(range(node_rank * 8, node_rank * 8 + 8)), pod


def test_logs_continue_across_a_job_restart(pool: SimPoolHandle) -> None:
    client = client_for(pool)
    client.submit(compose(train_job("phoenix", nodes=2, steps=25, interval=0.1)))
    stream, lines, reader = follow_in_background(client, "phoenix")
    deadline = time.monotonic() + 20
    while time.monotonic() < deadline:  # until every rank's first steps have been read
        seen = steps_by_rank(list(lines))
        if len(seen) == 16 and all(len(steps) >= 2 for steps in seen.values()):
            break
        time.sleep(0.05)
    # a pod deleted under a running job: Volcano's PodEvicted -> RestartJob recreates every pod
    CoreV1Api(pool.api_client()).delete_namespaced_pod("phoenix-phoenix-1-0", "default")
    reader.join(timeout=90)
    stream.close()
    assert not reader.is_alive() and not stream.stats.problems
    assert client.describe("phoenix").job.retries == 1
    got = steps_by_rank(lines)
    for rank, steps in got.items():
        restart = steps.index(1, 1)  # the second run starts again at step 1
        assert steps[:restart] == list(range(1, restart + 1)), rank  # the first run: a clean prefix
        assert steps[restart:] == list(range(1, 26)), rank  # the second run: complete
    assert len(lines) == len({(line.pod, line.timestamp, line.text) for line in lines})
