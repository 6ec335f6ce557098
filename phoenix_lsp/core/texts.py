"""Words the core puts into the history or in front of the user. Kept together so they stay consistent."""

from __future__ import annotations

from .values import Mode, Style

MODE_NOTE = {
    Mode.RESTRICTED: (
        "[system] The conversation is now in Restricted mode. Files are read-only and the network is "
        "blocked: bash runs inside a kernel sandbox (writes and connections fail with EACCES/EPERM) and the "
        "patch tool is disabled. If you need to change files, call request_mode_upgrade with a reason."
    ),
    Mode.UNRESTRICTED: (
        "[system] The conversation is now in Unrestricted mode. bash runs without the sandbox and the patch "
        "tool may change files (the user may still be asked to approve each call)."
    ),
}

UNDO_NOTE = (
    "[system] The user undid change set {change_set} ({label}): these paths hold again what they held before it: "
    "{restored}. Its changes to them are gone; read a file again before relying on its content."
)
UNDO_REFUSED_NOTE = " Not restored, because they changed since the change set landed (kept as they are): {refused}."
UNDO_INTERRUPTED = (
    "[system] The server restarted while the user was undoing change set {change_set}; some of its files may be "
    "restored and others not. Read a file again before relying on its content."
)
UNDOING = (
    "An undo of change set {change_set} is being carried out; wait for it to finish (a moment), then send your "
    "message again."
)

REVIEWING = (
    "The changes of a background command that ended are being reviewed; answer or cancel that review, then send "
    "your message again."
)
REVIEW_INTERRUPTED = (
    "[system] The server restarted while the changes of a background command that had ended were under review; "
    "they were discarded, nothing of them landed."
)
CANCELLED = "Cancelled by the user."

ASK_ROUTE_TAKEN = (
    "Handed to the ask route: from your next response on, this message has the ask route's tools (files, bash, "
    "patch, the editor's) and its system prompt. Go on with the user's message there."
)
ALREADY_UNRESTRICTED = "Already in Unrestricted mode: you can use every tool; no upgrade is needed."
UPGRADE_APPROVED = "The user approved the upgrade. The conversation is now in Unrestricted mode."
UPGRADE_DENIED = (
    "The user denied the upgrade. The conversation stays in Restricted mode: do not try to work around it. "
    "Continue with read-only work, or explain to the user what you would change and why."
)
DENIED = (
    "The user denied this tool call. Do not retry it as is: choose another approach or ask the user."
)
CANCELLED_RUNNING = "Cancelled by the user while running; it may have partially completed."
CANCELLED_QUEUED = "Not executed: the user cancelled the turn."
RESTART_RUNNING = "Interrupted: the server restarted while this tool was running; it may have partially completed."
RESTART_QUEUED = "Not executed: the server restarted."
AGENT_RESTART = "stopped because the server restarted before it submitted a result"
CONTEXT_NOT_EXECUTED = (
    "Not executed: the context window is almost full, so the conversation is being wrapped up with a summary."
)
SUBMITTED = "Result submitted. Your work is done."
AFTER_SUBMIT = "Not executed: the result was already submitted."
NO_SUBMIT = "The sub-agent ended its turn without calling submit_result."
TURN_LIMIT = "The sub-agent used up its turn limit ({turns}) without calling submit_result."
CONTEXT_EXHAUSTED_AGENT = (
    "The sub-agent's context window reached its limit ({percent}%) before it submitted a result. "
    "Spawn a replacement with a narrower task."
)
SUMMARY_FALLBACK = (
    "No summary is available: the summary request failed ({reason}). The full history is kept; start a new "
    "conversation and describe where you left off."
)
SANDBOX_REQUIRED = (
    "Restricted mode needs the kernel sandbox (Landlock, Linux 5.13 or later with Landlock enabled), which "
    "this system does not provide, so only Unrestricted mode exists here. Run phoenix-lsp doctor for details."
)

SUGGESTIONS = {
    (Style.DEVELOPMENT, Mode.RESTRICTED): (
        "Development works best in Unrestricted mode. Type /execute to switch; the style alone changes nothing."
    ),
    (Style.TASK, Mode.RESTRICTED): (
        "Task style often needs to change files. Type /execute to switch to Unrestricted mode if you want that."
    ),
    (Style.PLAN, Mode.UNRESTRICTED): (
        "Planning needs no write access. Type /plan to switch to Restricted (read-only) mode if you want that."
    ),
    (Style.DISCUSSION, Mode.UNRESTRICTED): (
        "Discussion needs no write access. Type /plan to switch to Restricted (read-only) mode if you want that."
    ),
}


def summary_instruction(unexecuted: tuple[str, ...]) -> str:
    """The request for a continuation summary (REQ-BED-020): it names tools requested but not executed."""
    text = (
        "The context window is nearly full. Write a concise summary of this session for a new conversation: "
        "the goal, what was done, the current state of the work, open questions and the next steps. "
        "Do not call tools."
    )
    if unexecuted:
        text += " These tool calls were requested but not executed: " + ", ".join(unexecuted) + "."
    return text
