"""Shared bits for the topology loader tests (sample paths, an error-message assertion) and their test."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from ranktable.errors import InputError

DATA = Path(__file__).resolve().parents[1] / "data" / "topology"


def raises_input_error(fn: Callable[[], Any], *fragments: str) -> InputError:
    """Call fn, expect an InputError whose message contains every fragment (field/line and reason)."""
    with pytest.raises(InputError) as info:
        fn()
    message = str(info.value)
    for fragment in fragments:
        assert fragment in message, f"{fragment!r} not in {message!r}"
    assert "Traceback" not in message
    return info.value


def test_helper_rejects_a_message_missing_a_fragment() -> None:
    def bad() -> None:
        raise InputError("is broken", where="f.yaml: a.b")

    assert raises_input_error(bad, "f.yaml: a.b", "is broken").reason == "is broken"
    with pytest.raises(AssertionError):
        raises_input_error(bad, "a.c")
    with pytest.raises(pytest.fail.Exception):
        raises_input_error(lambda: None, "anything")
