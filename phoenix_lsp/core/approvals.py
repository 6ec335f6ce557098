"""The user's answers, and the host calls of a running tool: approvals (REQ-PERM-002..004, REQ-PERM-020),
upgrade requests (REQ-BED-015..017) and host calls: a running plan's MCP calls (REQ-AGENT-014/015) and a running
bash command's review of the changes it made (REQ-BASH-032)."""

from __future__ import annotations

from dataclasses import replace

from . import texts
from .dispatch import dispatch
from .effects import AnswerHostCall, AskApproval, Audit, Effect, RunTool
from .events import ApprovalAnswer, HostCall, UpgradeAnswer
from .notifications import AlwaysAllowChanged, ApprovalResolved, ToolRefused, UpgradeResolved
from .permissions import Ask, Refuse, decide, decide_host
from .rules import AllowRule, add_rule, scopes_for
from .state import AwaitingApproval, AwaitingUpgrade, ConversationState, RunningTool
from .steps import Out, note_mode, reject, rule_detail
from .tools import BASH, PATCH, RUN_PLAN, ToolKind
from .values import Actor, Decision, Mode, ToolResult, ToolUse


def on_approval(state: ConversationState, ev: ApprovalAnswer) -> Out:
    status = state.status
    if not isinstance(status, AwaitingApproval) or ev.tool_use_id != status.tool_use_id:
        pending = f" The pending one is {status.tool_use_id}." if isinstance(status, AwaitingApproval) else ""
        return reject(
            state,
            "no_such_approval",
            f"There is no pending approval {ev.tool_use_id}: it was already answered, cancelled, or never "
            f"existed.{pending} Nothing was changed.",
        )
    call = status.host_call or status.batch.current
    resolved: dict[str, object] = {"tool": call.name, "decision": ev.decision.value}
    rule: AllowRule | None = None
    if ev.decision is Decision.ALWAYS_ALLOW:  # REQ-PERM-020: one of the offered scopes, the narrowest by default
        scopes = scopes_for(state.always_allow, call)
        if ev.rule is None:
            rule = scopes[0]
        else:
            rule = next((s for s in scopes if s.names(ev.rule)), None)
            if rule is None:
                offered = ", ".join(f"'{s.rule}'" for s in scopes)
                return reject(
                    state,
                    "no_such_rule",
                    f"'{ev.rule}' is not a scope offered for this approval; choose one of {offered}. "
                    "Nothing was changed; the approval is still open.",
                )
        resolved["rule"] = rule.label
    effects: list[Effect] = [
        Audit(Actor.USER, "approvalResolved", resolved),
        ApprovalResolved(status.tool_use_id, ev.decision),
    ]
    if ev.decision is Decision.DENY:  # REQ-PERM-004
        denial = texts.DENIED if ev.reason is None else ev.reason  # REQ-PERM-023: denied unseen, and why
        if ev.reason is not None:
            resolved["reason"] = ev.reason
        if status.host_call is not None:  # the plan goes on; the script's call fails
            effects.append(AnswerHostCall(call.id, False, denial, "user"))
            return replace(state, status=RunningTool(status.batch)), tuple(effects)
        state, more = dispatch(state, status.batch.answer(ToolResult(call.id, denial, True)))
        return state, (*effects, *more)
    if rule is not None and rule not in state.always_allow:
        state = replace(state, always_allow=add_rule(state.always_allow, rule))
        effects.append(Audit(Actor.USER, "alwaysAllowGranted", rule_detail(rule)))
        effects.append(AlwaysAllowChanged(rule, allowed=True))  # REQ-PROTO-021
    if status.host_call is not None:  # decided again: the mode may have changed while it waited
        return answer_host(replace(state, status=RunningTool(status.batch)), call, effects)
    # The mode may have changed while the request was open (/plan): decide again under the current mode.
    verdict = decide(state, call)
    if isinstance(verdict, Refuse):
        effects.append(Audit(Actor.SYSTEM, "toolRefused", {"tool": call.name, "by": "mode"}))
        state, more = dispatch(state, status.batch.answer(ToolResult(call.id, verdict.message, True)))
        return state, (*effects, *more)
    effects.append(RunTool(call, state.mode))
    return replace(state, status=RunningTool(status.batch)), tuple(effects)


