"""What a `%ranktable` magic returns: its data, shown once as HTML.

Returning the data (so `x = %ranktable jobs` works) used to echo a raw dict as `Out[n]` after the
formatted output. These wrappers behave like the dict / list / str they carry (equality, indexing,
JSON) but render through ``_repr_html_`` as the formatted view, and as a one-line summary in a terminal,
so each call shows exactly one rich output.
"""

from __future__ import annotations

import html
from typing import Any


class _Shown:
    _html: str
    _summary: str

    def _repr_html_(self) -> str:
        return self._html

    @property
    def data(self) -> str:
        """The HTML, as ``IPython.display.HTML.data`` has it."""
        return self._html

    def _repr_pretty_(self, printer: Any, cycle: bool) -> None:
        printer.text(self._summary)


class ShownDict(_Shown, dict[str, Any]):
    def __init__(self, data: dict[str, Any], html_text: str, summary: str) -> None:
        super().__init__(data)
        self._html, self._summary = html_text, summary


class ShownList(_Shown, list[Any]):
    def __init__(self, data: list[Any], html_text: str, summary: str) -> None:
        super().__init__(data)
        self._html, self._summary = html_text, summary


class ShownStr(_Shown, str):
    def __new__(cls, value: str, html_text: str, summary: str) -> ShownStr:
        obj = super().__new__(cls, value)
        obj._html, obj._summary = html_text, summary
        return obj


def text_html(text: str) -> str:
    return f"<div>{html.escape(text)}</div>"


def table_html(rows: list[dict[str, Any]], columns: list[str]) -> str:
    head = "".join(f"<th>{html.escape(c)}</th>" for c in columns)
    body = "".join(
        "<tr>" + "".join(f"<td>{html.escape(str(r.get(c, '')))}</td>" for c in columns) + "</tr>"
        for r in rows
    )
    return f"<table><thead><tr>{head}</tr></thead><tbody>{body}</tbody></table>"


def pre_html(text: str, language: str = "") -> str:
    cls = f' class="language-{language}"' if language else ""
    return f"<pre><code{cls}>{html.escape(text)}</code></pre>"
