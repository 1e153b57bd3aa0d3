"""Local folder -> remote root: plan what changed, never overwrite a remote change silently, upload.

Rules (one-way-safe, like Mutagen's mode of that name): a file is uploaded when it is new or changed
locally; if the remote copy changed since our last upload (size/mtime differ from what we recorded), or
an unknown remote file differs from ours, it is a *conflict*: reported, not overwritten, unless
``force``. Remote files are deleted only in delete mode, only if we uploaded them and nobody changed
them since. Files of a remote root we never uploaded (results, checkpoints) are never deleted. A sync
that would delete most of what we uploaded (a wrong folder, a half-finished checkout) stops before deleting
anything until confirmed with ``force`` — Mutagen's safety stop for bulk deletions.
"""

from __future__ import annotations

import os
import posixpath
import stat
import tempfile
import threading
import time
from collections.abc import Iterable
from concurrent.futures import Future, ThreadPoolExecutor
from dataclasses import dataclass, field, replace
from pathlib import Path

import paramiko

from ranktable.errors import ConflictError, InputError, NotFoundError
from ranktable.remote.connection import Connection
from ranktable.remote.errors import ConnectionLost, RemotePathError, SshError
from ranktable.remote.profiles import SyncSettings
from ranktable.remote.sync.ignore import IgnoreRules
from ranktable.remote.sync.manifest import Entry, Manifest
from ranktable.remote.sync.progress import Meter, ProgressCallback
from ranktable.remote.sync.relocate import relocate_folder
from ranktable.remote.sync.remote_tree import MAX_LISTED_PATHS, RemoteFile, Survey
from ranktable.remote.sync.scan import LocalFile, scan, scan_paths, sha256_file
from ranktable.remote.sync.session import RemoteSession
from ranktable.remote.sync.transfer import (
    FEW_FILES,
    Upload,
    UploadItem,
    few_names,
    split_upload,
    upload_sftp,
    upload_tar,
)

SAME_SIZE_AND_TIME = "changed remotely since the last upload (same size and time, other content)"
BULK_DELETE_MIN_FILES = 10  # deleting this many files or fewer never needs confirmation
BULK_DELETE_FRACTION = 0.5  # ... nor deleting at most this share of the files we uploaded


def check_bulk_delete(deleting: int, tracked: int, profile: str) -> None:
    """Refuse to delete more than half of (and over ten of) the files we uploaded without confirmation."""
    if deleting > BULK_DELETE_MIN_FILES and deleting > BULK_DELETE_FRACTION * tracked:
        raise ConflictError(
            f"this sync would delete {deleting} of the {tracked} remote files it uploaded; "
            "stopped before deleting anything",
            where=f"profile {profile}",
            fix="check the local folder is the right one, then confirm with --force "
            "(API: force=true), or sync without --delete to keep the remote files",
        )


@dataclass(frozen=True)
class Conflict:
    path: str
    reason: str


@dataclass
class SyncResult:
    uploaded: list[str] = field(default_factory=list)
    deleted: list[str] = field(default_factory=list)
    conflicts: list[Conflict] = field(default_factory=list)
    remote_changed: list[str] = field(default_factory=list)  # changed remotely, unchanged locally: left alone
    kept_remote: list[str] = field(default_factory=list)  # deleted locally, kept remotely (delete mode off)
    adopted: list[str] = field(default_factory=list)  # already identical remotely: recorded, not sent
    relocated: list[str] = field(default_factory=list)  # "old -> new": a renamed folder moved/copied remotely
    unchanged: int = 0
    bytes: int = 0
    seconds: float = 0.0
    method: str = "none"
    dry_run: bool = False
    unverified: bool = False  # the remote has no sha256sum: same-size-and-mtime edits cannot be detected

    def summary(self) -> str:
        verb = "would upload" if self.dry_run else "uploaded"
        text = f"{verb} {len(self.uploaded)} file(s) ({self.bytes} bytes), "
        text += (
            f"{'would delete' if self.dry_run else 'deleted'} {len(self.deleted)}, unchanged {self.unchanged}"
        )
        if self.conflicts:
            text += f", {len(self.conflicts)} conflict(s) not overwritten (use --force to overwrite)"
        if self.relocated:
            text += f", renamed remotely: {', '.join(self.relocated)}"
        if self.remote_changed:
            text += f", {len(self.remote_changed)} changed only remotely (left alone)"
        if self.kept_remote:
            text += f", {len(self.kept_remote)} deleted locally but kept remotely (use --delete)"
        if self.unverified:
            text += " (no sha256sum on the instance: remote edits that kept size and time go unnoticed)"
        if not self.dry_run:
            text += f" in {self.seconds:.2f}s"
            if self.method and self.method != "none":  # nothing transferred: no transport to name
                text += f" via {self.method}"
        return text


