"""A folder renamed locally, applied remotely with one command instead of re-uploading every file.

Watch mode sees a rename as one move event. Re-uploading a 5,000-file folder costs seconds; a remote
``mv`` (delete mode: the old name goes away, as locally) or ``cp -pR`` (delete mode off: files the tool
uploaded are never deleted, so the old folder stays) costs one command. Only done when it cannot hide
or lose anything; otherwise the caller's ordinary sync uploads the folder:

* the old folder is gone locally and the new one is a real folder;
* remotely, the old folder holds exactly the files we uploaded there, each unchanged since (size and
  mtime as recorded): no one's remote edits or results are carried along or lost;
* the new name does not exist remotely, and no symbolic link is on either path (checked in the
  listing and again by the remote command itself, just before it moves or copies).

``cp -p`` and ``mv`` keep size and mtime, so the manifest entries move with the files and the sync that
follows finds the folder unchanged.
"""

from __future__ import annotations

import logging
import posixpath
import shlex
from pathlib import Path

from ranktable.remote.connection import Connection
from ranktable.remote.sync.manifest import Manifest
from ranktable.remote.sync.remote_tree import Survey

log = logging.getLogger(__name__)


def _prefixes(rel: str) -> list[str]:
    parts = rel.split("/")
    return ["/".join(parts[:end]) for end in range(1, len(parts) + 1)]


def relocate_command(root: str, source: str, target: str, *, move: bool) -> str:
    """Shell command: refuse links on either path or an existing target, then ``mv``/``cp -pR``."""
    checks = " ".join(shlex.quote("./" + p) for p in sorted({*_prefixes(source), *_prefixes(target)}))
    parent = posixpath.dirname(target)
    make = f"mkdir -p -- {shlex.quote('./' + parent)} && " if parent else ""
    verb = "mv --" if move else "cp -pR --"
    src, dst = shlex.quote("./" + source), shlex.quote("./" + target)
    return (
        f"cd -- {shlex.quote(root)} || exit 2; "
        f'for p in {checks}; do if [ -L "$p" ]; then exit 3; fi; done; '
        f"[ -d {src} ] || exit 4; "
        f"if [ -e {dst} ]; then exit 5; fi; "
        f"{make}{verb} {src} {dst}"
    )


def relocate_folder(
    conn: Connection,
    manifest: Manifest,
    survey: Survey,
    local_root: Path,
    source: str,
    target: str,
    *,
    move: bool,
) -> bool:
    """Move (or copy) the remote folder ``source`` to ``target`` if safe; update ``manifest`` and
    ``survey`` as if the files had been uploaded there. False: nothing done, the sync uploads instead."""
    source, target = source.strip("/"), target.strip("/")
    if not source or not target or source == target or target.startswith(source + "/"):
        return False
    if not survey.exists:
        return False
    if (local_root / source).exists() or (local_root / target).is_symlink():
        return False
    if not (local_root / target).is_dir():
        return False
    below_source, below_target = source + "/", target + "/"
    tracked = {rel: entry for rel, entry in manifest.entries.items() if rel.startswith(below_source)}
    remote = {rel: rf for rel, rf in survey.files.items() if rel.startswith(below_source)}
    if not tracked or remote.keys() != tracked.keys():
        return False  # files we never uploaded (results, outputs) or files already gone remotely
    if any(
        (rf.size, rf.mtime) != (tracked[rel].remote_size, tracked[rel].remote_mtime)
        for rel, rf in remote.items()
    ):
        return False  # edited remotely since our upload: let the ordinary sync report it
    if survey.link_on_path(source) or survey.link_on_path(target):
        return False
    if any(link.startswith((below_source, below_target)) for link in survey.links):
        return False
    if target in survey.files or any(rel.startswith(below_target) for rel in survey.files):
        return False
    result = conn.run(relocate_command(survey.root, source, target, move=move), timeout=60)
    if result.exit_status != 0:
        log.info(
            "remote rename %s -> %s not applied (status %s): uploading instead",
            source,
            target,
            result.exit_status,
        )
        return False
    for rel, entry in tracked.items():
        moved = below_target + rel[len(below_source) :]
        manifest.entries[moved] = entry
        survey.files[moved] = remote[rel]
        if move:
            del manifest.entries[rel]
            del survey.files[rel]
    return True


__all__ = ["relocate_command", "relocate_folder"]
