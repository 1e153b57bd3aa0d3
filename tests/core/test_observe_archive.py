"""Run archive (size cap, keep-last-N, reopen/resume, confinement), CSV export and SVG charts."""

from __future__ import annotations

import csv
import io
import itertools
import math
from pathlib import Path

import pytest

from ranktable.errors import InputError, NotFoundError
from ranktable.observe import RunObserver
from ranktable.observe.archive import RunArchive, find_run, list_runs, read_run
from ranktable.observe.export import metrics_csv
from ranktable.observe.plot import metrics_svg, nice_ticks


def test_runs_are_kept_per_uid_pruned_to_keep_and_readable(tmp_path: Path) -> None:
    for index in range(4):
        archive = RunArchive(
            tmp_path, "default", "llm", f"uid-{index}", {"llm-worker-0": 0, "llm-worker-1": 1}, keep=3
        )
        archive.append("llm-worker-1", 1, [("2026-01-01T00:00:01Z", f"run {index} second pod")])
        archive.append("llm-worker-0", 0, [("2026-01-01T00:00:00Z", f"run {index} first pod")])
        archive.set_phase("Failed")
        archive.close()
    runs = list_runs(tmp_path, "default", "llm")
    assert [r.uid for r in runs] == ["uid-3", "uid-2", "uid-1"]  # newest first, the oldest pruned
    run = find_run(tmp_path, "default", "llm", "uid-2")
    assert run.phase == "Failed" and run.pods == {"llm-worker-0": 0, "llm-worker-1": 1}
    assert list(read_run(tmp_path, run)) == [
        ("llm-worker-0", 0, "2026-01-01T00:00:00Z", "run 2 first pod"),
        ("llm-worker-1", 1, "2026-01-01T00:00:01Z", "run 2 second pod"),
    ]
    assert find_run(tmp_path, "default", "llm").uid == "uid-3"
    with pytest.raises(NotFoundError, match="'nope' is not an archived run of job llm"):
        find_run(tmp_path, "default", "llm", "nope")
    with pytest.raises(NotFoundError, match="matches several runs"):
        find_run(tmp_path, "default", "llm", "uid-")


def test_size_cap_rotates_and_keeps_the_newest_lines(tmp_path: Path) -> None:
    archive = RunArchive(tmp_path, "ns", "job", "u1", {"p0": 0}, cap_bytes=128 * 1024)
    for i in range(4000):
        archive.append("p0", 0, [("2026-01-01T00:00:00Z", f"line {i:05d} " + "x" * 40)])
    archive.close()
    run = find_run(tmp_path, "ns", "job")
    texts = [text for *_, text in read_run(tmp_path, run)]
    assert run.rotated and texts[-1].startswith("line 03999")
    assert len(texts) < 4000  # the oldest lines are gone
    assert sum(p.stat().st_size for p in (tmp_path / "ns" / "job" / "u1").glob("p0.log*")) <= 128 * 1024
    assert archive.last_stamps() == {"p0": "2026-01-01T00:00:00Z"}


def test_reopening_appends_and_names_are_confined(tmp_path: Path) -> None:
    RunArchive(tmp_path, "ns", "job", "u1", {"p0": 0}).close()
    again = RunArchive(tmp_path, "ns", "job", "u1", {"p1": 1})
    assert again.meta["pods"] == {"p0": 0, "p1": 1}
    for bad in ("../etc", "a/b", ".."):
        with pytest.raises(InputError):
            RunArchive(tmp_path, "ns", bad, "u1", {})
    with pytest.raises(InputError, match="run uid"):
        RunArchive(tmp_path, "ns", "job", "../u", {})


def sample_metrics() -> dict:
    observer = RunObserver()
    for rank in range(3):
        observer.feed(
            f"p{rank}",
            rank,
            [
                (f"2026-01-01T00:00:{s:02d}Z", f"rank {rank} step {s} loss {3 - s / 10} lr 1e-4")
                for s in range(1, 30)
            ],
        )
    observer.feed("p0", 0, [("2026-01-01T00:00:31Z", "rank 0 step 31 loss nan")])
    return observer.metrics_json()


