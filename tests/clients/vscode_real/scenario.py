"""The fake model's script for the real-VS-Code test: replies chosen by the user's message.

Each prompt below is a key (plain words, so that the screenshots read naturally). The handler finds the last
user message that contains one, picks that prompt's script, and answers with the
reply of the current round (how many assistant messages already followed that user message). Tool-use ids
are fresh per call so a repeated prompt still works.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from tests.fake_anthropic import Reply, ToolUseBlock

STREAMED = "Streaming works: alpha, beta, gamma, delta, epsilon, zeta, eta, theta."
UPGRADE_REASON = "I need write access to edit hello.py"
PATCH_ALLOWED = "# patched by phoenix\n"
PATCH_DENIED = "# this line must never land\n"
PATCH_AFTER_RELOAD = "# approved after the reload\n"


def _patch(text: str) -> ToolUseBlock:
    return ToolUseBlock("patch", {"path": "hello.py", "patches": [{"operation": "append_eof", "newText": text}]})


ASK_STREAM = "Hello Phoenix! What can you do?"
ASK_UPGRADE = "You may edit files in this workspace."
ASK_PATCH_ALLOW = "Add a comment at the end of hello.py."
ASK_PATCH_DENY = "Add another line to hello.py."
ASK_PATCH_RELOAD = "One more edit to hello.py, please."
ASK_LIST = "List the workspace with ls."
ASK_LIST_AGAIN = "List it once more."
LISTED = "That is the workspace."
LISTED_AGAIN = "Listed again without asking."
ASK_MODEL = "Which model answers now?"
ASK_ATTACH = "What do the attached lines and notes say?"
ATTACH_ANSWER = "The selection greets; the notes are about the workspace."
MODEL_ANSWER = "The model chosen in the header answers."
ASK_PLAN = "Add one, two and three in a plan."
PLAN_ANSWER = "The plan says six."

# the editor's sight (issue 29): a JSON file the patch breaks
CONFIG = '{\n  "name": "demo",\n  "size": 1\n}\n'
ASK_BREAK_JSON = "Drop the comma after the name in config.json."
JSON_ANSWER = "The editor says the JSON is broken now."

# a definition answered by VS Code's TypeScript language features, for a file the editor never showed, in a
# project with a tsconfig.json as TypeScript projects have (without one, and with the file in no tab, VS Code's
# TypeScript extension was seen to keep answering from its syntax-only server: the import line, for 20 s)
TSCONFIG = '{\n  "compilerOptions": { "strict": true },\n  "include": ["*.ts"]\n}\n'
LIB_TS = "export function area(r: number): number {\n  return 3 * r * r;\n}\n"
MAIN_TS = 'import { area } from "./lib";\n\nconsole.log(area(2));\n'
# a TypeScript file outside the project (tsconfig includes only the top directory's files), opened early (after
# the first answer) as a user opens some file: VS Code's TypeScript server starts then, not inside the lookup's
# time. Started by the lookup itself on a loaded machine (two CPU hogs beside the test), the server took longer
# than the 25 s the lookup may wait, and the answer was the syntax server's (the import line).
WARM_TS_PATH = "scratch/warm.ts"
WARM_TS = "export const warm = 1;\n"
ASK_DEFINITION = "Where is area defined?"
DEFINITION_ANSWER = "It is defined in lib.ts."

# MCP tools (issue 37): the tests' tracker server, from the user's registry (tests/tools/tracker.py)
ASK_MCP_RESTRICTED = "What is open in the tracker?"
MCP_RESTRICTED_ANSWER = "Two issues are open; filing one needs Unrestricted."
ASK_MCP_UNRESTRICTED = "File the flaky test and close issue 2."
MCP_UNRESTRICTED_ANSWER = "Filed and closed."

# a project's server (.mcp.json written into the workspace): asked about in VS Code's notification first
ASK_MCP_PROJECT = "What does the project's board say?"
MCP_PROJECT_ANSWER = "The board lists two issues."


def _mcp(tool: str, arguments: dict[str, Any]) -> ToolUseBlock:
    return ToolUseBlock(f"mcp__tracker__{tool}", arguments)


SCRIPTS: dict[str, list[Callable[[], Reply]]] = {
    ASK_MCP_PROJECT: [
        lambda: Reply.tool_reply(ToolUseBlock("mcp__board__list_issues", {})),
        lambda: Reply.text_reply(MCP_PROJECT_ANSWER),
    ],
    ASK_MCP_RESTRICTED: [  # a read runs without a dialog; the write is refused by the mode
        lambda: Reply.tool_reply(_mcp("list_issues", {})),
        lambda: Reply.tool_reply(_mcp("create_issue", {"title": "refused in restricted"})),
        lambda: Reply.text_reply(MCP_RESTRICTED_ANSWER),
    ],
    ASK_MCP_UNRESTRICTED: [  # denied (N), then Always Allow for the server (S), which covers close_issue
        lambda: Reply.tool_reply(_mcp("create_issue", {"title": "denied one"})),
        lambda: Reply.tool_reply(_mcp("create_issue", {"title": "flaky test"})),
        lambda: Reply.tool_reply(_mcp("close_issue", {"id": 2})),
        lambda: Reply.text_reply(MCP_UNRESTRICTED_ANSWER),
    ],
    ASK_DEFINITION: [
        lambda: Reply.tool_reply(ToolUseBlock("find_definition", {"path": "main.ts", "line": 3, "symbol": "area"}),
                                 text="Asking the editor."),
        lambda: Reply.text_reply(DEFINITION_ANSWER),
    ],
    ASK_BREAK_JSON: [
        lambda: Reply.tool_reply(ToolUseBlock("patch", {"path": "config.json", "patches": [
            {"operation": "replace", "oldText": '"demo",', "newText": '"demo"'}]}), text="Dropping it."),
        lambda: Reply.text_reply(JSON_ANSWER),
    ],
    ASK_STREAM: [lambda: Reply.text_reply(STREAMED, deltas=12, delay_s=0.08)],
    ASK_UPGRADE: [
        lambda: Reply.tool_reply(ToolUseBlock("request_mode_upgrade", {"reason": UPGRADE_REASON})),
        lambda: Reply.text_reply("Thanks, I can write now."),
    ],
    ASK_PATCH_ALLOW: [
        lambda: Reply.tool_reply(_patch(PATCH_ALLOWED), text="I will add a comment."),
        lambda: Reply.text_reply("The comment is in."),
    ],
    ASK_PATCH_DENY: [
        lambda: Reply.tool_reply(_patch(PATCH_DENIED), text="One more edit."),
        lambda: Reply.text_reply("Understood, I left the file alone."),
    ],
    ASK_LIST: [
        lambda: Reply.tool_reply(ToolUseBlock("bash", {"command": "ls -a"}), text="Listing it."),
        lambda: Reply.text_reply(LISTED),
    ],
    ASK_LIST_AGAIN: [  # covered by the rule `ls *` granted on ASK_LIST: runs without a dialog
        lambda: Reply.tool_reply(ToolUseBlock("bash", {"command": "ls"})),
        lambda: Reply.text_reply(LISTED_AGAIN),
    ],
    ASK_MODEL: [lambda: Reply.text_reply(MODEL_ANSWER)],
    ASK_PLAN: [  # the agent route: a plan that computes in the sandboxed engine, then the answer
        lambda: Reply.tool_reply(ToolUseBlock("run_plan", {"goal": "add 1, 2 and 3", "nodes": [
            {"id": "add", "code": "{'sum': sum([1, 2, 3])}", "outputs": ["sum"]}]}), text="One small plan."),
        lambda: Reply.text_reply(PLAN_ANSWER),
    ],
    ASK_ATTACH: [lambda: Reply.text_reply(ATTACH_ANSWER)],
    ASK_PATCH_RELOAD: [
        lambda: Reply.tool_reply(_patch(PATCH_AFTER_RELOAD), text="An edit to approve after a reload."),
        lambda: Reply.text_reply("Done after the reload."),
    ],
}


def _text_of(content: Any) -> str:
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(b.get("text", "")) for b in content if isinstance(b, dict) and b.get("type") == "text")
    return ""


def handler(body: dict[str, Any]) -> Reply | None:
    """The fake's handler: the script of the last user message containing a prompt (the server adds user
    messages of its own, e.g. "[system] The conversation is now in Unrestricted mode"); the round is the
    number of assistant messages since that message. No prompt: None (the fake answers 400 and counts it
    as unexpected)."""
    messages = body.get("messages", [])
    for i in range(len(messages) - 1, -1, -1):
        message = messages[i]
        text = _text_of(message.get("content")) if message.get("role") == "user" else ""
        for prompt, script in SCRIPTS.items():
            if prompt in text:
                rounds = sum(1 for m in messages[i + 1 :] if m.get("role") == "assistant")
                return script[rounds]() if rounds < len(script) else Reply.text_reply("(no more script)")
    return None
