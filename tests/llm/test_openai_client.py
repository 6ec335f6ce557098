"""The real ``openai`` SDK, driven by OpenAiClient and LlmRouter, against the local fake Chat Completions server."""

from __future__ import annotations

import json
import socket
from pathlib import Path
from typing import Any

import pytest

from phoenix_lsp.llm.client import TOOL_INPUT_ERROR_KEY, LlmClient, LlmFailure, LlmRequest, LlmSuccess
from phoenix_lsp.llm.openai_client import OpenAiClient, call_id, to_chat
from phoenix_lsp.llm.providers import Provider, load, split_model
from phoenix_lsp.llm.router import UNKNOWN_WINDOW, LlmRouter, ProviderPrices
from phoenix_lsp.store.secrets import SecretGuard
from tests.fake_anthropic import FakeAnthropic
from tests.fake_openai import FakeOpenAI, Reply, TextBlock, ToolUseBlock

KEY = "sk-proj-test-key-0123456789abcdef"
TOOLS: list[dict[str, Any]] = [{"name": "bash", "description": "Run a command",
                                "input_schema": {"type": "object", "properties": {"command": {"type": "string"}}},
                                "cache_control": {"type": "ephemeral"}}]


def provider(fake: FakeOpenAI, kind: str = "openai", key: str | None = KEY) -> Provider:
    variable = {"openai": "OPENAI_API_KEY", "azure": "AZURE_OPENAI_API_KEY"}.get(kind)
    return Provider(kind, kind, fake.base_url, variable, key, local=kind == "ollama")  # type: ignore[arg-type]


def request(messages: list[dict[str, Any]] | None = None, tools: list[dict[str, Any]] | None = None,
            model: str = "openai/gpt-4.1") -> LlmRequest:
    return LlmRequest(model=model, system=[{"type": "text", "text": "You are a test.",
                                            "cache_control": {"type": "ephemeral"}}],
                      messages=messages or [{"role": "user", "content": [{"type": "text", "text": "hi"}]}],
                      tools=tools)


def on(pieces: list[str]) -> Any:
    return pieces.append


