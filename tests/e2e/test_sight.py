"""End-to-end: the agent sees what the editor sees (issue 29, specs/sight.md).

A real LSP client (pytest-lsp) drives the real server; the model is the fake Anthropic server, whose recorded
requests show what the model was told. The client plays an editor with the sight: its buffers are the
``Buffers`` FAKE of harness.py (no real editor runs here) and its linter is the real ``ruff`` (a test
dependency), run on each buffer's text whenever it changes, as an editor's language server would. The real
editors are tested in tests/clients (Neovim with ``ruff server``; VS Code).
"""

from __future__ import annotations

import asyncio
import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from tests.e2e.harness import SCHEMA, WAIT_S, Buffers, Session, drift, last_seq, session, tool_results, wait_idle
from tests.fake_anthropic import FakeAnthropic, RecordedRequest, Reply, ToolUseBlock

pytestmark = pytest.mark.slow  # each test starts the real server as a subprocess

SIGHT_TOOLS = {"editor_problems", "find_definition", "find_references"}
RUFF = [sys.executable, "-m", "ruff"]


def ruff_diagnostics(path: Path, text: str) -> list[dict[str, Any]]:
    """The real ruff's problems in ``text`` as LSP diagnostics (what an editor's ruff server reports)."""
    done = subprocess.run([*RUFF, "check", "--no-cache", "--isolated", "--select", "F", "--output-format", "json",
                           "--stdin-filename", str(path), "-"], input=text, capture_output=True, text=True,
                          check=False)
    out = []
    for d in json.loads(done.stdout or "[]"):
        start, end = d["location"], d["end_location"]
        out.append({"range": {"start": {"line": start["row"] - 1, "character": start["column"] - 1},
                              "end": {"line": end["row"] - 1, "character": end["column"] - 1}},
                    "severity": 1 if d["code"] == "F821" else 2, "message": d["message"],
                    "source": "Ruff", "code": d["code"]})
    return out


class SightEditor(Buffers):
    """The FAKE buffers with the real ruff as their linter, answering the server's sight requests."""

    def __init__(self, s: Session, *, answer: bool = True) -> None:
        super().__init__(s)
        self.diagnostics: dict[str, list[dict[str, Any]]] = {}
        self.changes: dict[str, int] = {}
        self.changed = asyncio.Event()
        self.asked: list[tuple[str, dict[str, Any]]] = []
        self.locations: list[dict[str, Any]] = []  # what the editor's provider answers to editorLocations

        @s.client.feature("phoenix/editorDiagnostics")  # type: ignore[untyped-decorator]  # pygls is untyped here
        async def diagnostics(params: Any) -> dict[str, Any]:
            params = self.checked("phoenix/editorDiagnostics", _plain(params))
            if not answer:
                await asyncio.Event().wait()  # an editor that stopped answering
            since = params.get("since") or {}
            loop = asyncio.get_running_loop()
            deadline = loop.time() + params.get("settleMs", 0) / 1000
            while any(self.changes.get(u, 0) <= n for u, n in since.items()) and loop.time() < deadline:
                self.changed.clear()
                try:
                    await asyncio.wait_for(self.changed.wait(), deadline - loop.time())
                except TimeoutError:
                    break
            uris = params.get("uris") or list(self.diagnostics)
            return {"files": [{"uri": u, "changes": self.changes.get(u, 0), "diagnostics": self.diagnostics.get(u, [])}
                              for u in uris]}

        @s.client.feature("phoenix/editorLocations")  # type: ignore[untyped-decorator]  # pygls is untyped here
        async def locations(params: Any) -> dict[str, Any]:
            self.checked("phoenix/editorLocations", _plain(params))
            if not answer:
                await asyncio.Event().wait()
            return {"locations": self.locations}

    def checked(self, method: str, params: dict[str, Any]) -> dict[str, Any]:
        """Record a request, and what in its params the published schema does not allow (REQ-SIGHT-002)."""
        self.asked.append((method, params))
        ref = SCHEMA["properties"]["clientRequests"]["properties"][method]["properties"]["params"]["$ref"]
        self.session.drifts += drift(ref, params, f"{method} params")
        return params

    def lint(self, path: Path) -> None:
        uri = path.as_uri()
        self.diagnostics[uri] = ruff_diagnostics(path, self.text(path))
        self.changes[uri] = self.changes.get(uri, 0) + 1
        self.changed.set()

    def open(self, path: Path, text: str, version: int = 1) -> None:
        super().open(path, text, version)
        self.lint(path)

    def change(self, path: Path, text: str) -> None:
        super().change(path, text)
        self.lint(path)


