"""Which local files are synced: gitignore(5) semantics via ``pathspec.GitIgnoreSpec``.

Rules come from the defaults, the profile's extra patterns, and every ``.gitignore`` / ``.ranktableignore``
in the tree. As in git, a file's patterns are relative to the folder holding it, deeper files override
shallower ones (the last matching rule wins), ``!`` re-includes, ``dir/`` matches directories only, and an
excluded directory is pruned whole, so a file under it cannot be re-included. Each folder's files are read
once, when first asked about, and cached for the life of the rules.
"""

from __future__ import annotations

import re
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


def _read_ignore_files(folder: Path) -> list[str]:
    lines: list[str] = []
    for name in IGNORE_FILES:
        path = folder / name
        if path.is_file():
            lines += path.read_text(encoding="utf-8", errors="replace").splitlines()
    return lines


class IgnoreRules:
    def __init__(self, lines: Iterable[str], root: Path | None = None) -> None:
        """``lines`` apply at the root; with ``root``, ignore files in subfolders are read as needed."""
        self.lines = [line.rstrip("\n") for line in lines]
        self.root = root
        self._specs: dict[str, pathspec.GitIgnoreSpec | None] = {
            "": pathspec.GitIgnoreSpec.from_lines(self.lines)
        }
        self._chains: dict[str, list[tuple[int, pathspec.GitIgnoreSpec, re.Pattern[str] | None]]] = {}

    @classmethod
    def for_folder(cls, root: Path, extra: Iterable[str] = ()) -> IgnoreRules:
        return cls([*DEFAULT_IGNORES, *extra, *_read_ignore_files(root)], root)

    def _spec(self, rel_dir: str) -> pathspec.GitIgnoreSpec | None:
        """The rules of the ignore files in folder ``rel_dir`` (cached; ``None`` when it has none)."""
        if rel_dir not in self._specs:
            lines = _read_ignore_files(self.root / rel_dir) if self.root is not None else []
            self._specs[rel_dir] = pathspec.GitIgnoreSpec.from_lines(lines) if lines else None
        return self._specs[rel_dir]

    def _chain(self, rel_dir: str) -> list[tuple[int, pathspec.GitIgnoreSpec, re.Pattern[str] | None]]:
        """The specs that apply in folder ``rel_dir``, root first, each with where its relative paths
        start and its quick test (cached per folder: a scan asks once per file, so this must not be
        rebuilt each time)."""
        chain = self._chains.get(rel_dir)
        if chain is None:
            parts = rel_dir.split("/") if rel_dir else []
            chain = []
            for depth in range(len(parts) + 1):
                prefix = "/".join(parts[:depth])
                spec = self._spec(prefix)
                if spec is not None:
                    chain.append((len(prefix) + 1 if prefix else 0, spec, _quick_test(spec)))
            self._chains[rel_dir] = chain
        return chain

    def ignored(self, rel: str, *, is_dir: bool = False) -> bool:
        """``rel`` is a POSIX path relative to the folder root; its parent folders are assumed not ignored."""
        path = rel + "/" if is_dir else rel
        verdict: bool | None = None
        for start, spec, quick in self._chain(rel.rpartition("/")[0]):  # deeper files have the last word
            relative = path[start:] if start else path
            if quick is not None and quick.match(relative) is None:
                continue  # no pattern of this file matches: it has no say (most files, most specs)
            include = spec.check_file(relative).include
            if include is not None:
                verdict = include
        return bool(verdict)

    def ignored_path(self, rel: str) -> bool:
        """A file path is ignored if it or any parent directory is (what a pruned walk would give)."""
        parts = rel.split("/")
        for i in range(1, len(parts)):
            if self.ignored("/".join(parts[:i]), is_dir=True):
                return True
        return self.ignored(rel)


_NAMED_GROUP = re.compile(r"\(\?P<\w+>")


def _quick_test(spec: pathspec.GitIgnoreSpec) -> re.Pattern[str] | None:
    """One regular expression matching wherever any pattern of ``spec`` matches: files it misses skip the
    pattern-by-pattern check (half a scan's CPU time). ``None`` (always check) if a pattern has no
    plain regular expression."""
    sources = []
    for pattern in spec.patterns:
        if pattern.include is None:
            continue  # blank lines, comments
        regex = getattr(pattern, "regex", None)
        source = getattr(regex, "pattern", None)
        if not isinstance(source, str):
            return None
        sources.append(f"(?:{_NAMED_GROUP.sub('(?:', source)})")
    try:
        return re.compile("|".join(sources)) if sources else re.compile(r"(?!)")
    except re.error:
        return None
