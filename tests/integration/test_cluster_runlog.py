"""A run's one shared log stream (`RunLogs`): every line archived once and given to each subscriber once,
whenever it joined (the archive up to its join, then live), a restarted server resuming where the archive
ends, the stream stopped when its last reader leaves. With a scripted stream in place of the cluster's."""

from __future__ import annotations

import queue
import threading
from collections.abc import Iterator
from pathlib import Path
from typing import Any

from ranktable.cluster.logs import LogLine, StreamStats
from ranktable.cluster.runlog import CATCH_UP_ROUNDS, RunLogs
from ranktable.observe.archive import find_run, read_run

JOB = {
    "metadata": {"name": "j", "uid": "u-1"},
    "spec": {"tasks": [{"name": "w", "replicas": 2, "template": {"spec": {"containers": [{}]}}}]},
}
PODS = ["j-w-0", "j-w-1"]


def stamp(i: int) -> str:
    return f"2026-12-02T10:00:{i // 1000:02d}.{i % 1000:09d}Z"


class ScriptedStream:
    """Rounds put by the test; `close` ends them."""

    def __init__(self) -> None:
        self.rounds_in: queue.Queue[Any] = queue.Queue()
        self.stats = StreamStats()
        self.pods = [(p, i) for i, p in enumerate(PODS)]
        self.readers_started = 2
        self.closed = threading.Event()

    def node_rank(self, pod: str) -> int:
        return PODS.index(pod)

    def rounds(self, idle: float | None = None) -> Iterator[list[list[LogLine]]]:
        while not self.closed.is_set():
            try:
                got = self.rounds_in.get(timeout=idle or 0.5)
            except queue.Empty:
                yield []
                continue
            if got is None:
                return
            yield got

    def close(self) -> None:
        self.closed.set()


class FakeClient:
    namespace = "default"

    def __init__(self) -> None:
        self.streams: list[ScriptedStream] = []

    def logs(self, name: str, follow: bool, **_: Any) -> ScriptedStream:
        stream = ScriptedStream()
        self.streams.append(stream)
        return stream


def round_of(*lines: tuple[int, int]) -> list[list[LogLine]]:
    """(pod index, line number) pairs as a round of per-pod batches."""
    by_pod: dict[int, list[LogLine]] = {}
    for pod, i in lines:
        by_pod.setdefault(pod, []).append(LogLine(PODS[pod], pod, stamp(i), f"line {i}"))
    return list(by_pod.values())


def texts(rounds: Iterator[list[list[LogLine]]], count: int) -> list[tuple[str, str]]:
    out: list[tuple[str, str]] = []
    for got in rounds:
        out += [(line.pod, line.text) for batch in got for line in batch]
        if len(out) >= count:
            break
    return out


def test_one_stream_each_line_once_to_every_subscriber_and_the_archive(tmp_path: Path) -> None:
    client = FakeClient()
    logs = RunLogs(tmp_path)
    first = logs.subscribe(client, "j", JOB)  # type: ignore[arg-type]
    stream = client.streams[0]
    stream.rounds_in.put(round_of((0, 1), (1, 1), (0, 2)))
    first_rounds = first.rounds()
    assert texts(first_rounds, 3) == [("j-w-0", "line 1"), ("j-w-0", "line 2"), ("j-w-1", "line 1")]
    late = logs.subscribe(client, "j", JOB)  # type: ignore[arg-type]
    assert len(client.streams) == 1  # the same stream
    stream.rounds_in.put(round_of((1, 2)))
    late_rounds = late.rounds()
    # the late one: what was archived when it joined (pod by pod), then the new line
    assert texts(late_rounds, 4) == [
        ("j-w-0", "line 1"),
        ("j-w-0", "line 2"),
        ("j-w-1", "line 1"),
        ("j-w-1", "line 2"),
    ]
    assert texts(first_rounds, 1) == [("j-w-1", "line 2")]
    [shared] = logs.running("default", "j")
    first.close()
    assert not stream.closed.is_set()  # another reader is left
    late.close()
    assert stream.closed.wait(2)  # the last one left: the stream ends, the archive is written
    assert shared.ended.wait(2) and logs.running("default", "j") == []
    run = find_run(tmp_path, "default", "j")
    assert sorted((pod, text) for pod, _, _, text in read_run(tmp_path, run)) == [
        ("j-w-0", "line 1"),
        ("j-w-0", "line 2"),
        ("j-w-1", "line 1"),
        ("j-w-1", "line 2"),
    ]


