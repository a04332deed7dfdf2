"""Model access: the message model, providers (OpenAI-compatible, Anthropic, faux), the model registry."""
