"""A tool's call in one line, for run_plan's catalogue (issue 25)."""

from __future__ import annotations

import pytest

from phoenix_lsp.agent.signatures import signature


@pytest.mark.req("REQ-AGENT-035")
def test_a_signature_shows_required_arguments_first_defaults_and_the_result_as_the_script_gets_it() -> None:
    schema = {"type": "object", "required": ["body", "number"], "properties": {
        "number": {"type": "integer"}, "tag": {"anyOf": [{"type": "string"}, {"type": "null"}], "default": None},
        "limit": {"type": "integer", "default": 30}, "body": {"type": "string"}}}
    output = {"type": "array", "items": {"$ref": "#/$defs/I"},
              "$defs": {"I": {"type": "object", "properties": {"number": {}, "labels": {}}}}}
    assert signature("issues_f", schema, output) == (
        "issues_f(number: int, body: str, tag: str | None = None, limit: int = 30) -> list[{number, labels}]")
    assert signature("issues_g", {"type": "object", "properties": {}}, None) == "issues_g()"
    many = {"type": "object", "properties": {f"k{i}": {} for i in range(15)}}
    assert signature("s_h", None, many).endswith("k9, ...}")
