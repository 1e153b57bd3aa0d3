"""Each run's logs on disk, written while they stream, so they outlive the pods.

Layout: ``<root>/<namespace>/<job>/<uid>/`` with ``meta.json`` and one ``<pod>.log`` per pod (lines
``<kubelet timestamp> <text>``). A run is one job uid, so a resubmitted job with the same name is a new
run. Bounded: each pod file rotates to ``<pod>.log.1`` at its share of the run's size cap (the newest
lines, where errors are, are kept), also while a reader replays (it reads each file by its rotation
generation, so a rotated-away file is skipped, never misread); only the newest ``keep`` runs of a job
stay, and across jobs the whole archive stays under `ARCHIVE_MAX_BYTES` and `ARCHIVE_MAX_RUNS`, oldest
runs evicted first, never one that is being written or read (`busy`).

Private: logs can hold tokens and environment dumps, so folders are 0700 and files 0600.

One writer per run across processes: a `RunArchive` holds the run's writer lease (an advisory lock on
``writer.lock``) while open. Another one opened meanwhile (`ranktable job stop` in a terminal while the
Jupyter server archives the run) reads and observes but writes nothing: two appenders would repeat lines
and could interleave partial ones.
"""

from __future__ import annotations

import contextlib
import fcntl
import json
import os
import re
import shutil
import threading
import time
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import asdict, dataclass
from pathlib import Path
from typing import IO, Any

from ranktable.errors import InputError, NotFoundError

DEFAULT_CAP_BYTES = 256 * 2**20  # per run
DEFAULT_KEEP = 5  # runs per job
ARCHIVE_MAX_BYTES = 4 * 2**30  # every run of every job together
ARCHIVE_MAX_RUNS = 200  # every job together
MAX_OPEN_FILES = 64  # per run: least recently written pod files are closed
WRITER_LOCK = "writer.lock"
META_LOCK = "meta.lock"  # held while meta.json is read, merged and replaced (`_meta_locked`)
_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,252}$")
_UID = re.compile(r"^[A-Za-z0-9-]{1,64}$")


_busy: Counter[Path] = Counter()  # run folders written or read by this process: never evicted
_busy_lock = threading.Lock()


def _private_dir(root: Path, path: Path) -> None:
    """``path`` and its parents up to ``root`` as 0700 (folders an older version made 0755 are tightened)."""
    chain = [path, *(p for p in path.parents if p == root or root in p.parents)]
    for folder in reversed(chain):
        with contextlib.suppress(FileExistsError):
            folder.mkdir(mode=0o700, parents=True)
        os.chmod(folder, 0o700)


def _open_private(path: Path) -> IO[str]:
    """Append to ``path``, created 0600 (and made 0600 if an older version left it readable)."""
    fd = os.open(path, os.O_WRONLY | os.O_APPEND | os.O_CREAT, 0o600)
    os.fchmod(fd, 0o600)
    return os.fdopen(fd, "a", encoding="utf-8")


def _writer_lease(folder: Path) -> IO[str] | None:
    """The run's writer lease (held while the handle is open), or None while another writer holds it."""
    handle = _open_private(folder / WRITER_LOCK)
    try:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX | fcntl.LOCK_NB)
    except OSError:
        handle.close()
        return None
    return handle


@contextlib.contextmanager
def _meta_locked(folder: Path) -> Iterator[None]:
    """meta.json read, merged and replaced as one step: a stop's record (another process, or the CLI)
    and the run's writer never overwrite each other's fields."""
    with _open_private(folder / META_LOCK) as handle:
        fcntl.flock(handle.fileno(), fcntl.LOCK_EX)
        yield


@contextlib.contextmanager
def busy(path: Path) -> Iterator[None]:
    """Mark a run folder as in use (written or read): the global cap never evicts it meanwhile."""
    with _busy_lock:
        _busy[path] += 1
    try:
        yield
    finally:
        with _busy_lock:
            _busy[path] -= 1
            if _busy[path] <= 0:
                del _busy[path]


