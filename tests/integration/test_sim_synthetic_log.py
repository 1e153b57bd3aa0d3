"""The simulated kubelet's synthetic log source (`ranktable-sim-synthetic-log`): lines made up at a given
rate with no process, read through the official client like any pod log (follow, sinceTime, tailLines,
timestamps, limitBytes), surviving a pool restart."""

from __future__ import annotations

import itertools
import time
from typing import Any

from kubernetes import client

from ranktable.observe.parsers import plain
from ranktable.sim.controllers.logs import SYNTHETIC_COMMAND, SyntheticLog, format_ts, parse_ts
from tests.integration.fixtures.simpool import SimPoolHandle
from tests.integration.sim_helpers import command_pod, eventually
from tests.integration.test_sim_kubelet import _raw_log

TIMEOUT = (5, 30)


def _pod(name: str, *args: str, restart: str = "Never") -> dict[str, Any]:
    return command_pod(name, [SYNTHETIC_COMMAND, *args], restart)


def _expected(i: int) -> str:
    text = f"step {i} loss {1.0 / (i + 1):.6f} throughput 1234.5 samples/s"
    return text + ("  RuntimeError: HCCL timeout" if i % 500 == 499 else "")


def _phase(core: client.CoreV1Api, name: str) -> str:
    return str(core.read_namespaced_pod(name, "default").status.phase)


def test_lines_rate_tail_since_and_exit(sim_pool: SimPoolHandle) -> None:
    core = client.CoreV1Api(sim_pool.api_client())
    core.create_namespaced_pod("default", _pod("gen", "--rate=2000", "--lines=1200"))
    eventually(lambda: _phase(core, "gen") == "Succeeded", what="Succeeded after 1,200 lines at 2,000/s")
    pod = core.read_namespaced_pod("gen", "default")
    assert pod.status.container_statuses[0].state.terminated.exit_code == 0

    text = core.read_namespaced_pod_log("gen", "default")
    assert text.splitlines() == [_expected(i) for i in range(1200)]
    assert "HCCL timeout" in text.splitlines()[499] and "HCCL" not in text.splitlines()[500]
    assert plain(text.splitlines()[7]) == {
        "step": 7,
        "loss": 0.125,
        "throughput": 1234.5,
        "throughput_unit": "samples/s",
    }  # the metrics path reads them

    stamped = core.read_namespaced_pod_log("gen", "default", timestamps=True).splitlines()
    stamps = [parse_ts(line.split(" ", 1)[0]) for line in stamped]
    assert [line.split(" ", 1)[1] for line in stamped] == [_expected(i) for i in range(1200)]
    assert {b - a for a, b in itertools.pairwise(stamps)} == {500_000}  # 2,000 lines/s exactly

    assert core.read_namespaced_pod_log("gen", "default", tail_lines=2).splitlines() == [
        _expected(1198),
        _expected(1199),
    ]
    since = stamped[1000].split(" ", 1)[0]
    assert _raw_log(sim_pool, "gen", sinceTime=since).splitlines() == [
        _expected(i) for i in range(1000, 1200)
    ]
    # tail first, then since (as the kubelet applies them): the last 300 lines, of which those after 1000
    assert _raw_log(sim_pool, "gen", sinceTime=since, tailLines="300").splitlines()[0] == _expected(1000)
    assert _raw_log(sim_pool, "gen", sinceTime=stamped[950].split(" ", 1)[0], tailLines="100").splitlines()[
        0
    ] == _expected(1100)
    assert core.read_namespaced_pod_log("gen", "default", limit_bytes=10) == _expected(0)[:10]


