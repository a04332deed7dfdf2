"""What a reply cost: totals and dollars from a model's per-million-token rates."""

from __future__ import annotations

from caddie.ai.messages import Cost, Usage, replace
from caddie.ai.model import Model, ModelCost, ModelCostTier


def calculate_cost(model: Model, usage: Usage) -> Cost:
    """What ``usage`` cost at the model's $/million rates (1-hour cache writes cost twice the input rate).

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
    input_cost = rates.input * usage.input / 1_000_000
    output_cost = rates.output * usage.output / 1_000_000
    read_cost = rates.cache_read * usage.cache_read / 1_000_000
    write_cost = (rates.cache_write * short_write + rates.input * 2 * long_write) / 1_000_000
    return Cost(
        input_cost, output_cost, read_cost, write_cost, input_cost + output_cost + read_cost + write_cost
    )


def finish_usage(model: Model, usage: Usage) -> Usage:
    """``usage`` with its total and its cost filled in."""
    total = usage.input + usage.output + usage.cache_read + usage.cache_write
    return replace(usage, total_tokens=total, cost=calculate_cost(model, usage))
