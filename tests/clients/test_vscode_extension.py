"""The VS Code extension's own checks (vscode-extension/, `npm test`), run from the project's test command.

`npm test` runs, in order: the generated wire types against specs/protocol.schema.json, `tsc --noEmit`,
eslint, the unit tests of every module that does not import `vscode` (node --test; the webview's DOM under
jsdom), the esbuild bundle, `vsce package`, and an end-to-end test in which the extension's protocol client
talks to the real server (this checkout, this Python) with the model played by tests/fake_anthropic.py.

It runs once per session; each test below then checks that the node tests proving its requirement passed,
by their names in the TAP output. Missing node_modules is a failure (not a skip) naming the install step,
unless PHOENIX_SKIP_CLIENT_TESTS=1.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

# npm builds, lints, packages and runs the extension against the real server: minutes, not the fast tier
pytestmark = pytest.mark.slow

ROOT = Path(__file__).resolve().parents[2]
EXTENSION = ROOT / "vscode-extension"
INSTALL = "scripts/install-vscode-extension-deps.sh"


@dataclass(frozen=True)
class NpmTest:
    returncode: int
    output: str

    def passed(self) -> set[str]:
        return {m.group(1).strip() for m in re.finditer(r"^\s*ok \d+ - (.+)$", self.output, re.M)}

    def failed(self) -> set[str]:
        return {m.group(1).strip() for m in re.finditer(r"^\s*not ok \d+ - (.+)$", self.output, re.M)}


@pytest.fixture(scope="module")
def npm_test() -> NpmTest:
    if os.environ.get("PHOENIX_SKIP_CLIENT_TESTS") == "1":
        pytest.skip("PHOENIX_SKIP_CLIENT_TESTS=1: the VS Code extension's checks are skipped")
    npm = shutil.which("npm")
    if npm is None:
        pytest.fail(
            f"npm is not installed: install Node.js 20+ with npm, then run {INSTALL} "
            "(or set PHOENIX_SKIP_CLIENT_TESTS=1)"
        )
    if not (EXTENSION / "node_modules").is_dir():
        pytest.fail(
            f"vscode-extension/node_modules is missing: run {INSTALL} first (it runs `npm ci` there), "
            "or set PHOENIX_SKIP_CLIENT_TESTS=1 to leave the extension's checks out"
        )
    env = {**os.environ, "PHOENIX_PYTHON": sys.executable, "NO_COLOR": "1", "FORCE_COLOR": "0"}
    proc = subprocess.run(
        [npm, "test"], cwd=EXTENSION, env=env, capture_output=True, text=True, timeout=900, check=False
    )
    return NpmTest(proc.returncode, proc.stdout + proc.stderr)


def _tail(output: str, lines: int = 120) -> str:
    return "\n".join(output.splitlines()[-lines:])


def assert_passed(result: NpmTest, *names: str) -> None:
    assert result.returncode == 0, (
        f"`npm test` in vscode-extension failed (exit {result.returncode}):\n{_tail(result.output)}"
    )
    passed = result.passed()
    missing = [n for n in names if not any(p.startswith(n) for p in passed)]
    assert not missing, (
        f"these node tests did not pass: {missing}\nfailed: {sorted(result.failed())}\n{_tail(result.output)}"
    )


@pytest.mark.req("REQ-VSC-008")
def test_npm_test_passes(npm_test: NpmTest) -> None:
    """Generated wire types fresh, tsc, eslint, unit tests, bundle, vsce package and the e2e test."""
    assert_passed(npm_test, "a conversation with approvals through the extension's protocol client")
    assert "all extension checks passed" in npm_test.output
    assert (EXTENSION / "phoenix-lsp.vsix").is_file(), "vsce package produced no phoenix-lsp.vsix"


@pytest.mark.req("REQ-VSC-001")
def test_server_discovery(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "the setting wins",
        "then phoenix-lsp on PATH",
        "then the workspace's .venv",
        "nothing found: a message that says what, why and what next",
        # spawned at activation, before the language client exists (issue 35)
        "the server process is handed over once it runs, with its stdio",
        "a command that cannot be run rejects with the error that names it, thrown nowhere else",
        # the language client started at load, before activate; activate's own start the fallback (issue 35)
        "the language client is started when the module loads, before activate",
        "an error at load falls back to starting in activate",
        "a second activation in the same host spawns and starts its own client",
        "when the client cannot be started at load nor in activate",
        "calls made before the receiver exists reach it in their order",
        "a server's flood before the receiver is bounded",
        # each chat page's ready said, for bench vscode's window reload -> the chat usable (issue 35)
        "the chat view says when each page's script has run, once per page, and only then",
    )


@pytest.mark.req("REQ-VSC-002", "REQ-VSC-003", "REQ-VSC-009")
def test_conversation_with_approvals_against_the_real_server(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "the answer streams in and is replaced by the persisted message",
        "an upgrade request shows the reason; approving it unrestricts",
        "a patch approval carries the diff",
        "Deny leaves the file alone and marks the card",
        "Always Allow is remembered, listed, and revocable",
        "no command id of the extension collides with one the server announces",
    )


@pytest.mark.req("REQ-VSC-004")
def test_state_comes_from_the_server(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "a reload rebuilds the view from the server, the open approval included",
        "a missed event is a gap closed with getConversation(afterSeq)",
        "open rebuilds the view from every page of getConversation",
        "a seq gap is closed with getConversation(afterSeq)",
        "duplicates are dropped and a skipped seq opens a gap",
    )


@pytest.mark.req("REQ-VSC-005")
def test_chat_view_content(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "markdown renders with highlighted code blocks",
        "streamed text deltas build one item",
        "tool calls become cards",
        "tool cards show the command and output; sub-agents nest under the spawning call",
        "retry status shows until the stream resumes",
        "exhausted conversations offer a continuation; errors keep their next step",
        "the 80% context warning offers to continue in a new conversation",
        "pasted images are attached and sent as base64 with the message",
    )


@pytest.mark.req("REQ-VSC-006")
def test_output_safety(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "raw HTML, script and javascript: links in model output stay text",
        "only http(s) and mailto links become links",
        "terminal escape sequences and control characters are removed",
        "the webview page has a strict CSP",
        "hostile model and tool output never runs script in the webview",
    )


@pytest.mark.req("REQ-VSC-007")
def test_open_diff_shows_the_proposed_result(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "a unified diff applies to the current text",
        "a buffer that moved since the diff still takes it",
        "a diff that no longer matches says which hunk",
        "a patch approval carries the diff; Open diff's proposed text is what lands",
    )


@pytest.mark.req("REQ-LAYER-008")
def test_mode_style_and_policy_are_shown(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "mode, style, policy and always-allow follow their events",
        "the mode item names the mode and warns when the sandbox is unavailable",
        "mode and style are shown and follow their events; a style suggestion offers its command",
    )


@pytest.mark.req("REQ-PERM-009", "REQ-PERM-010")
def test_policy_indicator_and_toggle(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "the policy indicator reads 🚀 Auto / 🔒 Interactive and toggles",
        "Shift+Tab toggles the policy; the composer shows it",
    )


@pytest.mark.req("REQ-PERM-011")
def test_approval_dialog_content(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "the approval dialog shows the tool name first, the description dimmed, compact JSON, the diff and the hint",
        "the hint names the shortcuts; arguments are compact JSON with long values cut",
        "a long tool description is dimmed and folded to its first line; a click unfolds it; the choices stay",
    )


@pytest.mark.req("REQ-PERM-023")
def test_approval_dialog_shows_the_whole_call(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "an approval's arguments are compact JSON, all of them, however long",
        "the approval dialog shows a long command whole, its end included",
    )


@pytest.mark.req("REQ-PERM-020", "REQ-PERM-021", "REQ-PERM-024")
def test_always_allow_scopes_in_the_extension(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "Always Allow offers the narrowest scope first (A) and the whole tool as the other choice (T)",
        "Always Allow's scope choice is posted with its rule",
        "mode, style, policy and always-allow follow their events",
        "Always Allow is remembered, listed, and revocable",
    )


def test_extension_speed_and_stable_selectors(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "a batch of host messages is applied in order and rendered once",
        "the status bar is touched only when the server, mode, sandbox, policy or style change (not per delta)",
        "stable selectors: chat input, send button, timeline, messages with their role, the dialog with data-open, "
        "its choices, the status line",
        # issue 35: host -> webview messages one post per burst, drawn on arrival while shown (once a frame while
        # hidden); a streamed answer drawn in place
        "a message after a quiet frame goes on the next tick, with the rest of its burst",
        "a message within a frame of the last post goes at once too: the host holds nothing back, the webview draws "
        "once a frame",
        "while two posts are on their way, what comes is held and goes as one post once the first is handed over",
        "a post that fails or never settles holds the next one no longer than the limit",
        "while the chat view is hidden, posts that come one by one are drawn in the next frame's one render, in "
        "order, no text lost",
        "a shown chat view draws a delta when its message comes, not in the next frame",
        "drawing a delta reads no layout; the timeline's end is kept in view in the next frame, once for what came "
        "before it",
        "a running turn's icon in the status line turns a quarter at each tick of a timer, not by a CSS animation",
        "while the server starts, the mode item shows a still icon, not a spinning one",
        "drop removes queued messages a newer one makes moot; dispose sends nothing more",
        "a streamed answer is drawn in place: settled blocks are kept, only the block being written is drawn again",
        "a streamed answer is settled up to its last blank line before a block at the margin, outside code fences",
        "rendering a streamed answer's settled blocks apart gives the whole answer's rendering",
    )


@pytest.mark.req("REQ-PERM-012")
def test_approval_dialog_navigation(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "the dialog lists Allow, Deny, Always Allow vertically with Allow focused",
        "Up/Down move within the list and Enter confirms the focused choice",
        "Allow is focused and highlighted, the others dimmed; arrows move; Enter answers",
        "an upgrade request offers Approve / Deny; Escape denies",
    )


@pytest.mark.req("REQ-PERM-013")
def test_approval_dialog_shortcuts(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "Y, N, A answer at once and Escape denies",
        "Y, N, A and Escape answer from the keyboard; one answer per approval",
    )


@pytest.mark.req("REQ-PERM-014")
def test_input_blocked_while_dialog_open(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "every key is consumed while the dialog is open",
        "the input is disabled while the dialog is open and every key goes to the dialog",
    )


@pytest.mark.req("REQ-VSC-010")
def test_the_model_is_chosen_in_the_header_and_the_palette(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "model choices list name and window, mark the model in use and the default",
        "the built-in list says why; the API's list needs no note",
        "the model in use is named by the list when it knows it, else by its id",
        "a refused switch keeps the server's message and its reason",
        "modelChanged switches the model, re-reads the usage against the new window and notes it",
        "the header's model picker lists the models with their window, marks the one in use",
        "a refused model switch shows the server's message in the banner",
        "hostile model names and reasons stay text in the picker",
    )


@pytest.mark.req("REQ-PROTO-051", "REQ-PROTO-052")
def test_the_route_is_chosen_beside_the_model_and_sent_with_every_message(npm_test: NpmTest) -> None:
    """Issue 14's route selector (REQ-AGENT-001, which specs/deferred.md still lists: its id joins once removed)."""
    assert_passed(
        npm_test,
        "the route selector offers ask (the default, first) and agent, each with its words",
        "every sendMessage carries the selected route; before the server has said, none",
        "the route selector beside the model shows the host's route, posts setRoute for the other one",
        "the route through the extension's client: ask by default, setRoute persists agent in ui_settings.json",
    )