@dataclass
class _Plan:
    uploads: list[str]
    deletes: list[str]
    result: SyncResult
    local: dict[str, LocalFile]
    adopt: dict[str, Entry]
    survey: Survey
    deferred: dict[str, str]  # path -> recorded sha256: checked on the instance right before the apply


class Selection:
    """What an automatic upload looks at: files (``a/b.py``) and whole folders (``a/``)."""

    def __init__(self, entries: Iterable[str]) -> None:
        self.entries = sorted(set(entries))
        self._files = {e for e in self.entries if not e.endswith("/")}
        self._folders = tuple(e for e in self.entries if e.endswith("/"))

    @property
    def folders(self) -> tuple[str, ...]:
        return self._folders

    def __contains__(self, rel: object) -> bool:
        return isinstance(rel, str) and (rel in self._files or rel.startswith(self._folders))

    def __bool__(self) -> bool:
        return bool(self.entries)


def confine_remote(root: str, path: str) -> str:
    """The absolute remote path for ``path`` (relative to ``root``, or absolute inside it)."""
    if "\0" in path or not path:
        raise RemotePathError(f"invalid remote path {path!r}", fix="give a path inside the remote directory")
    full = posixpath.normpath(path if path.startswith("/") else posixpath.join(root, path))
    if full != root and not full.startswith(root.rstrip("/") + "/"):
        raise RemotePathError(
            f"remote path {path!r} is outside the profile's remote directory {root}",
            fix="give a path relative to the remote directory, without '..'",
        )
    return full


def _through_link(rel: str, link: str) -> str:
    if link == rel:
        return "the remote path is a symbolic link: not replaced (remove the link on the instance to sync it)"
    return (
        f"the remote folder {link} is a symbolic link: never written through "
        "(it could lead outside the remote directory; replace it by a real folder on the instance)"
    )


def _confine_local(root: Path, rel: str) -> Path:
    target = (root / rel).resolve()
    if not target.is_relative_to(root.resolve()):
        raise InputError(
            f"path {rel!r} leaves the local folder {root}", where="path", fix="use a relative path"
        )
    return target


