"""What the model is told: style prompts (the tool definitions: tests/tools/test_registry.py)."""

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
