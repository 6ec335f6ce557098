/**
 * The chat view's state as a fold of what the server said: `phoenix/getConversation` snapshots and
 * `phoenix/event` notifications. Pure (no `vscode`, no DOM): the extension host and the webview run the
 * same inputs through it, so both always hold the same view.
 *
 * The server is the source of truth. Events carry a per-conversation `seq`; a duplicate is dropped and a
 * jump marks a gap (`gapAfter`), which the owner closes with `getConversation({afterSeq: gapAfter})`
 * merged back in (the catch-up rule, `./sequence`, REQ-PROTO-007). `apply` mutates the state it is given and returns it (many text deltas
 * per second; copying the whole view for each one would be waste).
 */

import type {
  ApprovalRequest,
  ContentBlock,
  ContextUsage,
  EventKind,
  GetConversationResult,
  InstructionFileView,
  Mode,
  PhoenixEvent,
  Policy,
  SandboxInfo,
  Status,
  Style,
  UpgradeRequest,
  WireMessage,
} from "../protocol/wire";
import { isReviewCall } from "./review";
import { seqVerdict } from "./sequence";
import { scopeWords } from "./toolNames";

/** The share of the context window from which the view warns and offers a continuation (REQ-BED-023). */
export const CONTEXT_WARNING_FRACTION = 0.8;

export type ToolState = "pending" | "running" | "done" | "error" | "refused" | "denied" | "cancelled";

export interface ToolCard {
  toolUseId: string;
  toolName: string;
  arguments: Record<string, unknown>;
  state: ToolState;
  mode?: Mode;
  summary?: string;
  output?: string;
  /** `applied`: from the server's diff events (each file of a reviewed command adds its own) */
  diff?: { path: string; diff: string; applied?: boolean };
  decision?: string;
  agents: string[];
  rev: number;
}

export type NoticeAction = "continueInNew" | "sendCommand" | "retryLast" | "openSettings";

export interface Notice {
  level: "info" | "warning" | "error";
  text: string;
  action?: { kind: NoticeAction; label: string; argument?: string };
}

export type Item = { key: string; seq: number; rev: number } & (
  | { type: "text"; role: "user" | "assistant"; text: string; tag?: string }
  | { type: "image"; role: "user" | "assistant"; mediaType: string; label?: string }
  /** an attachment the user sent (REQ-ATTACH-003): its label and the text the model saw */
  | { type: "attachment"; path: string; label: string; body: string }
  | { type: "tool"; toolUseId: string }
  | { type: "stream"; requestId: string; text: string }
  | { type: "notice"; notice: Notice }
);

export interface SubAgent {
  conversationId: string;
  task: string;
  status: Status;
  outcome?: "submitted" | "failed";
  reason?: string;
  view: ConversationView;
}

export interface ConversationView {
  conversationId: string;
  parentConversationId?: string;
  isSubAgent: boolean;
  loaded: boolean;
  status: Status;
  mode: Mode;
  style: Style;
  policy: Policy;
  model: string;
  workingDirectory: string;
  sandbox?: SandboxInfo;
  /** the project instruction files in effect, farthest first (REQ-INSTR-003) */
  instructions: InstructionFileView[];
  lastSeq: number;
  /** Set when an event skipped a seq: catch up with `afterSeq` = this value. */
  gapAfter?: number;
  items: Item[];
  tools: Record<string, ToolCard>;
  messageSeqs: number[];
  pendingApproval?: ApprovalRequest;
  pendingUpgrade?: UpgradeRequest;
  usage?: ContextUsage;
  contextWarning: boolean;
  alwaysAllowed: string[];
  retry?: { attempt: number; maxAttempts: number; delayMs: number; reason: string };
  error?: { message: string; errorKind: string };
  continuationSummary?: string;
  continuedFrom?: string;
  subAgents: Record<string, SubAgent>;
  subAgentOrder: string[];
  rev: number;
}

export type ReducerInput =
  | { type: "snapshot"; snapshot: GetConversationResult; merge: boolean }
  | { type: "event"; event: PhoenixEvent };

