"""Shared storage: the folder a Notebook instance and a job's pods both reach (SFS Turbo, OBS, a PVC).

On ModelArts the instance's own disk (`/home/ma-user/work`) is invisible to training pods; code a job runs
must sit on storage mounted in both places, at a path that may differ (instance `/data/sfs` is the pods'
`/mnt/sfs_turbo`). A `SharedStorage` names the instance folder and the volume that shows it to pods, so
a script path copied from the instance can be turned into the path the pods see, with the volume added.
"""

from __future__ import annotations

import posixpath
from collections.abc import Sequence
from dataclasses import dataclass, fields, replace
from typing import Any

from ranktable.compose.spec import JobSpec, VolumeSpec, volume_from_dict
from ranktable.errors import InputError
from ranktable.limits import MAX_PATH


@dataclass(frozen=True)
class SharedStorage:
    """`instance_path` on the instance is `volume.mount_path` in the pods once `volume` is mounted."""

    instance_path: str
    volume: VolumeSpec
    label: str = ""  # where it comes from, for messages (e.g. "profile sim-notebook")

    def to_json(self) -> dict[str, Any]:
        return {
            "instance_path": self.instance_path,
            "volume": {f.name: getattr(self.volume, f.name) for f in fields(VolumeSpec)},
        }

    @classmethod
    def from_json(cls, data: Any, where: str = "shared") -> SharedStorage:
        if not isinstance(data, dict):
            raise InputError(f"must be an object, not {type(data).__name__}", where=where)
        unknown = sorted(set(data) - {"instance_path", "volume"})
        if unknown:
            raise InputError(
                f"unknown field(s) {', '.join(map(str, unknown))}",
                where=f"{where}.{unknown[0]}",
                fix="use instance_path and volume",
            )
        path = data.get("instance_path")
        if not isinstance(path, str) or not path.startswith("/") or len(path) > MAX_PATH:
            raise InputError(
                f"must be an absolute path on the instance (at most {MAX_PATH} characters), got {path!r:.80}",
                where=f"{where}.instance_path",
                fix="e.g. /home/ma-user/shared or /data/sfs",
            )
        volume = volume_from_dict(data.get("volume"), f"{where}.volume")
        if not volume.mount_path.startswith("/"):
            raise InputError(
                f"must be an absolute path in the pods, got {volume.mount_path!r:.80}",
                where=f"{where}.volume.mount_path",
                fix="e.g. /mnt/sfs_turbo",
            )
        return cls(posixpath.normpath(path), volume)

    def describe(self) -> str:
        """`volume 'sfs' (hostPath /mnt/sfs_turbo at /mnt/sfs_turbo)`: what to add, in words."""
        v = self.volume
        sources = {"pvc": f"claim {v.claim}", "nfs": f"nfs {v.server}:{v.path}"}
        source = sources.get(v.kind, f"hostPath {v.path}")
        return f"volume {v.name!r} ({source} at {v.mount_path})"


def _under(path: str, root: str) -> str | None:
    """`path` relative to `root` ("" for root itself), or None when it lies outside."""
    path, root = posixpath.normpath(path), posixpath.normpath(root)
    if path == root:
        return ""
    prefix = root if root.endswith("/") else root + "/"
    return path[len(prefix) :] if path.startswith(prefix) else None


def pod_path(path: str, storages: Sequence[SharedStorage]) -> tuple[str, SharedStorage] | None:
    """The pods' path of instance path `path` and the storage it is on (the deepest match), or None."""
    best: tuple[int, str, SharedStorage] | None = None
    for storage in storages:
        rest = _under(path, storage.instance_path)
        if rest is not None and (best is None or len(storage.instance_path) > best[0]):
            target = posixpath.join(storage.volume.mount_path, rest) if rest else storage.volume.mount_path
            best = (len(storage.instance_path), target, storage)
    return None if best is None else (best[1], best[2])


def mounted_at(path: str, volumes: Sequence[VolumeSpec]) -> VolumeSpec | None:
    """The volume of `volumes` whose mount holds pod path `path`, or None."""
    return next((v for v in volumes if v.mount_path and _under(path, v.mount_path) is not None), None)


@dataclass(frozen=True)
class Placement:
    """What `place_on_shared_storage` changed: (field, note) per translated path, the volumes it added."""

    notes: tuple[tuple[str, str], ...] = ()
    added: tuple[str, ...] = ()


def place_on_shared_storage(spec: JobSpec, storages: Sequence[SharedStorage]) -> tuple[JobSpec, Placement]:
    """`spec` with an instance path of its script (and of command words) turned into the pods' path, and
    the volume showing that storage added when the spec does not mount it yet. Idempotent."""
    if not storages:
        return spec, Placement()
    notes: list[tuple[str, str]] = []
    volumes = list(spec.volumes)

    def translate(word: str, field: str) -> str:
        if not word.startswith("/"):
            return word
        found = pod_path(word, storages)
        if found is None:
            return word
        target, storage = found
        if mounted_at(target, volumes) is None:
            taken = {v.name for v in volumes}
            name, n = storage.volume.name, 2
            while name in taken:
                name, n = f"{storage.volume.name}-{n}", n + 1
            volumes.append(replace(storage.volume, name=name))
        if target != word:
            notes.append((field, f"{word} on the instance is {target} in the pods"))
        return target

    entry = spec.entry
    if entry is not None:
        entry = replace(entry, script=translate(entry.script, "entry.script"))
    command = [translate(word, f"command[{i}]") for i, word in enumerate(spec.command)]
    added = tuple(v.name for v in volumes[len(spec.volumes) :])
    if not notes and not added:
        return spec, Placement()
    return replace(spec, entry=entry, command=command, volumes=volumes), Placement(tuple(notes), added)
