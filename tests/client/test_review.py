"""The terminal chat's approval of a multi-file review (issue 36, REQ-PROTO-065): a bash command's captured
changes, in the shape the server asks about them (a host call named like the patch tool whose ``diff`` holds the
summary as ``# `` lines, then the git-style diff of every text file), shown by the client's own event view on
its own screen and answered with its own commands.

The server that makes such a review is issue 36's server part; until it is in this tree the event is built here
in its shape (``tests/clients/nvim/test_review.py``'s ``review_event``) and parsed by the protocol's own model,
and the answer is read where the client sends it (the request it makes, recorded instead of sent).
"""

from __future__ import annotations

import io
from typing import Any

import pytest

from phoenix_lsp.client.commands import Commands
from phoenix_lsp.client.conversation import Conversation
from phoenix_lsp.client.events import EventView
from phoenix_lsp.client.screen import Screen
from tests.clients.nvim.test_review import review_event, server_event


class Client:
    """The terminal client's view and commands over a screen that writes to a string."""

    def __init__(self) -> None:
        self.out = io.StringIO()
        self.screen = Screen(self.out, color=False)
        self.conv = Conversation(id="c-1", status="running_tool", mode="unrestricted")
        self.conv.seq.arrive(8)
        self.sent: list[tuple[str, dict[str, Any]]] = []
        self.view = EventView(self.conv, self.screen, lambda: None, self.request, lambda c: c.close())
        self.commands = Commands(self.conv, self.screen, self.request)

    async def request(self, method: str, params: dict[str, Any]) -> Any:
        self.sent.append((method, params))
        return {}

    def shown(self) -> list[str]:
        """What the prompt loop prints for the open question (terminal.py prints each line of its text)."""
        for line in self.conv.questions[0].text:
            self.screen.line(line)
        return self.out.getvalue().splitlines()


@pytest.mark.req("REQ-PROTO-065")
async def test_the_approval_shows_the_tool_the_files_the_summary_and_each_diff_not_the_json() -> None:
    client = Client()
    event = review_event(4)
    client.view.on_event(event)
    lines = client.shown()
    text = "\n".join(lines)
    assert lines[0] == "[approval] patch: 4 text files (+3 -2), 2 other change(s) changed by the command"
    assert "  $ sed -i s/one/ONE/ src/*.py" in lines
    assert "  created  src/mod000.py +2 -0" in lines and "  deleted  src/mod001.py +0 -1" in lines
    assert "  renamed  old/src/mod002.py -> src/mod002.py +0 -0" in lines
    assert "  modified src/mod003.py +1 -1" in lines
    assert "  other    build/out.bin" in lines and "  other    node_modules/x.js" in lines
    assert "    ignored folder node_modules: 1 (12 B)" in lines and "    binary: 1 (4 B)" in lines
    at = lines.index("  == modified src/mod003.py ==")
    assert lines[at + 1:at + 7] == ["  @@ -1,4 +1,4 @@", "   zero", "  -one 3", "  +ONE 3", "   two", "   three"]
    assert "arguments:" not in text and '{"command"' not in text, "the files, not the raw JSON"
    assert "Apply what the bash command changed" not in text, "not the description"
    await client.commands.answer(client.conv.questions[0], "y")
    assert client.sent == [("phoenix/respondToApproval",
                            {"conversationId": "c-1", "toolUseId": "b1.review", "decision": "allow"})]
    assert not client.conv.questions


@pytest.mark.req("REQ-PROTO-065")
async def test_a_files_text_that_looks_like_a_header_adds_no_file_and_control_sequences_are_inert() -> None:
    client = Client()
    event = review_event(4, forged=True)
    event["diff"] = event["diff"].replace("src/mod003.py", "src/mod003\x1b[2J.py")
    client.view.on_event(event)
    lines = client.shown()
    assert "  modified src/mod003␛[2J.py +1 -1" in lines  # the escape shown, not obeyed
    assert not any(line.lstrip().startswith(("modified evil.py", "renamed evil.py")) for line in lines)
    assert "\x1b" not in client.out.getvalue()
    await client.commands.answer(client.conv.questions[0], "n")
    assert client.sent[-1][1]["decision"] == "deny"


@pytest.mark.req("REQ-PROTO-065")
def test_a_one_file_patch_approval_is_shown_as_its_file_and_diff() -> None:
    client = Client()
    client.view.on_event({
        "kind": "approvalRequested", "conversationId": "c-1", "seq": 9, "time": 0, "toolUseId": "p1",
        "toolName": "patch", "description": "Change a file", "arguments": {"path": "f.py", "patches": []},
        "diff": "--- a/f.py\n+++ b/f.py\n@@ -1,1 +1,2 @@\n a\n+x\n", "scopes": []})
    lines = client.shown()
    # the tool, the file and the diff (issue 38): not the description written for the model, not the raw JSON
    assert lines[:3] == ["[approval] patch f.py", "  --- a/f.py", "  +++ b/f.py"]
    assert not any("Change a file" in line or '"patches"' in line for line in lines)


@pytest.mark.req("REQ-PROTO-065")
def test_the_servers_own_review_event_is_shown_file_by_file() -> None:
    client = Client()
    client.view.on_event(server_event())
    lines = client.shown()
    assert lines[2:7] == ["  modified a.txt +1 -1", "  deleted  gone.txt +0 -1",
                          "  renamed  old.txt -> moved.txt +0 -0", "  created  new.txt +1 -0",
                          "  modified tricky.txt +1 -1"]
    assert "  other    node_modules/p/i.js" in lines and "    ignored folder node_modules: 3 (2 B)" in lines
    at = lines.index("  == modified tricky.txt ==")
    assert lines[at + 1:at + 5] == ["  @@ -1,2 +1,2 @@", "  --- a/evil.py", "  +++ b/evil.py", "   keep"]