export function emptyView(conversationId: string, parentConversationId?: string): ConversationView {
  return {
    conversationId,
    parentConversationId,
    isSubAgent: parentConversationId !== undefined,
    loaded: false,
    status: "idle",
    mode: "restricted",
    style: "chat",
    policy: "interactive",
    model: "",
    workingDirectory: "",
    instructions: [],
    lastSeq: 0,
    items: [],
    tools: {},
    messageSeqs: [],
    contextWarning: false,
    alwaysAllowed: [],
    subAgents: {},
    subAgentOrder: [],
    rev: 0,
  };
}

/** Apply one input to the view of `view.conversationId` (events of its sub-agents are nested). */
export function apply(view: ConversationView, input: ReducerInput): ConversationView {
  const id = input.type === "snapshot" ? input.snapshot.conversationId : input.event.conversationId;
  const target = findView(view, id);
  if (target && input.type === "snapshot") applySnapshot(target, input.snapshot, input.merge);
  if (target && input.type === "event") applyEvent(target, input.event);
  if (target && target !== view) target.rev++;
  view.rev++;
  return view;
}

/** The view of `conversationId`: the conversation itself or one of its sub-agents (at any depth). */
export function findView(view: ConversationView, conversationId: string): ConversationView | undefined {
  if (view.conversationId === conversationId) return view;
  for (const id of view.subAgentOrder) {
    const found = findView(view.subAgents[id].view, conversationId);
    if (found) return found;
  }
  return undefined;
}

/** Every view with an open gap, the conversation first: each needs `getConversation({afterSeq})`. */
export function gaps(view: ConversationView): { conversationId: string; afterSeq: number }[] {
  const out: { conversationId: string; afterSeq: number }[] = [];
  if (view.gapAfter !== undefined) out.push({ conversationId: view.conversationId, afterSeq: view.gapAfter });
  for (const id of view.subAgentOrder) out.push(...gaps(view.subAgents[id].view));
  return out;
}

// ----------------------------------------------------------------------------------------- snapshots

function applySnapshot(view: ConversationView, s: GetConversationResult, merge: boolean): void {
  if (!merge) {
    const fresh = emptyView(s.conversationId, s.parentConversationId);
    fresh.subAgents = view.subAgents;
    fresh.subAgentOrder = view.subAgentOrder;
    Object.assign(view, fresh);
  }
  view.loaded = true;
  view.isSubAgent = s.isSubAgent;
  view.parentConversationId = s.parentConversationId;
  view.status = s.status;
  view.mode = s.mode;
  view.style = s.style;
  view.policy = s.policy;
  view.model = s.model;
  view.workingDirectory = s.workingDirectory;
  if (s.sandbox) view.sandbox = s.sandbox;
  view.instructions = [...(s.instructions ?? [])];
  view.alwaysAllowed = [...s.alwaysAllowed];
  view.usage = s.contextUsage;
  view.contextWarning = s.contextUsage.fraction >= CONTEXT_WARNING_FRACTION;
  view.pendingApproval = s.pendingApproval;
  view.pendingUpgrade = s.pendingUpgrade;
  view.continuationSummary = s.continuationSummary;
  view.continuedFrom = s.continuedFrom;
  view.error = s.status === "error" && s.error ? { message: s.error, errorKind: "llm" } : undefined;
  for (const agent of s.subAgents) {
    const sub = subAgent(view, agent.conversationId, agent.task);
    sub.status = agent.status;
  }
  for (const message of s.messages) addMessage(view, message);
  if (s.pendingApproval) {
    const a = s.pendingApproval;
    const card = tool(view, a.toolUseId, a.toolName, a.arguments, Math.max(view.lastSeq, s.lastSeq));
    card.state = "pending";
    if (a.diff && !card.diff) card.diff = { path: String(a.arguments.path ?? ""), diff: a.diff };
    card.rev++;
  }
  if (!s.hasMore) {
    view.lastSeq = Math.max(view.lastSeq, s.lastSeq);
    view.gapAfter = undefined;
  } else if (s.messages.length > 0) {
    // more pages follow: the owner asks again after the last message it got
    view.gapAfter = s.messages[s.messages.length - 1].seq;
  }
  if (view.status === "exhausted") exhaustedNotice(view, view.lastSeq);
}