def test_csv_has_one_row_per_record_with_nan_visible() -> None:
    rows = list(csv.reader(io.StringIO(metrics_csv(sample_metrics()))))
    assert rows[0] == ["rank", "step", "time", "loss", "step_time_s", "throughput", "lr", "grad_norm"]
    assert len(rows) == 1 + 29 * 3 + 1
    assert rows[1][:4] == ["0", "1", "1767225601.0", "2.9"] and rows[1][6] == "0.0001"
    assert rows[30][:4] == ["0", "31", "1767225631.0", "nan"]
    assert rows[2][4] == "1.0"  # step time derived from the timestamps


def test_svg_charts_have_axes_lines_mean_and_highlight() -> None:
    svg = metrics_svg(sample_metrics(), stragglers=[2])
    assert svg.startswith("<svg") and svg.count("<svg") == 3  # loss and step-time panels in one document
    assert "<title>mean</title>" in svg and "<title>rank 2</title>" in svg
    assert 'stroke="#d62728"' in svg  # the straggler in red
    assert "loss vs step" in svg and "step time per rank" in svg
    assert "no data yet" in metrics_svg({"ranks": {}})
    ticks = nice_ticks(1.83, 2.71)
    assert (
        ticks[0] <= 1.83
        and ticks[-1] >= 2.71
        and all(math.isclose(b - a, 0.2) for a, b in itertools.pairwise(ticks))
    )


def test_many_pods_keep_few_files_open(tmp_path: Path) -> None:
    pods = {f"p{i}": i for i in range(200)}
    archive = RunArchive(tmp_path, "ns", "big", "u1", pods)
    for round_ in range(2):
        for pod, rank in pods.items():
            archive.append(pod, rank, [("2026-01-01T00:00:00Z", f"{pod} line {round_}")])
    assert len(archive._files) <= 64
    archive.close()
    lines = [(pod, text) for pod, _, _, text in read_run(tmp_path, find_run(tmp_path, "ns", "big"))]
    assert len(lines) == 400 and lines[:2] == [("p0", "p0 line 0"), ("p0", "p0 line 1")]


def test_cut_since_reads_only_what_came_after_the_marks_rotation_included(tmp_path: Path) -> None:
    """A reader that fell behind reads from its marks: the same file from its offset, a file rotated since
    from its offset in `<pod>.log.1`, a pod new since from its start."""
    archive = RunArchive(tmp_path, "ns", "j", "u", {"a": 0, "b": 1}, cap_bytes=2 * 64 * 1024 * 2)
    archive.append("a", 0, [("s1", "a1")])
    archive.append("b", 1, [("s1", "b1")])
    marks = archive.marks()
    archive.append("a", 0, [("s2", "a2")])
    big = "x" * 70_000  # past a's share of the cap: its file rotates on the next append
    archive.append("b", 1, [("s2", big)])
    archive.append("b", 1, [("s3", "b3")])
    archive.append("c", 2, [("s1", "c1")])

    def since(marks: dict[str, tuple[int, int]]) -> dict[str, list[str]]:
        return {
            pod: [text for _, text in archive.read_cut(files)] for pod, _, files in archive.cut_since(marks)
        }

    assert (archive.dir / "b.log.1").is_file()  # b rotated (twice: its mark's file is gone)
    assert since(marks) == {"a": ["a2"], "b": [big, "b3"], "c": ["c1"]}
    marks = archive.marks()
    archive.append("b", 1, [("s4", big)])  # once more: b.log (b3) is now b.log.1
    assert since(marks) == {"b": [big]}
    assert since(archive.marks()) == {}


