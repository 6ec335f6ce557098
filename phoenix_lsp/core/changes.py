"""The user's changes of a conversation's settings: mode (REQ-LAYER-002), style (REQ-LAYER-001), policy
(REQ-PERM-007), model (REQ-MODEL-003, REQ-MODEL-012), instructions (REQ-INSTR-002) and always-allow rules
(REQ-PERM-021/022)."""

from __future__ import annotations

from dataclasses import replace
from typing import Literal

from . import texts
from .approvals import answer_host, on_upgrade
from .dispatch import dispatch
from .effects import Audit, Effect
from .events import (
    RevokeAlwaysAllow,
    SetInstructions,
    SetMode,
    SetModel,
    SetPolicy,
    SetStyle,
    UpgradeAnswer,
    WindowReported,
)
from .notifications import (
    AlwaysAllowChanged,
    ApprovalResolved,
    ContextWarning,
    ModelChanged,
    PolicyChanged,
    StyleChanged,
    StyleSuggested,
    UsageReported,
)
from .permissions import Ask, decide, decide_host
from .state import AwaitingApproval, AwaitingUpgrade, ConversationState, RunningTool
from .steps import Out, context_usage, note_mode, reject, rule_detail
from .tools import ToolKind
from .values import Actor, Mode


def on_set_mode(state: ConversationState, ev: SetMode, via: str = "setMode") -> Out:
    if state.is_subagent:
        return reject(state, "subagent_mode", "A sub-agent's mode cannot be changed (REQ-BED-018).")
    if ev.mode is Mode.RESTRICTED and not state.sandbox:
        return reject(state, "sandbox_unavailable", texts.SANDBOX_REQUIRED)
    if isinstance(state.status, AwaitingUpgrade):
        # The user's own mode command answers the open request: /execute approves it, /plan denies it.
        return on_upgrade(state, UpgradeAnswer(ev.mode is Mode.UNRESTRICTED))
    if ev.mode is state.mode:
        return state, ()
    # A running tool keeps the mode it started with; every later call sees the new one (REQ-PATCH-009).
    state, effects = note_mode(state, ev.mode, Actor.USER, via)
    status = state.status
    if isinstance(status, AwaitingApproval) and status.host_call is not None:
        if isinstance(decide_host(state, status.host_call, ToolKind.WRITE), Ask):
            return state, effects
        resolved = ApprovalResolved(status.tool_use_id, "superseded")
        running = replace(state, status=RunningTool(status.batch))
        return answer_host(running, status.host_call, [*effects, resolved])
    if isinstance(status, AwaitingApproval) and not isinstance(decide(state, status.batch.current), Ask):
        # The call waiting for approval has not started: it is decided again under the new mode
        # (a patch is refused, bash runs sandboxed) instead of asking about something that cannot run.
        resolved = ApprovalResolved(status.tool_use_id, "superseded")
        state, more = dispatch(state, status.batch)
        return state, (*effects, resolved, *more)
    return state, effects


def on_set_style(state: ConversationState, ev: SetStyle) -> Out:
    if ev.style is state.style:
        return state, ()
    previous = state.style
    state = replace(state, style=ev.style)  # REQ-LAYER-001: nothing else changes
    effects: list[Effect] = [
        StyleChanged(ev.style, previous),
        Audit(Actor.USER, "styleChanged", {"style": ev.style.value}),
    ]
    suggestion = texts.SUGGESTIONS.get((ev.style, state.mode))
    if suggestion and (state.sandbox or state.mode is Mode.RESTRICTED):
        other = Mode.UNRESTRICTED if state.mode is Mode.RESTRICTED else Mode.RESTRICTED
        command: Literal["/execute", "/plan"] = "/execute" if other is Mode.UNRESTRICTED else "/plan"
        effects.append(StyleSuggested(suggestion, other, command))
    return state, tuple(effects)


def on_set_policy(state: ConversationState, ev: SetPolicy) -> Out:
    if ev.policy is state.policy:
        return state, ()
    previous = state.policy
    state = replace(state, policy=ev.policy)  # applies from the next tool call (REQ-PERM-007)
    return state, (
        PolicyChanged(ev.policy, previous),
        Audit(Actor.USER, "policyChanged", {"policy": ev.policy.value}),
    )


def on_set_model(state: ConversationState, ev: SetModel) -> Out:
    """Another model answers from the next turn, if the context in use fits its window (REQ-MODEL-003)."""
    if state.is_subagent:
        return reject(state, "subagent", "A sub-agent answers with its parent's model; nothing was changed.")
    if ev.model == state.model:
        return state, ()
    settings = state.settings
    room = int(ev.context_window * settings.continue_ratio)
    if state.context_tokens >= room:
        return reject(
            state,
            "context_too_large",
            f"{ev.model} cannot take over this conversation: its context window ({ev.context_window:,} tokens) "
            f"is too small for the {state.context_tokens:,} tokens in use (they must stay under "
            f"{settings.continue_ratio:.0%} of the window). Nothing was changed; {state.model} still answers. "
            "To go on with the smaller model, continue in a new conversation from a summary "
            "(phoenix/triggerContinuation), and choose the model there.",
        )
    previous = state.model
    warned = state.context_tokens >= ev.context_window * settings.warn_ratio
    state = replace(
        state,
        model=ev.model,
        settings=replace(settings, context_window=ev.context_window),
        warned=warned,
    )
    return state, (
        ModelChanged(ev.model, previous, ev.context_window),
        Audit(Actor.USER, "modelChanged", {"model": ev.model, "previous": previous}),
    )


def on_window_reported(state: ConversationState, ev: WindowReported) -> Out:
    """The window of the conversation's model, as its provider reported it later (REQ-MODEL-012): the 80 % warning
    and the 90 % continuation follow it from the next response; the client is told the size now in use."""
    if ev.model != state.model or ev.context_window < 1 or ev.context_window == state.settings.context_window:
        return state, ()
    state = replace(state, settings=replace(state.settings, context_window=ev.context_window))
    effects: list[Effect] = [UsageReported(context_usage(state))]
    if not state.warned and state.context_tokens >= ev.context_window * state.settings.warn_ratio:
        state = replace(state, warned=True)  # REQ-BED-023: the smaller window is already 80 % full
        effects.append(ContextWarning(context_usage(state)))
    return state, tuple(effects)


def on_set_instructions(state: ConversationState, ev: SetInstructions) -> Out:
    """New project instructions from the next request on (REQ-INSTR-002); the prompt cache starts again."""
    if ev.text == state.instructions and ev.files == state.instruction_files:
        return state, ()
    return replace(state, instructions=ev.text, instruction_files=ev.files), ()


def on_revoke(state: ConversationState, ev: RevokeAlwaysAllow) -> Out:
    rule_text = ev.rule
    gone = tuple(
        r for r in state.always_allow if r.tool == ev.tool and (rule_text is None or r.names(rule_text))
    )
    if not gone:
        what = f"'{ev.tool}'" if rule_text is None else f"The rule '{rule_text}' of '{ev.tool}'"
        return reject(state, "not_always_allowed", f"{what} is not always allowed in this conversation.")
    state = replace(state, always_allow=tuple(r for r in state.always_allow if r not in gone))
    effects: list[Effect] = []
    for rule in gone:
        effects.append(Audit(Actor.USER, "alwaysAllowRevoked", rule_detail(rule)))
        effects.append(AlwaysAllowChanged(rule, allowed=False))
    return state, tuple(effects)
