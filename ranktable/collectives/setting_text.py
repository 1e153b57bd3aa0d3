"""The `key=value,key=value` text of a collective setting (`--parallel tp=8,pp=4`, `--group-bytes tp=64MiB`,
HCCL_ALGO's `level0:NA;level1:NHR`), split the one way all three parsers read it."""

from __future__ import annotations

from collections.abc import Iterator


def setting_items(text: str, items: str, pair: str) -> Iterator[tuple[str, str, bool, str]]:
    """Each non-blank `items`-separated item of `text` as (the item stripped, its key stripped and
    lowercased, whether it has the `pair` separator, the value after it); blank items are skipped."""
    for part in text.split(items):
        if not part.strip():
            continue
        key, sep, value = part.partition(pair)
        yield part.strip(), key.strip().lower(), bool(sep), value
