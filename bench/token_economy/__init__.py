"""The token-economy benchmark (issue 17): run it with ``uv run python -m bench.token_economy``."""