@pytest.mark.req("REQ-VSC-011", "REQ-ATTACH-001", "REQ-ATTACH-002")
def test_attachments_as_chips(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "a selection becomes 0-based inclusive lines",
        "file chips say the file and its lines, 1-based",
        "editor diagnostics map to the wire's DiagnosticIn",
        "chips are added once",
        "@ at the caret opens a mention",
        "the fuzzy filter ranks a name match first",
        "the @ picker's exclude glob leaves out the usual directories",
        "typing @ opens the file picker, which filters as the user types",
        "@problems asks the host for the current file's diagnostics",
        "chips from the host show, a chip's",
        "a refused attachment keeps the draft and the chips",
        "files dropped from the explorer are attached by their URIs",
        "hostile file names stay text in chips and in the picker",
        "attachments reach the server; a refused one names the file and its index",
    )


@pytest.mark.req("REQ-ATTACH-003")
def test_attachments_shown_in_the_transcript(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "a user message's attachment blocks become attachment items with their label",
        "attachments in the transcript are folded under their label and shown as text",
    )


@pytest.mark.req("REQ-VSC-012", "REQ-INSTR-003")
def test_instructions_line(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "the instructions line shows paths relative to the workspace, the cut and the skipped",
        "the instruction files in effect come from getConversation and are rebuilt by a fresh snapshot",
        "the instruction files in effect are listed at the top of the conversation, relative to the workspace",
    )


