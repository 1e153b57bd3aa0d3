"""No hand-written Python function grows over 80 lines (issue #27): a long function is split into named steps.

A function's size is its span, from `def` to its last line, docstring and comments included; there are no
exceptions. The TypeScript side is checked by src/testing/functionsizes.spec.ts.
"""

from __future__ import annotations

import ast
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
LIMIT = 80
CHECKED = ("ranktable", "bench")


def function_sizes(root: Path, folders: tuple[str, ...]) -> dict[str, int]:
    """{"path::Class.function": lines} for every function (nested ones too) under `folders`."""
    sizes: dict[str, int] = {}
    for folder in folders:
        for path in sorted((root / folder).rglob("*.py")):
            tree = ast.parse(path.read_text(), filename=str(path))
            _walk(tree, f"{path.relative_to(root).as_posix()}::", sizes)
    return sizes


def _walk(node: ast.AST, prefix: str, sizes: dict[str, int]) -> None:
    for child in ast.iter_child_nodes(node):
        if isinstance(child, ast.FunctionDef | ast.AsyncFunctionDef):
            name = prefix + child.name
            sizes[name] = (child.end_lineno or child.lineno) - child.lineno + 1
            _walk(child, name + ".", sizes)
        elif isinstance(child, ast.ClassDef):
            _walk(child, prefix + child.name + ".", sizes)
        else:
            _walk(child, prefix, sizes)


def test_no_function_is_over_the_limit() -> None:
    sizes = function_sizes(ROOT, CHECKED)
    long = {name: lines for name, lines in sizes.items() if lines > LIMIT}
    assert not long, f"split these into named steps (at most {LIMIT} lines each): {long}"


def test_the_measure_sees_a_long_nested_function(tmp_path: Path) -> None:
    body = "\n".join(f"            x{i} = {i}" for i in range(LIMIT))
    (tmp_path / "pkg").mkdir()
    source = f"class A:\n    def f(self):\n        def g():\n{body}\n        return 1\n"
    (tmp_path / "pkg" / "m.py").write_text(source)
    sizes = function_sizes(tmp_path, ("pkg",))
    assert sizes["pkg/m.py::A.f"] == LIMIT + 3
    assert sizes["pkg/m.py::A.f.g"] == LIMIT + 1
