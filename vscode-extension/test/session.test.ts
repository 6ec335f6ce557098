import { test } from "node:test";
import assert from "node:assert/strict";
import { PhoenixClient, errorKind, type Connection } from "../src/protocol/client";
import { ConversationSession, type SessionChange } from "../src/protocol/session";
import { apply, emptyView } from "../src/core/reducer";
import type { GetConversationParams, GetConversationResult } from "../src/protocol/wire";
import { CID, Events, snapshot } from "./fixtures";

/** A FAKE connection: answers getConversation from a script and records every request. */
class FakeConnection implements Connection {
  requests: { method: string; params: unknown }[] = [];
  constructor(private readonly answer: (params: GetConversationParams) => GetConversationResult) {}
  async sendRequest<R>(method: string, params: unknown): Promise<R> {
    this.requests.push({ method, params });
    if (method === "phoenix/getConversation") return this.answer(params as GetConversationParams) as R;
    throw Object.assign(new Error("busy"), { code: -32002, message: "The agent is busy", data: { kind: "agentBusy" } });
  }
  onNotification(): { dispose(): void } {
    return { dispose() {} };
  }
}

const message = (seq: number, text: string) => ({ seq, messageId: String(seq), role: "user" as const, content: [{ type: "text" as const, text }], createdAt: 0 });

test("open rebuilds the view from every page of getConversation, with the open approval (REQ-VSC-004)", async () => {
  const conn = new FakeConnection((p) =>
    p.afterSeq === undefined
      ? snapshot({ messages: [message(1, "one")], hasMore: true, lastSeq: 9, status: "awaiting_approval" })
      : snapshot({
          messages: [message(3, "two")],
          hasMore: false,
          lastSeq: 9,
          status: "awaiting_approval",
          pendingApproval: { toolUseId: "t1", toolName: "bash", description: "", arguments: {}, scopes: [] },
        }),
  );
  const session = new ConversationSession(new PhoenixClient(conn));
  const view = await session.open(CID);
  assert.deepEqual(conn.requests.map((r) => (r.params as GetConversationParams).afterSeq), [undefined, 1]);
  assert.deepEqual(view.items.map((i) => (i.type === "text" ? i.text : i.type)), ["one", "two", "tool"]);
  assert.equal(view.pendingApproval?.toolUseId, "t1");
  assert.equal(view.lastSeq, 9);
});

test("a seq gap is closed with getConversation(afterSeq), and listeners can replay the same inputs (REQ-PROTO-007)", async () => {
  let calls = 0;
  const conn = new FakeConnection((p) => {
    calls++;
    if (p.afterSeq === undefined) return snapshot({ lastSeq: 2 });
    assert.equal(p.afterSeq, 3);
    return snapshot({ lastSeq: 6, messages: [message(5, "missed")] });
  });
  const session = new ConversationSession(new PhoenixClient(conn));
  const changes: SessionChange[] = [];
  session.onChange((c) => changes.push(c));
  await session.open(CID);
  const e = new Events();
  e.seq = 2;
  session.handleEvent(e.next({ kind: "status", status: "awaiting_llm", previous: "idle", mode: "restricted" }));
  session.handleEvent(e.next({ kind: "status", status: "idle", previous: "awaiting_llm", mode: "restricted" }, 6));
  await session.closeGaps();
  assert.equal(calls, 2);
  const view = session.view!;
  assert.deepEqual(view.items.map((i) => (i.type === "text" ? i.text : i.type)), ["missed"]);
  // a copy folded from the emitted changes is the same view (what the webview does)
  let copy = emptyView(CID);
  for (const c of changes) copy = c.type === "reset" ? structuredClone(c.view!) : apply(copy, c.input);
  assert.deepEqual({ ...copy, rev: 0 }, { ...view, rev: 0 });
});

test("events of other conversations are ignored; errors keep their kind", async () => {
  const conn = new FakeConnection(() => snapshot());
  const client = new PhoenixClient(conn);
  const session = new ConversationSession(client);
  await session.open(CID);
  session.handleEvent(new Events("other").next({ kind: "textDelta", text: "x", requestId: 1 }));
  assert.equal(session.view!.items.length, 0);
  await assert.rejects(client.cancel(CID), (e: unknown) => errorKind(e) === "agentBusy");
});
