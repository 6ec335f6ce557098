import { test } from "node:test";
import assert from "node:assert/strict";
import { apply, emptyView, gaps, openRequest, type ConversationView } from "../src/core/reducer";
import { CID, Events, snapshot } from "./fixtures";
import type { PhoenixEvent } from "../src/protocol/wire";

function loaded(overrides = {}): ConversationView {
  return apply(emptyView(CID), { type: "snapshot", snapshot: snapshot(overrides), merge: false });
}

const feed = (v: ConversationView, ...events: PhoenixEvent[]) => {
  for (const event of events) apply(v, { type: "event", event });
  return v;
};

test("streamed text deltas build one item; the persisted answer replaces it", () => {
  const e = new Events();
  const v = feed(loaded(), e.next({ kind: "textDelta", text: "Hel", requestId: 1 }), e.next({ kind: "textDelta", text: "lo", requestId: 1 }));
  assert.deepEqual(v.items.map((i) => i.type), ["stream"]);
  assert.equal((v.items[0] as { text: string }).text, "Hello");
  feed(v, e.next({ kind: "message", message: { seq: 3, messageId: "1", role: "assistant", content: [{ type: "text", text: "Hello" }], createdAt: 0 } }));
  assert.deepEqual(v.items.map((i) => i.type), ["text"]);
});

test("tool calls become cards: command, output, diff and the end state", () => {
  const e = new Events();
  const v = loaded();
  feed(
    v,
    e.next({ kind: "message", message: { seq: 1, messageId: "0", role: "assistant", content: [{ type: "toolUse", toolUseId: "t1", toolName: "bash", arguments: { command: "ls" } }], createdAt: 0 } }),
    e.next({ kind: "toolStart", toolUseId: "t1", toolName: "bash", arguments: { command: "ls" }, mode: "restricted" }),
  );
  assert.equal(v.tools.t1.state, "running");
  feed(
    v,
    e.next({ kind: "toolEnd", toolUseId: "t1", isError: false, summary: "a\nb" }),
    e.next({ kind: "message", message: { seq: 4, messageId: "1", role: "user", content: [{ type: "toolResult", toolUseId: "t1", content: "a\nb\n", isError: false, images: [] }], createdAt: 0 } }),
    e.next({ kind: "diff", toolUseId: "t1", path: "x", diff: "--- a/x\n+++ b/x\n" }),
  );
  assert.equal(v.tools.t1.state, "done");
  assert.equal(v.tools.t1.output, "a\nb\n");
  assert.equal(v.tools.t1.diff?.path, "x");
  assert.equal(v.items.filter((i) => i.type === "tool").length, 1, "one card per tool call");
  assert.equal(v.items.filter((i) => i.type === "text").length, 0, "tool results are not shown as user text");
});

test("an approval opens and closes with the server's events; a deny marks the card", () => {
  const e = new Events();
  const v = loaded({ mode: "unrestricted" });
  feed(
    v,
    e.next({ kind: "approvalRequested", toolUseId: "t1", toolName: "bash", description: "Run", arguments: { command: "rm x" }, scopes: [] }),
    e.next({ kind: "status", status: "awaiting_approval", previous: "running_tool", mode: "unrestricted" }),
  );
  assert.equal(v.pendingApproval?.toolUseId, "t1");
  assert.equal(openRequest(v)?.approval?.toolUseId, "t1");
  feed(v, e.next({ kind: "approvalResolved", toolUseId: "t1", decision: "deny" }));
  assert.equal(v.pendingApproval, undefined);
  assert.equal(v.tools.t1.state, "denied");
});

