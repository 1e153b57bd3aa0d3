"""The public-log corpus (tests/data/corpus): real excerpts replayed through the product's own observer.

Each excerpt is split into pods as the cluster sees it (one log per pod, kubelet stamps in arrival order,
ranks laid out per pod), fed in batches like the log stream, and its diagnosis and metrics compared with
the answer its public thread established. Any wrong answer fails; the score per class is printed by
``python -m tests.core.test_observe_corpus`` for docs/observability.md.
"""

from __future__ import annotations

import math
import re
import sys
from collections import Counter
from dataclasses import dataclass
from datetime import datetime, timedelta, timezone
from pathlib import Path
from typing import Any

import pytest
import yaml

from ranktable.observe import RankLayout, RankPlace, RunObserver

CORPUS = Path(__file__).parents[1] / "data" / "corpus"
START = datetime(2026, 1, 1, tzinfo=timezone.utc)
LINE_GAP = timedelta(milliseconds=10)  # lines arrive in the order the thread shows them
BATCH = 4  # lines per fed batch, as the log stream delivers them


def manifest() -> list[dict[str, Any]]:
    return yaml.safe_load((CORPUS / "MANIFEST.yaml").read_text(encoding="utf-8"))["excerpts"]


@dataclass
class Pod:
    name: str
    node_rank: int
    ranks: list[int]
    lines: list[tuple[str, str]]


def split_pods(text: str, npus: int) -> list[Pod]:
    """The excerpt's pods (``### pod NAME [ranks=a,b]`` headers), each line stamped in file order."""
    pods: list[Pod] = []
    clock = START
    for line in text.splitlines():
        if line.startswith("### pod "):
            words = line.split()
            node = len(pods)
            ranks = list(range(node * npus, (node + 1) * npus))
            for word in words[3:]:
                if word.startswith("ranks="):
                    ranks = [int(r) for r in word[len("ranks=") :].split(",")]
            pods.append(Pod(words[2], node, ranks, []))
            continue
        if not pods:
            pods.append(Pod("worker-0", 0, list(range(npus)), []))
        clock += LINE_GAP
        pods[-1].lines.append((clock.isoformat().replace("+00:00", "Z"), line))
    return pods


def replay(entry: dict[str, Any]) -> tuple[dict[str, Any], dict[str, Any]]:
    text = (CORPUS / entry["file"]).read_text(encoding="utf-8")
    pods = split_pods(text, int(entry.get("npus", 1)))
    layout = RankLayout(
        RankPlace(rank, pod.node_rank, pod.name, device=local)
        for pod in pods
        for local, rank in enumerate(pod.ranks)
    )
    observer = RunObserver(layout)
    for pod in pods:
        for start in range(0, len(pod.lines), BATCH):
            observer.feed(pod.name, pod.node_rank, pod.lines[start : start + BATCH])
    return observer.diagnose("Failed"), observer.metrics_json()


