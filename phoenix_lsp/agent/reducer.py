"""The reducer (REQ-AGENT-006): from full node results to what the model reads.

``compact`` splits a node's result: what fits the node's ``maxContextBytes`` stays inline, the largest
outputs go to the artifact store until the rest fits, each with a handle and a description of its shape.
``summarize`` turns a ``RunReport`` into the text for the model: per node its status, its inline result
(canonical JSON), its artifacts, or its error with what to do next. No timings and no cache flags: the same
report content gives the same text (REQ-AGENT-021), and no large payload ever reaches it.
"""

from __future__ import annotations

import hashlib
from collections.abc import Sequence
from typing import Any

from .artifacts import ArtifactStore, canonical_json
from .contracts import AgentError, ErrorCode, ErrorKind
from .report import NodeReport, RunReport, Spill

#: printed text kept inline up to this many bytes (and within the node's cap); beyond, an artifact
MAX_INLINE_OUTPUT = 512
#: an error message is cut to this many characters in the summary (tracebacks can be long)
MAX_MESSAGE = 300
#: a DENIED error's message (ours: what was refused, why, what the user can change)
MAX_DENIED_MESSAGE = 900
MAX_GOAL = 200
MAX_KEYS_SHOWN = 12
WHOLE = ""  # the key of a result that is not split by outputs
OUTPUT = "#output"  # the key of printed text


def size(value: Any) -> int:
    return len(canonical_json(value).encode("utf-8", "surrogatepass"))


def _keys(keys: list[str]) -> str:
    cut = [key if len(key) <= 40 else key[:39] + "…" for key in keys[:MAX_KEYS_SHOWN]]
    more = len(keys) - MAX_KEYS_SHOWN
    return ", ".join(cut) + (f" (+{more} more)" if more > 0 else "")


def shape(value: Any) -> str:
    """A short description of a value's shape, never its content."""
    if isinstance(value, list):
        if value and all(isinstance(row, dict) for row in value):
            keys = sorted({str(k) for row in value for k in row})
            return f"list of {len(value)} objects with keys {_keys(keys)}"
        kinds = sorted({type(item).__name__ for item in value})
        return f"list of {len(value)} items ({', '.join(kinds)})" if value else "empty list"
    if isinstance(value, dict):
        keys = sorted(str(k) for k in value)
        return f"object with {len(keys)} keys: {_keys(keys)}"
    if isinstance(value, str):
        return f"text of {len(value)} characters"
    return type(value).__name__