def test_a_restarted_server_resumes_where_the_archive_ends(tmp_path: Path) -> None:
    client = FakeClient()
    logs = RunLogs(tmp_path)
    sub = logs.subscribe(client, "j", JOB)  # type: ignore[arg-type]
    client.streams[0].rounds_in.put(round_of((0, 1), (0, 2)))
    assert len(texts(sub.rounds(), 2)) == 2
    [shared] = logs.running("default", "j")
    sub.close()
    assert shared.ended.wait(2)

    again = RunLogs(tmp_path)  # a new server: its stream reads each pod's log from the start again
    sub = again.subscribe(client, "j", JOB)  # type: ignore[arg-type]
    client.streams[1].rounds_in.put(round_of((0, 1), (0, 2), (0, 3)))
    # the archive's lines once, then only what is new
    assert texts(sub.rounds(), 3) == [("j-w-0", "line 1"), ("j-w-0", "line 2"), ("j-w-0", "line 3")]
    [shared] = again.running("default", "j")
    sub.close()
    assert shared.ended.wait(2)
    run = find_run(tmp_path, "default", "j")
    assert [text for _, _, _, text in read_run(tmp_path, run)] == ["line 1", "line 2", "line 3"]


def test_a_catch_up_subscriber_never_holds_the_stream_and_still_gets_every_line_once(tmp_path: Path) -> None:
    """The diagnosis follower reads nothing for a while: the view's subscriber still gets every round at
    once (the stream does not wait for it); it then reads what it missed from the archive, then goes on
    live, and after the stream ends while it is behind again it still gets the rest: each line once."""
    client = FakeClient()
    logs = RunLogs(tmp_path)
    view = logs.subscribe(client, "j", JOB)  # type: ignore[arg-type]
    slow = logs.subscribe(client, "j", JOB, catch_up=True)  # type: ignore[arg-type]
    stream = client.streams[0]
    rounds = CATCH_UP_ROUNDS + 8
    for i in range(rounds):  # more rounds than the slow one's queue holds
        stream.rounds_in.put(round_of((0, i), (1, i)))
    view_rounds = view.rounds()
    assert len(texts(view_rounds, 2 * rounds)) == 2 * rounds  # not held back by `slow`
    slow_rounds = slow.rounds()
    first = texts(slow_rounds, 2 * rounds)
    assert slow.caught_up == 1
    for i in range(rounds, rounds * 3):  # it falls behind again, and the stream ends meanwhile
        stream.rounds_in.put(round_of((0, i), (1, i)))
    assert len(texts(view_rounds, 4 * rounds)) == 4 * rounds
    view.close()
    stream.rounds_in.put(None)
    rest = [(line.pod, line.text) for got in slow_rounds for batch in got for line in batch]
    assert slow.caught_up == 2
    got = first + rest
    for pod in PODS:  # each pod's lines once, in order
        assert [text for p, text in got if p == pod] == [f"line {i}" for i in range(rounds * 3)]
    slow.close()


def test_many_small_rounds_do_not_skip_a_catch_up_subscriber(tmp_path: Path) -> None:
    """#26.1: at 1,024 pods a round holds a line or two; 8 queued rounds were a few milliseconds, so a
    healthy viewer that paused that long was skipped and re-read the archive (every pod's file) each time,
    falling further behind. 500 small rounds queue up for it and come live, none from the archive."""
    client = FakeClient()
    logs = RunLogs(tmp_path)
    view = logs.subscribe(client, "j", JOB, catch_up=True)  # type: ignore[arg-type]
    stream = client.streams[0]
    for i in range(500):  # the viewer does not read meanwhile
        stream.rounds_in.put(round_of((i % 2, i)))
    got = texts(view.rounds(), 500)
    assert len(got) == 500 and view.caught_up == 0
    view.close()
