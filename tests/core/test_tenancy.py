"""Per-user namespaces and the owner label on a shared pool (#30.1): the pure rules."""

from __future__ import annotations

import pytest

from ranktable.compose.tenancy import OWNER_LABEL, owner_of, owner_value, resolve_namespace, safe_name
from ranktable.errors import InputError


@pytest.mark.parametrize(
    ("setting", "user", "context_ns", "expected"),
    [
        ("team-a", "alice", "ctx", "team-a"),  # a fixed namespace wins
        ("u-{username}", "alice", "ctx", "u-alice"),
        ("u-{username}", "Alice.B@corp", None, "u-alice-b-corp"),  # what KubeSpawner does with it
        ("{context}", "alice", "ml-prod", "ml-prod"),
        ("", "alice", "ml-prod", "ml-prod"),
        ("{context}", None, None, "default"),  # a context without a namespace: kubectl's default
    ],
)
def test_the_namespace_follows_the_setting(
    setting: str, user: str | None, context_ns: str | None, expected: str
) -> None:
    assert resolve_namespace(setting, user, context_ns) == expected


def test_a_pattern_without_a_user_says_where_the_user_comes_from() -> None:
    with pytest.raises(InputError) as caught:
        resolve_namespace("u-{username}", None, "default", where="c.Ranktable.namespace")
    assert caught.value.where == "c.Ranktable.namespace"
    assert "JUPYTERHUB_USER" in (caught.value.fix or "")


@pytest.mark.parametrize(("setting", "reason"), [("u-{user}", "unknown field"), ("Team_A", "not a valid")])
def test_a_bad_setting_is_one_error_naming_it(setting: str, reason: str) -> None:
    with pytest.raises(InputError, match=reason) as caught:
        resolve_namespace(setting, "alice", None)
    assert caught.value.where == "namespace"


def test_a_long_user_name_still_makes_a_valid_namespace() -> None:
    assert resolve_namespace("u-{username}", "x" * 100, None) == "u-" + "x" * 61


def test_owner_label_values_are_label_safe_and_read_back() -> None:
    assert owner_value("alice") == "alice"
    assert owner_value("alice@corp.com") == "alice-corp.com"
    assert owner_value("@@@") == "unknown"
    assert len(owner_value("a" * 80)) == 63
    assert owner_of({OWNER_LABEL: "alice"}) == "alice"
    assert owner_of({"app": "x"}) is None and owner_of(None) is None
    assert safe_name("--Bob--") == "bob"
