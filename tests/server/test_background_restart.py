"""A background command's review at rest that a server's stop cut short does not outlive it (REQ-BASH-044): the
conversation rests (idle) with the review under way in its stored state; the next server loads it, ends the review
(its layer went with the old server) and tells the model, so a message is taken again. The real hub and store; the
witnesses are the stored state and what the next model request carries."""

from __future__ import annotations

from pathlib import Path

import pytest

from phoenix_lsp.core import texts
from phoenix_lsp.core.events import HostCall, ReviewBackground, UserMessage
from phoenix_lsp.core.tools import PATCH, ToolKind
from phoenix_lsp.core.values import Mode, Policy, ToolUse
from phoenix_lsp.store import Store
from tests.server.test_runtime import RecordingSink, Rig, ScriptedLlm, make_hub, stop, text

pytestmark = pytest.mark.req("REQ-BASH-044")


async def test_a_review_under_way_at_a_stop_is_over_after_the_restart(tmp_path: Path) -> None:
    workdir = tmp_path / "work"
    workdir.mkdir()
    first = Store(tmp_path / "data" / "phoenix.db")
    rig = Rig(make_hub(first, RecordingSink(), ScriptedLlm()), first, RecordingSink(), ScriptedLlm(), workdir)
    runtime = rig.new(Policy.INTERACTIVE, Mode.UNRESTRICTED)
    assert runtime.apply(ReviewBackground("background-ab12", "make gen")).reject is None
    question = ToolUse("background-ab12.review", PATCH, {"command": "make gen", "files": ["a.txt"]})
    assert runtime.apply(HostCall("background-ab12", question, ToolKind.WRITE)).reject is None
    assert runtime.apply(UserMessage("hello")).reject is not None, "no turn while it is under review"
    await stop(rig.hub)
    rig.store.close()  # the server stops with the question open

    store = Store(tmp_path / "data" / "phoenix.db")
    sink, llm = RecordingSink(), ScriptedLlm()
    hub = make_hub(store, sink, llm)
    try:
        assert hub.restore() == 0, "the conversation rests: the restore of busy ones does not reach it"
        again = hub.get(runtime.id)
        assert again.state.reviewing is None and again.state.review_question is None
        llm.enqueue(text("ok"))
        assert again.apply(UserMessage("hello")).reject is None
        await sink.rest(runtime.id, 0)
        told = str(llm.requests[0].messages)
        assert texts.REVIEW_INTERRUPTED in told
    finally:
        await stop(hub)
        store.close()
