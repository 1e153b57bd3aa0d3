"""Every relative link in the README and docs/ points at a file of the repository."""

from __future__ import annotations

import re
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
PAGES = [ROOT / "README.md", ROOT / "CONTRIBUTING.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\]\(([^)#\s]+)(?:#[^)]*)?\)")


@pytest.mark.parametrize("page", PAGES, ids=lambda p: str(p.relative_to(ROOT)))
def test_relative_links_resolve(page: Path) -> None:
    targets = [t for t in LINK.findall(page.read_text()) if "://" not in t and not t.startswith("mailto:")]
    missing = [t for t in targets if not (page.parent / t).exists()]
    assert missing == [], f"{page.name} links to missing files: {missing}"


def test_the_readme_is_organised_by_user_task() -> None:
    headings = re.findall(r"^## (.+)$", (ROOT / "README.md").read_text(), re.M)
    assert headings == [
        "Install",
        "Quick start",
        "Panel",
        "Magics",
        "CLI",
        "Using a real pool",
        "Troubleshooting",
        "Development",
    ]


def test_the_readme_stays_a_reference() -> None:
    """Reference by task, not a diary: the measurements' history lives in docs/benchmarks.md."""
    assert len((ROOT / "README.md").read_bytes()) < 15 * 1024
