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
