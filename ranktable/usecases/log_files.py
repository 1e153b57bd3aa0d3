"""Diagnose and measure logs from anywhere: files, folders or a tar of a log export, no live job needed.

Each file is one log (a rank's or a pod's): its rank comes from its name (``--rank-from`` regex, by
default ``rank_3``, ``rank-3``, ``worker_3.log``, ``rank3``...) and is otherwise read from the lines'
own tags. The lines go through the same ``RunObserver`` as a live job, with kubelet stamps
(``kubectl logs --timestamps``) split off when present. Tars are read in memory: nothing is extracted.
"""

from __future__ import annotations

import io
import re
import tarfile
from collections.abc import Callable, Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ranktable.errors import InputError, MissingFileError
from ranktable.limits import MAX_LOG_BYTES, MAX_LOG_FILES, MAX_UPLOAD_BYTES, size_text
from ranktable.observe import ObserveSettings, RankLayout, RankPlace, RunObserver

DEFAULT_RANK_FROM = r"(?i)(?:rank|worker)[_-]?(\d+)"
_STAMP = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z ")
_TARS = (".tar", ".tar.gz", ".tgz")
BATCH = 8192


@dataclass(frozen=True)
class LogFile:
    name: str  # as shown: the path given, or tar path + member
    rank: int | None
    data: bytes


def _rank_pattern(rank_from: str | None) -> re.Pattern[str]:
    try:
        pattern = re.compile(rank_from or DEFAULT_RANK_FROM)
    except re.error as exc:
        raise InputError(f"not a regular expression: {exc}", where="--rank-from") from None
    if pattern.groups < 1:
        raise InputError(
            "the pattern has no group for the rank", where="--rank-from", fix=r"e.g. 'rank_(\d+)'"
        )
    return pattern


def _rank_of(name: str, pattern: re.Pattern[str]) -> int | None:
    found = list(pattern.finditer(name))
    if not found:
        return None
    match = found[-1]  # the innermost path part that names a rank
    group = match.group("rank") if "rank" in pattern.groupindex else match.group(1)
    return int(group) if group and group.isdigit() else None


class _Counter:
    """Makes each read file a `LogFile`, refusing more than MAX_LOG_FILES files or `max_bytes` in all;
    `room` refuses a file by its size before it is read (a 10 GiB file is never loaded to be refused)."""

    def __init__(self, pattern: re.Pattern[str], max_bytes: int, limit_names: str) -> None:
        self.pattern, self.max_bytes, self.limit_names = pattern, max_bytes, limit_names
        self.total = 0
        self.count = 0

    def room(self, name: str, size: int) -> None:
        if self.count + 1 > MAX_LOG_FILES:
            raise InputError(
                f"more than {MAX_LOG_FILES} log files ({self.limit_names})",
                where=name,
                fix="pass fewer files or folders",
            )
        if self.total + size > self.max_bytes:
            raise InputError(
                f"more than {size_text(self.max_bytes)} of logs ({self.limit_names})",
                where=name,
                fix="pass fewer or shorter logs",
            )

    def __call__(self, name: str, data: bytes) -> LogFile:
        self.room(name, len(data))
        self.total += len(data)
        self.count += 1
        return LogFile(name, _rank_of(name, self.pattern), data)

    def read(self, path: Path, name: str) -> LogFile:
        self.room(name, path.stat().st_size)
        return self(name, path.read_bytes())


def _is_tar(name: str) -> bool:
    return name.endswith(_TARS)


def _hidden(parts: Sequence[str]) -> bool:
    return any(part.startswith(".") for part in parts)


def _files(
    paths: Sequence[str],
    pattern: re.Pattern[str],
    *,
    root: Path | None = None,
    shown: Callable[[Path], str] = str,
    max_bytes: int = MAX_LOG_BYTES,
    limit_names: str = "MAX_LOG_FILES / MAX_LOG_BYTES",
) -> Iterator[LogFile]:
    """The files at `paths`; with a `root`, every file (symlinks resolved) must lie inside it."""
    counted = _Counter(pattern, max_bytes, limit_names)

    def inside(path: Path) -> bool:
        if root is None:
            return not path.is_symlink()
        real = path.resolve()
        return real == root or root in real.parents

    for given in paths:
        path = Path(given)
        if not path.exists():
            raise MissingFileError("no such file or folder", where=shown(path), fix="check the path")
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file() and inside(p)):
                if _hidden(child.relative_to(path).parts):
                    continue
                if _is_tar(child.name):
                    yield from _tar(child, shown(child), counted)
                else:
                    yield counted.read(child, shown(child))
        elif _is_tar(path.name):
            yield from _tar(path, shown(path), counted)
        else:
            yield counted.read(path, shown(path))


