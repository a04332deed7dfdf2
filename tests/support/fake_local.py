"""What local model servers answer besides chat completions, as ``FakeLLM`` extra routes.

Each builder returns a ``routes`` dict for ``FakeLLM(routes=...)`` imitating one server's endpoints, with the
shapes the real servers send (checked against their sources and, for llama-cpp-python, the real server in
tests/local_model):

- tokenizers: ``llama_cpp_tokenizer()`` (``POST /tokenize`` → ``{"tokens"}``), ``vllm_tokenizer()``
  (``POST /tokenize`` → ``{"count", "max_model_len", "tokens"}``), ``llama_cpp_python_tokenizer()``
  (``POST /extras/tokenize/count`` → ``{"count"}``). A text counts one token per whitespace-separated word
  (``fake_token_count``), so a test knows what to expect.
"""

from __future__ import annotations

from typing import Any

from tests.support.fake_llm import RecordedRequest, Route


def fake_token_count(text: str) -> int:
    """The fake tokenizers' count: one token per whitespace-separated word."""
    return len(text.split())


def _field(req: RecordedRequest, name: str) -> str | None:
    body = req.body
    value = body.get(name) if isinstance(body, dict) else None
    return value if isinstance(value, str) else None


def llama_cpp_tokenizer() -> dict[tuple[str, str], Route]:
    def tokenize(req: RecordedRequest) -> tuple[int, Any]:
        text = _field(req, "content")
        if text is None:
            return 400, {
                "error": {
                    "code": 400,
                    "message": '"content" must be provided',
                    "type": "invalid_request_error",
                }
            }
        return 200, {"tokens": list(range(fake_token_count(text)))}

    return {("POST", "/tokenize"): tokenize}


def vllm_tokenizer(max_model_len: int = 32768) -> dict[tuple[str, str], Route]:
    def tokenize(req: RecordedRequest) -> tuple[int, Any]:
        text = _field(req, "prompt")
        if text is None or _field(req, "model") is None:
            return 400, {
                "object": "error",
                "message": "1 validation error: prompt Field required",
                "code": 400,
            }
        n = fake_token_count(text)
        return 200, {"count": n, "max_model_len": max_model_len, "tokens": list(range(n)), "token_strs": None}

    return {("POST", "/tokenize"): tokenize}


def llama_cpp_python_tokenizer() -> dict[tuple[str, str], Route]:
    def count(req: RecordedRequest) -> tuple[int, Any]:
        text = _field(req, "input")
        if text is None:
            return 422, {"detail": [{"type": "missing", "loc": ["body", "input"], "msg": "Field required"}]}
        return 200, {"count": fake_token_count(text)}

    return {("POST", "/extras/tokenize/count"): count}
