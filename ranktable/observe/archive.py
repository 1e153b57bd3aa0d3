"""Each run's logs on disk, written while they stream, so they outlive the pods.

Layout: ``<root>/<namespace>/<job>/<uid>/`` with ``meta.json`` and one ``<pod>.log`` per pod (lines
``<kubelet timestamp> <text>``). A run is one job uid, so a resubmitted job with the same name is a new
run. Bounded: each pod file rotates to ``<pod>.log.1`` at its share of the run's size cap (the newest
lines, where errors are, are kept), and only the newest ``keep`` runs of a job stay.
"""

from __future__ import annotations

import contextlib
import json
import os
import re
import shutil
import time
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import IO, Any

from ranktable.errors import InputError, NotFoundError

DEFAULT_CAP_BYTES = 256 * 2**20  # per run
DEFAULT_KEEP = 5  # runs per job
MAX_OPEN_FILES = 64  # per run: least recently written pod files are closed
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,252}$")
_UID = re.compile(r"^[A-Za-z0-9-]{1,64}$")


def _checked(value: str, what: str, pattern: re.Pattern[str] = _NAME) -> str:
    if not pattern.match(value) or value in (".", ".."):
        raise InputError(f"{value!r} is not a valid {what}", where=what, fix="use the name `job list` shows")
    return value


@dataclass(frozen=True)
class RunInfo:
    namespace: str
    job: str
    uid: str
    created: float
    bytes: int
    pods: dict[str, int]
    phase: str | None
    rotated: bool

    def to_json(self) -> dict[str, Any]:
        return {
            "namespace": self.namespace,
            "job": self.job,
            "uid": self.uid,
            "created": self.created,
            "bytes": self.bytes,
            "pods": self.pods,
            "phase": self.phase,
            "rotated": self.rotated,
        }


def job_dir(root: Path, namespace: str, job: str) -> Path:
    return root / _checked(namespace, "namespace") / _checked(job, "job name")


def run_dir(root: Path, namespace: str, job: str, uid: str) -> Path:
    return job_dir(root, namespace, job) / _checked(uid, "run uid", _UID)


