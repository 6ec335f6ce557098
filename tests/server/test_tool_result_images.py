"""A tool result with images (REQ-MCP-021): kept by the codec across a restart, and written for each provider:
Anthropic's ``tool_result`` holds the images; Chat Completions' ``tool`` message holds the text, and the images
follow in a ``user`` message naming the call."""

from __future__ import annotations

import pytest

from phoenix_lsp import codec
from phoenix_lsp.core.values import Image, Message, Text, ToolResult, ToolUse
from phoenix_lsp.llm.client import LlmRequest
from phoenix_lsp.llm.openai_client import to_chat
from phoenix_lsp.server.wire import history_to_api

PICTURE = Image("ab" * 32, "image/png")
HISTORY = (
    Message("user", (Text("show me"),)),
    Message("assistant", (ToolUse("toolu_1", "mcp__tracker__picture", {}),)),
    Message("user", (ToolResult("toolu_1", "here is png", images=(PICTURE,)),)),
)


def stored(image_id: str) -> tuple[bytes, str]:
    assert image_id == PICTURE.image_id
    return b"\x89PNG-bytes", "image/png"


@pytest.mark.req("REQ-MCP-021")
def test_the_codec_keeps_a_results_images() -> None:
    message = HISTORY[2]
    text = codec.encode_message(message)
    assert codec.decode_message(text) == message and "PNG-bytes" not in text


@pytest.mark.req("REQ-MCP-021")
def test_each_provider_gets_the_image_where_it_takes_one() -> None:
    messages = history_to_api(HISTORY, stored)
    [result] = messages[-1]["content"]
    assert result["type"] == "tool_result" and [b["type"] for b in result["content"]] == ["text", "image"]
    assert result["content"][1]["source"] == {"type": "base64", "media_type": "image/png",
                                              "data": "iVBORy1ieXRlcw=="}
    chat = to_chat(LlmRequest(model="m", system="s", messages=messages, tools=[], max_tokens=10), "m")["messages"]
    assert [m["role"] for m in chat] == ["system", "user", "assistant", "tool", "user"]
    assert chat[3]["content"] == "here is png"
    label, picture = chat[4]["content"]
    assert label == {"type": "text", "text": "The images the tool call toolu_1 returned:"}
    assert picture == {"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORy1ieXRlcw=="}}
