"""Property, end to end: no sequence of protocol calls produces a ``workspace/applyEdit`` while the
conversation is Restricted, nor without an approval under the interactive policy (REQ-PATCH-009, REQ-PERM-002).

Hypothesis draws short sequences of user actions (mode changes and commands, policy and style changes,
turns in which the model asks to patch a file, answers to approvals, revocations, cancels) and plays each
against ONE real server session (a fresh conversation per example). A small oracle, written from the specs,
says after every step whether an edit may have been sent; every ``workspace/applyEdit`` the client receives
must be one the oracle allowed, and each refused call must get its refusal.
"""

from __future__ import annotations

import asyncio
import re
import threading
from collections.abc import Coroutine, Iterator
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from lsprotocol import types
from pygls.exceptions import JsonRpcException

from tests.e2e.harness import Session, await_status, session
from tests.fake_anthropic import FakeAnthropic, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess


class Remote:
    """An event loop in a thread, so that synchronous Hypothesis examples can drive one async LSP session."""

    def __init__(self) -> None:
        self.loop = asyncio.new_event_loop()
        self.thread = threading.Thread(target=self.loop.run_forever, name="lsp-session", daemon=True)
        self.thread.start()

    def run(self, coro: Coroutine[Any, Any, Any], timeout: float = 60.0) -> Any:
        return asyncio.run_coroutine_threadsafe(coro, self.loop).result(timeout)

    def close(self) -> None:
        self.loop.call_soon_threadsafe(self.loop.stop)
        self.thread.join(10)


@dataclass
class Shared:
    remote: Remote
    s: Session
    served: set[str] = field(default_factory=set)
    counter: int = 0
    allowed_edits: int = 0  # edits the oracle allowed so far (all examples)


def model_handler(shared: Shared) -> Any:
    """The fake model: a user message "write fN.txt" gets a patch creating that file; anything else, text."""

    def handle(body: dict[str, Any]) -> Reply:
        last = body["messages"][-1]
        texts = [b.get("text", "") for b in last["content"] if isinstance(b, dict)] if isinstance(
            last["content"], list) else [last["content"]]
        for text in texts:
            m = re.fullmatch(r"write (f\d+\.txt)", text)
            if m and m.group(1) not in shared.served:
                shared.served.add(m.group(1))
                return Reply.tool_reply(ToolUseBlock("patch", {
                    "path": m.group(1), "patches": [{"operation": "append_eof", "newText": "x\n"}]}))
        return Reply.text_reply("ok")

    return handle


@pytest.fixture
def shared(fake_anthropic: FakeAnthropic, tmp_path: Path, editor: str) -> Iterator[Shared]:
    remote = Remote()
    context = session(fake_anthropic, tmp_path, editor)
    s = remote.run(context.__aenter__())
    state = Shared(remote, s)
    fake_anthropic.handler = model_handler(state)
    try:
        yield state
    finally:
        remote.run(context.__aexit__(None, None, None))
        remote.close()


#: Every user action; turns and answers are listed several times because edits can happen only there.
ACTIONS = st.sampled_from([
    ("setMode", "restricted"), ("setMode", "unrestricted"), ("command", "/execute"), ("command", "/plan"),
    ("policy", "auto"), ("policy", "interactive"), ("revoke", "patch"), ("cancel", ""),
    *(("style", style) for style in ("chat", "discussion", "plan", "development", "task")),
    *[("turn", "")] * 6,
    *[("answer", decision) for decision in ("allow", "deny", "alwaysAllow")] * 2,
])


async def play(shared: Shared, policy: str, steps: list[tuple[str, str]]) -> None:
    s = shared.s
    cid = await s.new(policy=policy)
    mode, always, pending = "restricted", False, None  # the oracle's view
    for action, arg in steps:
        edits_before = len(s.edits)
        may_edit = False
        call = {"conversationId": cid}
        if action in ("setMode", "command"):
            target = arg if action == "setMode" else {"/execute": "unrestricted", "/plan": "restricted"}[arg]
            if action == "setMode":
                await s.request("phoenix/setMode", {**call, "mode": arg})
            else:
                await s.request("phoenix/sendMessage", {**call, "text": arg})
            mode = target
            if pending and mode == "restricted":
                pending = None  # the waiting patch is decided again: refused, never sent
        elif action == "policy":
            await s.request("phoenix/setApprovalPolicy", {**call, "policy": arg})
            policy = arg
        elif action == "style":
            await s.request("phoenix/setStyle", {**call, "style": arg})
        elif action == "revoke":
            await s.request("phoenix/revokeAlwaysAllow", {**call, "toolName": "patch"})
            always = False
        elif action == "cancel":
            await s.request("phoenix/cancel", call)
            pending = None
        elif action == "answer":
            if pending is None:
                with pytest.raises(JsonRpcException) as refused:
                    await s.request("phoenix/respondToApproval", {**call, "toolUseId": "none", "decision": arg})
                assert refused.value.code == -32003
            else:
                await s.request("phoenix/respondToApproval", {**call, "toolUseId": pending, "decision": arg})
                may_edit = arg != "deny"
                always = always or arg == "alwaysAllow"
                pending = None
        elif action == "turn":
            if pending is not None:
                with pytest.raises(JsonRpcException) as busy:
                    await s.request("phoenix/sendMessage", {**call, "text": "hello"})
                assert busy.value.code == -32002
            else:
                shared.counter += 1
                await s.request("phoenix/sendMessage", {**call, "text": f"write f{shared.counter}.txt"})
                if mode == "unrestricted" and (policy == "auto" or always):
                    may_edit = True
                elif mode == "unrestricted":
                    conv = await await_status(s, cid, "awaiting_approval", timeout=10)
                    pending = conv["pendingApproval"]["toolUseId"]
        conv = await await_status(s, cid, "awaiting_approval" if pending else "idle", timeout=10)
        assert conv["mode"] == mode, (action, arg)
        sent = len(s.edits) - edits_before
        assert sent <= (1 if may_edit else 0), f"an edit was sent after {action} {arg} in mode {mode}, {policy}"
        assert sent == (1 if may_edit else 0), f"the allowed edit was not sent after {action} {arg}"
        for params in s.edits[edits_before:]:
            assert mode == "unrestricted"
            assert isinstance(params.edit.document_changes, (list, tuple))
            assert all(isinstance(c, types.CreateFile | types.TextDocumentEdit) for c in params.edit.document_changes)


@pytest.mark.req("REQ-PATCH-009", "REQ-PERM-002", "REQ-PERM-003", "REQ-PERM-007", "REQ-LAYER-001", "REQ-LAYER-002")
@settings(max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(
    policy=st.sampled_from(["auto", "interactive"]),
    mode=st.sampled_from(["restricted", "unrestricted"]),
    steps=st.lists(ACTIONS, min_size=3, max_size=10),
)
def test_no_edit_while_restricted_or_without_approval(
    shared: Shared, policy: str, mode: str, steps: list[tuple[str, str]]
) -> None:
    shared.remote.run(play(shared, policy, [("setMode", mode), *steps]))
    refused = [e for e in shared.s.events if e["kind"] == "toolRefused"]
    assert all(e["toolName"] == "patch" for e in refused)