class Syncer:
    """Syncs one local folder to one profile's remote root."""

    def __init__(
        self,
        conn: Connection,
        local_root: str | Path,
        settings: SyncSettings | None = None,
        *,
        home: Path | None = None,
        method: str = "auto",
        workers: int = 4,
    ) -> None:
        self.conn = conn
        self.local_root = Path(local_root).expanduser().resolve()
        if not self.local_root.is_dir():
            raise NotFoundError(
                f"local folder {self.local_root} does not exist",
                where="LOCAL_DIR",
                fix="give an existing folder",
            )
        self.settings = settings or SyncSettings()
        self.home = home
        if method not in ("auto", "tar", "sftp"):
            raise InputError(
                f"unknown transfer method {method!r}", where="method", fix="use auto, tar or sftp"
            )
        self.method = method
        self.workers = max(1, min(workers, conn.max_channels - 1 or 1))

    def rules(self) -> IgnoreRules:
        return IgnoreRules.for_folder(self.local_root, self.settings.ignore)

    def manifest(self) -> Manifest:
        """The record of our uploads for this folder (``load()`` it under ``locked()``)."""
        return Manifest(self.conn.name, self.local_root, self.conn.endpoint.remote_dir, self.home)

    # -- planning -----------------------------------------------------------------------------------
    def _plan(
        self,
        manifest: Manifest,
        session: RemoteSession,
        scanning: Future[dict[str, LocalFile]],
        rules: IgnoreRules,
        *,
        force: bool,
        delete: bool,
        only: Selection | None,
        moves: list[tuple[str, str]],
        dry_run: bool = False,
    ) -> _Plan:
        remote_side = session.survey()  # the local walk (``scanning``) runs meanwhile
        local = scanning.result()
        caps, remote = remote_side.caps, remote_side.files

        def few_tar(uploads: list[str], deletes: list[str]) -> bool:
            """Will these go through ``RemoteSession.upload_few``?"""
            return (
                not dry_run
                and self.method != "sftp"
                and (caps.tar_upload or self.method == "tar")
                and len(uploads) + len(deletes) <= FEW_FILES
                and few_names(uploads, "x" * 12) is not None
            )

        result = SyncResult()
        for source, target in moves:
            if relocate_folder(
                self.conn, manifest, remote_side, self.local_root, source, target, move=delete
            ):
                result.relocated.append(f"{source} -> {target}")
        names = sorted(local if only is None else [r for r in local if r in only])
        uploads, verify, recheck = self._compare(names, manifest, remote_side, local, result, force=force)
        deletes, gone = self._plan_deletes(manifest, remote_side, result, rules, local, force, delete, only)
        if not force:
            recheck += deletes
        deferred: dict[str, str] = {}
        if recheck and not verify and caps.sha256sum and few_tar(uploads, deletes):
            # A few files through tar-few: each is hashed on the instance in the apply step itself,
            # right before it is replaced or deleted (one round trip less than asking first).
            deferred = {rel: manifest.entries[rel].sha256 for rel in recheck}
            recheck = []
        theirs = session.hash(verify + recheck) if caps.sha256sum and (verify or recheck) else {}
        if recheck and not caps.sha256sum:
            result.unverified = True
        changed = {rel for rel in recheck if theirs.get(rel) != manifest.entries[rel].sha256}
        for rel in changed:
            result.conflicts.append(Conflict(rel, SAME_SIZE_AND_TIME))
        uploads = [rel for rel in uploads if rel not in changed]
        deletes = [rel for rel in deletes if rel not in changed]
        adopt = self._adopt(verify, theirs, local, remote, result)
        for rel in [r for r in gone if r not in remote and (only is None or r in only)]:
            manifest.entries.pop(rel, None)  # gone on both sides (only paths the listing looked at)
        result.conflicts.sort(key=lambda c: c.path)
        return _Plan(uploads, deletes, result, local, adopt, remote_side, deferred)

    def _compare(
        self,
        names: list[str],
        manifest: Manifest,
        remote_side: Survey,
        local: dict[str, LocalFile],
        result: SyncResult,
        *,
        force: bool,
    ) -> tuple[list[str], list[str], list[str]]:
        """Each local file against our record and the remote listing: (to upload, to verify by hash as
        maybe already there, to recheck by hash before overwriting); the rest is unchanged, changed
        remotely or a conflict, as noted in ``result``."""
        caps, remote = remote_side.caps, remote_side.files
        uploads: list[str] = []
        verify: list[str] = []
        recheck: list[str] = []  # about to be overwritten or deleted: did someone edit it keeping size+mtime?
        for rel in names:
            lf = local[rel]
            entry = manifest.entries.get(rel)
            rf = remote.get(rel)
            link = remote_side.link_on_path(rel)
            if link is not None:
                result.conflicts.append(Conflict(rel, _through_link(rel, link)))
                continue
            if entry is None:
                if rf is None or force:
                    uploads.append(rel)
                elif rf.size == lf.size and caps.sha256sum:
                    verify.append(rel)
                else:
                    result.conflicts.append(Conflict(rel, "a different file already exists remotely"))
                continue
            local_same = lf.size == entry.size and lf.mtime_ns == entry.mtime_ns
            if not local_same and lf.size == entry.size:
                digest = sha256_file(self.local_root / rel)
                if digest == entry.sha256:  # touched, not changed: remember the new mtime
                    local_same = True
                    manifest.entries[rel] = Entry(
                        lf.size, lf.mtime_ns, digest, entry.remote_size, entry.remote_mtime
                    )
            remote_same = rf is not None and (rf.size, rf.mtime) == (entry.remote_size, entry.remote_mtime)
            if local_same and remote_same:
                result.unchanged += 1
            elif rf is None or force:
                uploads.append(rel)  # missing remotely (restore), or forced
            elif local_same:
                result.remote_changed.append(rel)
            elif remote_same:
                uploads.append(rel)
                recheck.append(rel)  # same size and mtime remotely: its content is checked below
            else:
                result.conflicts.append(Conflict(rel, "changed remotely since the last upload"))
        return uploads, verify, recheck

    def _adopt(
        self,
        verify: list[str],
        theirs: dict[str, str],
        local: dict[str, LocalFile],
        remote: dict[str, RemoteFile],
        result: SyncResult,
    ) -> dict[str, Entry]:
        """Files found remotely with our content: recorded as uploaded (adopted), the others conflicts."""
        adopt: dict[str, Entry] = {}
        for rel in verify:
            digest = sha256_file(self.local_root / rel)
            if theirs.get(rel) == digest:
                lf, rf = local[rel], remote[rel]
                adopt[rel] = Entry(lf.size, lf.mtime_ns, digest, rf.size, rf.mtime)
                result.adopted.append(rel)
            else:
                result.conflicts.append(Conflict(rel, "a different file already exists remotely"))
        return adopt

    def _plan_deletes(
        self,
        manifest: Manifest,
        remote_side: Survey,
        result: SyncResult,
        rules: IgnoreRules,
        local: dict[str, LocalFile],
        force: bool,
        delete: bool,
        only: Selection | None,
    ) -> tuple[list[str], list[str]]:
        """Files we uploaded that are gone locally: which to delete remotely (and all of them)."""
        remote = remote_side.files
        deletes: list[str] = []
        # With ``only`` (a few saved files in a large tree) just those entries are candidates: matching
        # every recorded path against the ignore rules would cost more than the sync.
        if only is not None and not only.folders:  # saved files alone: no walk over every recorded path
            candidates: Iterable[str] = [r for r in only.entries if r in manifest.entries]
        else:
            candidates = (r for r in manifest.entries if only is None or r in only)
        gone = [r for r in candidates if r not in local and not rules.ignored_path(r)]
        for rel in sorted(gone):
            entry = manifest.entries[rel]
            rf = remote.get(rel)
            link = remote_side.link_on_path(rel)
            if link is not None and delete:
                result.conflicts.append(Conflict(rel, _through_link(rel, link)))
                continue
            if rf is None:
                continue  # already gone remotely; forgotten below when we apply
            if not delete:
                result.kept_remote.append(rel)
            elif force or (rf.size, rf.mtime) == (entry.remote_size, entry.remote_mtime):
                deletes.append(rel)
            else:
                result.conflicts.append(
                    Conflict(rel, "deleted locally but changed remotely since the last upload")
                )
        return deletes, gone

    # -- syncing ------------------------------------------------------------------------------------
    def sync(
        self,
        *,
        dry_run: bool = False,
        force: bool = False,
        delete: bool | None = None,
        only: Iterable[str] | None = None,
        moves: Iterable[tuple[str, str]] = (),
        progress: ProgressCallback | None = None,
    ) -> SyncResult:
        """Upload what changed. ``moves``: folders renamed locally (old, new), applied remotely as one
        ``mv`` (delete mode) or ``cp -pR`` when safe (see ``relocate``), instead of re-uploading them."""
        started = time.monotonic()
        delete = self.settings.delete_remote if delete is None else delete
        manifest = self.manifest()
        with manifest.locked():
            manifest.load()
            tracked = len(manifest.entries)
            wanted = Selection(only) if only is not None else None
            meter = Meter("upload", 0, 0, progress)
            items: list[UploadItem] = []
            session: RemoteSession | None = None
            # The local walk starts first: it runs while the connection is made (a fresh login, or
            # the agent's probe) and the channel opened, then while the remote side lists its files.
            rules = self.rules()
            walker = ThreadPoolExecutor(max_workers=1, thread_name_prefix="ranktable-scan")
            try:
                incremental = wanted is not None and len(wanted.entries) <= MAX_LISTED_PATHS
                if wanted is not None and incremental:  # a few saved files: look at them alone
                    scanning = walker.submit(scan_paths, self.local_root, wanted.entries, rules)
                else:
                    scanning = walker.submit(scan, self.local_root, rules)
                session = RemoteSession(
                    self.conn, create=not dry_run, only=wanted.entries if incremental and wanted else None
                )
                plan = self._plan(
                    manifest,
                    session,
                    scanning,
                    rules,
                    force=force,
                    delete=delete,
                    only=wanted,
                    moves=[] if dry_run else list(moves),
                    dry_run=dry_run,
                )
                result = self._checked_result(plan, tracked, force=force, dry_run=dry_run)
                if dry_run or not (plan.uploads or plan.deletes):
                    session.finish()
                    manifest.entries.update(plan.adopt)
                    result.seconds = time.monotonic() - started
                    if not dry_run:
                        manifest.save()
                    return result
                manifest.entries.update(plan.adopt)
                meter = Meter("upload", len(plan.uploads), result.bytes, progress)
                meter.emit(phase="upload")
                items = [UploadItem(rel, self.local_root / rel) for rel in plan.uploads]
                self._send(session, plan, items, meter, manifest)
            except (OSError, EOFError, paramiko.SSHException) as exc:
                raise ConnectionLost(
                    f"the connection dropped during the sync ({meter.files_done}/{len(items)} files sent): "
                    f"{exc or type(exc).__name__}",
                    where=f"profile {self.conn.name}",
                    fix="no file was left half-written; run the sync again to complete it",
                ) from exc
            finally:
                walker.shutdown(wait=True)  # a failed connection still lets the walk end first
                if session is not None:
                    session.close()
                if not dry_run:
                    manifest.save()
            result.seconds = time.monotonic() - started
            meter.emit(phase="done")
            return result

    def _checked_result(self, plan: _Plan, tracked: int, *, force: bool, dry_run: bool) -> SyncResult:
        """The plan's result, what it would send; unless a dry run, checked before anything is written:
        the remote folder exists, and no bulk deletion unless forced."""
        if not dry_run and not plan.survey.exists:
            raise SshError(
                f"cannot create or enter the remote directory {plan.survey.root}",
                where=f"profile {self.conn.name}",
                fix=f"choose a writable remote directory (ssh add {self.conn.name} --remote-dir DIR)",
            )
        if not dry_run and not force:
            check_bulk_delete(len(plan.deletes), tracked, self.conn.name)
        result = plan.result
        result.uploaded = plan.uploads
        result.deleted = plan.deletes
        result.bytes = sum(plan.local[r].size for r in plan.uploads)
        result.dry_run = dry_run
        return result

    def _send(
        self, session: RemoteSession, plan: _Plan, items: list[UploadItem], meter: Meter, manifest: Manifest
    ) -> None:
        """Upload and delete by the fastest way the instance allows: the few-file tar (a file edited
        remotely meanwhile is left alone, as a conflict), the tar streams, or SFTP; the record follows."""
        result, root, caps = plan.result, plan.survey.root, plan.survey.caps

        def record(rel: str, entry: Entry) -> None:
            manifest.entries[rel] = entry

        use_tar = self.method == "tar" or (self.method == "auto" and caps.tar_upload)
        result.method = "tar" if use_tar else "sftp"
        few = len(items) + len(plan.deletes) <= FEW_FILES
        names = few_names(plan.uploads, session.staging[-12:]) if use_tar and few else None
        if names is not None:
            changed = session.upload_few(items, names, plan.deletes, plan.deferred, meter, record)
            if changed:  # edited remotely keeping size and mtime: left alone, like a conflict
                result.uploaded = [r for r in plan.uploads if r not in changed]
                result.deleted = [r for r in plan.deletes if r not in changed]
                result.bytes = sum(plan.local[r].size for r in result.uploaded)
                result.conflicts += [Conflict(r, SAME_SIZE_AND_TIME) for r in sorted(changed)]
                result.conflicts.sort(key=lambda c: c.path)
        elif use_tar:
            python = caps.python3 and not few
            self._upload_streams(
                session, Upload(root, items, plan.deletes, meter, record), plan, python=python
            )
        else:
            session.finish()
            upload_sftp(self.conn, Upload(root, items, plan.deletes, meter, record), self.workers)
        for rel in result.deleted:
            manifest.entries.pop(rel, None)

    def _upload_streams(self, session: RemoteSession, upload: Upload, plan: _Plan, *, python: bool) -> None:
        """The session's tar upload; a big one is split in two streams, the second on its own channel
        (if a slot is free) extracted by a second ``tar`` at the same time. Each stream is applied only
        when it arrived complete, so an interruption still leaves no file half-written; the deletions
        go with the first."""
        items = upload.items
        split = split_upload(items, [plan.local[i.rel].size for i in items]) if python else None
        lease = self.conn.spare_session() if split else None
        if split is None or lease is None:
            session.upload(upload, python=python)
            return
        first, second = split
        failed: list[BaseException] = []

        def other() -> None:
            try:
                upload_tar(self.conn, replace(upload, items=second, deletes=[]), python=True, lease=lease)
            except BaseException as exc:  # re-raised below, after the first stream ended
                failed.append(exc)

        thread = threading.Thread(target=other, name="ranktable-tar-2", daemon=True)
        thread.start()
        try:
            session.upload(replace(upload, items=first), python=True)
        except BaseException:
            lease.close()  # the first stream failed: end the second one too
            raise
        finally:
            thread.join()
        if failed:
            raise failed[0]

    # -- downloading --------------------------------------------------------------------------------
    def download(
        self, remote_path: str, local_path: str | Path, progress: ProgressCallback | None = None
    ) -> list[Path]:
        """Fetch a remote file or folder (inside the remote root); each local file is replaced atomically."""
        root = self.conn.remote_root()
        full = confine_remote(root, remote_path)
        dest = Path(local_path).expanduser()
        # Writes stay inside the synced folder when the destination is in it, else inside the destination.
        inside = dest.absolute().is_relative_to(self.local_root)
        confine = self.local_root if inside else (dest if dest.is_dir() else dest.parent)
        with self.conn.sftp() as sftp:
            try:
                attr = sftp.lstat(full)
            except FileNotFoundError as exc:
                raise NotFoundError(
                    f"remote path {full} does not exist", where="REMOTE_PATH", fix="check the path"
                ) from exc
            _check_remote_real(sftp, root, full)
            mode = attr.st_mode or 0
            if stat.S_ISLNK(mode):
                raise RemotePathError(
                    f"remote path {full} is a symbolic link", fix="download the target instead"
                )
            pairs: list[tuple[str, Path, int, int]] = []
            if stat.S_ISDIR(mode):
                stack = [("", full)]
                while stack:
                    rel_dir, remote_dir = stack.pop()
                    for child in sftp.listdir_attr(remote_dir):
                        name = child.filename
                        if name in (".", "..") or "/" in name:
                            continue
                        rel = f"{rel_dir}/{name}" if rel_dir else name
                        cmode = child.st_mode or 0
                        if stat.S_ISDIR(cmode):
                            stack.append((rel, f"{remote_dir}/{name}"))
                        elif stat.S_ISREG(cmode):
                            pairs.append(
                                (f"{remote_dir}/{name}", dest / rel, child.st_size or 0, child.st_mtime or 0)
                            )
            elif stat.S_ISREG(mode):
                target = dest / posixpath.basename(full) if dest.is_dir() else dest
                pairs.append((full, target, attr.st_size or 0, attr.st_mtime or 0))
            else:
                raise RemotePathError(
                    f"remote path {full} is not a regular file or folder", fix="pick another"
                )
            meter = Meter("download", len(pairs), sum(p[2] for p in pairs), progress)
            written = []
            for remote_file, target, _size, mtime in pairs:
                _check_local_real(target, confine)
                _get_atomic(sftp, remote_file, target, mtime, meter)
                meter.file_done(str(target))
                written.append(target)
            meter.emit(phase="done")
            return written

    def download_conflict(self, rel: str) -> Path:
        """Resolve a conflict in favour of the remote: fetch its version over the local file and record it."""
        target = _confine_local(self.local_root, rel)
        rel = target.relative_to(self.local_root).as_posix()
        manifest = self.manifest()
        with manifest.locked():
            manifest.load()
            root = self.conn.remote_root()
            full = confine_remote(root, rel)
            with self.conn.sftp() as sftp:
                _check_remote_real(sftp, root, full)
                attr = sftp.lstat(full)
                if not stat.S_ISREG(attr.st_mode or 0):
                    raise RemotePathError(
                        f"remote path {full} is not a regular file",
                        fix="resolve the conflict on the instance",
                    )
                _get_atomic(sftp, full, target, attr.st_mtime or 0, None)
            st = target.stat()
            manifest.entries[rel] = Entry(
                st.st_size, st.st_mtime_ns, sha256_file(target), attr.st_size or 0, int(attr.st_mtime or 0)
            )
            manifest.save()
        return target