def _run_bytes(path: Path) -> int:
    total = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(path):
            with contextlib.suppress(OSError):
                if entry.is_file(follow_symlinks=False):
                    total += entry.stat(follow_symlinks=False).st_size
    return total


def archived_lines(path: Path) -> int:
    """How many lines a run's folder holds (every pod's file and its rotated part): what a stop can
    say was kept when another process writes the run."""
    total = 0
    with contextlib.suppress(OSError):
        for entry in os.scandir(path):
            if entry.name.endswith((".log", ".log.1")) and entry.is_file(follow_symlinks=False):
                with contextlib.suppress(OSError), open(entry.path, "rb") as handle:
                    while chunk := handle.read(1 << 20):
                        total += chunk.count(b"\n")
    return total


def enforce_global_cap(
    root: Path, max_bytes: int = ARCHIVE_MAX_BYTES, max_runs: int = ARCHIVE_MAX_RUNS
) -> list[Path]:
    """Evict the oldest runs of any job until the archive holds at most ``max_runs`` runs and
    ``max_bytes`` bytes; runs in use (`busy`) are skipped. Returns the folders removed."""
    runs: list[tuple[float, Path, int]] = []
    with contextlib.suppress(OSError):
        for ns in root.iterdir():
            if not ns.is_dir() or ns.is_symlink():
                continue
            for job in ns.iterdir():
                if not job.is_dir() or job.is_symlink():
                    continue
                for run in job.iterdir():
                    meta = _read_meta(run) if run.is_dir() and not run.is_symlink() else None
                    if meta is not None:
                        runs.append((float(meta.get("created") or 0.0), run, _run_bytes(run)))
    runs.sort(key=lambda item: item[0])  # oldest first
    total = sum(size for _, _, size in runs)
    count = len(runs)
    removed = []
    for _, path, size in runs:
        if total <= max_bytes and count <= max_runs:
            break
        with _busy_lock:
            if _busy.get(path):
                continue
            shutil.rmtree(path, ignore_errors=True)
        removed.append(path)
        total -= size
        count -= 1
    return removed


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
    ended: float | None = None  # when the run ended (finished, failed or stopped); None while it runs

    def to_json(self) -> dict[str, Any]:
        return asdict(self)


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
        _float(meta.get("ended")),
    )


def _float(value: Any) -> float | None:
    try:
        return float(value) if value is not None else None
    except (TypeError, ValueError):
        return None


RECORDED_KEYS = ("spec", "fault", "resumed")  # written by `record_run` only, never by a RunArchive


def _tmp_name() -> str:
    """A meta.json.*.tmp of this writer: two writers of one run (a live follower and a one-off read, in
    threads or processes) never rename each other's file away."""
    return f"meta.json.{os.getpid()}.{threading.get_ident()}.tmp"


def record_run(root: Path, namespace: str, job: str, uid: str, **fields: Any) -> None:
    """Merge `fields` (phase, ended, spec...) into a run's meta.json, the run's record even when none of
    its logs were archived (a stop that kept none); not while a `RunArchive` of the run is open."""
    path = run_dir(root, namespace, job, uid)
    path.mkdir(parents=True, exist_ok=True)
    with _meta_locked(path):
        meta = _read_meta(path) or {"namespace": namespace, "job": job, "uid": uid, "pods": {}, "bytes": 0}
        meta.update(fields)
        meta.setdefault("created", meta.get("archived") or time.time())
        tmp = path / _tmp_name()
        tmp.write_text(json.dumps(meta), encoding="utf-8")
        os.replace(tmp, path / "meta.json")


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
    with busy(base):
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


