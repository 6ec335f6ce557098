"""The plain editors' transcript names a conversation's images as every client does (issue 37, REQ-MCP-024): a
tool's images before its result, the user's by label, with the size the store holds."""

from __future__ import annotations

import pytest

from phoenix_lsp.core.machine import new_conversation
from phoenix_lsp.core.values import Image, Message, Text, ToolResult, ToolUse
from phoenix_lsp.server import transcript


@pytest.mark.req("REQ-MCP-024")
def test_the_transcript_names_a_tools_image_and_the_users() -> None:
    sizes = {"a" * 64: 2048, "b" * 64: 3 * 1024}
    history = (
        Message("user", (Text("show me the chart"), Image("a" * 64, "image/png"))),
        Message("assistant", (ToolUse("p1", "mcp__tracker__picture", {"kind": "png"}),)),
        Message("user", (ToolResult("p1", "here is png", images=(Image("b" * 64, "image/jpeg"),)),)),
    )
    state = new_conversation("c1", model="m", working_directory="/w", sandbox=True, history=history)
    text = transcript.render(state, "chart", size=sizes.get)
    assert "*(image (PNG, 2 KB))*" in text
    assert "**Tool result**\n\n*(image (JPEG, 3 KB))*\n\n```\nhere is png" in text, text
