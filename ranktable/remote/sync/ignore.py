"""Which local files are synced: gitignore(5) semantics via ``pathspec.GitIgnoreSpec``.

Rules come from the defaults, the profile's extra patterns, ``.gitignore`` and ``.ranktableignore`` at the
folder root (later rules win, ``!`` re-includes, ``dir/`` matches directories only). An excluded directory
is pruned whole, so — as in git — a file under it cannot be re-included.
"""

from __future__ import annotations

from collections.abc import Iterable
from pathlib import Path

import pathspec

DEFAULT_IGNORES = (
    ".git/",
    "__pycache__/",
    ".ipynb_checkpoints/",
    "*.pyc",
    ".~*",  # Jupyter's atomic-save backups
    "*.ranktable-tmp-*",  # our own temporary files
)
IGNORE_FILES = (".gitignore", ".ranktableignore")


class IgnoreRules:
    def __init__(self, lines: Iterable[str]) -> None:
        self.lines = [line.rstrip("\n") for line in lines]
        self._spec = pathspec.GitIgnoreSpec.from_lines(self.lines)

    @classmethod
    def for_folder(cls, root: Path, extra: Iterable[str] = ()) -> IgnoreRules:
        lines = [*DEFAULT_IGNORES, *extra]
        for name in IGNORE_FILES:
            path = root / name
            if path.is_file():
                lines += path.read_text(encoding="utf-8", errors="replace").splitlines()
        return cls(lines)

    def ignored(self, rel: str, *, is_dir: bool = False) -> bool:
        """``rel`` is a POSIX path relative to the folder root."""
        return bool(self._spec.match_file(rel + "/" if is_dir else rel))

    def ignored_path(self, rel: str) -> bool:
        """A file path is ignored if it or any parent directory is (what a pruned walk would give)."""
        parts = rel.split("/")
        for i in range(1, len(parts)):
            if self.ignored("/".join(parts[:i]), is_dir=True):
                return True
        return self.ignored(rel)
