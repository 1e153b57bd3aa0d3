"""The scheduler's node choice before submit (plan/forecast.py): the simulated pool's and Volcano's."""

from __future__ import annotations

import pytest

from ranktable.plan.forecast import RANDOM_AMONG_EQUALS, SPREAD_BY_LEAF, forecast_placement

LEAF_OF = {"n1": "a", "n2": "a", "n3": "b", "n4": "b"}


def test_preview_on_a_volcano_pool_shows_the_range() -> None:
    """Volcano picks at random among equal nodes: best and worst case, said so."""
    forecast = forecast_placement(dict.fromkeys(LEAF_OF, 8), LEAF_OF, 4, 8, RANDOM_AMONG_EQUALS)
    assert not forecast.exact and "at random" in forecast.reason
    assert forecast.cases == [("best", ["n1", "n2", "n3", "n4"]), ("worst", ["n1", "n3", "n2", "n4"])]


def test_the_simulated_pool_alternates_leaves_pod_by_pod() -> None:
    forecast = forecast_placement(dict.fromkeys(LEAF_OF, 8), LEAF_OF, 4, 8, SPREAD_BY_LEAF)
    assert forecast.exact and forecast.cases == [("predicted", ["n1", "n3", "n2", "n4"])]


def test_volcano_is_exact_when_every_choice_is_the_same_layout() -> None:
    free = {"n1": 0, "n2": 0, "n3": 8, "n4": 8}  # leaf a is busy: only leaf b is left
    forecast = forecast_placement(free, LEAF_OF, 2, 8, RANDOM_AMONG_EQUALS)
    assert forecast.exact and forecast.cases == [("predicted", ["n3", "n4"])]


def test_a_gang_that_does_not_fit_is_refused() -> None:
    with pytest.raises(ValueError, match="1 free node"):
        forecast_placement({"n1": 8, "n2": 4}, LEAF_OF, 2, 8, SPREAD_BY_LEAF)


def test_network_topology_hard_1_keeps_the_gang_under_one_leaf() -> None:
    """Without it the simulated pool spreads 2 pods over both leaves; hard:1 keeps them under one."""
    free = dict.fromkeys(LEAF_OF, 8)
    assert forecast_placement(free, LEAF_OF, 2, 8, SPREAD_BY_LEAF).cases == [("predicted", ["n1", "n3"])]
    for policy in (SPREAD_BY_LEAF, RANDOM_AMONG_EQUALS):
        forecast = forecast_placement(free, LEAF_OF, 2, 8, policy, ("hard", 1))
        assert forecast.exact and forecast.cases == [("predicted", ["n1", "n2"])], policy
        assert "under one leaf: a (the scheduler may pick another of 2 leaves)" in forecast.reason
    busy = {**free, "n1": 0}  # leaf a cannot hold both pods now: leaf b can
    assert forecast_placement(busy, LEAF_OF, 2, 8, SPREAD_BY_LEAF, ("hard", 1)).cases == [
        ("predicted", ["n3", "n4"])
    ]


def test_network_topology_with_no_leaf_holding_the_gang() -> None:
    """hard waits (refused, said why); soft places the gang as without it, and says so."""
    free = dict.fromkeys(LEAF_OF, 8)
    with pytest.raises(ValueError, match=r"no leaf has 3 free node\(s\).*hard:1"):
        forecast_placement(free, LEAF_OF, 3, 8, SPREAD_BY_LEAF, ("hard", 1))
    soft = forecast_placement(free, LEAF_OF, 3, 8, SPREAD_BY_LEAF, ("soft", 1))
    assert soft.cases == [("predicted", ["n1", "n3", "n2"])] and soft.reason.startswith("no leaf holds")
    spine = forecast_placement(free, LEAF_OF, 2, 8, SPREAD_BY_LEAF, ("hard", 2))  # the spine holds all
    assert spine.cases == [("predicted", ["n1", "n3"])]