// -------------------------------------------------------------------------------------------- events

/**
 * What the view does with each event kind (REQ-PROTO-055): a `Record` of every kind, so a kind added to the
 * schema is a compile error here (and in `applyEvent`'s switch) until it is decided; the unit tests compare
 * its keys with the schema's.
 */
export const EVENT_HANDLING: Record<EventKind, string> = {
  status: "the status, the mode; closes what the status ends",
  message: "a persisted message (text, tool cards, results)",
  textDelta: "the streamed answer",
  toolStart: "the tool card runs",
  toolEnd: "the tool card's end and summary",
  toolRefused: "the tool card, refused by the mode",
  diff: "the tool card's applied diff",
  modeChanged: "the mode, and a notice",
  styleChanged: "the style",
  styleSuggestion: "a notice with the command one click away",
  policyChanged: "the approval policy",
  modelChanged: "the model and the usage against its window, and a notice",
  approvalRequested: "the open approval and its card",
  approvalResolved: "closes the approval; marks the card",
  upgradeRequested: "the open upgrade request",
  upgradeResolved: "closes the upgrade request, and a notice",
  alwaysAllowChanged: "the always-allowed rules, and a notice",
  retry: "the retry line",
  usage: "the context usage",
  contextWarning: "the context warning",
  continuationStarted: "a notice",
  continuation: "the continuation summary",
  subAgentsSpawned: "the sub-agents under their call's card",
  subAgentFinished: "the sub-agent's outcome",
  error: "the error, and a notice with what to do",
  secretWithheld: "a warning notice naming where the withheld secrets came from",
};