def test_follow_streams_at_the_rate_and_ends_when_the_pod_is_deleted(sim_pool: SimPoolHandle) -> None:
    core = client.CoreV1Api(sim_pool.api_client())
    core.create_namespaced_pod("default", _pod("follow", "--rate=200"))
    eventually(lambda: _phase(core, "follow") == "Running", what="Running")
    resp = core.read_namespaced_pod_log(
        "follow", "default", follow=True, timestamps=True, _preload_content=False, _request_timeout=TIMEOUT
    )
    lines: list[str] = []
    arrivals: list[float] = []
    buffer = b""
    started = time.monotonic()
    deleted_at = 0.0
    for chunk in resp.stream(amt=None):
        arrivals.append(time.monotonic())
        buffer += chunk
        *complete, buffer = buffer.split(b"\n")
        lines += [c.decode() for c in complete]
        if not deleted_at and time.monotonic() - started >= 1.5:
            deleted_at = time.monotonic()
            core.delete_namespaced_pod("follow", "default")  # the follow ends: the container stops
    ended = time.monotonic()
    assert deleted_at and ended - deleted_at < 3
    texts = [line.split(" ", 1)[1] for line in lines]
    assert texts == [_expected(i) for i in range(len(texts))]  # none lost, none repeated, in order
    stamps = [parse_ts(line.split(" ", 1)[0]) for line in lines]
    span = (stamps[-1] - stamps[0]) / 1e9
    assert 1.3 < span < 4.5 and abs(len(lines) / span - 200) < 10  # 200 lines/s of its clock
    assert len(arrivals) >= 10  # streamed in batches as the lines fall due, not at the end
    last = max(stamps)
    assert last <= time.time_ns()  # never a line from the future
    eventually(
        lambda: not core.list_namespaced_pod("default", field_selector="metadata.name=follow").items,
        what="pod removed",
    )


def test_follow_from_since_time_resumes_across_a_pool_restart(sim_pool: SimPoolHandle) -> None:
    core = client.CoreV1Api(sim_pool.api_client())
    core.create_namespaced_pod("default", _pod("resume", "--rate=100", "--lines=250"))
    eventually(lambda: _phase(core, "resume") == "Running", what="Running")
    time.sleep(0.5)
    first = core.read_namespaced_pod_log("resume", "default", timestamps=True).splitlines()
    assert 30 <= len(first) <= 150
    sim_pool.restart(down_seconds=0.3)  # the kubelet adopts the synthetic run from its run.json
    last_stamp = first[-1].split(" ", 1)[0]
    resumed = _raw_log(sim_pool, "resume", follow="true", timestamps="true", sinceTime=last_stamp)
    after = [line for line in resumed.splitlines() if line.split(" ", 1)[0] > last_stamp]
    texts = [line.split(" ", 1)[1] for line in first + after]
    assert texts == [_expected(i) for i in range(250)]  # follow ended with the 250th line
    core = client.CoreV1Api(sim_pool.api_client())
    eventually(lambda: _phase(core, "resume") == "Succeeded", what="Succeeded")


def test_bad_arguments_fail_the_container_with_the_reason(sim_pool: SimPoolHandle) -> None:
    core = client.CoreV1Api(sim_pool.api_client())
    core.create_namespaced_pod("default", _pod("bad", "--rate=fast"))
    eventually(lambda: _phase(core, "bad") == "Failed", what="Failed")
    state = core.read_namespaced_pod("bad", "default").status.container_statuses[0].state.terminated
    assert state.exit_code == 128 and "could not convert string to float" in state.message
    assert "--rate=R" in core.read_namespaced_pod_log("bad", "default")


def test_index_since_and_count_at_the_edges() -> None:
    log = SyntheticLog(start_ns=1_000, rate=1e6, lines=5)  # one line per microsecond
    assert [log.count(t) for t in (999, 1_000, 1_999, 2_000, 10**9)] == [0, 1, 1, 2, 5]
    assert [log.index_since(t) for t in (0, 1_000, 1_001, 2_000, 2_001)] == [0, 0, 1, 1, 2]
    log.end_ns = 2_500  # stopped: no line after it
    assert log.count(10**9) == 2


def test_render_is_text_and_format_ts_line_by_line() -> None:
    """The inlined render agrees with the per-line definition across second boundaries and error lines."""
    for rate, every in ((100.0, 500), (7.0, 3), (1e6, 1), (250.0, 0)):
        log = SyntheticLog(start_ns=1_764_000_000_999_000_000, rate=rate, error_every=every)
        for first, stop in ((0, 0), (0, 1), (0, 1200), (497, 1503), (999, 1001)):
            lines = [log.text(i) for i in range(first, stop)]
            stamps = [format_ts(log.stamp(i)) for i in range(first, stop)]
            assert log.render(first, stop, False) == "".join(f"{t}\n" for t in lines).encode()
            stamped = "".join(f"{ts} {t}\n" for ts, t in zip(stamps, lines, strict=True)).encode()
            assert log.render(first, stop, True) == stamped, (rate, every, first, stop)