@pytest.mark.req("REQ-PERM-025")
def test_the_dialog_takes_the_keyboard_only_from_the_chat(npm_test: NpmTest) -> None:
    """The webview's side; the real-VS-Code test checks the workbench's focus (tests/clients/vscode_real)."""
    assert_passed(
        npm_test,
        "the user in the editor keeps the keyboard while the dialog is open and events redraw the chat",
        "a dialog that opens while the user is elsewhere waits; it takes the keyboard when the user comes back",
        "a dialog restored after a reload does not take the keyboard by itself",
        "a dialog that closes while the user is in the editor leaves the keyboard there",
        "Allow is focused and highlighted, the others dimmed; arrows move; Enter answers",
    )


@pytest.mark.req("REQ-VSC-013")
def test_what_a_first_time_user_sees(npm_test: NpmTest) -> None:
    assert_passed(
        npm_test,
        "before any conversation the status bar shows the mode, policy and style a new one starts with",
        "a webview that opens after the first model list names the model as the status bar does",
    )


@pytest.mark.req("REQ-VSC-014")
def test_stop_shows_only_while_a_turn_runs(npm_test: NpmTest) -> None:
    assert_passed(npm_test, "the chat view's stop button shows only while a turn runs")


@pytest.mark.req("REQ-VSC-016")
def test_model_list_notes_are_sentences(npm_test: NpmTest) -> None:
    assert_passed(npm_test, "a model-list note never quotes a web page raw: it says what happened, why and what next")