def test_one_writer_per_run_the_other_reads_and_writes_nothing(tmp_path: Path) -> None:
    """A second archive of a run being written (another process' `job stop` while the Jupyter server
    archives it) neither repeats lines nor rewrites the record; once the writer closes, the next writes."""
    import subprocess
    import sys

    first = RunArchive(tmp_path, "ns", "job", "u1", {"p0": 0})
    first.append("p0", 0, [("2026-01-01T00:00:01Z", "a")])
    first.flush()
    second = RunArchive(tmp_path, "ns", "job", "u1", {"p0": 0})
    assert first.writer and not second.writer
    assert second.last_stamps() == {"p0": "2026-01-01T00:00:01Z"}  # it reads where the writer is
    second.append("p0", 0, [("2026-01-01T00:00:01Z", "a"), ("2026-01-01T00:00:02Z", "b")])
    second.set_phase("Failed")
    second.close()
    first.append("p0", 0, [("2026-01-01T00:00:02Z", "b")])
    first.close()
    run = find_run(tmp_path, "ns", "job", "u1")
    assert [text for *_, text in read_run(tmp_path, run)] == ["a", "b"] and run.phase is None
    # held by another process: the lease is an advisory lock on the run's folder, not this process' state
    holder = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, pathlib; from ranktable.observe.archive import RunArchive; "
            f"a = RunArchive(pathlib.Path({str(tmp_path)!r}), 'ns', 'job', 'u1', {{'p0': 0}}); "
            "print(a.writer, flush=True); sys.stdin.read()",
        ],
        stdin=subprocess.PIPE,
        stdout=subprocess.PIPE,
        text=True,
    )
    try:
        assert holder.stdout is not None and holder.stdout.readline().strip() == "True"
        third = RunArchive(tmp_path, "ns", "job", "u1", {"p0": 0})
        assert not third.writer
        third.close()
    finally:
        holder.communicate("", timeout=30)
    again = RunArchive(tmp_path, "ns", "job", "u1", {"p0": 0})
    assert again.writer
    again.close()


def test_a_record_written_while_a_writer_is_open_stays(tmp_path: Path) -> None:
    """A stop (or a resume) records the run's spec, end and final phase while a log follower of the same
    run still has its archive open; the follower's later writes keep them (#29: Resume found no spec)."""
    from ranktable.observe.archive import record_run, run_meta

    archive = RunArchive(tmp_path, "default", "job", "u1", {"pod-0": 0})
    archive.append("pod-0", 0, [("2026-01-01T00:00:00Z", "step 1 loss 1.0")])
    record_run(tmp_path, "default", "job", "u1", spec={"name": "job"}, ended=5.0, phase="Stopped")
    record_run(tmp_path, "default", "job", "u1", fault={"node": "node-3"})
    archive.set_phase("Running")  # the follower's last word, after the stop
    archive.close()
    meta = run_meta(tmp_path, find_run(tmp_path, "default", "job"))
    assert meta["spec"] == {"name": "job"} and meta["fault"] == {"node": "node-3"}
    assert meta["phase"] == "Stopped" and meta["ended"] == 5.0
    assert [p.name for p in (tmp_path / "default" / "job" / "u1").iterdir() if ".tmp" in p.name] == []


def test_a_writer_opened_after_the_stop_keeps_its_stopped_record(tmp_path: Path) -> None:
    """The server's archiver may open the run again after a stop recorded it (the deleting job is still
    watched) and see it "Running": the record stays "Stopped" (the launcher's run picker showed "Running")."""
    from ranktable.observe.archive import record_run, run_meta

    record_run(tmp_path, "default", "job", "u1", ended=5.0, phase="Stopped")
    late = RunArchive(tmp_path, "default", "job", "u1", {"pod-0": 0})
    late.append("pod-0", 0, [("2026-01-01T00:00:00Z", "step 1 loss 1.0")])
    late.set_phase("Running")
    late.set_phase("Failed", ended=9.0)
    late.close()
    meta = run_meta(tmp_path, find_run(tmp_path, "default", "job"))
    assert (meta["phase"], meta["ended"]) == ("Stopped", 5.0)


def test_records_and_a_writer_racing_on_meta_keep_the_newest_record(tmp_path: Path) -> None:
    """meta.json is read, merged and replaced under a lock, and the records' fields on disk win: specs
    recorded from another thread while the writer flushes all along end as the last one recorded."""
    import threading

    from ranktable.observe.archive import record_run, run_meta

    archive = RunArchive(tmp_path, "default", "job", "u1", {"pod-0": 0})
    stop = threading.Event()

    def flushing() -> None:
        while not stop.is_set():
            archive.flush()

    flusher = threading.Thread(target=flushing)
    flusher.start()
    try:
        for i in range(300):
            record_run(tmp_path, "default", "job", "u1", spec={"n": i})
            assert run_meta(tmp_path, find_run(tmp_path, "default", "job"))["spec"]["n"] >= i
    finally:
        stop.set()
        flusher.join()
    archive.close()
    assert run_meta(tmp_path, find_run(tmp_path, "default", "job"))["spec"] == {"n": 299}
