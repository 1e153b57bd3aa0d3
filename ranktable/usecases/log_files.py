"""Diagnose and measure logs from anywhere: files, folders or a tar of a log export, no live job needed.

Each file is one log (a rank's or a pod's): its rank comes from its name (``--rank-from`` regex, by
default ``rank_3``, ``rank-3``, ``worker_3.log``, ``rank3``...) and is otherwise read from the lines'
own tags. The lines go through the same ``RunObserver`` as a live job, with kubelet stamps
(``kubectl logs --timestamps``) split off when present. Tars are read in memory: nothing is extracted.
"""

from __future__ import annotations

import re
import tarfile
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ranktable.errors import InputError, MissingFileError
from ranktable.limits import MAX_LOG_BYTES, MAX_LOG_FILES
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


def _files(paths: Sequence[str], pattern: re.Pattern[str]) -> Iterator[LogFile]:
    total = 0
    count = 0

    def counted(name: str, data: bytes) -> LogFile:
        nonlocal total, count
        total += len(data)
        count += 1
        if count > MAX_LOG_FILES:
            raise InputError(
                f"more than {MAX_LOG_FILES} log files", where=name, fix="pass fewer files or folders"
            )
        if total > MAX_LOG_BYTES:
            raise InputError(
                f"more than {MAX_LOG_BYTES // 2**30} GiB of logs",
                where=name,
                fix="pass fewer or shorter logs",
            )
        return LogFile(name, _rank_of(name, pattern), data)

    for given in paths:
        path = Path(given)
        if not path.exists():
            raise MissingFileError("no such file or folder", where=given, fix="check the path")
        if path.is_dir():
            for child in sorted(p for p in path.rglob("*") if p.is_file() and not p.is_symlink()):
                if any(part.startswith(".") for part in child.relative_to(path).parts):
                    continue
                if child.name.endswith(_TARS):
                    yield from _tar(child, counted)
                else:
                    yield counted(str(child), child.read_bytes())
        elif path.name.endswith(_TARS):
            yield from _tar(path, counted)
        else:
            yield counted(given, path.read_bytes())


def _tar(path: Path, counted: Any) -> Iterator[LogFile]:
    try:
        with tarfile.open(path) as archive:
            for member in archive:
                if not member.isfile() or any(part.startswith(".") for part in Path(member.name).parts):
                    continue
                handle = archive.extractfile(member)
                if handle is not None:
                    yield counted(f"{path}:{member.name}", handle.read())
    except tarfile.TarError as exc:
        raise InputError(f"not a readable tar archive: {exc}", where=str(path)) from None


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
    paths: Sequence[str], rank_from: str | None = None, settings: ObserveSettings | None = None
) -> LogFilesObservation:
    """Read the logs at `paths` (files, folders, tars) as one run; each file is one pod of the run."""
    if not paths:
        raise InputError("no log files given", where="--logs", fix="pass files, folders or a .tar export")
    pattern = _rank_pattern(rank_from)
    files = list(_files(paths, pattern))
    if not files:
        raise InputError("no log files found", where=", ".join(paths), fix="pass files, folders or a .tar")
    layout = RankLayout(
        RankPlace(f.rank, index, f.name) for index, f in enumerate(files) if f.rank is not None
    )
    observer = RunObserver(layout, settings)
    for index, log in enumerate(files):
        lines = _lines(log.data)
        for start in range(0, len(lines), BATCH):
            observer.feed(log.name, index, lines[start : start + BATCH])
    return LogFilesObservation(files, observer)