def is_review(call: ToolUse, kind: ToolKind) -> bool:
    """Whether a host call is a bash command's review of its captured changes (REQ-BASH-032): a write named
    like the patch tool, so that the patch tool's policy, approval and Always Allow scope decide it."""
    return call.name == PATCH and kind is ToolKind.WRITE


def on_host_call(state: ConversationState, ev: HostCall) -> Out:
    """A running tool asks to make one host call: a plan's MCP call (REQ-AGENT-014/015), or a bash command's
    review of the changes it made to the workspace (REQ-BASH-032). The permission function decides; nothing
    else may let the call go ahead."""
    status = state.status
    assert isinstance(status, RunningTool)
    current = status.batch.current
    if ev.tool_use_id != current.id or not (current.name == RUN_PLAN or
                                            (current.name == BASH and is_review(ev.call, ev.kind))):
        return reject(state, "stale", f"Host call {ev.call.id} belongs to {ev.tool_use_id}, which is not a running "
                                       "plan nor a bash command asking for the review of its changes; it was not "
                                       "made.")
    verdict = decide_host(state, ev.call, ev.kind)
    if isinstance(verdict, Ask):
        return replace(state, status=AwaitingApproval(status.batch, ev.call.id, ev.call)), (
            AskApproval(ev.call, scopes_for(state.always_allow, ev.call)),
            Audit(Actor.AGENT, "approvalRequested", {"tool": ev.call.name, "toolUseId": ev.call.id,
                                                    ("plan" if current.name == RUN_PLAN else "bash"): ev.tool_use_id}),
        )
    return answer_host(state, ev.call, [], ev.kind)


#: why a host call made while the model's answer streams is refused (REQ-AGENT-044)
EARLY_READS_ONLY = ("A plan's node started before the plan was complete may only read; {tool} waits for the whole "
                    "plan, its checks and its approvals, and runs then.")


def on_early_host_call(state: ConversationState, ev: HostCall) -> Out:
    """A plan's node started while the model still writes the plan (REQ-AGENT-044) asks to make one host call.
    Only a read goes ahead, decided as any plan's read is; anything else is refused, never asked about: the
    plan is not complete, so it has not passed its checks and no approval can be given for it yet."""
    if ev.kind is not ToolKind.READ:
        return state, (AnswerHostCall(ev.call.id, False, EARLY_READS_ONLY.format(tool=ev.call.name), "early"),)
    return answer_host(state, ev.call, [], ev.kind)


def answer_host(state: ConversationState, call: ToolUse, effects: list[Effect],
                 kind: ToolKind = ToolKind.WRITE) -> Out:
    """Answer a host call that needs no question now: allowed, or refused (audited like a tool refusal)."""
    verdict = decide_host(state, call, kind)
    if isinstance(verdict, Refuse):
        if verdict.reason == "mode":  # the user's mode refused it: said like a refused tool call
            effects += [
                ToolRefused(call.id, call.name),
                Audit(Actor.SYSTEM, "toolRefused", {"tool": call.name, "by": "mode"}),
            ]
        effects.append(AnswerHostCall(call.id, False, verdict.message, verdict.reason))
        return state, tuple(effects)
    if kind in (ToolKind.WRITE, ToolKind.PLAN):  # every write's and approval node's go-ahead is on record
        effects.append(Audit(Actor.SYSTEM, "hostCallAllowed", {"tool": call.name, "toolUseId": call.id}))
    effects.append(AnswerHostCall(call.id, True))
    return state, tuple(effects)


def on_upgrade(state: ConversationState, ev: UpgradeAnswer) -> Out:
    status = state.status
    if not isinstance(status, AwaitingUpgrade):
        return reject(
            state,
            "no_pending_upgrade",
            "There is no pending upgrade request: it was already answered or cancelled. Nothing was changed.",
        )
    call = status.batch.current
    resolved = UpgradeResolved(call.id, "approve" if ev.approve else "deny")
    if not ev.approve:
        audit = Audit(Actor.USER, "upgradeResolved", {"approve": False})
        state, more = dispatch(state, status.batch.answer(ToolResult(call.id, texts.UPGRADE_DENIED, True)))
        return state, (audit, resolved, *more)
    audit = Audit(Actor.USER, "upgradeResolved", {"approve": True})
    state, mode_effects = note_mode(state, Mode.UNRESTRICTED, Actor.USER, "upgrade_request")
    state, more = dispatch(state, status.batch.answer(ToolResult(call.id, texts.UPGRADE_APPROVED)))
    return state, (audit, resolved, *mode_effects, *more)