def _check_remote_real(sftp: paramiko.SFTPClient, root: str, full: str) -> None:
    """Refuse a remote path whose folders pass through a symbolic link leading out of the root."""
    parent = sftp.normalize(posixpath.dirname(full) or "/")  # the server's realpath()
    if parent != root and not parent.startswith(root.rstrip("/") + "/"):
        raise RemotePathError(
            f"remote path {full} passes through a symbolic link to {parent}, "
            f"outside the remote directory {root}",
            fix="download the target from inside the remote directory, or replace the link by a real folder",
        )


def _check_local_real(target: Path, confine: Path) -> None:
    """Refuse to write ``target`` if a folder on its way is a symbolic link leading out of ``confine``."""
    real_root = confine.resolve()
    existing = target.parent
    while not os.path.lexists(existing) and existing != existing.parent:
        existing = existing.parent
    if not existing.resolve().is_relative_to(real_root):
        raise InputError(
            f"local folder {existing} leads to {existing.resolve()} through a symbolic link, "
            f"outside {confine}",
            where="LOCAL_PATH",
            fix="download into a real folder (not a symbolic link)",
        )


def _get_atomic(
    sftp: paramiko.SFTPClient, remote: str, target: Path, mtime: int, meter: Meter | None
) -> None:
    target.parent.mkdir(parents=True, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=f".{target.name}.", suffix=".ranktable-tmp-dl", dir=target.parent)
    try:
        with os.fdopen(fd, "wb") as fh:
            last = [0]

            def tick(done: int, _total: int) -> None:
                if meter is not None:
                    meter.add_bytes(done - last[0])
                last[0] = done

            sftp.getfo(remote, fh, callback=tick, max_concurrent_prefetch_requests=64)
        os.utime(tmp, (mtime, mtime))
        os.replace(tmp, target)
    except BaseException:
        if os.path.exists(tmp):
            os.unlink(tmp)
        raise


__all__ = [
    "BULK_DELETE_FRACTION",
    "BULK_DELETE_MIN_FILES",
    "Conflict",
    "RemoteFile",
    "SshError",
    "SyncResult",
    "Syncer",
    "confine_remote",
]
