"""How the terminal client words what it shows: tool calls, JSON arguments, first lines, the ``/usage``
report, the model list by provider and the mode line of a new conversation."""

from __future__ import annotations

import json
from typing import Any

from ..core.mcp_names import server_part
from ..protocol.kinds import mcp_words
from ..protocol.results import GetConversationResult, NewConversationResult
from ..protocol.views import TokenUsage


def group_by_provider(models: list[Any]) -> list[tuple[str, list[Any]]]:
    """The listed models under their providers, in the order the server listed them (Anthropic's first)."""
    groups: dict[str, list[Any]] = {}
    for model in models:
        groups.setdefault(model.provider or "anthropic", []).append(model)
    return list(groups.items())


def lifecycle_words(model: Any) -> str:
    """A listed model's lifecycle as the pickers show it (REQ-MODEL-014): "deprecated, retires 2026-11-30";
    nothing for an active model or one whose provider does not say."""
    if model.lifecycle != "deprecated":
        return ""
    return f"deprecated, retires {model.retires_at}" if model.retires_at else "deprecated"


def compact(value: Any, limit: int = 200) -> str:
    """Compact JSON of ``value``, cut to ``limit`` characters."""
    try:
        text = json.dumps(value, separators=(",", ":"), ensure_ascii=False)
    except (TypeError, ValueError):
        text = repr(value)
    return text if len(text) <= limit else text[: limit - 3] + "..."


def first_line(text: str, limit: int = 120) -> str:
    """The first non-empty line of ``text``, cut to ``limit`` characters."""
    for line in str(text).splitlines():
        if line.strip():
            line = line.strip()
            return line if len(line) <= limit else line[: limit - 3] + "..."
    return ""


def usage_lines(usage: TokenUsage) -> list[str]:
    """The ``/usage`` report from getConversation's ``usage`` (issue 16): totals, cache share, cost estimate."""
    total, agents = usage.total, usage.sub_agents
    read, write, fresh = total.cache_read_tokens, total.cache_write_tokens, total.input_tokens
    input_all = read + write + fresh
    share = f"{read / input_all:.0%}" if input_all else "0%"
    lines = [
        f"[usage] {total.requests or 0} requests ({agents.requests or 0} by sub-agents): "
        f"{input_all:,} input tokens ({fresh:,} uncached, {write:,} written to and {read:,} read from the cache: "
        f"{share} cached), {total.output_tokens:,} output tokens",
    ]
    if usage.estimated_cost is not None:
        lines.append(f"[usage] estimated cost: ${usage.estimated_cost.usd:.4f} (an estimate from list prices)")
    else:
        lines.append("[usage] estimated cost: unknown for this model (set modelPrices to get an estimate)")
    return lines


def tool_words(name: str) -> str:
    """A tool's name as shown: an MCP tool as ``create_issue on tracker`` (as the ACP and plain clients word it),
    any other tool by its name."""
    return mcp_words(name)


def scope_words(rule: str) -> str:
    """What an Always Allow scope covers, as shown: an MCP tool's rule as the tool (``create_issue``) or its
    whole server (``every tool of tracker``), any other rule as itself."""
    server = server_part(rule)
    if server is None:
        return rule
    tool = rule[len(f"mcp__{server}__"):]
    return f"every tool of {server}" if tool == "*" else tool


def tool_summary(name: str, arguments: Any) -> str:
    """How a tool call is shown: the command for bash, the path for file tools, else compact JSON."""
    args = arguments if isinstance(arguments, dict) else {}
    if name == "bash" and isinstance(args.get("command"), str):
        return f"$ {first_line(args['command'], 160)}"
    if isinstance(args.get("path"), str) and len(args) <= 2:
        return str(args["path"])
    return compact(arguments, 160)


def mode_line(started: NewConversationResult | GetConversationResult, route: str | None = None) -> str:
    """The line under a conversation's header: mode, the kernel sandbox, style, approvals, model and route."""
    sandbox = started.sandbox
    mode = started.mode.value
    if sandbox.available:
        shield = f"kernel sandbox: Landlock ABI {sandbox.landlock_abi}"
        if sandbox.missing:
            shield += f", missing: {', '.join(sandbox.missing)}"
    else:
        shield = f"no kernel sandbox: {sandbox.reason or 'unavailable'}; only Unrestricted mode"
    what = "read-only" if mode == "restricted" else "may change files, with your approval"
    return (
        f"mode: {mode} ({what}) · {shield} · style: {started.style.value} · "
        f"approvals: {started.policy.value} · model: {started.model}" + (f" · route: {route}" if route else "")
    )
