"""Dollars from usage: base rates, 1-hour cache writes, and long-context price tiers (as Pi's calculateCost)."""

from __future__ import annotations

import pytest

from caddie.ai.messages import Usage
from caddie.ai.model import Model, ModelCost, ModelCostTier
from caddie.ai.providers.cost import calculate_cost


def _model(tiers: tuple[ModelCostTier, ...] = ()) -> Model:
    cost = ModelCost(input=1.0, output=10.0, cache_read=0.1, cache_write=1.25, tiers=tiers)
    return Model("m", "M", "anthropic-messages", "p", cost=cost)


TIERS = (  # out of order on purpose: the highest threshold the request exceeds wins
    ModelCostTier(1_000_000, input=4.0, output=40.0, cache_read=0.4, cache_write=5.0),
    ModelCostTier(200_000, input=2.0, output=20.0, cache_read=0.2, cache_write=2.5),
)


def test_below_every_tier_the_base_rates_apply() -> None:
    usage = Usage(input=100_000, output=1_000, cache_read=100_000)  # 200,000 is not above 200,000
    cost = calculate_cost(_model(TIERS), usage)
    assert cost.input == pytest.approx(0.1) and cost.output == pytest.approx(0.01)
    assert cost.cache_read == pytest.approx(0.01)


def test_the_whole_input_counts_toward_a_tier_and_sets_every_rate() -> None:
    usage = Usage(input=50_000, output=1_000, cache_read=150_000, cache_write=1)  # 200,001 in all
    cost = calculate_cost(_model(TIERS), usage)
    assert cost.input == pytest.approx(2.0 * 50_000 / 1e6)
    assert cost.output == pytest.approx(20.0 * 1_000 / 1e6)
    assert cost.cache_read == pytest.approx(0.2 * 150_000 / 1e6)
    assert cost.cache_write == pytest.approx(2.5 / 1e6)
    assert cost.total == pytest.approx(cost.input + cost.output + cost.cache_read + cost.cache_write)


def test_the_highest_tier_exceeded_wins() -> None:
    cost = calculate_cost(_model(TIERS), Usage(input=1_200_000, output=10))
    assert cost.input == pytest.approx(4.0 * 1.2) and cost.output == pytest.approx(40.0 * 10 / 1e6)


def test_one_hour_cache_writes_cost_twice_the_input_rate() -> None:
    usage = Usage(input=10, cache_write=1_000, cache_write_1h=400)
    cost = calculate_cost(_model(), usage)
    assert cost.cache_write == pytest.approx((1.25 * 600 + 1.0 * 2 * 400) / 1e6)
