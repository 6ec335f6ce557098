"""Core transitions per second on a long random event sequence (issue 2: the baseline for later regressions).

The baseline, measured in the same run, is ``dataclasses.replace`` of the same states: the least any
transition has to do. The ratio says how many replace-calls one transition costs.
"""

from __future__ import annotations

import dataclasses
import random
import statistics
import time
from typing import Any

from phoenix_lsp.core import machine
from phoenix_lsp.core.events import (
    AgentEnded,
    ApprovalAnswer,
    Cancel,
    Event,
    LlmDone,
    LlmFailed,
    SetStyle,
    ToolDone,
    UpgradeAnswer,
    UserMessage,
)
from phoenix_lsp.core.state import (
    AwaitingAgents,
    AwaitingApproval,
    AwaitingLlm,
    AwaitingUpgrade,
    ConversationState,
    RunningTool,
    Summarizing,
)
from phoenix_lsp.core.values import Decision, Style, Text, ToolUse, Usage

TOOLS = ["read_file", "bash", "bash", "patch", "request_mode_upgrade", "list_directory", "spawn_agents"]


def next_event(state: ConversationState, rng: random.Random, counter: list[int]) -> Event:
    """A plausible next event for the state, with some noise, like a real session."""
    status = state.status
    if rng.random() < 0.03:
        return Cancel()
    if rng.random() < 0.02:
        return SetStyle(rng.choice(list(Style)))
    if isinstance(status, AwaitingLlm | Summarizing):
        if rng.random() < 0.05:
            return LlmFailed(status.request_id, True, "overloaded", 529)
        calls = []
        for _ in range(rng.choice([0, 1, 1, 2])):
            counter[0] += 1
            name = rng.choice(TOOLS)
            args: dict[str, Any] = {"command": "ls", "reason": "edit", "tasks": ["a"], "path": "x"}
            calls.append(ToolUse(f"t{counter[0]}", name, args))
        content = (Text("some text"), *calls)
        return LlmDone(status.request_id, content, "tool_use" if calls else "end_turn", Usage(2_000))
    if isinstance(status, RunningTool):
        return ToolDone(status.batch.current.id, "output " * 20)
    if isinstance(status, AwaitingApproval):
        return ApprovalAnswer(status.tool_use_id, rng.choice(list(Decision)))
    if isinstance(status, AwaitingUpgrade):
        return UpgradeAnswer(rng.random() < 0.5)
    if isinstance(status, AwaitingAgents):
        return AgentEnded(next(a.agent_id for a in status.agents if not a.done), True, "done")
    return UserMessage(rng.choice(["hello", "fix the bug", "/execute", "/plan"]))


def sequence(n: int, seed: int = 7) -> list[tuple[ConversationState, Event]]:
    rng = random.Random(seed)
    state = machine.new_conversation("bench", model="m", working_directory="/w", sandbox=True)
    pairs: list[tuple[ConversationState, Event]] = []
    counter = [0]
    for _ in range(n):
        event = next_event(state, rng, counter)
        pairs.append((state, event))
        state, _ = machine.transition(state, event)
        if len(state.history) > 400:  # keep the history realistic, not unbounded
            state = dataclasses.replace(state, history=state.history[-50:])
    return pairs


def figures(quick: bool = False) -> list[dict[str, object]]:
    n = 20_000 if quick else 200_000
    pairs = sequence(n)
    rounds = 3 if quick else 5
    transition_rates, replace_rates = [], []
    for _ in range(rounds):
        start = time.perf_counter()
        for state, event in pairs:
            machine.transition(state, event)
        transition_rates.append(n / (time.perf_counter() - start))
        start = time.perf_counter()
        for state, _event in pairs:
            dataclasses.replace(state, turns=1)
        replace_rates.append(n / (time.perf_counter() - start))
    rate, base = statistics.median(transition_rates), statistics.median(replace_rates)
    return [
        {
            "name": f"core transitions/s ({n:,} random events)",
            "value": round(rate),
            "unit": "1/s",
            "baseline_name": "dataclasses.replace of the same states",
            "baseline_value": round(base),
            "goal": "none yet (regression baseline)",
        }
    ]


if __name__ == "__main__":
    from bench.__main__ import print_table

    print_table(figures())
