/**
 * REQ-PROTO-055: the extension's tables of event kinds and tool names are the schema's, a kind added to the
 * schema fails the comparison, and an unknown kind or tool that still arrives is shown, never dropped silently.
 */

import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import path from "node:path";
import { JSDOM } from "jsdom";
import { tableProblems } from "../src/core/kinds";
import { apply, emptyView, EVENT_HANDLING } from "../src/core/reducer";
import { TOOL_ICONS, toolIcon } from "../src/webview/timeline";
import { ChatApp } from "../src/webview/app";
import { CID, Events, snapshot } from "./fixtures";
import type { PhoenixEvent } from "../src/protocol/wire";

interface Schema {
  $defs: { PhoenixEvent: { discriminator: { mapping: Record<string, string> } }; ToolName: { enum: string[] } };
}

const SCHEMA = JSON.parse(readFileSync(path.join(__dirname, "..", "..", "..", "specs", "protocol.schema.json"), "utf8")) as Schema;
const eventKinds = (s: Schema) => Object.keys(s.$defs.PhoenixEvent.discriminator.mapping);
const toolNames = (s: Schema) => s.$defs.ToolName.enum;

test("the reducer handles exactly the schema's event kinds (REQ-PROTO-055)", () => {
  assert.deepEqual(tableProblems("reducer.ts EVENT_HANDLING", Object.keys(EVENT_HANDLING), eventKinds(SCHEMA)), []);
  assert.equal(eventKinds(SCHEMA).length, 26);
});

test("the timeline has an icon for exactly the schema's tools (REQ-PROTO-055)", () => {
  assert.deepEqual(tableProblems("timeline.ts TOOL_ICONS", Object.keys(TOOL_ICONS), toolNames(SCHEMA)), []);
  assert.equal(toolNames(SCHEMA).length, 16);
});

test("a kind or a tool added to the schema fails each comparison (REQ-PROTO-055)", () => {
  const grown = structuredClone(SCHEMA);
  grown.$defs.PhoenixEvent.discriminator.mapping.fakeKind = "#/$defs/FakeKind";
  grown.$defs.ToolName.enum.push("fake_tool");
  assert.deepEqual(tableProblems("reducer.ts EVENT_HANDLING", Object.keys(EVENT_HANDLING), eventKinds(grown)), [
    "reducer.ts EVENT_HANDLING does not handle the kind 'fakeKind': add it to the table (what the consumer does with it, or why it ignores it)",
  ]);
  assert.deepEqual(tableProblems("timeline.ts TOOL_ICONS", Object.keys(TOOL_ICONS), toolNames(grown)), [
    "timeline.ts TOOL_ICONS does not handle the kind 'fake_tool': add it to the table (what the consumer does with it, or why it ignores it)",
  ]);
  assert.deepEqual(tableProblems("t", [...eventKinds(SCHEMA), "gone"], eventKinds(SCHEMA)), [
    "t has the key 'gone', which is no kind of the protocol: remove it",
  ]);
});

test("an event of an unknown kind is shown as a warning, once per kind, and its seq is tracked (REQ-PROTO-055)", () => {
  const view = apply(emptyView(CID), { type: "snapshot", snapshot: snapshot(), merge: false });
  const e = new Events();
  e.seq = view.lastSeq;
  const fake = (): PhoenixEvent => ({ ...e.next({ kind: "textDelta", text: "x", requestId: 1 }), kind: "fakeKind" }) as unknown as PhoenixEvent;
  apply(view, { type: "event", event: fake() });
  apply(view, { type: "event", event: fake() });
  const notices = view.items.filter((i) => i.type === "notice");
  assert.equal(notices.length, 1, "said once");
  const n = notices[0];
  assert.ok(n.type === "notice" && n.notice.level === "warning" && /"fakeKind".*Update the Phoenix extension/.test(n.notice.text));
  assert.equal(view.lastSeq, e.seq, "the sequence goes on: no gap is invented");
  assert.equal(view.items.filter((i) => i.type === "stream").length, 0, "nothing of it is shown as something else");
});

test("a tool this version does not know gets a card that says so (REQ-PROTO-055)", () => {
  assert.equal(toolIcon("bash"), "terminal");
  assert.equal(toolIcon("fake_tool"), undefined);
  assert.equal(toolIcon("toString"), undefined, "an inherited name is no tool");
  assert.equal(toolIcon("mcp__tracker__create_issue"), "plug", "every MCP tool has the family's icon");
  const dom = new JSDOM('<!DOCTYPE html><body><div id="root"></div></body>');
  const root = dom.window.document.getElementById("root")!;
  const app = new ChatApp(root as unknown as HTMLElement, () => undefined, { sanitize: (html) => html, hasFocus: () => true });
  const view = apply(emptyView(CID), { type: "snapshot", snapshot: snapshot({ mode: "unrestricted" }), merge: false });
  app.receive({ type: "server", state: "ready" });
  app.receive({ type: "reset", view: structuredClone(view) });
  const e = new Events();
  e.seq = view.lastSeq;
  const start = (id: string, toolName: string) =>
    app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "toolStart", toolUseId: id, toolName, arguments: {}, mode: "unrestricted" }) } });
  start("t1", "fake_tool");
  start("t2", "bash");
  const card = (id: string) => root.querySelector(`[data-tool-use-id="${id}"]`)!;
  assert.ok(card("t1").querySelector(".codicon-question"));
  assert.match(card("t1").textContent!, /a tool this extension does not know: update it/);
  assert.ok(card("t2").querySelector(".codicon-terminal"));
  assert.equal(card("t2").querySelector(".tool-unknown"), null);
});