Span = tuple[Path, int, int, int]  # a pod file as it was at the cut: path, start, end, rotation generation
Cut = list[tuple[str, int, list[Span]]]  # per pod: name, node rank, its spans


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
        max_bytes: int = ARCHIVE_MAX_BYTES,
        max_runs: int = ARCHIVE_MAX_RUNS,
    ) -> None:
        self.root = root
        self.dir = run_dir(root, namespace, job, uid)
        _private_dir(root, self.dir)
        self._busy = busy(self.dir)
        self._busy.__enter__()  # until `close`: the global cap never evicts the run being written
        self._lease = _writer_lease(self.dir)
        self.writer = self._lease is not None  # False: another archive (process) writes this run
        self.max_bytes = max_bytes
        self.max_runs = max_runs
        for pod in pods:
            _checked(pod, "pod name")
        old = _read_meta(self.dir) or {}
        self.meta: dict[str, Any] = {
            **old,  # what a stop recorded (ended, spec) stays
            "namespace": namespace,
            "job": job,
            "uid": uid,
            # when the run was created (the callers pass the job's creationTimestamp), not the archive
            "created": old.get("created") or time.time(),
            "archived": old.get("archived") or time.time(),
            "pods": {**(old.get("pods") or {}), **pods},
            "bytes": int(old.get("bytes") or 0),
            "rotated": bool(old.get("rotated")),
            "phase": old.get("phase"),
            **(extra or {}),
        }
        self.pod_cap = max(64 * 1024, cap_bytes // max(1, len(self.meta["pods"])) // 2)
        self._files: dict[str, IO[str]] = {}
        self._sizes: dict[str, int] = {}
        self.holds = 0  # readers replaying a cut (they read by generation: rotation goes on meanwhile)
        self._rotations: dict[str, int] = {}  # per pod, by this process (`marks`; inodes can be reused)
        self._rotation_lock = threading.Lock()  # a reader opens a generation's file while none rotates
        self._unchecked = 0  # bytes appended since the global cap was last checked
        self._closed = False
        self._write_meta()
        self._prune(namespace, job, keep)
        enforce_global_cap(root, max_bytes, max_runs)

    def _prune(self, namespace: str, job: str, keep: int) -> None:
        runs = list_runs(self.root, namespace, job)
        for run in runs[max(1, keep) :]:
            if run.uid != self.meta["uid"]:
                shutil.rmtree(run_dir(self.root, namespace, job, run.uid), ignore_errors=True)

    def _write_meta(self) -> None:
        """The run's meta.json; what a stop or a resume recorded meanwhile (`record_run`: its spec, end and
        final phase, the fault blamed on it, the run it resumed) stays, though this writer opened before."""
        if not self.writer:
            return
        with _meta_locked(self.dir):
            disk = _read_meta(self.dir) or {}
            for key in RECORDED_KEYS:  # the records' own: the newest on disk wins
                if key in disk:
                    self.meta[key] = disk[key]
            if disk.get("ended") and not self.meta.get("ended"):
                self.meta["ended"], self.meta["phase"] = (
                    disk["ended"],
                    disk.get("phase") or self.meta.get("phase"),
                )
            tmp = self.dir / _tmp_name()
            with _open_private(tmp) as handle:
                handle.truncate(0)
                handle.write(json.dumps(self.meta))
            os.replace(tmp, self.dir / "meta.json")

    def _file(self, pod: str) -> IO[str]:
        handle = self._files.pop(pod, None)
        if handle is None:
            if len(self._files) >= MAX_OPEN_FILES:  # 1,024 pods must not mean 1,024 descriptors
                oldest = next(iter(self._files))
                self._files.pop(oldest).close()
            path = self.dir / f"{_checked(pod, 'pod name')}.log"
            handle = _open_private(path)
            self._sizes[pod] = path.stat().st_size
        self._files[pod] = handle  # most recently used last
        return handle

    def append(self, pod: str, node_rank: int, lines: Sequence[tuple[str, str]]) -> None:
        if not lines or not self.writer:
            return
        if pod not in self.meta["pods"]:
            self.meta["pods"][pod] = node_rank
        text = "".join(f"{stamp} {line}\n" for stamp, line in lines)
        handle = self._file(pod)
        if self._sizes[pod] + len(text) > self.pod_cap:  # also while a reader replays: the cap holds
            handle.close()
            with self._rotation_lock:
                os.replace(self.dir / f"{pod}.log", self.dir / f"{pod}.log.1")
                self._rotations[pod] = self._rotations.get(pod, 0) + 1
                handle = self._files[pod] = _open_private(self.dir / f"{pod}.log")
            self.meta["rotated"] = True
            self._sizes[pod] = 0
        handle.write(text)
        self._sizes[pod] += len(text)
        self.meta["bytes"] += len(text)
        self._unchecked += len(text)
        if self._unchecked > self.max_bytes // 32:  # another writer's runs may have to go
            self._unchecked = 0
            enforce_global_cap(self.root, self.max_bytes, self.max_runs)

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

    def set_phase(self, phase: str, ended: float | None = None) -> None:
        """The run's phase as last seen; `ended` once it is final (kept from the first time told). An
        ended run's phase stays: a writer opened after a stop recorded "Stopped" still sees the deleting
        job's last watch events ("Running"), which must not undo the record."""
        if self.meta.get("ended") is not None:
            return
        self.meta["phase"] = phase
        if ended is not None and self.meta.get("ended") is None:
            self.meta["ended"] = ended
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
        if not self._closed:
            self._closed = True
            self._busy.__exit__(None, None, None)
            if self._lease is not None:
                self._lease.close()  # the next writer may open the run

    def info(self) -> RunInfo:
        return _info(self.meta["namespace"], self.meta["job"], self.meta["uid"], self.meta)

    def cut(self) -> Cut:
        """What is archived now, per pod (in node-rank order): its files as (path, 0, size). Flushed first;
        `read_cut` reads exactly that while appends go on, as long as ``holds`` keeps rotation off."""
        self.flush()
        out = []
        for pod, node_rank in sorted(self.meta["pods"].items(), key=lambda item: item[1]):
            files: list[Span] = []
            generation = self._rotations.get(pod, 0)
            for path, gen in (
                (self.dir / f"{pod}.log.1", generation - 1),
                (self.dir / f"{pod}.log", generation),
            ):
                with contextlib.suppress(OSError):
                    if path.is_file() and not path.is_symlink():
                        files.append((path, 0, path.stat().st_size, gen))
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
                    spans = [(path, min(mark[1], size), size, gen) for path, _, size, gen in current]
                elif rotated == 1:
                    spans = [
                        (path, min(mark[1], size), size, gen)
                        for path, _, size, gen in spans
                        if path.name.endswith(".1")
                    ]
                    spans += current
            spans = [span for span in spans if span[2] > span[1]]
            if spans:
                out.append((pod, node_rank, spans))
        return out

    def _open_generation(self, path: Path, generation: int) -> IO[bytes] | None:
        """The file that holds ``path``'s generation now (rotation renames it ``.log.1``), or None once
        the size cap rotated it away. Opened under the rotation lock: what it reads is that file."""
        pod = path.name.removesuffix(".1").removesuffix(".log")
        with self._rotation_lock:
            now = self._rotations.get(pod, 0)
            name = {now: f"{pod}.log", now - 1: f"{pod}.log.1"}.get(generation)
            if name is None:
                return None
            with contextlib.suppress(OSError):
                return (self.dir / name).open("rb")
            return None

    def read_cut(self, files: list[Span]) -> Iterator[tuple[str, str]]:
        """(stamp, text) of one pod's archived lines in a `cut` (or `cut_since`): each file's bytes from its
        start to its end, found by generation; a file the cap rotated away since is skipped."""
        for path, start, end, generation in files:
            handle = self._open_generation(path, generation)
            if handle is None:
                continue
            with handle:
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