test("mode, style, policy and always-allow follow their events (REQ-LAYER-008)", () => {
  const e = new Events();
  const v = feed(
    loaded(),
    e.next({ kind: "modeChanged", mode: "unrestricted", previous: "restricted", actor: "user", via: "/execute" }),
    e.next({ kind: "styleChanged", style: "development", previous: "chat" }),
    e.next({ kind: "styleSuggestion", mode: "unrestricted", command: "/execute", text: "development works best unrestricted — /execute?" }),
    e.next({ kind: "policyChanged", policy: "auto", previous: "interactive" }),
    e.next({ kind: "alwaysAllowChanged", toolName: "bash", allowed: true, rule: "bash", scope: "tool" }),
    e.next({ kind: "alwaysAllowChanged", toolName: "bash", allowed: true, rule: "git status *", scope: "prefix" }),
  );
  assert.equal(v.mode, "unrestricted");
  assert.equal(v.style, "development");
  assert.equal(v.policy, "auto");
  assert.deepEqual(v.alwaysAllowed, ["bash", "bash: git status *"], "rules by label (REQ-PERM-021)");
  const said = v.items.flatMap((i) => (i.type === "notice" ? [i.notice.text] : []));
  assert.ok(said.includes("Always allowed in this conversation: bash: git status *"), "the chat names the rule (REQ-PERM-024)");
  assert.ok(said.includes("Always allowed in this conversation: bash"));
  const suggestion = v.items.find((i) => i.type === "notice" && i.notice.action?.kind === "sendCommand");
  assert.ok(suggestion, "the style suggestion offers its command");
  feed(v, e.next({ kind: "alwaysAllowChanged", toolName: "bash", allowed: false, rule: "bash", scope: "tool" }));
  assert.deepEqual(v.alwaysAllowed, ["bash: git status *"]);
});

test("duplicates are dropped and a skipped seq opens a gap that a merged snapshot closes (REQ-PROTO-007)", () => {
  const e = new Events();
  const v = loaded({ lastSeq: 0 });
  feed(v, e.next({ kind: "status", status: "awaiting_llm", previous: "idle", mode: "restricted" }));
  const before = v.rev;
  feed(v, { ...e.next({ kind: "status", status: "awaiting_llm", previous: "idle", mode: "restricted" }, 1) });
  assert.equal(v.lastSeq, 1);
  assert.ok(v.rev > before);
  feed(v, e.next({ kind: "status", status: "idle", previous: "awaiting_llm", mode: "restricted" }, 5));
  assert.deepEqual(gaps(v), [{ conversationId: CID, afterSeq: 1 }]);
  apply(v, {
    type: "snapshot",
    merge: true,
    snapshot: snapshot({
      lastSeq: 5,
      messages: [
        { seq: 2, messageId: "0", role: "user", content: [{ type: "text", text: "hi" }], createdAt: 0 },
        { seq: 4, messageId: "1", role: "assistant", content: [{ type: "text", text: "hello" }], createdAt: 0 },
      ],
    }),
  });
  assert.deepEqual(gaps(v), []);
  assert.deepEqual(v.items.map((i) => (i.type === "text" ? i.text : i.type)), ["hi", "hello"]);
  apply(v, { type: "snapshot", merge: true, snapshot: snapshot({ lastSeq: 5, messages: [{ seq: 2, messageId: "0", role: "user", content: [{ type: "text", text: "hi" }], createdAt: 0 }] }) });
  assert.equal(v.items.length, 2, "a message already shown is not shown twice");
});

test("a snapshot restores an open approval and the 80% context warning", () => {
  const v = loaded({
    status: "awaiting_approval",
    contextUsage: { usedTokens: 850, contextWindow: 1000, fraction: 0.85 },
    pendingApproval: { toolUseId: "t9", toolName: "patch", description: "Edit", arguments: { path: "f" }, diff: "--- a/f\n+++ b/f\n" },
  });
  assert.equal(openRequest(v)?.approval?.toolUseId, "t9");
  assert.equal(v.contextWarning, true);
  assert.equal(v.tools.t9.state, "pending");
});

test("exhausted conversations offer a continuation; errors keep their next step", () => {
  const e = new Events();
  const v = feed(
    loaded(),
    e.next({ kind: "error", message: "invalid x-api-key: set ANTHROPIC_API_KEY", errorKind: "llm" }),
    e.next({ kind: "status", status: "exhausted", previous: "summarizing", mode: "restricted" }),
  );
  const notices = v.items.flatMap((i) => (i.type === "notice" ? [i.notice] : []));
  assert.equal(notices[0].level, "error");
  assert.equal(notices[0].action?.kind, "openSettings");
  assert.equal(notices[1].action?.kind, "continueInNew");
});

test("retry status shows until the stream resumes", () => {
  const e = new Events();
  const v = feed(loaded(), e.next({ kind: "retry", attempt: 2, maxAttempts: 5, delayMs: 400, reason: "overloaded" }));
  assert.equal(v.retry?.attempt, 2);
  feed(v, e.next({ kind: "textDelta", text: "x", requestId: 2 }));
  assert.equal(v.retry, undefined);
});