def compact(result: Any, outputs: Sequence[str], output: str, cap: int,
            store: ArtifactStore) -> tuple[Any, str, tuple[Spill, ...]]:
    """(inline result, inline printed text, spilled) for a node's full `result` and printed `output`.

    With declared `outputs`, the result is split by key: the largest keys (ties by name) go to artifacts
    until the rest, as canonical JSON, is within `cap` bytes. Without, the whole result is inline or one
    artifact. Printed text stays inline only when short."""
    spilled: list[Spill] = []
    printed = output
    if output and (len(output.encode("utf-8", "surrogatepass")) > min(MAX_INLINE_OUTPUT, cap // 4)):
        spilled.append(Spill(key=OUTPUT, artifact=store.put(output), shape=shape(output)))
        printed = ""
    budget = cap - len(printed.encode("utf-8", "surrogatepass"))
    if outputs and isinstance(result, dict):
        inline = {key: result[key] for key in outputs if key in result}
        for key in sorted(inline, key=lambda k: (-size(inline[k]), k)):
            if size(inline) <= budget:
                break
            spilled.append(Spill(key=key, artifact=store.put(inline[key]), shape=shape(inline[key])))
            del inline[key]
        return inline, printed, tuple(spilled)
    if result is None or size(result) <= budget:
        return result, printed, tuple(spilled)
    spilled.append(Spill(key=WHOLE, artifact=store.put(result), shape=shape(result)))
    return None, printed, tuple(spilled)


def next_step(error: AgentError) -> str:
    """What the model should do about an error."""
    kind, code = error.kind, error.code
    if code == ErrorCode.MODE_DENIED:
        return ""  # its message says the one thing to do (request_mode_upgrade)
    if code == ErrorCode.APPROVAL_DENIED:
        return "the user refused this write: do not retry it; say so, or re-plan without it"
    if code == ErrorCode.WALL_CLOCK:
        return "the run's time is used up: re-plan the remaining work as a smaller plan, or stop"
    if code == ErrorCode.MAX_TOOL_CALLS:
        return "re-plan with fewer tool calls (filter or batch inside one script), or stop"
    if code == ErrorCode.MAX_NODES:
        return "re-plan with fewer nodes (do more inside one script)"
    if kind == ErrorKind.BUDGET:
        return "re-plan with a smaller scope (fewer items, filter or aggregate in the script), or stop"
    if code == ErrorCode.MISSING_OUTPUT:
        return "make the script's last expression an object with every declared output key, and re-plan"
    if code == ErrorCode.PLAN_INVALID:
        return "fix the plan and submit it again"
    if kind == ErrorKind.CODE:
        return "fix the script and re-plan this node"
    if code == ErrorCode.NOT_FOUND:
        return "the item does not exist (not retried): re-plan without it"
    if code == ErrorCode.INVALID_ARGUMENTS:
        return "call the tool with keyword arguments and re-plan"
    if kind == ErrorKind.TOOL:
        return "the tool failed (a read was retried once): re-plan around it or report it"
    if kind == ErrorKind.DENIED:
        return "this is not allowed here: re-plan without it"
    if code == ErrorCode.UNAVAILABLE:
        return "no script engine runs here: answer without the agent route's data, or ask the user to enable it"
    return "the engine failed (retried once for a read): try again later or re-plan"


def _cut(text: str, limit: int) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _node_lines(node: NodeReport) -> list[str]:
    head = f"- {node.id} [{node.kind}] {node.status}"
    if node.status in ("skipped", "cancelled"):
        return [f"{head}: {node.reason}"]
    if node.status == "failed" and node.error is not None:
        error = node.error
        # the policy's messages are ours and say what to change: they are not cut
        limit = MAX_DENIED_MESSAGE if error.kind == ErrorKind.DENIED else MAX_MESSAGE
        lines = [f"{head}: {error.kind.value}/{error.code}: {_cut(error.message, limit)}"]
        step = next_step(error)
        return [*lines, f"  next: {step}"] if step else lines
    if node.kind == "approval":
        return [f"{head}: approved"]
    lines = [head]
    envelope = node.envelope
    if envelope is not None:
        if envelope.result is not None and envelope.result != {}:
            lines[0] += f": {canonical_json(envelope.result)}"
        if envelope.output:
            lines.append(f"  printed: {canonical_json(envelope.output)}")
    for spill in node.spilled:
        name = "result" if spill.key == WHOLE else ("printed text" if spill.key == OUTPUT else spill.key)
        lines.append(f"  {name} -> {spill.artifact.handle} ({spill.artifact.type}, {spill.artifact.size} bytes): "
                     f"{spill.shape}")
    return lines


def summarize(report: RunReport) -> str:
    """The compact text of a run for the model. Deterministic; bounded by the nodes' caps plus a line each."""
    done = sum(node.status == "ok" for node in report.nodes)
    lines = [f"agent run {report.plan_hash[:12]}: {report.outcome} ({done} of {len(report.nodes)} nodes ok)",
             f"goal: {_cut(report.goal, MAX_GOAL)}"]
    for node in report.nodes:
        lines.extend(_node_lines(node))
    if any(node.spilled for node in report.nodes):
        lines.append("artifacts are not in this text: refer to them by handle (the user's client can open "
                     "them); to use their content, re-plan a node that computes less")
    return "\n".join(lines) + "\n"


def summary_hash(summary: str) -> str:
    return hashlib.sha256(summary.encode("utf-8", "surrogatepass")).hexdigest()