function applyEvent(view: ConversationView, e: PhoenixEvent): void {
  const verdict = seqVerdict(e.seq, view.lastSeq);
  if (verdict === "seen") return;
  if (verdict === "gap" && view.loaded && view.gapAfter === undefined) view.gapAfter = view.lastSeq;
  view.lastSeq = e.seq;
  switch (e.kind) {
    case "status":
      view.status = e.status;
      view.mode = e.mode;
      if (e.status !== "awaiting_approval") view.pendingApproval = undefined;
      if (e.status !== "awaiting_upgrade") view.pendingUpgrade = undefined;
      if (e.status !== "awaiting_llm") view.retry = undefined;
      if (e.status !== "error") view.error = undefined;
      if (e.status === "exhausted") exhaustedNotice(view, e.seq);
      return;
    case "message":
      addMessage(view, e.message);
      return;
    case "textDelta": {
      view.retry = undefined;
      const requestId = String(e.requestId);
      const last = view.items[view.items.length - 1];
      if (last && last.type === "stream" && last.requestId === requestId) {
        last.text += e.text;
        last.rev++;
      } else {
        const found = view.items.find((i) => i.type === "stream" && i.requestId === requestId);
        if (found && found.type === "stream") {
          found.text += e.text;
          found.rev++;
        } else {
          insert(view, { key: `stream:${requestId}`, seq: e.seq, rev: 0, type: "stream", requestId, text: e.text });
        }
      }
      return;
    }
    case "toolStart": {
      const card = tool(view, e.toolUseId, e.toolName, e.arguments, e.seq);
      card.state = "running";
      card.mode = e.mode;
      card.rev++;
      return;
    }
    case "toolEnd": {
      const card = view.tools[e.toolUseId];
      if (!card) return;
      if (card.state === "running" || card.state === "pending") card.state = e.isError ? "error" : "done";
      if (e.summary === "cancelled") card.state = "cancelled";
      card.summary = e.summary;
      card.rev++;
      return;
    }
    case "toolRefused": {
      const card = tool(view, e.toolUseId, e.toolName, {}, e.seq);
      card.state = "refused";
      card.rev++;
      return;
    }
    case "diff": {
      const card = view.tools[e.toolUseId];
      if (!card) return;
      // one diff event per file (a bash command's reviewed changes): the card keeps all of them
      card.diff = card.diff?.applied && card.diff.path !== e.path
        ? { path: card.diff.path, diff: card.diff.diff + e.diff, applied: true }
        : { path: e.path, diff: e.diff, applied: true };
      card.rev++;
      return;
    }
    case "modeChanged":
      view.mode = e.mode;
      notice(view, e.seq, { level: "info", text: `Mode: ${e.mode}${e.via ? ` (${viaText(e.via)})` : ""}.` });
      return;
    case "styleChanged":
      view.style = e.style;
      return;
    case "styleSuggestion":
      notice(view, e.seq, {
        level: "info",
        text: e.text,
        action: { kind: "sendCommand", label: e.command, argument: e.command },
      });
      return;
    case "policyChanged":
      view.policy = e.policy;
      return;
    case "modelChanged": {
      // the new window changes the thresholds at once (REQ-MODEL-003): the usage is re-read against it
      view.model = e.model;
      if (view.usage && e.contextWindow > 0) {
        const fraction = view.usage.usedTokens / e.contextWindow;
        view.usage = { usedTokens: view.usage.usedTokens, contextWindow: e.contextWindow, fraction };
        view.contextWarning = fraction >= CONTEXT_WARNING_FRACTION;
      }
      notice(view, e.seq, { level: "info", text: `Model: ${e.model} (was ${e.previous}).` });
      return;
    }
    case "approvalRequested": {
      const { kind: _k, seq: _s, time: _t, conversationId: _c, parentConversationId: _p, ...request } = e;
      view.pendingApproval = request;
      const card = tool(view, e.toolUseId, e.toolName, e.arguments, e.seq);
      card.state = "pending";
      if (e.diff && !card.diff) card.diff = { path: String(e.arguments.path ?? ""), diff: e.diff };
      card.rev++;
      return;
    }
    case "approvalResolved": {
      // the status event may have closed the dialog already: the card is found by the call's id
      const card = view.tools[e.toolUseId];
      if (card) {
        card.decision = e.decision;
        if (e.decision === "deny") card.state = "denied";
        if (e.decision === "cancelled") card.state = "cancelled";
        // a review's question has no toolStart / toolEnd of its own (the bash card carries the outcome)
        if ((e.decision === "allow" || e.decision === "alwaysAllow") && card.state === "pending" && isReviewCall(card.arguments)) {
          card.state = "done";
        }
        card.rev++;
      }
      if (view.pendingApproval?.toolUseId === e.toolUseId) view.pendingApproval = undefined;
      return;
    }
    case "upgradeRequested": {
      const { kind: _k, seq: _s, time: _t, conversationId: _c, parentConversationId: _p, ...request } = e;
      view.pendingUpgrade = request;
      return;
    }
    case "upgradeResolved":
      if (view.pendingUpgrade && view.pendingUpgrade.toolUseId === e.toolUseId) view.pendingUpgrade = undefined;
      notice(view, e.seq, {
        level: "info",
        text: e.cancelled ? "Upgrade request cancelled." : e.approved ? "Upgrade approved." : "Upgrade denied.",
      });
      return;
    case "alwaysAllowChanged": {
      // the list holds the rules' labels, as getConversation's alwaysAllowed does (REQ-PERM-021)
      const label = e.scope === "prefix" && e.rule ? `${e.toolName}: ${e.rule}` : e.toolName;
      view.alwaysAllowed = view.alwaysAllowed.filter((t) => t !== label);
      if (e.allowed) view.alwaysAllowed.push(label);
      // the chat says which rule was granted, not only that one was (REQ-PERM-024)
      notice(view, e.seq, {
        level: "info",
        text: e.allowed
          ? `Always allowed in this conversation: ${scopeWords(label)}`
          : `Asks again in this conversation: ${scopeWords(label)}`,
      });
      return;
    }
    case "retry":
      view.retry = { attempt: e.attempt, maxAttempts: e.maxAttempts, delayMs: e.delayMs, reason: e.reason };
      return;
    case "usage":
      view.usage = { usedTokens: e.usedTokens, contextWindow: e.contextWindow, fraction: e.fraction };
      view.contextWarning = e.fraction >= CONTEXT_WARNING_FRACTION;
      return;
    case "contextWarning":
      view.usage = { usedTokens: e.usedTokens, contextWindow: e.contextWindow, fraction: e.fraction };
      view.contextWarning = true;
      return;
    case "continuationStarted":
      notice(view, e.seq, { level: "info", text: "The context is full: summarising this conversation…" });
      return;
    case "continuation":
      view.continuationSummary = e.summary;
      return;
    case "subAgentsSpawned": {
      const card = view.tools[e.toolUseId];
      for (const agent of e.agents) {
        subAgent(view, agent.conversationId, agent.task);
        if (card && !card.agents.includes(agent.conversationId)) card.agents.push(agent.conversationId);
      }
      if (card) card.rev++;
      return;
    }
    case "subAgentFinished": {
      const sub = view.subAgents[e.agentId];
      if (!sub) return;
      sub.status = "finished";
      sub.outcome = e.outcome;
      sub.reason = e.reason ?? undefined;
      for (const card of Object.values(view.tools)) if (card.agents.includes(e.agentId)) card.rev++;
      return;
    }
    case "error":
      view.error = { message: e.message, errorKind: e.errorKind };
      notice(view, e.seq, { level: "error", text: e.message, action: errorAction(e.errorKind, e.message) });
      return;
    case "secretWithheld":
      notice(view, e.seq, { level: "warning", text: e.message });
      return;
    default: {
      // a kind this version does not know (a newer server): seq is tracked, and the chat says so once
      const unknown: never = e;
      unknownKind(view, unknown);
      return;
    }
  }
}

