"""The README's layout map names every top-level package and module of `ranktable/` (a new one without
its line fails here, as it fails `lint-imports` until it is placed in a layer)."""

from __future__ import annotations

import re
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


def layout_map(readme: str) -> str:
    """The fenced block under the README's `### Layout` heading."""
    found = re.search(r"^### Layout\n```\n(.*?)\n```", readme, re.S | re.M)
    assert found, "README.md has no `### Layout` block"
    return found.group(1)


def unnamed(package: Path, block: str) -> list[str]:
    """Children of `package` (packages and modules) the block does not name (`x/` or `x.py`)."""
    names = set(re.findall(r"[\w.]+/?", block))
    missing = []
    for child in sorted(package.iterdir()):
        if child.name in ("__init__.py", "__pycache__") or child.name.startswith("."):
            continue
        if child.is_dir() and ((child / "__init__.py").exists() or child.name == "labextension"):
            wanted = f"{child.name}/"
        elif child.suffix == ".py":
            wanted = child.name
        else:
            continue
        if wanted not in names:
            missing.append(wanted)
    return missing


def test_the_layout_map_names_every_top_level_package() -> None:
    block = layout_map((ROOT / "README.md").read_text())
    assert unnamed(ROOT / "ranktable", block) == []


def test_a_package_missing_from_the_map_is_named(tmp_path: Path) -> None:
    package = tmp_path / "ranktable"
    (package / "newpart").mkdir(parents=True)
    (package / "newpart" / "__init__.py").write_text("")
    (package / "loose.py").write_text("")
    (package / "plan").mkdir()
    (package / "plan" / "__init__.py").write_text("")
    block = layout_map((ROOT / "README.md").read_text())
    assert unnamed(package, block) == ["loose.py", "newpart/"]