def _tar(source: Path | bytes, name: str, counted: _Counter) -> Iterator[LogFile]:
    """The regular files of a tar (gzip or not), read in memory: nothing is extracted."""
    try:
        fileobj = None if isinstance(source, Path) else io.BytesIO(source)
        with tarfile.open(source if fileobj is None else None, fileobj=fileobj) as archive:
            for member in archive:
                if not member.isfile() or _hidden(Path(member.name).parts):
                    continue
                counted.room(f"{name}:{member.name}", member.size)
                handle = archive.extractfile(member)
                if handle is not None:
                    yield counted(f"{name}:{member.name}", handle.read())
    except tarfile.TarError as exc:
        raise InputError(f"not a readable tar archive: {exc}", where=name) from None


def _lines(data: bytes) -> list[tuple[str, str]]:
    """(kubelet stamp or "", text) of each line."""
    out = []
    for raw in data.decode("utf-8", errors="replace").splitlines():
        stamp = _STAMP.match(raw)
        if stamp is not None:
            out.append((raw[: stamp.end() - 1], raw[stamp.end() :]))
        else:
            out.append(("", raw))
    return out


class LogFilesObservation:
    """What ``observe_run`` gives for a live job, for files: metrics and diagnosis of their lines."""

    def __init__(self, files: list[LogFile], observer: RunObserver) -> None:
        self.files, self.observer = files, observer
        self.uid = "files"
        self.name = f"{len(files)} log file(s)"
        self.source = ", ".join(f.name for f in files[:3]) + (" ..." if len(files) > 3 else "")

    def metrics(self) -> dict[str, Any]:
        return {"job": None, "run": None, "source": self.source, **self.observer.metrics_json()}

    def diagnosis(self) -> dict[str, Any]:
        result = self.observer.diagnose("Logs")
        return {"job": None, "run": None, "source": self.source, **result}


def observe_log_files(
    paths: Sequence[str],
    rank_from: str | None = None,
    settings: ObserveSettings | None = None,
    *,
    root: str | Path | None = None,
) -> LogFilesObservation:
    """Read the logs at `paths` (files, folders, tars) as one run; each file is one pod of the run.

    With a `root` (the Jupyter root), `paths` are relative to it, shown relative to it, and no path nor
    file under a folder (symlinks resolved) may lead outside it."""
    if not paths:
        raise InputError("no log files given", where="--logs", fix="pass files, folders or a .tar export")
    pattern = _rank_pattern(rank_from)
    if root is None:
        files = list(_files(paths, pattern))
    else:
        base = Path(root).resolve()
        files = list(  # the server holds them in memory: the upload's limit, not the CLI's
            _files(
                paths,
                pattern,
                root=base,
                shown=lambda p: str(p.resolve().relative_to(base)),
                max_bytes=MAX_UPLOAD_BYTES,
                limit_names="MAX_LOG_FILES / MAX_UPLOAD_BYTES",
            )
        )
    if not files:
        raise InputError("no log files found", where=", ".join(paths), fix="pass files, folders or a .tar")
    return _observe(files, settings)


def observe_uploaded_logs(
    uploads: Sequence[tuple[str, bytes]],
    rank_from: str | None = None,
    settings: ObserveSettings | None = None,
) -> LogFilesObservation:
    """The same for files sent in a request: (name, content) pairs, a tar expanded in memory; at most
    MAX_LOG_FILES files and MAX_UPLOAD_BYTES together."""
    if not uploads:
        raise InputError("no log files sent", where="files", fix="send one or more log files or a .tar")
    pattern = _rank_pattern(rank_from)
    counted = _Counter(pattern, MAX_UPLOAD_BYTES, "MAX_LOG_FILES / MAX_UPLOAD_BYTES")
    files: list[LogFile] = []
    for name, data in uploads:
        if _is_tar(name):
            files.extend(_tar(data, name, counted))
        else:
            files.append(counted(name, data))
    if not files:
        raise InputError("no log files in what was sent", where="files", fix="send log files or a .tar")
    return _observe(files, settings)


def _observe(files: list[LogFile], settings: ObserveSettings | None) -> LogFilesObservation:
    layout = RankLayout(
        RankPlace(f.rank, index, f.name) for index, f in enumerate(files) if f.rank is not None
    )
    observer = RunObserver(layout, settings)
    for index, log in enumerate(files):
        lines = _lines(log.data)
        for start in range(0, len(lines), BATCH):
            observer.feed(log.name, index, lines[start : start + BATCH])
    return LogFilesObservation(files, observer)