/** A notice, once per kind, that an event could not be shown (REQ-PROTO-055: never dropped silently). */
function unknownKind(view: ConversationView, e: { kind?: unknown; seq: number }): void {
  const kind = String(e.kind).slice(0, 80);
  const key = `unknown-kind:${kind}`;
  if (view.items.some((i) => i.key === key)) return;
  insert(view, {
    key,
    seq: e.seq,
    rev: 0,
    type: "notice",
    notice: { level: "warning", text: `The server sent an event of a kind this extension does not know ("${kind}"); it is not shown. Update the Phoenix extension.` },
  });
}

// ------------------------------------------------------------------------------------------- helpers

function viaText(via: string): string {
  return via === "upgrade_request" ? "upgrade request approved" : via;
}

function errorAction(errorKind: string, message: string): Notice["action"] {
  if (errorKind === "contextExhausted") return { kind: "continueInNew", label: "Continue in a new conversation" };
  if (/api key|x-api-key|authentication/i.test(message)) return { kind: "openSettings", label: "Open settings" };
  return { kind: "retryLast", label: "Send again" };
}

function exhaustedNotice(view: ConversationView, seq: number): void {
  if (view.items.some((i) => i.key === "notice:exhausted")) return;
  insert(view, {
    key: "notice:exhausted",
    seq,
    rev: 0,
    type: "notice",
    notice: {
      level: "warning",
      text: "This conversation's context is exhausted; it takes no more messages.",
      action: { kind: "continueInNew", label: "Continue in a new conversation" },
    },
  });
}

function notice(view: ConversationView, seq: number, n: Notice): void {
  insert(view, { key: `notice:${seq}`, seq, rev: 0, type: "notice", notice: n });
}

function tool(
  view: ConversationView,
  toolUseId: string,
  toolName: string,
  args: Record<string, unknown>,
  seq: number,
): ToolCard {
  let card = view.tools[toolUseId];
  if (!card) {
    card = { toolUseId, toolName, arguments: args, state: "pending", agents: [], rev: 0 };
    view.tools[toolUseId] = card;
  } else if (Object.keys(card.arguments).length === 0 && Object.keys(args).length > 0) {
    card.arguments = args;
  }
  if (!view.items.some((i) => i.type === "tool" && i.toolUseId === toolUseId)) {
    insert(view, { key: `tool:${toolUseId}`, seq, rev: 0, type: "tool", toolUseId });
  }
  return card;
}