def _plain(params: Any) -> dict[str, Any]:
    """pygls hands a custom method's params over as an object of attributes; back to JSON."""
    if isinstance(params, dict):
        return params
    return json.loads(json.dumps(params, default=lambda o: o.__dict__ if hasattr(o, "__dict__") else o._asdict()))


async def unrestricted(s: Session, policy: str = "auto") -> str:
    cid = await s.new(policy=policy)
    await s.request("phoenix/setMode", {"conversationId": cid, "mode": "unrestricted"})
    return cid


async def turn(s: Session, cid: str, *calls: ToolUseBlock, timeout: float = WAIT_S) -> list[RecordedRequest]:
    s.fake.enqueue(Reply.tool_reply(*calls), Reply.text_reply("done"))
    before, mark = len(s.fake.requests), last_seq(s, cid)
    await s.request("phoenix/sendMessage", {"conversationId": cid, "text": "go"})
    await wait_idle(s, cid, mark, timeout)
    return s.fake.requests[before:]


def tool_names(request: RecordedRequest) -> set[str]:
    return {t["name"] for t in request.body.get("tools", [])}


def result_text(request: RecordedRequest) -> str:
    (result,) = tool_results(request).values()
    content = result["content"]
    return content if isinstance(content, str) else "".join(b.get("text", "") for b in content)


ORIGINAL = "import os\n\n\ndef area(r):\n    return 3.14 * r * r\n"
#: two lines in front: the unused import of os moves from line 1 to line 3 (not new); sys and the name are new
PATCH = ToolUseBlock("patch", {"path": "app.py", "patches": [
    {"operation": "prepend_bof", "newText": "import sys\nprint(undefined_name)\n"}]})


@pytest.mark.req("REQ-SIGHT-001", "REQ-SIGHT-002")
async def test_a_patch_result_tells_the_model_the_new_problems(fake_anthropic: FakeAnthropic, tmp_path: Path) -> None:
    async with session(fake_anthropic, tmp_path, sight=True) as s:
        app = s.workdir / "app.py"
        app.write_text(ORIGINAL)
        editor = SightEditor(s)
        s.on_apply_edit = editor.apply
        editor.open(app, ORIGINAL)
        assert [d["code"] for d in editor.diagnostics[app.as_uri()]] == ["F401"]  # os, before the patch
        cid = await unrestricted(s)
        requests = await turn(s, cid, PATCH)
        assert tool_names(requests[0]) >= SIGHT_TOOLS
        told = result_text(requests[1])
        assert told.startswith("Patched app.py"), told
        assert "After this patch the editor reports 1 error and 1 warning new in app.py:" in told, told
        assert "2:7 error Ruff(F821): Undefined name `undefined_name`" in told, told
        assert "1:8 warning Ruff(F401): `sys` imported but unused" in told, told
        assert "`os`" not in told, "the unused os only moved with the edit's line shift: not new"
        # the user sees it in the chat: it is the tool result of the conversation's history
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert "Undefined name `undefined_name`" in json.dumps(conv)
        # the same patch's text again changes nothing new: a few words
        again = await turn(s, cid, ToolUseBlock("patch", {"path": "app.py", "patches": [
            {"operation": "replace", "oldText": "3.14", "newText": "3.14159"}]}))
        assert result_text(again[1]).endswith("The editor reports no new problems in app.py."), result_text(again[1])


