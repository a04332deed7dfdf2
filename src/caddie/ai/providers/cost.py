"""What a reply cost: totals and dollars from a model's per-million-token rates."""

from __future__ import annotations

from caddie.ai.messages import Cost, Usage
from caddie.ai.model import Model, ModelCost, ModelCostTier


def calculate_cost(model: Model, usage: Usage) -> Cost:
    """Fill ``usage.cost`` from the model's $/million rates (1-hour cache writes cost twice the input rate).

    A model with price tiers (long-context pricing) is charged at the tier with the highest
    ``input_tokens_above`` that the request's whole input (fresh, cache read and cache write) exceeds, as
    Pi does; every rate then comes from that tier."""
    rates: ModelCost | ModelCostTier = model.cost
    prompt = usage.input + usage.cache_read + usage.cache_write
    for tier in sorted(model.cost.tiers, key=lambda t: t.input_tokens_above):
        if prompt > tier.input_tokens_above:
            rates = tier
    long_write = usage.cache_write_1h or 0
    short_write = usage.cache_write - long_write
    cost = usage.cost
    cost.input = rates.input * usage.input / 1_000_000
    cost.output = rates.output * usage.output / 1_000_000
    cost.cache_read = rates.cache_read * usage.cache_read / 1_000_000
    cost.cache_write = (rates.cache_write * short_write + rates.input * 2 * long_write) / 1_000_000
    cost.total = cost.input + cost.output + cost.cache_read + cost.cache_write
    return cost


def finish_usage(model: Model, usage: Usage) -> Usage:
    usage.total_tokens = usage.input + usage.output + usage.cache_read + usage.cache_write
    calculate_cost(model, usage)
    return usage