function subAgent(view: ConversationView, conversationId: string, task: string): SubAgent {
  let sub = view.subAgents[conversationId];
  if (!sub) {
    sub = { conversationId, task, status: "idle", view: emptyView(conversationId, view.conversationId) };
    sub.view.loaded = true; // its events start at seq 1; a later start is a gap to catch up
    view.subAgents[conversationId] = sub;
    view.subAgentOrder.push(conversationId);
  } else if (task && !sub.task) {
    sub.task = task;
  }
  return sub;
}

function addMessage(view: ConversationView, m: WireMessage): void {
  if (view.messageSeqs.includes(m.seq)) return;
  view.messageSeqs.push(m.seq);
  if (m.role === "assistant") {
    // the persisted answer supersedes the streamed text of the turn (REQ-PROTO-007)
    view.items = view.items.filter((i) => i.type !== "stream" || i.seq > m.seq);
  }
  m.content.forEach((block, index) => addBlock(view, m, block, index));
}

function addBlock(view: ConversationView, m: WireMessage, block: ContentBlock, index: number): void {
  const key = `m${m.seq}:${index}`;
  switch (block.type) {
    case "text": {
      if (!block.text) return;
      const attached = m.role === "user" && !m.tag ? parseAttachment(block.text) : undefined;
      if (attached) {
        insert(view, { key, seq: m.seq, rev: 0, type: "attachment", ...attached });
        return;
      }
      insert(view, { key, seq: m.seq, rev: 0, type: "text", role: m.role, text: block.text, tag: m.tag });
      return;
    }
    case "image":
      insert(view, { key, seq: m.seq, rev: 0, type: "image", role: m.role, mediaType: block.mediaType, label: block.label });
      return;
    case "toolUse":
      tool(view, block.toolUseId, block.toolName, block.arguments, m.seq);
      return;
    case "toolResult": {
      const card = view.tools[block.toolUseId];
      if (!card) return;
      // the images the model got first, by the server's label, as the live toolEnd summary named them (REQ-MCP-024)
      card.output = [...(block.images ?? []).map((image) => image.label), block.content].join("\n");
      if (card.state === "running" || card.state === "pending" || card.state === "done") {
        card.state = block.isError ? "error" : "done";
      }
      card.rev++;
      return;
    }
  }
}

/** Insert in seq order (a catch-up may deliver messages older than items already shown). */
function insert(view: ConversationView, item: Item): void {
  const items = view.items;
  let at = items.length;
  while (at > 0 && items[at - 1].seq > item.seq) at--;
  items.splice(at, 0, item);
}

export interface OpenRequest {
  conversationId: string;
  approval?: ApprovalRequest;
  upgrade?: UpgradeRequest;
}

/** The request the user must answer now: the conversation's own first, then its sub-agents' (REQ-PERM-017). */
export function openRequest(view: ConversationView): OpenRequest | undefined {
  if (view.pendingApproval) return { conversationId: view.conversationId, approval: view.pendingApproval };
  if (view.pendingUpgrade) return { conversationId: view.conversationId, upgrade: view.pendingUpgrade };
  for (const id of view.subAgentOrder) {
    const found = openRequest(view.subAgents[id].view);
    if (found) return found;
  }
  return undefined;
}

/**
 * An attachment block of a user message as the server writes it (REQ-ATTACH-003):
 * `<attachment path="a.py" lines="a.py, lines 1-2">…</attachment>` or `<attachment path="a.py" kind="diagnostics">`.
 */
export function parseAttachment(text: string): { path: string; label: string; body: string } | undefined {
  const m = /^<attachment path="([^"\n]*)"(?: lines="([^"\n]*)")?(?: kind="(diagnostics)")?>\n([\s\S]*)<\/attachment>\s*$/.exec(text);
  if (!m) return undefined;
  const label = m[2] ?? (m[3] ? `problems in ${m[1]}` : m[1]);
  return { path: m[1], label, body: m[4] };
}
