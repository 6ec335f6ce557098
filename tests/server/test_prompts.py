"""What the model is told: style prompts and the fixed tool lists."""

from __future__ import annotations

import pytest

from phoenix_lsp.core.values import Style
from phoenix_lsp.server import prompts


@pytest.mark.req("REQ-LAYER-005", "REQ-LAYER-001")
def test_each_style_has_its_own_prompt_and_the_prompt_never_names_a_current_mode() -> None:
    texts = {style: prompts.system_prompt(style, "/w", False, True) for style in Style}
    assert len(set(texts.values())) == 5
    assert "Do not write code" in texts[Style.PLAN] and "code-centric" in texts[Style.DEVELOPMENT]
    for text in texts.values():  # mode changes reach the model as [system] messages, not as a new prompt
        assert "started in Restricted mode" in text


@pytest.mark.req("REQ-BED-017", "REQ-BED-009")
def test_tool_definitions_are_fixed_per_kind_of_conversation() -> None:
    parent = [t["name"] for t in prompts.tool_schemas(False)]
    child = [t["name"] for t in prompts.tool_schemas(True)]
    assert parent == ["read_file", "list_directory", "search_files", "bash", "patch", "request_mode_upgrade",
                      "spawn_agents"]
    assert child == ["read_file", "list_directory", "search_files", "bash", "patch", "submit_result"]
    assert prompts.tool_schemas(False) == prompts.tool_schemas(False)  # nothing depends on state
    upgrade = next(t for t in prompts.tool_schemas(False) if t["name"] == "request_mode_upgrade")
    assert upgrade["input_schema"]["required"] == ["reason"]
