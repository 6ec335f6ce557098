"""The published JSON Schema is the models' own, and it describes what the models send."""

from __future__ import annotations

import json
from pathlib import Path

import jsonschema
import pytest

from phoenix_lsp.protocol import events, results, views
from phoenix_lsp.protocol.base import to_wire
from phoenix_lsp.protocol.methods import METHODS
from phoenix_lsp.protocol.schema import build, render

SCHEMA_FILE = Path(__file__).resolve().parents[2] / "specs" / "protocol.schema.json"


def validator(name: str) -> jsonschema.Draft202012Validator:
    schema = build()
    return jsonschema.Draft202012Validator({"$ref": f"#/$defs/{name}", "$defs": schema["$defs"]})


@pytest.mark.req("REQ-PROTO-037")
def test_checked_in_schema_is_current() -> None:
    assert SCHEMA_FILE.read_text(encoding="utf-8") == render(), (
        "specs/protocol.schema.json is stale: run `python -m phoenix_lsp.protocol.schema > "
        "specs/protocol.schema.json` and commit it (the editor clients' types are generated from it)"
    )


@pytest.mark.req("REQ-PROTO-037")
def test_every_method_and_event_kind_is_in_the_schema() -> None:
    schema = build()
    assert set(schema["properties"]["requests"]["properties"]) == set(METHODS)
    kinds = set(schema["$defs"]["PhoenixEvent"]["discriminator"]["mapping"])
    assert {"status", "message", "textDelta", "approvalRequested", "error", "subAgentFinished"} <= kinds
    assert len(kinds) == len(events.EventKinds.__args__)


@pytest.mark.req("REQ-PROTO-037")
def test_an_optional_field_is_left_out_never_null() -> None:
    event = events.SubAgentFinished(conversation_id="c", seq=3, time=1.0, agent_id="a", outcome="submitted")
    wire = to_wire(event)
    assert "reason" not in wire and "parentConversationId" not in wire
    validator("SubAgentFinished").validate(wire)
    with pytest.raises(jsonschema.ValidationError):
        validator("SubAgentFinished").validate({**wire, "reason": None})
    with pytest.raises(jsonschema.ValidationError):  # stamped fields are required on the wire
        validator("SubAgentFinished").validate({k: v for k, v in wire.items() if k != "seq"})


@pytest.mark.req("REQ-PROTO-037")
def test_wire_form_is_camel_case_and_validates() -> None:
    block = views.ToolUseBlock(tool_use_id="t1", tool_name="bash", arguments={"command": "ls"})
    message = views.MessageView(seq=2, message_id="0", role="assistant", content=[block], created_at=1.5)
    wire = to_wire(events.MessageAdded(conversation_id="c", seq=2, time=1.5, message=message))
    assert wire["message"]["content"][0] == {
        "type": "toolUse", "toolUseId": "t1", "toolName": "bash", "arguments": {"command": "ls"}
    }
    validator("PhoenixEvent").validate(wire)
    result = to_wire(results.SendMessageResult(message_id="3"))
    assert result == {"accepted": True, "messageId": "3"}
    validator("SendMessageResult").validate(result)


def test_schema_file_is_valid_json_schema() -> None:
    jsonschema.Draft202012Validator.check_schema(json.loads(SCHEMA_FILE.read_text(encoding="utf-8")))