def _read_meta(path: Path) -> dict[str, Any] | None:
    try:
        data = json.loads((path / "meta.json").read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return None
    return data if isinstance(data, dict) else None


def _info(namespace: str, job: str, uid: str, meta: dict[str, Any]) -> RunInfo:
    return RunInfo(
        namespace,
        job,
        uid,
        float(meta.get("created") or 0.0),
        int(meta.get("bytes") or 0),
        {str(k): int(v) for k, v in (meta.get("pods") or {}).items()},
        meta.get("phase"),
        bool(meta.get("rotated")),
    )


def run_meta(root: Path, run: RunInfo) -> dict[str, Any]:
    """The whole meta.json of a run (layout, npus_per_pod and whatever the writer stored)."""
    return _read_meta(run_dir(root, run.namespace, run.job, run.uid)) or {}


def list_runs(root: Path, namespace: str, job: str) -> list[RunInfo]:
    """Archived runs of a job, newest first."""
    base = job_dir(root, namespace, job)
    runs = []
    if base.is_dir():
        for path in base.iterdir():
            meta = _read_meta(path) if path.is_dir() and not path.is_symlink() else None
            if meta is not None:
                runs.append(_info(namespace, job, path.name, meta))
    return sorted(runs, key=lambda r: -r.created)


def find_run(root: Path, namespace: str, job: str, uid: str | None = None) -> RunInfo:
    """A run by uid (a unique prefix is enough), or the newest run of the job."""
    runs = list_runs(root, namespace, job)
    if not runs:
        raise NotFoundError(
            f"no archived runs of job {job} in {namespace}", fix="logs are archived while streamed"
        )
    if uid is None:
        return runs[0]
    matches = [r for r in runs if r.uid == uid] or [r for r in runs if r.uid.startswith(uid)]
    if len(matches) != 1:
        known = ", ".join(r.uid for r in runs)
        problem = "matches several runs" if matches else "is not an archived run"
        raise NotFoundError(f"run {uid!r} {problem} of job {job}", where="--run", fix=f"runs: {known}")
    return matches[0]


def read_run(root: Path, run: RunInfo, pod: str | None = None) -> Iterator[tuple[str, int, str, str]]:
    """(pod, node_rank, stamp, text) of an archived run, pod by pod, oldest lines first."""
    base = run_dir(root, run.namespace, run.job, run.uid)
    for name, node_rank in sorted(run.pods.items(), key=lambda item: item[1]):
        if pod is not None and name != pod:
            continue
        for path in (base / f"{name}.log.1", base / f"{name}.log"):
            if not path.is_file() or path.is_symlink():
                continue
            with path.open(encoding="utf-8", errors="replace") as handle:
                for raw in handle:
                    stamp, _, text = raw.rstrip("\n").partition(" ")
                    yield name, node_rank, stamp, text


Cut = list[tuple[str, int, list[tuple[Path, int, int]]]]  # per pod: name, node rank, (file, start, end)


class RunArchive:
    """Appends one run's lines; safe to reopen (appends continue, ``last_stamps`` says where to resume)."""

    def __init__(
        self,
        root: Path,
        namespace: str,
        job: str,
        uid: str,
        pods: dict[str, int],
        *,
        cap_bytes: int = DEFAULT_CAP_BYTES,
        keep: int = DEFAULT_KEEP,
        extra: dict[str, Any] | None = None,
    ) -> None:
        self.root = root
        self.dir = run_dir(root, namespace, job, uid)
        self.dir.mkdir(parents=True, exist_ok=True)
        for pod in pods:
            _checked(pod, "pod name")
        old = _read_meta(self.dir) or {}
        self.meta: dict[str, Any] = {
            "namespace": namespace,
            "job": job,
            "uid": uid,
            "created": old.get("created") or time.time(),
            "pods": {**(old.get("pods") or {}), **pods},
            "bytes": int(old.get("bytes") or 0),
            "rotated": bool(old.get("rotated")),
            "phase": old.get("phase"),
            **(extra or {}),
        }
        self.pod_cap = max(64 * 1024, cap_bytes // max(1, len(self.meta["pods"])) // 2)
        self._files: dict[str, IO[str]] = {}
        self._sizes: dict[str, int] = {}
        self.holds = 0  # readers replaying up to a cut (`cut`): no rotation meanwhile, files only grow
        self._rotations: dict[str, int] = {}  # per pod, by this process (`marks`; inodes can be reused)
        self._write_meta()
        self._prune(namespace, job, keep)

    def _prune(self, namespace: str, job: str, keep: int) -> None:
        runs = list_runs(self.root, namespace, job)
        for run in runs[max(1, keep) :]:
            if run.uid != self.meta["uid"]:
                shutil.rmtree(run_dir(self.root, namespace, job, run.uid), ignore_errors=True)

    def _write_meta(self) -> None:
        tmp = self.dir / "meta.json.tmp"
        tmp.write_text(json.dumps(self.meta), encoding="utf-8")
        os.replace(tmp, self.dir / "meta.json")

    def _file(self, pod: str) -> IO[str]:
        handle = self._files.pop(pod, None)
        if handle is None:
            if len(self._files) >= MAX_OPEN_FILES:  # 1,024 pods must not mean 1,024 descriptors
                oldest = next(iter(self._files))
                self._files.pop(oldest).close()
            path = self.dir / f"{_checked(pod, 'pod name')}.log"
            handle = path.open("a", encoding="utf-8")
            self._sizes[pod] = path.stat().st_size
        self._files[pod] = handle  # most recently used last
        return handle

    def append(self, pod: str, node_rank: int, lines: Sequence[tuple[str, str]]) -> None:
        if not lines:
            return
        if pod not in self.meta["pods"]:
            self.meta["pods"][pod] = node_rank
        text = "".join(f"{stamp} {line}\n" for stamp, line in lines)
        handle = self._file(pod)
        if self._sizes[pod] + len(text) > self.pod_cap and not self.holds:
            handle.close()
            os.replace(self.dir / f"{pod}.log", self.dir / f"{pod}.log.1")
            self._rotations[pod] = self._rotations.get(pod, 0) + 1
            self.meta["rotated"] = True
            handle = self._files[pod] = (self.dir / f"{pod}.log").open("a", encoding="utf-8")
            self._sizes[pod] = 0
        handle.write(text)
        self._sizes[pod] += len(text)
        self.meta["bytes"] += len(text)

    def last_stamps(self) -> dict[str, str]:
        """The newest timestamp archived per pod (to resume a stream without duplicates)."""
        out = {}
        for pod in self.meta["pods"]:
            path = self.dir / f"{pod}.log"
            if path.is_file():
                tail = _tail_line(path)
                if tail:
                    out[pod] = tail.partition(" ")[0]
        return out

    def set_phase(self, phase: str) -> None:
        self.meta["phase"] = phase
        self.flush()

    def flush(self) -> None:
        for handle in self._files.values():
            handle.flush()
        self._write_meta()

    def close(self) -> None:
        self.flush()
        for handle in self._files.values():
            handle.close()
        self._files.clear()

    def info(self) -> RunInfo:
        return _info(self.meta["namespace"], self.meta["job"], self.meta["uid"], self.meta)

    def cut(self) -> Cut:
        """What is archived now, per pod (in node-rank order): its files as (path, 0, size). Flushed first;
        `read_cut` reads exactly that while appends go on, as long as ``holds`` keeps rotation off."""
        self.flush()
        out = []
        for pod, node_rank in sorted(self.meta["pods"].items(), key=lambda item: item[1]):
            files = []
            for path in (self.dir / f"{pod}.log.1", self.dir / f"{pod}.log"):
                with contextlib.suppress(OSError):
                    if path.is_file() and not path.is_symlink():
                        files.append((path, 0, path.stat().st_size))
            if files:
                out.append((pod, node_rank, files))
        return out

    def marks(self) -> dict[str, tuple[int, int]]:
        """Where each pod's current file ends now (its rotations so far, bytes), flushed first: `cut_since`
        is then only what was archived after this."""
        self.flush()
        out = {}
        for pod in self.meta["pods"]:
            with contextlib.suppress(OSError):
                out[pod] = (self._rotations.get(pod, 0), (self.dir / f"{pod}.log").stat().st_size)
        return out

    def cut_since(self, marks: dict[str, tuple[int, int]]) -> Cut:
        """A `cut` without what was archived before `marks`: per pod its files as (path, start, end). A
        file rotated once since (now `<pod>.log.1`) is read from its mark; rotated twice, what the archive
        still has (its size cap dropped the rest)."""
        out = []
        for pod, node_rank, spans in self.cut():
            mark = marks.get(pod)
            if mark is not None:
                rotated = self._rotations.get(pod, 0) - mark[0]
                current = [span for span in spans if span[0].name == f"{pod}.log"]
                if rotated == 0:
                    spans = [(path, min(mark[1], size), size) for path, _, size in current]
                elif rotated == 1:
                    spans = [
                        (path, min(mark[1], size), size)
                        for path, _, size in spans
                        if path.name.endswith(".1")
                    ]
                    spans += current
            spans = [span for span in spans if span[2] > span[1]]
            if spans:
                out.append((pod, node_rank, spans))
        return out


def read_cut(files: list[tuple[Path, int, int]]) -> Iterator[tuple[str, str]]:
    """(stamp, text) of one pod's archived lines in a `RunArchive.cut` (or `cut_since`): each file's
    bytes from its start to its end."""
    for path, start, end in files:
        with path.open("rb") as handle:
            handle.seek(start)
            data = handle.read(end - start)
        for raw in data.decode("utf-8", errors="replace").splitlines():
            stamp, _, text = raw.partition(" ")
            yield stamp, text


def _tail_line(path: Path) -> str:
    with path.open("rb") as handle:
        handle.seek(0, os.SEEK_END)
        size = handle.tell()
        handle.seek(max(0, size - 8192))
        lines = handle.read().decode("utf-8", errors="replace").splitlines()
    return lines[-1] if lines else ""