def check(entry: dict[str, Any]) -> list[str]:
    """What the product got wrong on one excerpt (empty: right)."""
    expect = entry["expect"]
    diagnosis, metrics = replay(entry)
    wrong: list[str] = []
    first = diagnosis["first_failure"]
    codes = {e["code"] for e in diagnosis["errors"]}
    if "first_rank" in expect:
        if expect["first_rank"] is None:
            if first is not None:
                wrong.append(f"expected no failure, got {first['code']} on rank {first['rank']}")
        elif first is None:
            wrong.append(f"expected rank {expect['first_rank']} to fail first, found no failure")
        elif first["rank"] != expect["first_rank"]:
            wrong.append(f"first failing rank {first['rank']}, expected {expect['first_rank']}")
    if "code" in expect:
        got = first["code"] if first else None
        if got != expect["code"]:
            wrong.append(f"code {got}, expected {expect['code']}")
    common = diagnosis.get("common_cause")
    if expect.get("common") and not common:
        wrong.append("expected one cause on every rank, got first failure and victims")
    if expect.get("common") is not True and common and first is not None and "first_rank" in expect:
        wrong.append("reported a cause common to all ranks where one rank failed first")
    if any("victims of" in a for a in diagnosis["advice"]) and expect.get("common"):
        wrong.append(f"advice calls the others victims: {diagnosis['advice']}")
    if "ranks_with_errors" in expect:
        ranks = sorted(e["rank"] for e in diagnosis["errors"])
        if ranks != sorted(expect["ranks_with_errors"]):
            wrong.append(f"ranks with errors {ranks}, expected {expect['ranks_with_errors']}")
    for code in expect.get("not_codes", []):
        if code in codes:
            wrong.append(f"reported {code}")
    if "line_has" in expect and (first is None or expect["line_has"] not in first["line"]):
        wrong.append(f"first failure line lacks {expect['line_has']!r}")
    if first is not None:
        text = first["explanation"] + " " + first["fix"]
        if "explanation_has" in expect and expect["explanation_has"] not in text:
            wrong.append(f"explanation lacks {expect['explanation_has']!r}: {text}")
        if "explanation_lacks" in expect and expect["explanation_lacks"] in text:
            wrong.append(f"explanation says {expect['explanation_lacks']!r}")
    if "alerts" in expect:
        got_alerts = sorted([a["rank"], a["kind"]] for a in metrics["alerts"])
        if got_alerts != sorted(expect["alerts"]):
            wrong.append(f"alerts {got_alerts}, expected {sorted(expect['alerts'])}")
    for rank, want in (expect.get("metrics") or {}).items():
        series = metrics["ranks"].get(str(rank))
        if series is None:
            wrong.append(f"no metrics for rank {rank} (ranks {sorted(metrics['ranks'])})")
            continue
        for name, value in want.items():
            if name == "points":
                if len(series["step"]) != value:
                    wrong.append(f"rank {rank}: {len(series['step'])} points, expected {value}")
                continue
            got = series[name][-1] if series.get(name) else None
            if not _same(got, value):
                wrong.append(f"rank {rank}: last {name} {got!r}, expected {value!r}")
    return wrong


def _same(got: Any, want: Any) -> bool:
    if isinstance(got, str) or got is None:
        return got == want
    return math.isclose(float(got), float(want), rel_tol=1e-6, abs_tol=1e-9)


ENTRIES = manifest()


def test_corpus_is_big_sourced_and_covers_every_class() -> None:
    assert len(ENTRIES) >= 60
    assert len({e["id"] for e in ENTRIES}) == len(ENTRIES)
    assert all(e["source"] and (CORPUS / e["file"]).is_file() for e in ENTRIES)
    classes = Counter(c for e in ENTRIES for c in e["classes"])
    for name in ("word-bound", "prefix", "rank", "teardown", "divergence", "wording", "exit", "parser"):
        assert classes[name] >= 2, name
    assert classes["healthy"] >= 7  # no false alarms on healthy logs


@pytest.mark.parametrize("entry", ENTRIES, ids=[e["id"] for e in ENTRIES])
def test_excerpt_diagnosis_and_metrics_match_the_thread(entry: dict[str, Any]) -> None:
    assert check(entry) == []


def scores() -> dict[str, tuple[int, int]]:
    """Right / total per class."""
    out: dict[str, list[int]] = {}
    for entry in ENTRIES:
        right = not check(entry)
        for name in entry["classes"]:
            tally = out.setdefault(name, [0, 0])
            tally[0] += right
            tally[1] += 1
    return {name: (right, total) for name, (right, total) in sorted(out.items())}


DOC = Path(__file__).resolve().parents[2] / "docs" / "observability.md"


def test_the_documented_score_is_the_corpus_score() -> None:
    """docs/observability.md's score per class is this run's (so it cannot go stale)."""
    text = DOC.read_text()
    rows = re.findall(r"^\| [^|]+ \| `([a-z-]+)` \| \d+ / \d+ \| (\d+) / (\d+) \|$", text, re.M)
    documented = {key: (int(right), int(total)) for key, right, total in rows}
    assert documented == scores()
    assert f"**The public-log corpus** (`tests/data/corpus/`, issue #25): {len(ENTRIES)} short" in text


if __name__ == "__main__":  # the table for docs/observability.md
    for name, (right, total) in scores().items():
        sys.stdout.write(f"| `{name}` | {right} / {total} |\n")
