"""Token prices, in one place: USD per million input and output tokens.

Override or extend with a JSON file `{"provider/model": [input_usd, output_usd]}`
named by the environment variable DISCOVERYGYM_PRICES, or with `prices=` in
`run_model`. A model not in the table costs 0 and the record says the price was
unknown."""

from __future__ import annotations

import json
import os
from pathlib import Path

# Public list prices (USD per 1M tokens) as of late 2025; check before relying on them.
PRICES_USD_PER_MTOK: dict[str, tuple[float, float]] = {
    "openai/gpt-4o": (2.50, 10.00),
    "openai/gpt-4o-mini": (0.15, 0.60),
    "openai/gpt-4.1": (2.00, 8.00),
    "openai/gpt-4.1-mini": (0.40, 1.60),
    "openai/o3": (2.00, 8.00),
    "openai/o4-mini": (1.10, 4.40),
    "openai/gpt-5": (1.25, 10.00),
    "openai/gpt-5-mini": (0.25, 2.00),
    "anthropic/claude-sonnet-4-0": (3.00, 15.00),
    "anthropic/claude-opus-4-1": (15.00, 75.00),
    "anthropic/claude-3-5-haiku-latest": (0.80, 4.00),
    "google/gemini-2.5-pro": (1.25, 10.00),
    "google/gemini-2.5-flash": (0.30, 2.50),
}
# Offline and local models cost nothing.
FREE_PREFIXES = ("discoverygym/", "mockllm/", "ollama/", "vllm/", "hf/", "llama-cpp-python/")


def price_table(overrides: dict[str, tuple[float, float]] | None = None
                ) -> dict[str, tuple[float, float]]:
    """The built-in table, then DISCOVERYGYM_PRICES, then `overrides`."""
    table = dict(PRICES_USD_PER_MTOK)
    path = os.environ.get("DISCOVERYGYM_PRICES")
    if path:
        data = json.loads(Path(path).read_text())
        table.update({k: (float(v[0]), float(v[1])) for k, v in data.items()})
    if overrides:
        table.update({k: (float(v[0]), float(v[1])) for k, v in overrides.items()})
    return table


def cost_usd(model: str, input_tokens: int, output_tokens: int,
             table: dict[str, tuple[float, float]] | None = None) -> float | None:
    """Cost of the tokens in USD, or None when the model's price is unknown."""
    if model.startswith(FREE_PREFIXES):
        return 0.0
    table = table if table is not None else price_table()
    price = table.get(model)
    if price is None:
        return None
    return (input_tokens * price[0] + output_tokens * price[1]) / 1e6