@pytest.mark.req("REQ-SIGHT-002", "REQ-SIGHT-005")
async def test_editor_read_tools_answer_in_restricted_without_asking(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    async with session(fake_anthropic, tmp_path, sight=True) as s:
        app = s.workdir / "app.py"
        app.write_text(ORIGINAL + "\nprint(area(2))\n")
        editor = SightEditor(s)
        editor.open(app, app.read_text())
        editor.locations = [{"uri": app.as_uri(), "range": {"start": {"line": 3, "character": 4},
                                                            "end": {"line": 3, "character": 8}}}]
        cid = await s.new(policy="interactive")  # Restricted, and every write or exec would ask
        conv = await s.request("phoenix/getConversation", {"conversationId": cid})
        assert conv["mode"] == "restricted"
        requests = await turn(s, cid, ToolUseBlock("find_definition", {"path": "app.py", "line": 7, "symbol": "area"}))
        told = result_text(requests[1])
        assert "app.py:4:5  def area(r):" in told, told
        # the editor may ask its providers again while they answer nothing, for the server's wait (the default
        # 1.5 s) less 0.5 s: its own language server may still be starting (REQ-SIGHT-005)
        assert ("phoenix/editorLocations", {"kind": "definition", "uri": app.as_uri(),
                                            "position": {"line": 6, "character": 6}, "waitMs": 1000}) in editor.asked
        requests = await turn(s, cid, ToolUseBlock("editor_problems", {}))
        told = result_text(requests[1])
        assert "app.py:" in told and "F401" in told and "`os` imported but unused" in told, told
        assert not s.of("approvalRequested"), "read tools are never asked about"


@pytest.mark.req("REQ-SIGHT-002", "REQ-SIGHT-003")
async def test_a_client_without_the_sight_gets_no_tools_and_no_problems(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    async with session(fake_anthropic, tmp_path) as s:  # a rich client that does not announce editorSight
        app = s.workdir / "app.py"
        app.write_text(ORIGINAL)
        editor = SightEditor(s)
        s.on_apply_edit = editor.apply
        editor.open(app, ORIGINAL)
        cid = await unrestricted(s)
        requests = await turn(s, cid, PATCH)
        assert not SIGHT_TOOLS & tool_names(requests[0])
        told = result_text(requests[1])
        assert told.startswith("Patched app.py") and "problem" not in told and "editor reports" not in told, told
        assert editor.asked == [], "the server asks nothing of a client that did not announce the sight"
        requests = await turn(s, cid, ToolUseBlock("editor_problems", {}))
        # a call of a tool the request does not offer reaches the next request as text, its refusal quoted after it
        # (REQ-AGENT-046)
        told = [b.get("text", "") for b in requests[1].messages[-1]["content"]]
        assert any("Unknown tool 'editor_problems'" in text for text in told), told


@pytest.mark.req("REQ-SIGHT-003")
async def test_an_editor_that_does_not_answer_never_blocks_the_turn(
    fake_anthropic: FakeAnthropic, tmp_path: Path
) -> None:
    env = {"PHOENIX_SIGHT_SETTLE_MS": "200", "PHOENIX_SIGHT_TIMEOUT_MS": "300"}
    async with session(fake_anthropic, tmp_path, sight=True, env=env) as s:
        app = s.workdir / "app.py"
        app.write_text(ORIGINAL)
        editor = SightEditor(s, answer=False)
        s.on_apply_edit = editor.apply
        editor.open(app, ORIGINAL)
        cid = await unrestricted(s)
        requests = await turn(s, cid, PATCH)
        told = result_text(requests[1])
        assert told.startswith("Patched app.py") and "editor reports" not in told, told
        assert app.as_uri() in {p.get("uris", [""])[0] for m, p in editor.asked}
        requests = await turn(s, cid, ToolUseBlock("find_references", {"path": "app.py", "line": 6, "symbol": "area"}))
        told = result_text(requests[1])
        assert "The editor did not answer within 0.3 s" in told, told
        assert editor.text(app).startswith("import sys\n"), "the patch itself was applied"
