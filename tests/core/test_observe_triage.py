"""Triage: first failing rank located on pod/server/leaf, error catalogue, stragglers and hung ranks."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from ranktable.observe import ObserveSettings, RankLayout, RankPlace, RunObserver
from ranktable.observe.catalogue import catalogue
from ranktable.observe.text import kube_time

LOGS = Path(__file__).parents[1] / "data" / "logs"
FAILURE = LOGS / "hccl_failure"


def failure_layout() -> RankLayout:
    return RankLayout(RankPlace(**p) for p in json.loads((FAILURE / "layout.json").read_text()))


def feed_dir(observer: RunObserver) -> None:
    for node_rank in range(4):
        pod = f"llm-worker-{node_rank}"
        lines = (FAILURE / f"{pod}.log").read_text().splitlines()
        for start in range(0, len(lines), 5):  # batches, as the log stream delivers them
            observer.feed(pod, node_rank, [tuple(line.split(" ", 1)) for line in lines[start : start + 5]])


def test_first_failure_is_the_earliest_ei0006_rank_with_server_and_leaf() -> None:
    observer = RunObserver(failure_layout())
    feed_dir(observer)
    result = observer.diagnose("Failed")
    first = result["first_failure"]
    assert (first["rank"], first["node_rank"], first["pod"]) == (5, 2, "llm-worker-2")
    assert (first["server"], first["leaf"], first["device"]) == ("10.0.2.21", "leaf-b", 1)
    assert first["code"] == "EI0006" and "HCCL_CONNECT_TIMEOUT" in first["fix"]
    assert first["time"] == "2026-04-08T10:00:05.039595Z"
    assert "Getting socket times out" in first["line"]
    # one entry per rank, in time order; a traceback header is replaced by its specific EI0006 line
    assert [e["rank"] for e in result["errors"]] == [5, 4, 0, 1, 2, 3, 6, 7]
    rank0 = result["errors"][2]
    assert rank0["code"] == "EI0006" and rank0["time"] == "2026-04-08T10:02:05.989875Z"
    assert result["errors"][1]["code"] == "WATCHDOG_TIMEOUT"
    assert result["advice"] and "fix rank 5 (node rank 2) first" in result["advice"][0]
    assert result["summary"].startswith(
        "Failed: rank 5 (llm-worker-2, server 10.0.2.21, leaf leaf-b) failed first"
    )
    assert result["error_counts"]["EI0006"] == 8


def test_all_ranks_ei0006_with_a_spread_above_the_timeout_advises_raising_it() -> None:
    layout = RankLayout.uniform([("p0", 0), ("p1", 1)], 1)
    observer = RunObserver(layout)
    observer.feed("p0", 0, [("2026-01-01T00:00:00Z", "EI0006: Getting socket times out.")])
    observer.feed("p1", 1, [("2026-01-01T00:04:00Z", "EI0006: Getting socket times out.")])
    advice = observer.diagnose("Failed")["advice"]
    assert advice == [
        "every rank reports EI0006 and reports are 240 s apart (> HCCL_CONNECT_TIMEOUT 120 s): "
        "set HCCL_CONNECT_TIMEOUT=360 or more"
    ]


def test_a_primary_fault_beats_earlier_victims_and_named_peers_beat_reporters() -> None:
    layout = RankLayout.uniform([("p0", 0), ("p1", 1), ("p2", 2)], 1)
    observer = RunObserver(layout)
    observer.feed(
        "p0", 0, [("2026-01-01T00:00:01Z", "EI0002: has not received the Notify record from remote rank[2]")]
    )
    observer.feed(
        "p1", 1, [("2026-01-01T00:00:02Z", "RuntimeError: NPU out of memory. Tried to allocate 260.00 MiB")]
    )
    assert observer.diagnose()["first_failure"]["code"] == "DEVICE_OOM"
    named = RunObserver(layout)
    named.feed("p0", 0, [("2026-01-01T00:00:01Z", "EI0002: Notify wait execute failed, remote rank[2]")])
    named.feed("p2", 2, [("2026-01-01T00:00:09Z", "EI0002: Notify wait execute failed")])
    assert named.diagnose()["first_failure"]["rank"] == 2


@pytest.mark.parametrize(
    ("line", "code"),
    [
        ("EJ0001: HCCP init failed. Maybe the last training process is running", "EJ0001"),
        ("EI0002: The wait execution of the Notify register times out.", "EI0002"),
        (
            "EI9999: Inner Error! hccl fftsplus task timeout, stuck notify num:1, timeout:30min(default)",
            "EI9999",
        ),
        ("EE9999: Inner Error! rtDeviceSynchronize execute failed, reason=[task timeout]", "EE9999"),
        ("EL0003: The argument is invalid.", "EL0003"),
        ("[ERROR] HCCL init failed, error code is 11", "HCCL_INIT"),
        (
            "HCCL function error: HcclCommInitRootInfo(numRanks, &rootInfo, rank, &(comm->hcclComm_)), "
            "error code is 11",
            "HCCL_INIT",
        ),
        ("[HCCP] the roce link status is down, device 3", "ROCE_LINK_DOWN"),
        ("ping device_ip 29.1.1.5 failed: unreachable", "DEVICE_IP_UNREACHABLE"),
        (
            "RuntimeError: NPU out of memory. Tried to allocate 260.00 MiB (NPU 0; 28.50 GiB total capacity)",
            "DEVICE_OOM",
        ),
        ("torch.OutOfMemoryError: NPU out of memory.", "DEVICE_OOM"),
        ("Traceback (most recent call last):", "PYTHON_TRACEBACK"),
        ("[rank3]:ValueError: bad shape", "PYTHON_EXCEPTION"),
        (
            "python3: can't open file '/x/examples/train.py': [Errno 2] No such file or directory",
            "CANT_OPEN_FILE",
        ),
        ("Fatal Python error: Segmentation fault", "SEGFAULT"),
        ("exitcode  : -9 (pid: 4242)", "EXIT_137"),
        ("[Rank 5] Watchdog caught collective operation timeout: WorkHCCL(SeqNum=11)", "WATCHDOG_TIMEOUT"),
        ("ModuleNotFoundError: No module named 'mindformers'", "MODULE_NOT_FOUND"),
        # CANN's runtime when an NPU dies (MindCluster ascend-faultdiag kg-config.json; `sim fault` prints it)
        ("[ERROR] RUNTIME(4242,python):2026-12-04-17:00:01 Device[3] lost heartbeat.", "NPU_HEARTBEAT_LOST"),
        ("[drv_soft_fault] devdrv_heartbeat: Heartbeat lost! (device=3; fault=0x1)", "NPU_HEARTBEAT_LOST"),
    ],
)
def test_catalogue_signatures(line: str, code: str) -> None:
    signature = catalogue().classify(line)
    assert signature is not None and signature.code == code
    assert signature.explanation and signature.fix and signature.source


def test_catalogue_ignores_metric_and_info_lines() -> None:
    for line in (
        "step 3 loss 2.2",
        "INFO - { Epoch:[  1/  2], step:[ 2/ 19], loss: 10.633",
        "Warning: expandable segments",
    ):
        assert catalogue().classify(line) is None
    assert not catalogue().any_error("step 1 loss 2.0\nstep 2 loss 1.9")


def test_crash_looping_absolute_script_path_says_it_does_not_exist_and_names_the_mounts() -> None:
    observer = RunObserver(RankLayout.uniform([("demo-worker-0", 0)], 8))
    observer.mounts = ("/mnt/sfs_turbo", "/user/config")
    lines = [tuple(x.split(" ", 1)) for x in (LOGS / "crashloop.log").read_text().splitlines()]
    observer.feed("demo-worker-0", 0, lines)
    observer.pod_exit("demo-worker-0", 0, 2, "Error", kube_time("2026-12-01T07:10:02Z"))
    first = observer.diagnose("Running")["first_failure"]
    assert first["code"] == "CANT_OPEN_FILE"
    assert "/home/ma-user/examples/train.py is absolute and does not exist" in first["explanation"]
    assert "relative" not in first["explanation"]
    assert "/mnt/sfs_turbo, /user/config" in first["fix"]


def test_relative_script_path_explains_the_working_directory() -> None:
    observer = RunObserver(RankLayout.uniform([("p0", 0)], 1))
    observer.feed("p0", 0, [("", "python3: can't open file 'train.py': [Errno 2] No such file or directory")])
    first = observer.diagnose("Failed")["first_failure"]
    assert "relative path is resolved against the container's working directory" in first["explanation"]


def test_every_rank_failing_alike_within_seconds_is_one_cause_not_victims() -> None:
    layout = RankLayout.uniform([("p0", 0), ("p1", 1)], 2)
    observer = RunObserver(layout)
    line = "/usr/bin/python3: can't open file '/work/train.py': [Errno 2] No such file or directory"
    for pod, node in (("p0", 0), ("p1", 1)):
        base = 2 * node
        observer.feed(
            pod, node, [(f"2026-01-01T00:00:0{base + i}Z", f"[rank{base + i}]: {line}") for i in (0, 1)]
        )
    result = observer.diagnose("Failed")
    assert result["common_cause"] == {
        "code": "CANT_OPEN_FILE",
        "title": "Script not found",
        "ranks": 4,
        "spread_s": 3.0,
    }
    assert (
        result["summary"]
        == "Failed: every rank (4) failed with CANT_OPEN_FILE - Script not found: one cause on all ranks"
    )
    assert "not one failure and its victims" in result["advice"][0]
    assert not any("victims of rank" in a for a in result["advice"])
    # the same error a minute apart, or a rank without it, is not one common cause
    late = RunObserver(layout)
    late.feed(
        "p0", 0, [("2026-01-01T00:00:00Z", f"[rank0]: {line}"), ("2026-01-01T00:00:01Z", f"[rank1]: {line}")]
    )
    late.feed(
        "p1", 1, [("2026-01-01T00:05:00Z", f"[rank2]: {line}"), ("2026-01-01T00:05:01Z", f"[rank3]: {line}")]
    )
    assert late.diagnose("Failed")["common_cause"] is None
    partial = RunObserver(layout)
    partial.feed(
        "p0", 0, [("2026-01-01T00:00:00Z", f"[rank0]: {line}"), ("2026-01-01T00:00:01Z", f"[rank1]: {line}")]
    )
    assert partial.diagnose("Failed")["common_cause"] is None


def test_same_timeout_everywhere_but_a_silent_rank_points_at_that_rank() -> None:
    layout = RankLayout.uniform([("p0", 0)], 3)
    observer = RunObserver(layout)
    observer.feed(
        "p0",
        0,
        [
            ("2026-01-01T00:00:00Z", "[rank0]: [Rank 0] Watchdog caught collective operation timeout"),
            ("2026-01-01T00:00:01Z", "[rank2]: [Rank 2] Watchdog caught collective operation timeout"),
        ],
    )
    advice = observer.diagnose("Failed")["advice"]
    assert advice and "rank(s) 1 reported nothing: look at them first" in advice[0]


def test_pod_exit_by_negative_signal_is_the_shells_code() -> None:
    observer = RunObserver(RankLayout.uniform([("p0", 0)], 1))
    observer.pod_exit("p0", 0, -11, "Error", 10.0)
    assert observer.diagnose("Failed")["first_failure"]["code"] == "EXIT_139"


def test_pod_exit_codes() -> None:
    layout = RankLayout.uniform([("p0", 0), ("p1", 1)], 8)
    observer = RunObserver(layout)
    observer.pod_exit("p1", 1, 137, "OOMKilled", 100.0)
    observer.pod_exit("p0", 0, 137, "Error", 50.0)  # killed by a supervisor: a victim
    result = observer.diagnose("Failed")
    assert result["first_failure"]["code"] == "EXIT_137" and result["first_failure"]["rank"] == 8
    assert {e["rank"]: e["role"] for e in result["errors"]} == {0: "victim", 8: "primary"}
    observer.pod_exit("p1", 1, 139, None, 120.0)  # the first fault stays
    assert observer.diagnose()["first_failure"]["line"] == "container exited with code 137 (OOMKilled)"


def steps(rank: int, period: float, count: int, start: float = 0.0) -> list[tuple[str, str]]:
    out = []
    for i in range(1, count + 1):
        t = start + i * period
        stamp = f"2026-01-01T{int(t // 3600):02d}:{int(t % 3600 // 60):02d}:{t % 60:09.6f}Z"
        out.append((stamp, f"rank {rank} step {i} loss {2 - i / 1000:.4f}"))
    return out


def test_straggler_and_hung_ranks() -> None:
    pods = [(f"p{n}", n) for n in range(4)]
    places = [
        RankPlace(n * 2 + d, n, f"p{n}", f"srv{n}", d, f"leaf{n // 2}") for n in range(4) for d in range(2)
    ]
    observer = RunObserver(RankLayout(places), ObserveSettings(hang_floor_s=30))
    for pod, n in pods:
        for d in range(2):
            rank = n * 2 + d
            if rank == 3:
                observer.feed(pod, n, steps(rank, 1.5, 200))  # 1.5x slower, same horizon
            elif rank == 6:
                observer.feed(pod, n, steps(rank, 1.0, 100))  # stops printing at t=100 s
            else:
                observer.feed(pod, n, steps(rank, 1.0, 300))
    result = observer.diagnose("Running")
    assert [(s["rank"], s["server"], s["leaf"], s["ratio"]) for s in result["stragglers"]] == [
        (3, "srv1", "leaf0", 1.5)
    ]
    assert [
        (h["rank"], h["node_rank"], h["leaf"], h["silent_s"], h["last_step"]) for h in result["hung"]
    ] == [(6, 3, "leaf1", 200.0, 100)]
    assert result["first_failure"] is None
    assert result["summary"] == "Running: hung rank(s) 6; straggler(s) 3 (1.50x)"


def test_no_hang_when_nobody_progresses_or_within_threshold() -> None:
    observer = RunObserver(RankLayout.uniform([("p0", 0), ("p1", 1)]))
    observer.feed("p0", 0, steps(0, 1.0, 100))
    observer.feed("p1", 1, steps(1, 1.0, 50))  # silent for 50 s < the 120 s floor
    assert observer.diagnose()["hung"] == []


def test_series_memory_is_bounded_by_thinning() -> None:
    observer = RunObserver(settings=ObserveSettings(max_points=100))
    observer.feed("p", 0, steps(0, 0.5, 1000))
    data = observer.metrics_json()["ranks"]["0"]
    assert len(data["step"]) <= 100 and data["stride"] == 16
    assert data["step"][:3] == [1, 17, 33]
    assert observer.series[0].median_step_time() == pytest.approx(0.5)


def test_slow_ranks_on_one_leaf_point_at_the_switch() -> None:
    places = [RankPlace(n, n, f"p{n}", f"srv{n}", 0, "leaf-a" if n < 2 else "leaf-b") for n in range(6)]
    observer = RunObserver(RankLayout(places))
    for n in range(6):
        observer.feed(f"p{n}", n, steps(n, 1.6 if n < 2 else 1.0, 100))
    result = observer.diagnose("Running")
    assert sorted(s["rank"] for s in result["stragglers"]) == [0, 1]
    assert result["advice"] == [
        "slow/hung ranks 0, 1 on 2 servers share leaf leaf-a: suspect that switch or its uplinks"
    ]


def test_classify_names_the_first_catalogue_entry_that_matches() -> None:
    """classify() finds the matching entries in one pass (an RE2 set); the entry named is the first in
    catalogue order whose pattern matches, as trying them one by one gives: lines matching several entries
    included."""
    cat = catalogue()
    lines = [line for path in sorted(LOGS.rglob("*.log")) for line in path.read_text().splitlines()]
    lines += [
        "[ERROR] HCCL init failed EI0006 wait socket establish timeout",  # HCCL_INIT and EI0006
        "RuntimeError: EI0002 has not received the Notify record; Traceback (most recent call last)",
        "EE9999 EI9999 EJ0001 EL0003",
        "torch.OutOfMemoryError: NPU out of memory. exit code 137",
        "plain text",
    ]
    several = 0
    for line in lines:
        matching = [entry for entry in cat.entries if entry.pattern.search(line)]
        several += len(matching) > 1
        assert cat.classify(line) == (matching[0] if matching else None), line
    assert several >= 4


def test_the_hang_threshold_scales_with_the_jobs_step_time_with_a_60_s_floor() -> None:
    from ranktable.observe.triage import hung

    layout = RankLayout.uniform([("p0", 0)], 2)
    settings = ObserveSettings()
    assert settings.hang_floor_s == 60.0
    # 1 s steps: the floor rules; rank 1 silent 70 s while rank 0 progresses is hung
    quick = hung({0: (1000.0, 900), 1: (930.0, 830)}, 1.0, layout, settings, 1000.0)
    assert [(h["rank"], h["threshold_s"]) for h in quick] == [(1, 60.0)]
    # 30 s steps: 10 x 30 s = 300 s; 200 s of silence is one slow step or two, not a hang
    slow = hung({0: (1000.0, 90), 1: (800.0, 84)}, 30.0, layout, settings, 1000.0)
    assert slow == []
    assert hung({0: (1000.0, 90), 1: (690.0, 80)}, 30.0, layout, settings, 1000.0)[0]["threshold_s"] == 300.0


def test_a_restarted_pods_previous_container_read_late_still_gives_its_first_error() -> None:
    """The first failing pod restarted twice; its current container's log is read first, then the previous
    container's (as the log stream does for a restarted pod): the first failure is the first in time."""
    layout = RankLayout.uniform([("p0", 0), ("p1", 1)], 1)
    observer = RunObserver(layout)
    observer.feed(
        "p0", 0, [("2026-01-01T00:20:00Z", "RuntimeError: NPU out of memory. Tried to allocate 2 GiB")]
    )
    observer.feed(
        "p1", 1, [("2026-01-01T00:10:00Z", "EI0002: has not received the Notify record from remote rank[0]")]
    )
    observer.feed(
        "p0", 0, [("2026-01-01T00:00:05Z", "RuntimeError: NPU out of memory. Tried to allocate 2 GiB")]
    )
    first = observer.diagnose("Failed")["first_failure"]
    assert (first["rank"], first["code"], first["time"]) == (0, "DEVICE_OOM", "2026-01-01T00:00:05Z")
