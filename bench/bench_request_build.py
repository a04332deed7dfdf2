"""Benchmark: the per-request preparation cost per API, by conversation size (in process, no network).

    uv run python bench/bench_request_build.py [--sizes 0,200,2000] [--repeat 5]

For each API: caddie's request — message conversion (``build_params``) plus serialisation once
(``encode_body``) — and, for comparison, what the SDKs' ``create`` helpers add on top when they are used
(``openai``: ``async_maybe_transform`` over the params; ``anthropic``: ``prepare_request_data`` and its
JSON dump; ``google-genai``:
``models.generate_content_stream``'s conversion of contents and config to the REST shape). caddie no
longer pays the second column. The *next turn* column is what the agent pays per turn: the same request
built with a ``ConversionCache`` that the previous turn's request (the history without its last five
messages) filled, so only the new messages are converted (and the previous request's converted prefix is
resumed). Median of ``--repeat`` runs, milliseconds.
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import sys
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from caddie.ai.conversion_cache import ConversionCache
from caddie.ai.messages import (
    AssistantMessage,
    TextContent,
    ThinkingContent,
    ToolCall,
    ToolResultMessage,
    UserMessage,
)
from caddie.ai.model import Context, Model, StreamOptions, Tool
from caddie.ai.providers import (
    anthropic_messages,
    google_generative_ai,
    openai_completions,
    openai_responses,
)
from caddie.ai.providers.request import compact_json, encode_body

TOOL = Tool("read", "Read a file", {"type": "object", "properties": {"path": {"type": "string"}}})


def conversation(model: Model, size: int) -> Context:
    messages: list[Any] = []
    body = "".join(f"def function_{n}(value):\n    return value * {n}\n\n" for n in range(30))
    for i in range(size // 4):
        call_id = f"call_{i}|fc_{i:06d}" if model.api == "openai-responses" else f"call_{i}"
        signature: str | None = None
        if model.api == "openai-responses":
            item = {
                "id": f"rs_{i}",
                "type": "reasoning",
                "summary": [],
                "encrypted_content": "gAAA" + "x" * 1200,
            }
            signature = compact_json(item)
        elif model.api == "anthropic-messages":
            signature = "sig" + "s" * 300
        thinking = ThinkingContent(f"Look at module {i} first. " * 3, signature)
        messages += [
            UserMessage(f"Please look at module {i}."),
            AssistantMessage(
                [thinking, ToolCall(call_id, "read", {"path": f"src/m{i}.py"})],
                model.api,
                model.provider,
                model.id,
                stop_reason="toolUse",
            ),
            ToolResultMessage(call_id, "read", [TextContent(body)]),
            AssistantMessage([TextContent(f"Module {i} multiplies.")], model.api, model.provider, model.id),
        ]
    messages.append(UserMessage("next"))
    return Context("You are a coding agent.", messages, [TOOL])


def timed(fn: Callable[[], Any], repeat: int) -> float:
    samples = []
    for _ in range(repeat):
        start = time.perf_counter()
        fn()
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def timed_next_turn(
    model: Model, build: Callable[[Model, Context], dict[str, Any]], ctx: Context, repeat: int
) -> float:
    """build + encode with a conversion cache filled by the previous turn's request (not timed)."""
    samples = []
    previous = ctx.messages[:-5]
    for _ in range(repeat):
        cache = ConversionCache()
        build(model, Context(ctx.system_prompt, previous, ctx.tools, cache))
        start = time.perf_counter()
        encode_body(build(model, Context(ctx.system_prompt, ctx.messages, ctx.tools, cache)))
        samples.append((time.perf_counter() - start) * 1000)
    return statistics.median(samples)


def sdk_openai_chat(params: dict[str, Any]) -> None:
    from openai._utils._transform import async_maybe_transform
    from openai.types.chat import completion_create_params

    asyncio.run(async_maybe_transform(params, completion_create_params.CompletionCreateParamsStreaming))


def sdk_openai_responses(params: dict[str, Any]) -> None:
    from openai._utils._transform import async_maybe_transform
    from openai.types.responses import response_create_params

    asyncio.run(async_maybe_transform(params, response_create_params.ResponseCreateParamsStreaming))


def sdk_anthropic(params: dict[str, Any]) -> None:
    from anthropic._utils._json import openapi_dumps
    from anthropic._utils._prepare import prepare_request_data

    openapi_dumps(prepare_request_data(params, location="body"))


def sdk_gemini(params: dict[str, Any]) -> None:
    from google.genai import _transformers, types
    from google.genai.models import _GenerateContentParameters_to_mldev

    client_stub = type("Stub", (), {"vertexai": False})()
    parameter_model = types._GenerateContentParameters(
        model="models/gemini-2.5-flash",
        contents=params["contents"],
        config=types.GenerateContentConfig(
            system_instruction=params.get("systemInstruction", {}).get("parts", [{}])[0].get("text")
        ),
    )
    _GenerateContentParameters_to_mldev(client_stub, parameter_model)
    del _transformers


APIS: list[tuple[Model, Callable[[Model, Context], dict[str, Any]], Callable[[dict[str, Any]], None]]] = [
    (
        Model("gpt-test", "t", "openai-completions", "openai", "http://x/v1"),
        lambda m, c: openai_completions.build_params(m, c, StreamOptions()),
        sdk_openai_chat,
    ),
    (
        Model("gpt-5.5", "t", "openai-responses", "openai", "http://x/v1", reasoning=True),
        lambda m, c: openai_responses.build_params(m, c, StreamOptions(reasoning="high")),
        sdk_openai_responses,
    ),
    (
        Model("claude-test", "t", "anthropic-messages", "anthropic", "http://x"),
        lambda m, c: anthropic_messages.build_params(m, c, StreamOptions()),
        sdk_anthropic,
    ),
    (
        Model("gemini-2.5-flash", "t", "google-generative-ai", "google", "http://x/v1beta"),
        lambda m, c: google_generative_ai.build_params(m, c, StreamOptions()),
        sdk_gemini,
    ),
]


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="0,200,2000")
    parser.add_argument("--repeat", type=int, default=5)
    args = parser.parse_args()
    print(
        f"{'api':<22} {'messages':>8} {'caddie build+encode ms':>23} {'next turn ms':>13} {'body MB':>8} "
        f"{'SDK create() re-walk ms':>24}"
    )
    for model, build, sdk in APIS:
        for size in (int(s) for s in args.sizes.split(",")):
            ctx = conversation(model, size)
            ours = timed(lambda: encode_body(build(model, ctx)), args.repeat)  # noqa: B023
            next_turn = timed_next_turn(model, build, ctx, args.repeat)
            params = build(model, ctx)
            megabytes = len(encode_body(params)) / 1e6
            theirs = timed(lambda: sdk(params), args.repeat)  # noqa: B023
            print(
                f"{model.api:<22} {size:>8} {ours:>23.1f} {next_turn:>13.1f} {megabytes:>8.2f} {theirs:>24.1f}",
                flush=True,
            )


if __name__ == "__main__":
    main()
