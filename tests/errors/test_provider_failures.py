"""Provider failures are classified by the SDKs' own exception types, never by the words in a class name."""

from __future__ import annotations

import asyncio
from collections.abc import AsyncIterator

import anthropic
import httpx2
import openai
import pytest

from caddie.ai.providers.failures import describe_failure
from caddie.errors import ProviderError
from tests.ai.helpers import TEST_KEY, openai_model


@pytest.fixture
async def silent_server() -> AsyncIterator[str]:
    """Accepts connections and never answers: every request to it times out."""
    held: list[asyncio.StreamWriter] = []

    async def hold(_reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
        held.append(writer)

    server = await asyncio.start_server(hold, "127.0.0.1", 0)
    port = server.sockets[0].getsockname()[1]
    yield f"http://127.0.0.1:{port}"
    for writer in held:
        writer.close()
    server.close()


def closed_port_url() -> str:
    import socket

    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return f"http://127.0.0.1:{s.getsockname()[1]}"


async def openai_failure(base_url: str) -> BaseException:
    client = openai.AsyncOpenAI(api_key=TEST_KEY, base_url=f"{base_url}/v1", timeout=0.3, max_retries=0)
    try:
        await client.chat.completions.create(model="m", messages=[{"role": "user", "content": "hi"}])
    except Exception as e:
        return e
    finally:
        await client.close()
    raise AssertionError("the request did not fail")


async def anthropic_failure(base_url: str) -> BaseException:
    client = anthropic.AsyncAnthropic(api_key=TEST_KEY, base_url=base_url, timeout=0.3, max_retries=0)
    try:
        await client.messages.create(model="m", max_tokens=5, messages=[{"role": "user", "content": "hi"}])
    except Exception as e:
        return e
    finally:
        await client.close()
    raise AssertionError("the request did not fail")


async def test_an_sdk_timeout_reads_as_a_timeout(silent_server: str) -> None:
    model = openai_model(None)
    for failure in (await openai_failure(silent_server), await anthropic_failure(silent_server)):
        text = describe_failure(failure, model, streaming_started=False).message
        assert text.startswith("Request timed out: the server at"), (type(failure), text)


async def test_an_unreachable_server_reads_as_a_connection_error() -> None:
    model = openai_model(None)
    url = closed_port_url()
    for failure in (await openai_failure(url), await anthropic_failure(url)):
        text = describe_failure(failure, model, streaming_started=False).message
        assert text.startswith("Connection error: could not reach"), (type(failure), text)


async def test_the_http_library_under_the_sdks_is_classified_by_type_too() -> None:
    model = openai_model(None)
    async with httpx2.AsyncClient() as client:
        try:
            await client.get(closed_port_url())
        except httpx2.TransportError as e:
            failure: BaseException = e
        else:
            raise AssertionError("the request did not fail")
    after_start = describe_failure(failure, model, streaming_started=True).message
    assert after_start.startswith("Connection lost: the server at")


def test_a_class_name_with_timeout_in_it_is_not_a_timeout() -> None:
    class ConnectTimeoutLookalike(Exception):
        pass

    text = describe_failure(
        ConnectTimeoutLookalike("boom"), openai_model(None), streaming_started=False
    ).message
    assert text == "ConnectTimeoutLookalike: boom"


def test_a_provider_error_is_shown_as_its_sentence() -> None:
    error = ProviderError("Claude on Bedrock needs an AWS region: set AWS_REGION (or AWS_DEFAULT_REGION).")
    assert describe_failure(error, openai_model(None), streaming_started=False).message == str(error)