@pytest.mark.req("REQ-MODEL-006")
async def test_text_streams_through_the_real_sdk_with_usage(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(Reply.text_reply("Hello from a compatible server.", deltas=4,
                                         usage={"prompt_tokens": 120, "cached_tokens": 100, "completion_tokens": 7}))
    client = OpenAiClient(provider(fake_openai))
    pieces: list[str] = []
    outcome = await client.stream(request(), on(pieces), "gpt-4.1")
    await client.aclose()
    assert isinstance(outcome, LlmSuccess)
    assert len(pieces) == 4 and "".join(pieces) == "Hello from a compatible server."
    assert outcome.content == [{"type": "text", "text": "Hello from a compatible server."}]
    assert outcome.stop_reason == "end_turn"
    assert outcome.usage["input_tokens"] == 20 and outcome.usage["cache_read_input_tokens"] == 100
    assert outcome.usage["output_tokens"] == 7 and outcome.usage["cache_creation_input_tokens"] == 0
    (sent,) = fake_openai.requests
    assert sent.body["model"] == "gpt-4.1" and sent.body["max_completion_tokens"] == 8192
    assert sent.body["stream_options"] == {"include_usage": True}
    assert sent.messages[0] == {"role": "system", "content": "You are a test."}
    assert "cache_control" not in json.dumps(sent.body) and "max_tokens" not in sent.body
    assert sent.api_key_sent() == KEY


@pytest.mark.req("REQ-MODEL-006")
@pytest.mark.parametrize("whole", [False, True], ids=["split-fragments", "ollama-whole-calls"])
async def test_parallel_tool_calls_split_across_chunks(fake_openai: FakeOpenAI, whole: bool) -> None:
    fake_openai.whole_calls = whole
    fake_openai.enqueue(Reply.tool_reply(
        ToolUseBlock("bash", {"command": "ls -la"}, id="toolu_a", json_chunks=5),
        ToolUseBlock("bash", {"command": "cat README.md"}, id="toolu_b", json_chunks=4),
        text="Let me look."))
    client = OpenAiClient(provider(fake_openai))
    outcome = await client.stream(request(tools=TOOLS), on([]), "gpt-4.1")
    await client.aclose()
    assert isinstance(outcome, LlmSuccess) and outcome.stop_reason == "tool_use"
    assert outcome.content == [
        {"type": "text", "text": "Let me look."},
        {"type": "tool_use", "id": "call_a", "name": "bash", "input": {"command": "ls -la"}},
        {"type": "tool_use", "id": "call_b", "name": "bash", "input": {"command": "cat README.md"}},
    ]
    tools = fake_openai.requests[0].body["tools"]
    assert tools == [{"type": "function", "function": {"name": "bash", "description": "Run a command",
                                                       "parameters": TOOLS[0]["input_schema"]}}]


@pytest.mark.req("REQ-MODEL-006")
async def test_invalid_tool_call_json_is_told_precisely(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(Reply.tool_reply(ToolUseBlock("bash", id="toolu_x", raw_json='{"command": "ls"')))
    client = OpenAiClient(provider(fake_openai))
    outcome = await client.stream(request(tools=TOOLS), on([]), "gpt-4.1")
    await client.aclose()
    assert isinstance(outcome, LlmSuccess)
    block = outcome.content[0]
    assert block["input"] == {} and "Expecting" in block[TOOL_INPUT_ERROR_KEY]


@pytest.mark.req("REQ-MODEL-006")
async def test_length_is_max_tokens() -> None:
    with FakeOpenAI() as fake:
        fake.enqueue(Reply.text_reply("cut sh", stop_reason="max_tokens"))
        client = OpenAiClient(provider(fake))
        outcome = await client.stream(request(), on([]), "gpt-4.1")
        await client.aclose()
    assert isinstance(outcome, LlmSuccess) and outcome.stop_reason == "max_tokens"


@pytest.mark.req("REQ-MODEL-005")
def test_history_translates_tool_uses_results_and_images() -> None:
    long_id = "toolu_" + "x" * 60
    messages = [
        {"role": "user", "content": [{"type": "text", "text": "look"},
                                     {"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                  "data": "iVBORw0KGgo="}}]},
        {"role": "assistant", "content": [{"type": "text", "text": "Running."},
                                          {"type": "tool_use", "id": long_id, "name": "bash",
                                           "input": {"command": "ls"}},
                                          {"type": "tool_use", "id": "toolu_2", "name": "bash",
                                           "input": {"command": "pwd"}}]},
        {"role": "user", "content": [{"type": "tool_result", "tool_use_id": long_id, "content": "a\nb"},
                                     {"type": "tool_result", "tool_use_id": "toolu_2", "is_error": True,
                                      "content": [{"type": "text", "text": "denied"}],
                                      "cache_control": {"type": "ephemeral"}},
                                     {"type": "text", "text": "and then?"}]},
    ]
    chat = to_chat(request(messages), "gpt-4.1")
    sent = chat["messages"]
    assert sent[1]["content"][1] == {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo="}}
    short = call_id(long_id)
    assert len(short) <= 40 and short == call_id(long_id) and short != long_id
    assert sent[2] == {"role": "assistant", "content": "Running.", "tool_calls": [
        {"id": short, "type": "function", "function": {"name": "bash", "arguments": '{"command":"ls"}'}},
        {"id": "toolu_2", "type": "function", "function": {"name": "bash", "arguments": '{"command":"pwd"}'}}]}
    assert sent[3] == {"role": "tool", "tool_call_id": short, "content": "a\nb"}
    assert sent[4] == {"role": "tool", "tool_call_id": "toolu_2", "content": "Error: denied"}
    assert sent[5] == {"role": "user", "content": "and then?"}
    assert to_chat(request(messages), "gpt-4.1") == chat  # a pure function: the prefix stays byte-stable


@pytest.mark.req("REQ-MODEL-009")
async def test_429_retryable_with_retry_after_and_500(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(Reply.error(429, "Rate limit reached", retry_after="3"), Reply.error(500, "boom"))
    client = OpenAiClient(provider(fake_openai))
    limited = await client.stream(request(), on([]), "gpt-4.1")
    broken = await client.stream(request(), on([]), "gpt-4.1")
    await client.aclose()
    assert isinstance(limited, LlmFailure) and limited.retryable and limited.retry_after_ms == 3000
    assert limited.status == 429 and "Rate limited" in limited.message
    assert isinstance(broken, LlmFailure) and broken.retryable and broken.status == 500
    assert len(fake_openai.requests) == 2  # the SDK's own retries are off


@pytest.mark.req("REQ-MODEL-009", "REQ-MODEL-010")
async def test_401_names_the_variable_and_never_the_key() -> None:
    with FakeOpenAI(expected_api_key="sk-proj-the-right-one-000000") as fake:
        for kind, variable in (("openai", "OPENAI_API_KEY"), ("azure", "AZURE_OPENAI_API_KEY")):
            client = OpenAiClient(provider(fake, kind), SecretGuard(environ={}))
            if kind == "azure":  # the Azure client's own URL layout; the fake answers any path's 401 alike
                client = OpenAiClient(Provider("azure", "azure", fake.root, variable, KEY, "2024-10-21"),
                                      SecretGuard(environ={}))
            failed = await client.stream(request(), on([]), "gpt-4.1")
            await client.aclose()
            assert isinstance(failed, LlmFailure) and not failed.retryable and failed.status == 401
            assert variable in failed.message
            assert KEY not in failed.message and "[REDACTED]" in failed.message  # the echoed key is redacted


@pytest.mark.req("REQ-MODEL-005", "REQ-MODEL-006")
async def test_azure_answers_through_the_sdks_azure_client(monkeypatch: pytest.MonkeyPatch) -> None:
    """AZURE_OPENAI_ENDPOINT, AZURE_OPENAI_API_KEY and OPENAI_API_VERSION, as the SDK's Azure client uses them:
    the deployment in the path, the version in the query, the key in ``api-key``."""
    monkeypatch.delenv("OPENAI_BASE_URL", raising=False)
    with FakeOpenAI(expected_api_key=KEY) as fake:
        fake.enqueue(Reply.text_reply("From Azure.", deltas=2))
        router = LlmRouter(LlmClient(api_key="k" * 12), load({
            "AZURE_OPENAI_ENDPOINT": fake.root, "AZURE_OPENAI_API_KEY": KEY, "OPENAI_API_VERSION": "2024-10-21"}))
        pieces: list[str] = []
        outcome = await router.stream(request(model="azure/my-gpt4o"), on(pieces))
        await router.aclose()
        (sent,) = fake.requests
    assert isinstance(outcome, LlmSuccess) and "".join(pieces) == "From Azure."
    assert sent.path.startswith("/openai/deployments/my-gpt4o/chat/completions")
    assert "api-version=2024-10-21" in sent.path and sent.headers.get("api-key") == KEY
    assert sent.body["model"] == "my-gpt4o" and sent.messages[0]["role"] == "system"


@pytest.mark.req("REQ-MODEL-005")
def test_openai_base_url_never_applies_to_ollama() -> None:
    elsewhere = load({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1"})
    router = LlmRouter(LlmClient(api_key="k" * 12), elsewhere)
    assert router.clients["openai"].base_url == "http://127.0.0.1:9/v1"
    assert router.clients["ollama"].base_url == "http://127.0.0.1:11434/v1"  # Ollama's default host
    hosted = LlmRouter(LlmClient(api_key="k" * 12), load({"OPENAI_BASE_URL": "http://127.0.0.1:9/v1",
                                                          "OLLAMA_HOST": "10.0.0.5"}))
    assert hosted.clients["ollama"].base_url == "http://10.0.0.5:11434/v1"


@pytest.mark.req("REQ-MODEL-009")
async def test_unreachable_ollama_says_so_with_its_address() -> None:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    client = OpenAiClient(Provider("ollama", "ollama", f"http://127.0.0.1:{port}/v1", None, local=True))
    failed = await client.stream(request(model="ollama/llama3.2"), on([]), "llama3.2")
    await client.aclose()
    assert isinstance(failed, LlmFailure) and failed.retryable
    assert f"http://127.0.0.1:{port}" in failed.message and "OLLAMA_HOST" in failed.message


@pytest.mark.req("REQ-MODEL-009")
async def test_a_cut_stream_is_retryable(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(Reply(blocks=[TextBlock("partial answer that never ends", 10)], drop_after_events=3))
    client = OpenAiClient(provider(fake_openai))
    failed = await client.stream(request(), on([]), "gpt-4.1")
    await client.aclose()
    assert isinstance(failed, LlmFailure) and failed.retryable


@pytest.mark.req("REQ-MODEL-005")
def test_model_ids_split_on_the_first_slash() -> None:
    assert split_model("claude-sonnet-4-6") == ("anthropic", "claude-sonnet-4-6")
    assert split_model("anthropic/claude-sonnet-4-6") == ("anthropic", "claude-sonnet-4-6")
    assert split_model("openai/meta-llama/x") == ("openai", "meta-llama/x")


@pytest.mark.req("REQ-MODEL-005")
async def test_router_sends_a_bare_id_to_anthropic_untouched_and_prefixed_ones_upstream(
    fake_anthropic: FakeAnthropic, fake_openai: FakeOpenAI
) -> None:
    from tests.fake_anthropic import Reply as AReply

    fake_anthropic.enqueue(AReply.text_reply("A"), AReply.text_reply("B"))
    fake_openai.enqueue(Reply.text_reply("C"))
    providers = load({**fake_openai.env(KEY)})
    router = LlmRouter(LlmClient(api_key="sk-ant-k-0000000000", base_url=fake_anthropic.base_url), providers)
    bare = request(model="claude-sonnet-4-6")
    assert isinstance(await router.stream(bare, on([])), LlmSuccess)
    assert isinstance(await router.stream(request(model="anthropic/claude-sonnet-4-6"), on([])), LlmSuccess)
    assert isinstance(await router.stream(request(model="openai/meta-llama/llama-3.3-70b"), on([])), LlmSuccess)
    await router.aclose()
    first, second = fake_anthropic.requests
    assert first.body["model"] == second.body["model"] == "claude-sonnet-4-6"
    assert first.body == second.body  # the explicit prefix is only stripped
    assert fake_openai.requests[0].body["model"] == "meta-llama/llama-3.3-70b"


@pytest.mark.req("REQ-MODEL-007")
def test_router_validates_model_ids() -> None:
    router = LlmRouter(LlmClient(api_key="k" * 12), load({}))
    assert router.check("claude-sonnet-4-6") is None and router.check("ollama/llama3.2") is None
    assert "OPENAI_API_KEY" in (router.check("openai/gpt-4.1") or "")
    assert "not configured" in (router.check("nosuch/x") or "")
    assert "not a model id" in (router.check("bad model") or "")
    assert "names no model" in (router.check("openai/") or "")


@pytest.mark.req("REQ-MODEL-011")
def test_providers_file_adds_endpoints_and_refuses_a_literal_key(tmp_path: Path) -> None:
    good = tmp_path / "providers.json"
    good.write_text(json.dumps({"providers": {"router": {
        "baseUrl": "https://llm.example.com/v1", "apiKey": "env:ROUTER_KEY",
        "models": {"some/model": {"contextWindow": 65536, "images": False, "price": {"input": 1, "output": 2}}}}}}))
    loaded = load({"PHOENIX_PROVIDERS": str(good), "ROUTER_KEY": "router-secret-0123456789"})
    assert not loaded.problems and loaded.by_name["router"].api_key == "router-secret-0123456789"
    assert "router-secret" not in repr(loaded.by_name["router"])
    router = LlmRouter(LlmClient(api_key="k" * 12), loaded)
    assert router.context_window("router/some/model") == 65536
    assert router.context_window("router/other") == UNKNOWN_WINDOW and not router.window_known("router/other")
    prices = ProviderPrices({}, router)
    assert prices.get("router/some/model").input == 1.0 and prices.get("ollama/llama3.2").output == 0.0
    assert prices.get("router/other") is None
    bad = tmp_path / "bad.json"
    bad.write_text(json.dumps({"providers": {"router": {"baseUrl": "https://llm.example.com/v1",
                                                        "apiKey": "sk-literal-key"}}}))
    refused = load({"PHOENIX_PROVIDERS": str(bad)})
    assert "router" not in refused.by_name
    (problem,) = refused.problems
    assert str(bad) in problem and "providers.router.apiKey" in problem and "sk-literal-key" not in problem


@pytest.mark.req("REQ-MODEL-008")
async def test_ollama_reports_its_context_window_and_image_support(fake_openai: FakeOpenAI) -> None:
    fake_openai.models = [("llama3.2", None), ("llava", None)]
    fake_openai.ollama = {"llama3.2": (131072, False), "llava": (4096, True)}
    providers = load({"OLLAMA_HOST": fake_openai.root})
    router = LlmRouter(LlmClient(api_key="k" * 12), providers)
    listed = await router.list_provider("ollama")
    assert ("ollama/llama3.2", "llama3.2 (ollama)", 131072, True) in listed
    assert router.context_window("ollama/llava") == 4096
    image = [{"role": "user", "content": [{"type": "image", "source": {"type": "base64", "media_type": "image/png",
                                                                       "data": "iVBORw0KGgo="}}]}]
    refused = await router.stream(request(image, model="ollama/llama3.2"), on([]))
    await router.aclose()
    assert isinstance(refused, LlmFailure) and "does not take images" in refused.message
    assert not [r for r in fake_openai.requests if r.path.endswith("/chat/completions")]


@pytest.mark.req("REQ-MODEL-012")
async def test_an_ollama_window_is_asked_once_the_modelfiles_num_ctx_first(fake_openai: FakeOpenAI) -> None:
    fake_openai.ollama = {"big": (131072, False), "plain": (8192, False)}
    fake_openai.ollama_parameters = {"big": "temperature 0.2\nnum_ctx 16384"}
    router = LlmRouter(LlmClient(api_key="k" * 12), load({"OLLAMA_HOST": fake_openai.root}))
    assert router.learnable("ollama/big") and not router.learnable("openai/gpt-4.1")
    assert router.context_window("ollama/big") == UNKNOWN_WINDOW and "unknown" in router.window_note("ollama/big")
    assert await router.learn("ollama/big") and await router.learn("ollama/plain")
    assert router.context_window("ollama/big") == 16384 and router.context_window("ollama/plain") == 8192
    assert not router.learnable("ollama/big")
    big, plain = router.window_note("ollama/big"), router.window_note("ollama/plain")
    assert "16,384" in big and "num_ctx" in big and "131,072" in big
    assert "8,192" in plain and "OLLAMA_CONTEXT_LENGTH" in plain and "num_ctx" in plain
    calls = fake_openai.show_calls
    assert await router.learn("ollama/big") and fake_openai.show_calls == calls  # known: not asked again
    # a model Ollama does not know: the assumed window stays, and the next turns do not wait for it again
    assert not await router.learn("ollama/missing") and fake_openai.show_calls == calls + 1
    assert not await router.learn("ollama/missing") and fake_openai.show_calls == calls + 1
    assert router.context_window("ollama/missing") == UNKNOWN_WINDOW
    await router.aclose()


@pytest.mark.req("REQ-MODEL-009")
async def test_an_error_object_mid_stream_is_retryable(fake_openai: FakeOpenAI) -> None:
    fake_openai.enqueue(Reply(blocks=[TextBlock("half an answer", 3)], sse_error="server_error"))
    client = OpenAiClient(provider(fake_openai))
    failed = await client.stream(request(), on([]), "gpt-4.1")
    await client.aclose()
    assert isinstance(failed, LlmFailure) and failed.retryable and "mid-stream" in failed.message


@pytest.mark.req("REQ-MODEL-006")
async def test_cancelling_closes_the_connection(fake_openai: FakeOpenAI) -> None:
    import asyncio

    fake_openai.enqueue(Reply.text_reply("a slow answer that is cancelled", deltas=30, delay_s=0.05))
    client = OpenAiClient(provider(fake_openai))
    seen = asyncio.Event()
    task = asyncio.create_task(client.stream(request(), lambda _t: seen.set(), "gpt-4.1"))
    await asyncio.wait_for(seen.wait(), 10)
    task.cancel()
    with pytest.raises(asyncio.CancelledError):
        await task
    assert await fake_openai.await_for(lambda rs: rs[0].disconnected, 10), "the server saw the disconnect"
    await client.aclose()


@pytest.mark.req("REQ-MODEL-005")
async def test_an_anthropic_request_is_byte_for_byte_what_the_client_alone_sends(fake_anthropic: FakeAnthropic) -> None:
    """The guard of 'Anthropic stays as it was': the same request, sent by LlmClient alone and through the router
    (with every other provider configured), reaches the API with identical bytes and headers."""
    from tests.fake_anthropic import Reply as AReply

    fake_anthropic.enqueue(AReply.text_reply("one"), AReply.text_reply("two"))
    key = "sk-ant-k-0000000000"
    sent = request(tools=TOOLS, model="claude-sonnet-4-6")
    alone = LlmClient(api_key=key, base_url=fake_anthropic.base_url)
    assert isinstance(await alone.stream(sent, on([])), LlmSuccess)
    await alone.aclose()
    everything = load({"OPENAI_API_KEY": KEY, "OLLAMA_HOST": "127.0.0.1:1", "AZURE_OPENAI_ENDPOINT": "https://x.example"})
    routed = LlmRouter(LlmClient(api_key=key, base_url=fake_anthropic.base_url), everything)
    assert isinstance(await routed.stream(sent, on([])), LlmSuccess)
    await routed.aclose()
    first, second = fake_anthropic.requests
    assert json.dumps(first.body) == json.dumps(second.body)
    assert {k: v for k, v in first.headers.items() if k != "content-length"} == {
        k: v for k, v in second.headers.items() if k != "content-length"}
