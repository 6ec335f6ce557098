/**
 * End to end: the extension's own protocol client (`PhoenixClient` + `ConversationSession`) over
 * `vscode-jsonrpc` against the REAL Python server, with the model played by the fake Anthropic server
 * (`tests/fake_anthropic.py`, a real local HTTP server speaking the Messages API). The editor side of
 * `workspace/applyEdit` is a small FAKE that writes the edit to disk, as VS Code would for a closed file.
 */

import { test, before, after } from "node:test";
import assert from "node:assert/strict";
import { spawn, type ChildProcess } from "node:child_process";
import { existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import * as path from "node:path";
import { pathToFileURL, fileURLToPath } from "node:url";
import { createInterface } from "node:readline";
import { createMessageConnection, StreamMessageReader, StreamMessageWriter, type MessageConnection } from "vscode-jsonrpc/node";
import { PhoenixClient, errorField, errorKind, errorMessage } from "../../src/protocol/client";
import { ConversationSession } from "../../src/protocol/session";
import { applyUnifiedDiff } from "../../src/core/diff";
import { openRequest, type ConversationView } from "../../src/core/reducer";
import type { PhoenixEvent } from "../../src/protocol/wire";

const TIMEOUT = 30_000;

function repoRoot(): string {
  let dir = __dirname;
  while (!existsSync(path.join(dir, "pyproject.toml"))) {
    const up = path.dirname(dir);
    if (up === dir) throw new Error("the repository root (pyproject.toml) was not found above this test");
    dir = up;
  }
  return dir;
}

const ROOT = repoRoot();
function python(): string {
  if (process.env.PHOENIX_PYTHON) return process.env.PHOENIX_PYTHON;
  const venv = path.join(ROOT, ".venv", "bin", "python");
  return existsSync(venv) ? venv : "python3";
}

const patchCall = (id: string, newText: string) => ({
  id,
  name: "patch",
  input: { path: "a.txt", patches: [{ operation: "append_eof", newText }] },
});

// The fake model's answers, in the order the turns below ask for them.
const REPLIES = [
  // paced like a model, 50 ms apart: deltas that arrive together are coalesced into one event (REQ-PROTO-049)
  { text: "Hello **there**, I am streaming this answer.", deltas: 6, delay_s: 0.05 },
  { tool_uses: [{ id: "toolu_up", name: "request_mode_upgrade", input: { reason: "I need to edit a.txt" } }] },
  { text: "Thanks, I can write now." },
  { tool_uses: [patchCall("toolu_p1", "two\n")] },
  { text: "Appended." },
  { tool_uses: [patchCall("toolu_p2", "three\n")] },
  { text: "Understood, I left it." },
  { tool_uses: [{ id: "toolu_b1", name: "bash", input: { command: "echo always" } }] },
  { text: "Ran it." },
  { tool_uses: [{ id: "toolu_b2", name: "bash", input: { command: "echo again" } }] },
  { text: "Ran it again without asking." },
  { tool_uses: [patchCall("toolu_p3", "four\n")] },
  { text: "Done after the reload." },
  { tool_uses: [patchCall("toolu_p4", "five\n")] },
  { text: "Auto policy: no question asked." },
  { text: "I see the first line and its problem." },
];

let tmp: string;
let work: string;
let fake: ChildProcess;
let server: ChildProcess;
let connection: MessageConnection;
let client: PhoenixClient;
const sessions: ConversationSession[] = [];
const events: PhoenixEvent[] = [];
const stderr: string[] = [];
let serverCommands: string[] = [];

function applyEditToDisk(params: { edit: { documentChanges?: unknown[]; changes?: Record<string, unknown[]> } }): { applied: boolean } {
  type TextEdit = { range: { start: { line: number; character: number }; end: { line: number; character: number } }; newText: string };
  const edits: [string, TextEdit[]][] = [];
  for (const change of params.edit.documentChanges ?? []) {
    const c = change as { kind?: string; uri?: string; textDocument?: { uri: string }; edits?: TextEdit[] };
    if (c.kind === "create" && c.uri) {
      const file = fileURLToPath(c.uri);
      if (!existsSync(file)) writeFileSync(file, "");
    } else if (c.textDocument && c.edits) {
      edits.push([c.textDocument.uri, c.edits]);
    }
  }
  for (const [uri, list] of Object.entries(params.edit.changes ?? {})) edits.push([uri, list as TextEdit[]]);
  for (const [uri, list] of edits) {
    const file = fileURLToPath(uri);
    const text = readFileSync(file, "utf8");
    const lines = text.split("\n");
    const offset = (p: { line: number; character: number }) =>
      lines.slice(0, p.line).reduce((n, l) => n + l.length + 1, 0) + p.character;
    let out = text;
    for (const e of [...list].sort((a, b) => offset(b.range.start) - offset(a.range.start))) {
      out = out.slice(0, offset(e.range.start)) + e.newText + out.slice(offset(e.range.end));
    }
    writeFileSync(file, out);
  }
  return { applied: true };
}

async function until<T>(what: string, probe: () => T | undefined | false, timeout = TIMEOUT): Promise<T> {
  const started = Date.now();
  for (;;) {
    const value = probe();
    if (value) return value;
    if (Date.now() - started > timeout) {
      const kinds = events.slice(-12).map((e) => `${e.seq}:${e.kind}${"status" in e ? `=${e.status}` : ""}`);
      throw new Error(`timed out waiting for ${what}; last events: ${kinds.join(" ")}\nserver stderr: ${stderr.join("").slice(-2000)}`);
    }
    await new Promise((r) => setTimeout(r, 10));
  }
}

function newSession(): ConversationSession {
  const s = new ConversationSession(client);
  s.onError = (error) => stderr.push(`catch-up failed: ${String(error)}\n`);
  sessions.push(s);
  return s;
}

const texts = (v: ConversationView, role: "user" | "assistant") =>
  v.items.flatMap((i) => (i.type === "text" && i.role === role && !i.tag ? [i.text] : []));

/** Send a message and wait for the turn to come to rest (idle) or to ask (approval / upgrade). */
async function turn(s: ConversationSession, text: string): Promise<ConversationView> {
  const view = s.view!;
  const seq = view.lastSeq;
  await client.sendMessage({ conversationId: view.conversationId, text });
  return until(`the turn "${text}" to rest`, () =>
    view.lastSeq > seq && (view.status === "idle" || openRequest(view) !== undefined) && view,
  );
}

async function idle(s: ConversationSession, after: number): Promise<void> {
  const view = s.view!;
  await until("idle", () => view.lastSeq > after && view.status === "idle" && !openRequest(view));
}

before(async () => {
  tmp = mkdtempSync(path.join(tmpdir(), "phoenix-vscode-e2e-"));
  work = path.join(tmp, "work");
  mkdirSync(work);
  writeFileSync(path.join(work, "a.txt"), "one\n");
  const script = path.join(tmp, "replies.json");
  writeFileSync(script, JSON.stringify(REPLIES));
  fake = spawn(python(), ["-m", "tests.fake_anthropic", "--port", "0", "--script", script], { cwd: ROOT, stdio: ["ignore", "pipe", "inherit"] });
  const line = await new Promise<string>((resolve, reject) => {
    const rl = createInterface({ input: fake.stdout! });
    rl.once("line", resolve);
    fake.once("exit", (code) => reject(new Error(`the fake Anthropic server exited (${code}) before listening`)));
  });
  const baseUrl = line.split(" ")[1];
  server = spawn(python(), ["-m", "phoenix_lsp", "serve", "--data-dir", path.join(tmp, "data")], {
    cwd: ROOT,
    env: { ...process.env, ANTHROPIC_BASE_URL: baseUrl, ANTHROPIC_API_KEY: "sk-ant-vscode-e2e-0123456789", PHOENIX_RETRY_BASE_MS: "20" },
    stdio: ["pipe", "pipe", "pipe"],
  });
  server.stderr!.on("data", (d: Buffer) => stderr.push(d.toString()));
  connection = createMessageConnection(new StreamMessageReader(server.stdout!), new StreamMessageWriter(server.stdin!));
  connection.onRequest("workspace/applyEdit", applyEditToDisk);
  connection.onRequest("client/registerCapability", () => null);
  connection.onRequest("window/workDoneProgress/create", () => null);
  connection.onRequest("window/showMessageRequest", () => {
    throw new Error("a rich client must get approvals as phoenix/event, not as window/showMessageRequest");
  });
  connection.onNotification(() => undefined);
  client = new PhoenixClient(connection);
  client.onEvent((e) => {
    events.push(e);
    for (const s of sessions) s.handleEvent(e);
  });
  connection.listen();
  const init = await connection.sendRequest<{
    capabilities: { experimental?: { phoenix?: { version: number } }; executeCommandProvider?: { commands: string[] } };
  }>("initialize", {
    processId: process.pid,
    rootUri: pathToFileURL(work).href,
    capabilities: {
      workspace: { applyEdit: true, workspaceEdit: { documentChanges: true, resourceOperations: ["create"] } },
      experimental: { phoenix: { version: 1 } },
    },
  });
  assert.equal(init.capabilities.experimental?.phoenix?.version, 1, "the server announces the phoenix protocol");
  serverCommands = init.capabilities.executeCommandProvider?.commands ?? [];
  await connection.sendNotification("initialized", {});
});

after(async () => {
  try {
    await Promise.race([connection.sendRequest("shutdown"), new Promise((r) => setTimeout(r, 3000))]);
    await connection.sendNotification("exit");
  } catch {
    /* the server may be gone already */
  }
  connection?.dispose();
  server?.kill("SIGTERM");
  fake?.kill("SIGTERM");
  rmSync(tmp, { recursive: true, force: true });
});

test("a conversation with approvals through the extension's protocol client", { timeout: 120_000 }, async (t) => {
  const created = await client.newConversation({ workingDirectory: work });
  const s = newSession();
  const view = await s.open(created.conversationId);
  assert.equal(view.mode, "restricted");
  assert.equal(view.policy, "interactive");

  await t.test("the answer streams in and is replaced by the persisted message", async () => {
    let streamed = 0;
    const watch = s.onChange((c) => {
      if (c.type === "input" && c.input.type === "event" && c.input.event.kind === "textDelta") streamed++;
    });
    await turn(s, "hello");
    watch.dispose();
    assert.ok(streamed >= 2, `text arrived in ${streamed} deltas`);
    assert.deepEqual(texts(view, "assistant"), ["Hello **there**, I am streaming this answer."]);
    assert.equal(view.items.some((i) => i.type === "stream"), false);
  });

  await t.test("an upgrade request shows the reason; approving it unrestricts", async () => {
    await turn(s, "please fix a.txt");
    const request = openRequest(view);
    assert.equal(request?.upgrade?.reason, "I need to edit a.txt");
    const seq = view.lastSeq;
    await client.respondToModeUpgrade(view.conversationId, true, request!.upgrade!.toolUseId);
    await idle(s, seq);
    assert.equal(view.mode, "unrestricted");
  });

  await t.test("a patch approval carries the diff; Open diff's proposed text is what lands; Allow applies it", async () => {
    await turn(s, "append two");
    const approval = openRequest(view)?.approval;
    assert.equal(approval?.toolName, "patch");
    assert.ok(approval?.diff, "the approval carries the unified diff");
    const proposed = applyUnifiedDiff(readFileSync(path.join(work, "a.txt"), "utf8"), approval!.diff!);
    assert.equal(proposed, "one\ntwo\n");
    const seq = view.lastSeq;
    await client.respondToApproval(view.conversationId, approval!.toolUseId, "allow");
    await idle(s, seq);
    assert.equal(readFileSync(path.join(work, "a.txt"), "utf8"), proposed);
    assert.equal(view.tools.toolu_p1.state, "done");
  });

  await t.test("Deny leaves the file alone and marks the card", async () => {
    await turn(s, "append three");
    const approval = openRequest(view)!.approval!;
    const seq = view.lastSeq;
    await client.respondToApproval(view.conversationId, approval.toolUseId, "deny");
    await idle(s, seq);
    assert.equal(readFileSync(path.join(work, "a.txt"), "utf8"), "one\ntwo\n");
    assert.equal(view.tools.toolu_p2.state, "denied");
    assert.match(view.tools.toolu_p2.output ?? "", /denied/);
    await assert.rejects(
      client.respondToApproval(view.conversationId, approval.toolUseId, "allow"),
      (e: unknown) => errorKind(e) === "requestNotOpen",
      "an answered approval is closed",
    );
  });

  await t.test("Always Allow is remembered, listed, and revocable", async () => {
    await turn(s, "run it");
    const approval = openRequest(view)!.approval!;
    assert.equal(approval.toolName, "bash");
    // the narrowest scope first, the whole tool last (REQ-PERM-020)
    assert.deepEqual(approval.scopes.map((x) => x.kind), ["prefix", "tool"]);
    assert.equal(approval.scopes[0].rule, "echo *");
    let seq = view.lastSeq;
    await client.respondToApproval(view.conversationId, approval.toolUseId, "alwaysAllow", approval.scopes[0].rule);
    await idle(s, seq);
    assert.deepEqual(view.alwaysAllowed, ["bash: echo *"]);
    assert.deepEqual((await client.listAlwaysAllowed(view.conversationId)).tools.map((r) => r.label), ["bash: echo *"]);
    seq = view.lastSeq;
    await turn(s, "run it again");
    await idle(s, seq);
    assert.ok(!events.some((e) => e.seq > seq && e.conversationId === view.conversationId && e.kind === "approvalRequested"));
    assert.match(view.tools.toolu_b2.output ?? "", /again/);
    assert.deepEqual(await client.revokeAlwaysAllow(view.conversationId, "bash", "echo *"), { revoked: true });
    await until("alwaysAllowChanged", () => view.alwaysAllowed.length === 0);
    assert.deepEqual((await client.listAlwaysAllowed(view.conversationId)).tools, []);
  });

  await t.test("a reload rebuilds the view from the server, the open approval included", async () => {
    await turn(s, "append four");
    const open = openRequest(view)!.approval!;
    const reloaded = newSession();
    const rebuilt = await reloaded.open(view.conversationId);
    assert.equal(openRequest(rebuilt)?.approval?.toolUseId, open.toolUseId);
    assert.deepEqual(texts(rebuilt, "user"), texts(view, "user"));
    assert.deepEqual(texts(rebuilt, "assistant"), texts(view, "assistant"));
    assert.equal(rebuilt.mode, "unrestricted");
    const seq = rebuilt.lastSeq;
    await client.respondToApproval(rebuilt.conversationId, open.toolUseId, "allow");
    await idle(reloaded, seq);
    assert.equal(readFileSync(path.join(work, "a.txt"), "utf8"), "one\ntwo\nfour\n");
    sessions.splice(sessions.indexOf(reloaded), 1);
  });

  await t.test("a missed event is a gap closed with getConversation(afterSeq)", async () => {
    // a session that loses every `message` event: only the catch-up can give it the messages
    const lossy = new ConversationSession(client);
    await lossy.open(view.conversationId);
    const feed = (e: PhoenixEvent) => {
      if (e.kind !== "message") lossy.handleEvent(e);
    };
    const relay = s.onChange((c) => {
      if (c.type === "input" && c.input.type === "event") feed(c.input.event);
    });
    const seq = view.lastSeq;
    await client.setApprovalPolicy(view.conversationId, "auto");
    await until("policyChanged", () => view.policy === "auto");
    await client.sendMessage({ conversationId: view.conversationId, text: "append five" });
    await idle(s, seq);
    await until("the lossy view to catch up", () => lossy.view!.lastSeq === view.lastSeq && lossy.view!.gapAfter === undefined && lossy.view);
    await lossy.closeGaps();
    relay.dispose();
    assert.deepEqual(texts(lossy.view!, "assistant"), texts(view, "assistant"));
    assert.equal(lossy.view!.policy, "auto");
    assert.equal(readFileSync(path.join(work, "a.txt"), "utf8"), "one\ntwo\nfour\nfive\n", "policy auto ran the patch without asking");
    assert.ok(!events.some((e) => e.seq > seq && e.conversationId === view.conversationId && e.kind === "approvalRequested"));
  });

  await t.test("Undo Last Change Set takes the last patch back through one workspace edit (REQ-BASH-041)", async () => {
    const done = await client.undoChanges(view.conversationId);
    assert.equal(done.undone, true, done.message);
    assert.deepEqual(done.restored, ["a.txt"]);
    assert.equal(readFileSync(path.join(work, "a.txt"), "utf8"), "one\ntwo\nfour\n", "the text before the last patch");
    await assert.rejects(client.undoChanges(view.conversationId, done.changeSetId),
      (e: unknown) => errorKind(e) === "invalidParams", "an undone set is no longer kept");
  });
});

test("attachments reach the server; a refused one names the file and its index (REQ-VSC-011)", { timeout: 60_000 }, async () => {
  const outside = path.join(tmp, "outside.txt");
  writeFileSync(outside, "secret\n");
  const created = await client.newConversation({ workingDirectory: work });
  const s = newSession();
  const view = await s.open(created.conversationId);
  const a = pathToFileURL(path.join(work, "a.txt")).href;
  await assert.rejects(
    client.sendMessage({
      conversationId: view.conversationId,
      text: "look at these",
      attachments: [{ kind: "file", uri: a }, { kind: "file", uri: pathToFileURL(outside).href }],
    }),
    (e: unknown) => errorField(e) === "attachments[1]" && errorMessage(e).includes("outside.txt"),
    "the refusal names the attachment's index and the file",
  );
  assert.equal((await client.getConversation({ conversationId: view.conversationId })).messages.length, 0, "nothing was sent");
  const seq = view.lastSeq;
  await client.sendMessage({
    conversationId: view.conversationId,
    text: "look at this",
    attachments: [
      { kind: "file", uri: a, range: { startLine: 0, endLine: 0 } },
      { kind: "diagnostics", uri: a, diagnostics: [{ line: 0, severity: "error", message: "bad first line", source: "lint" }] },
    ],
  });
  await idle(s, seq);
  const stored = JSON.stringify((await client.getConversation({ conversationId: view.conversationId })).messages);
  assert.ok(stored.includes('<attachment path=\\"a.txt\\" lines=\\"a.txt, lines 1-1\\">'), stored);
  assert.ok(stored.includes("bad first line"), stored);
});

test("the route through the extension's client: ask by default, setRoute persists agent in ui_settings.json, a message takes a route (REQ-AGENT-001)", { timeout: 30_000 }, async () => {
  const file = path.join(tmp, "data", "ui_settings.json");
  assert.deepEqual(await client.getRoute(), { route: "ask" });
  assert.deepEqual(await client.setRoute("agent"), { route: "agent", previous: "ask" });
  assert.deepEqual(JSON.parse(readFileSync(file, "utf8")), { route: "agent" });
  assert.deepEqual(await client.getRoute(), { route: "agent" });
  await assert.rejects(
    client.setRoute("fast" as "agent"),
    (e: unknown) => errorField(e) === "route" && errorKind(e) === "invalidParams" && /'ask' or 'agent'/.test(errorMessage(e)),
  );
  // a route outside the two is refused in sendMessage too: the field is in its params
  const created = await client.newConversation({ workingDirectory: work });
  await assert.rejects(
    client.sendMessage({ conversationId: created.conversationId, text: "hi", route: "fast" as "ask" }),
    (e: unknown) => errorField(e) === "route",
  );
  assert.deepEqual(await client.setRoute("ask"), { route: "ask", previous: "agent" });
  assert.deepEqual(JSON.parse(readFileSync(file, "utf8")), { route: "ask" });
});

test("no command id of the extension collides with one the server announces (REQ-VSC-009)", () => {
  const manifest = JSON.parse(readFileSync(path.join(ROOT, "vscode-extension", "package.json"), "utf8")) as {
    contributes: { commands: { command: string }[] };
  };
  const ours = manifest.contributes.commands.map((c) => c.command);
  assert.ok(ours.length > 10);
  for (const id of ours) assert.match(id, /^phoenix\.vscode\./, `${id} is outside the extension's prefix`);
  assert.deepEqual(ours.filter((id) => serverCommands.includes(id)), []);
});