@pytest.mark.req("REQ-PROTO-055")
def test_the_extensions_tables_name_every_kind_and_tool(npm_test: NpmTest) -> None:
    """The compiler checks the Records against the generated types; these compare them with the schema."""
    assert_passed(
        npm_test,
        "the reducer handles exactly the schema's event kinds",
        "the timeline has an icon for exactly the schema's tools",
        "a kind or a tool added to the schema fails each comparison",
        "an event of an unknown kind is shown as a warning, once per kind, and its seq is tracked",
        "a tool this version does not know gets a card that says so",
    )


@pytest.mark.req("REQ-VSC-017")
def test_a_multi_file_review(npm_test: NpmTest) -> None:
    """Issue 36: a bash command's captured changes, as the server asks about them, in the chat view's dialog."""
    assert_passed(
        npm_test,
        "a shell review's diff is read into its files: status, path, +/- counts, and the summary",
        "a file's text that looks like a file header does not add a file to the review",
        "the dialog shows a multi-file review: the command, each file with its counts, the summary, no raw JSON",
        "Deny answers a review for the whole, from the keyboard",
        "a review of 200 changed files lists every file and draws no diff line until one is opened",
        "hostile paths and summary lines in a review stay text",
        "the bash card keeps the diff of every file the review applied, listed by file",
        "the server's own review event (tests/clients/shell_review_event.json) is read file by file",
        "a review's card, once allowed, is done and shows the command, not its arguments as JSON",
        "a denied review's card says denied",
    )


@pytest.mark.req("REQ-VSC-018")
def test_accepted_shell_changes_are_saved(npm_test: NpmTest) -> None:
    """Issue 36: a review's or an undo's documents are saved after VS Code applied the edit; a patch is not."""
    assert_passed(
        npm_test,
        "a review's and an undo's documents are saved once applied: created, renamed to and edited, once each",
        "a patch, or an edit labelled almost alike, stays unsaved",
        "a document created then deleted, or renamed away, is not saved",
    )