test("sub-agents nest under their parent with their own seq series and approvals (REQ-PERM-017)", () => {
  const parent = new Events();
  const child = new Events("agent-1", CID);
  const v = loaded();
  feed(
    v,
    parent.next({ kind: "message", message: { seq: 1, messageId: "0", role: "assistant", content: [{ type: "toolUse", toolUseId: "sp", toolName: "spawn_agents", arguments: {} }], createdAt: 0 } }),
    parent.next({ kind: "subAgentsSpawned", toolUseId: "sp", agents: [{ conversationId: "agent-1", task: "count files" }] }),
    child.next({ kind: "textDelta", text: "working", requestId: 1 }),
    child.next({ kind: "approvalRequested", toolUseId: "tx", toolName: "bash", description: "", arguments: { command: "make" }, scopes: [] }),
  );
  assert.deepEqual(v.tools.sp.agents, ["agent-1"]);
  assert.equal(v.subAgents["agent-1"].view.items.length, 2);
  assert.equal(v.lastSeq, 2, "the parent's seq is its own");
  assert.deepEqual(openRequest(v), { conversationId: "agent-1", approval: v.subAgents["agent-1"].view.pendingApproval });
  feed(v, parent.next({ kind: "subAgentFinished", agentId: "agent-1", outcome: "submitted" }));
  assert.equal(v.subAgents["agent-1"].outcome, "submitted");
});

test("modelChanged switches the model, re-reads the usage against the new window and notes it (REQ-VSC-010)", () => {
  const e = new Events();
  const v = loaded({ model: "claude-sonnet-4-6", contextUsage: { usedTokens: 170_000, contextWindow: 1_000_000, fraction: 0.17 } });
  assert.equal(v.model, "claude-sonnet-4-6", "the snapshot (getConversation) names the model in use");
  assert.equal(v.contextWarning, false);
  feed(v, e.next({ kind: "modelChanged", model: "claude-haiku-4-5", previous: "claude-sonnet-4-6", contextWindow: 200_000 }));
  assert.equal(v.model, "claude-haiku-4-5");
  assert.equal(v.usage?.contextWindow, 200_000);
  assert.equal(v.usage?.fraction, 0.85);
  assert.equal(v.contextWarning, true, "85% of the smaller window is past the 80% warning");
  const note = v.items.find((i) => i.type === "notice");
  assert.ok(note && note.type === "notice" && /claude-haiku-4-5.*claude-sonnet-4-6/.test(note.notice.text), JSON.stringify(v.items));
  // a reload rebuilds the model from getConversation
  const reloaded = apply(v, { type: "snapshot", snapshot: snapshot({ model: "claude-haiku-4-5", lastSeq: e.seq }), merge: false });
  assert.equal(reloaded.model, "claude-haiku-4-5");
});

test("the instruction files in effect come from getConversation and are rebuilt by a fresh snapshot (REQ-INSTR-003)", () => {
  const files = [{ path: "/home/user/project/AGENTS.md", size: 12, kept: 12 }];
  const v = loaded({ instructions: files });
  assert.deepEqual(v.instructions, files);
  apply(v, { type: "snapshot", snapshot: snapshot({ instructions: [] }), merge: false });
  assert.deepEqual(v.instructions, []);
});

test("a user message's attachment blocks become attachment items with their label (REQ-ATTACH-003)", () => {
  const v = loaded({
    messages: [
      {
        seq: 1,
        messageId: "u1",
        role: "user",
        createdAt: 0,
        content: [
          { type: "text", text: "look" },
          { type: "text", text: '<attachment path="a.py" lines="a.py, lines 1-2">\nx = 1\ny = 2\n</attachment>' },
          { type: "text", text: '<attachment path="a.py" kind="diagnostics">\nline 1: error: bad\n</attachment>' },
        ],
      },
    ],
    lastSeq: 1,
  });
  assert.deepEqual(
    v.items.map((i) => (i.type === "attachment" ? [i.type, i.path, i.label, i.body] : [i.type])),
    [["text"], ["attachment", "a.py", "a.py, lines 1-2", "x = 1\ny = 2\n"], ["attachment", "a.py", "problems in a.py", "line 1: error: bad\n"]],
  );
});
