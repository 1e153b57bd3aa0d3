"""Local and remote file trees of the sync tests: written from, and read back as, {relative path: bytes}."""

from __future__ import annotations

from pathlib import Path


def write_tree(root: Path, files: dict[str, bytes]) -> None:
    for rel, data in files.items():
        path = root / rel
        path.parent.mkdir(parents=True, exist_ok=True)
        path.write_bytes(data)


def tree_files(root: Path) -> dict[str, bytes]:
    return {p.relative_to(root).as_posix(): p.read_bytes() for p in root.rglob("*") if p.is_file()}


def outside_of(remote: Path) -> Path:
    """The remote root (made if missing) and a folder beside it holding ``victim.txt`` ("precious"): what a
    symbolic link out of the root must never let a sync reach."""
    remote.mkdir(parents=True, exist_ok=True)
    outside = remote.parent / "outside"
    outside.mkdir()
    (outside / "victim.txt").write_text("precious")
    return outside
