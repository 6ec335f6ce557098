import { test } from "node:test";
import assert from "node:assert/strict";
import { KEEP, STOP, reviewBackground, type BackgroundClient, type BackgroundUi } from "../src/core/background";
import { apply, emptyView, openRequest } from "../src/core/reducer";
import type { ReviewBackgroundResult } from "../src/protocol/wire";
import { CID, Events, snapshot } from "./fixtures";

/** "Phoenix: Review Background Command" (REQ-BASH-045): the requests that go out and what the user is shown. */

const running: ReviewBackgroundResult = {
  commands: [{ pid: 4242, command: "make watch", running: true, files: ["out/a.js"], summary: "1 text file(s)",
    diff: "--- a/out/a.js\n+++ b/out/a.js\n@@ -0,0 +1 @@\n+built\n" }],
  stopped: [],
  message: "What the background command(s) changed so far (read-only)",
};

function fakes(answer: string | undefined, fail?: Error) {
  const sent: { conversationId: string; pid?: number; stop?: boolean }[] = [];
  const shown: string[] = [];
  const said: string[] = [];
  const client: BackgroundClient = {
    reviewBackground: async (conversationId, pid, stop) => {
      sent.push({ conversationId, pid, stop });
      if (fail) throw fail;
      return stop ? { commands: running.commands, stopped: [4242], message: "Stopped `make watch` (PID 4242)." } : running;
    },
  };
  const ui: BackgroundUi = {
    pick: async (items) => items[0]?.pid,
    show: async (document) => void shown.push(document),
    ask: async (message, choices) => {
      said.push(`ask: ${message} [${choices.join("|")}]`);
      return answer;
    },
    info: (message) => void said.push(`info: ${message}`),
    warn: (message) => void said.push(`warn: ${message}`),
  };
  return { client, ui, sent, shown, said };
}

test("the changes so far are asked for and shown as a diff; keeping it running sends nothing more", async () => {
  const f = fakes(KEEP);
  await reviewBackground(f.client, f.ui, "c1", String);
  assert.deepEqual(f.sent, [{ conversationId: "c1", pid: undefined, stop: undefined }]);
  assert.equal(f.shown.length, 1);
  assert.match(f.shown[0]!, /# PID 4242: make watch/);
  assert.ok(f.shown[0]!.includes("#   out/a.js"));
  assert.match(f.shown[0]!, /\+built/);
  assert.match(f.said[0]!, /changed 1 path\(s\) so far.*\[Stop It and Review\|Keep It Running\]/);
  assert.equal(f.said.length, 1);
});

test("Stop It and Review stops that command and shows the server's answer", async () => {
  const f = fakes(STOP);
  await reviewBackground(f.client, f.ui, "c1", String);
  assert.deepEqual(f.sent[1], { conversationId: "c1", pid: 4242, stop: true });
  assert.equal(f.said.at(-1), "info: Stopped `make watch` (PID 4242).");
});

test("the server's refusal (no running command) is shown as a warning", async () => {
  const f = fakes(STOP, new Error("Invalid params: 'pid': this conversation has no running background command"));
  await reviewBackground(f.client, f.ui, "c1", (e) => (e as Error).message);
  assert.equal(f.shown.length, 0);
  assert.deepEqual(f.said, ["warn: Invalid params: 'pid': this conversation has no running background command"]);
});

test("a background command's review asked while the conversation is idle opens the dialog, and its answer closes it (REQ-BASH-044)", () => {
  const v = apply(emptyView(CID), { type: "snapshot", snapshot: snapshot({}), merge: false });
  const e = new Events();
  for (const event of [
    e.next({ kind: "status", status: "idle", previous: "awaiting_llm", mode: "unrestricted" }),
    e.next({ kind: "approvalRequested", toolUseId: "background-ab12.review", toolName: "patch", description: "Apply",
      arguments: { command: "make watch", files: ["out/a.js"] }, diff: "+built\n", scopes: [] }),
  ]) apply(v, { type: "event", event });
  assert.equal(v.status, "idle");
  assert.equal(openRequest(v)?.approval?.toolUseId, "background-ab12.review");
  apply(v, { type: "event", event: e.next({ kind: "approvalResolved", toolUseId: "background-ab12.review", decision: "allow" }) });
  assert.equal(openRequest(v), undefined);
});
