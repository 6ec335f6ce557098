/**
 * The chat webview's DOM under jsdom (a FAKE browser: the real-VS-Code test drives the real one). Scripts
 * are enabled in jsdom so that any hostile markup that became live would run and set `window.__pwned`.
 */

import { test } from "node:test";
import assert from "node:assert/strict";
import { JSDOM } from "jsdom";
import createDOMPurify from "dompurify";
import { ChatApp, droppedUris } from "../src/webview/app";
import { diagnosticsChip, fileChip } from "../src/core/attachments";
import { emptyView, apply } from "../src/core/reducer";
import { renderMarkdown, SANITIZE_CONFIG, settledLength } from "../src/core/markdown";
import { snapshotMessages, type ViewMessage } from "../src/core/messages";
import { CID, Events, HOSTILE, snapshot } from "./fixtures";
import type { GetConversationResult } from "../src/protocol/wire";

/**
 * Stands in for the workbench's focus: `chat` says whether the chat view has the keyboard (the user is in it);
 * false is the user in the editor, the palette, or a window just reloaded.
 */
function mount(s: Partial<GetConversationResult> = {}, focus = { chat: true }) {
  const dom = new JSDOM('<!DOCTYPE html><body><div id="root"></div></body>', { runScripts: "dangerously" });
  const window = dom.window;
  const purify = createDOMPurify(window as unknown as Window & typeof globalThis);
  const posted: ViewMessage[] = [];
  const root = window.document.getElementById("root")!;
  const g = globalThis as Record<string, unknown>;
  g.FileReader = window.FileReader;
  const app = new ChatApp(root as unknown as HTMLElement, (m) => posted.push(m), {
    sanitize: (html) => purify.sanitize(html, SANITIZE_CONFIG) as string,
    hasFocus: () => focus.chat,
  });
  const view = apply(emptyView(CID), { type: "snapshot", snapshot: snapshot(s), merge: false });
  app.receive({ type: "server", state: "ready" });
  app.receive({ type: "reset", view: structuredClone(view) });
  const e = new Events();
  e.seq = view.lastSeq;
  const key = (k: string, extra: Record<string, unknown> = {}) => {
    const target = window.document.activeElement ?? window.document.body;
    target.dispatchEvent(new window.KeyboardEvent("keydown", { key: k, bubbles: true, cancelable: true, ...extra }));
  };
  const $ = (sel: string) => window.document.querySelector(sel) as HTMLElement | null;
  return { window, app, posted, e, key, $, root, focus };
}

/** Record every element `focus()` is called on (a webview that calls it pulls the workbench's focus). */
function watchFocus(window: JSDOM["window"]): HTMLElement[] {
  const calls: HTMLElement[] = [];
  const original = window.HTMLElement.prototype.focus;
  window.HTMLElement.prototype.focus = function (this: HTMLElement, options?: FocusOptions) {
    calls.push(this);
    original.call(this, options);
  };
  return calls;
}

const approval = { toolUseId: "t1", toolName: "patch", description: "Change a file in the workspace", arguments: { path: "f.py", patches: [{ operation: "append_eof", newText: "x\n" }] }, diff: "--- a/f.py\n+++ b/f.py\n@@ -1,1 +1,2 @@\n a\n+x\n", scopes: [{ kind: "tool" as const, rule: "patch", label: "patch" }] };

test("the approval dialog shows the tool name first, the description dimmed, compact JSON, the diff and the hint (REQ-PERM-011)", () => {
  const { app, e, $ } = mount({ mode: "unrestricted" });
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "approvalRequested", ...approval }) } });
  const dialog = $("section[role=dialog]")!;
  assert.ok(!dialog.classList.contains("hidden"));
  assert.equal(dialog.firstElementChild?.textContent, "patch");
  assert.ok(dialog.firstElementChild?.classList.contains("dialog-title"));
  assert.ok($(".dialog-description")!.classList.contains("dim"));
  assert.equal($(".dialog-arguments")!.textContent, '{"path":"f.py","patches":[{"operation":"append_eof","newText":"x\\n"}]}');
  assert.ok($("section[role=dialog] .diff .diff-line.add"));
  assert.ok($(".open-diff"));
  assert.equal(dialog.lastElementChild?.textContent, "↑/↓ move · Enter confirm · Y Allow · N Deny · A Always Allow · Esc deny");
});

test("the approval dialog shows a long command whole, its end included (REQ-PERM-023)", () => {
  const { app, e, $ } = mount({ mode: "unrestricted" });
  const command = "echo " + "nothing-to-see-here ".repeat(60) + "; touch pwned";
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "approvalRequested", ...approval, toolName: "bash", arguments: { command }, diff: undefined }) } });
  assert.equal($(".dialog-arguments")!.textContent, JSON.stringify({ command }));
});

test("Allow is focused and highlighted, the others dimmed; arrows move; Enter answers (REQ-PERM-012)", () => {
  const { app, e, $, key, posted, window } = mount({ mode: "unrestricted" });
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "approvalRequested", ...approval }) } });
  const options = () => [...window.document.querySelectorAll("li[role=option]")].map((li) => [li.textContent, li.className, li.getAttribute("aria-selected")]);
  assert.deepEqual(options(), [
    ["AllowY", "choice selected", "true"],
    ["DenyN", "choice dim", "false"],
    ["Always AllowA", "choice dim", "false"],
  ]);
  assert.equal(window.document.activeElement, $("section[role=dialog]"), "the dialog takes the focus");
  key("ArrowDown");
  key("ArrowDown");
  assert.equal(options()[2][2], "true");
  key("ArrowUp");
  key("Enter");
  assert.deepEqual(posted.at(-1), { type: "answerApproval", conversationId: CID, toolUseId: "t1", decision: "deny" });
});

test("Y, N, A and Escape answer from the keyboard; one answer per approval (REQ-PERM-013)", () => {
  for (const [k, decision] of [["y", "allow"], ["n", "deny"], ["a", "alwaysAllow"], ["Escape", "deny"]] as const) {
    const { app, e, key, posted } = mount({ mode: "unrestricted" });
    app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "approvalRequested", ...approval }) } });
    key(k);
    key("y");
    const answers = posted.filter((m) => m.type === "answerApproval");
    assert.equal(answers.length, 1, `${k}: exactly one answer`);
    assert.equal((answers[0] as { decision: string }).decision, decision);
  }
});

test("the input is disabled while the dialog is open and every key goes to the dialog (REQ-PERM-014)", () => {
  const { app, e, key, posted, $ } = mount({ mode: "unrestricted" });
  const input = $("textarea[aria-label=Message]") as HTMLTextAreaElement;
  assert.equal(input.disabled, false);
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "approvalRequested", ...approval }) } });
  assert.equal(input.disabled, true);
  key("x");
  key("Tab", { shiftKey: true });
  assert.equal(input.value, "");
  assert.deepEqual(posted.filter((m) => m.type !== "switchConversation"), [], "stray keys answer nothing and toggle nothing");
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "approvalResolved", toolUseId: "t1", decision: "allow" }) } });
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "status", status: "running_tool", previous: "awaiting_approval", mode: "unrestricted" }) } });
  assert.ok($("section[role=dialog]")!.classList.contains("hidden"));
  assert.equal(input.disabled, false, "enabled again when the dialog closes");
});

test("the user in the editor keeps the keyboard while the dialog is open and events redraw the chat (REQ-PERM-025)", () => {
  const { app, e, $, window, focus } = mount({ mode: "unrestricted" });
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "approvalRequested", ...approval }) } });
  const dialog = $("[data-testid=approval-dialog]")!;
  assert.equal(window.document.activeElement, dialog, "opened while the user was in the chat: it takes the keyboard");
  // the user clicks "Open diff" (the focus is on that button), then goes to the diff editor
  $("[data-testid=open-diff]")!.focus();
  const openDiff = window.document.activeElement;
  focus.chat = false;
  const calls = watchFocus(window);
  const event = (body: Parameters<typeof e.next>[0]) => app.receive({ type: "input", input: { type: "event", event: e.next(body) } });
  event({ kind: "policyChanged", policy: "auto", previous: "interactive" });
  event({ kind: "textDelta", text: "a sub-agent streams", requestId: 2 });
  app.receive({ type: "conversations", conversations: [], titles: {} });
  app.receive({ type: "models", models: { models: [{ id: "m", name: "Model M", contextWindow: 1000 }], defaultModel: "m", source: "api" } });
  app.receive({ type: "server", state: "ready" });
  event({ kind: "policyChanged", policy: "interactive", previous: "auto" });
  assert.deepEqual(calls, [], "a redraw calls focus() on nothing");
  assert.equal(window.document.activeElement, openDiff);
  assert.equal(dialog.dataset.open, "true");
});

test("a dialog that opens while the user is elsewhere waits; it takes the keyboard when the user comes back to the chat (REQ-PERM-025)", () => {
  const { app, e, $, window, focus, key, posted } = mount({ mode: "unrestricted" }, { chat: false });
  const calls = watchFocus(window);
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "approvalRequested", ...approval }) } });
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "textDelta", text: "more", requestId: 2 }) } });
  const dialog = $("[data-testid=approval-dialog]")!;
  assert.equal(dialog.dataset.open, "true");
  assert.deepEqual(calls, [], "the dialog does not pull the keyboard out of the editor");
  focus.chat = true;
  window.dispatchEvent(new window.FocusEvent("focus"));
  assert.equal(window.document.activeElement, dialog, "back in the chat, the dialog has the keyboard");
  key("y");
  assert.deepEqual(posted.filter((m) => m.type === "answerApproval").map((m) => (m as { decision: string }).decision), ["allow"]);
});

test("a dialog restored after a reload does not take the keyboard by itself (REQ-PERM-025)", () => {
  const pending = { ...approval, toolUseId: "t7" };
  const { $, window, posted } = mount({ mode: "unrestricted", status: "awaiting_approval", pendingApproval: pending, lastSeq: 4 }, { chat: false });
  const dialog = $("[data-testid=approval-dialog]")!;
  assert.equal(dialog.dataset.open, "true");
  assert.equal(dialog.dataset.id, "t7");
  assert.notEqual(window.document.activeElement, dialog, "the restored dialog leaves the keyboard with the workbench");
  assert.deepEqual(posted.filter((m) => m.type === "answerApproval"), []);
});

test("a dialog that closes while the user is in the editor leaves the keyboard there (REQ-PERM-025)", () => {
  const { app, e, window, focus } = mount({ mode: "unrestricted" });
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "approvalRequested", ...approval }) } });
  focus.chat = false;
  const calls = watchFocus(window);
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "approvalResolved", toolUseId: "t1", decision: "allow" }) } });
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "status", status: "running_tool", previous: "awaiting_approval", mode: "unrestricted" }) } });
  assert.deepEqual(calls, [], "the input does not take the keyboard either");
});

test("an upgrade request shows the agent's reason with Approve / Deny", () => {
  const { app, e, key, posted, $ } = mount();
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "upgradeRequested", toolUseId: "r1", reason: "I need to edit setup.py" }) } });
  assert.equal($("section[role=dialog]")!.dataset.kind, "upgrade");
  assert.equal($(".dialog-reason")!.textContent, "I need to edit setup.py");
  key("y");
  assert.deepEqual(posted.at(-1), { type: "answerUpgrade", conversationId: CID, toolUseId: "r1", approve: true });
});

test("Shift+Tab toggles the policy; the composer shows it (REQ-PERM-010, REQ-PERM-009)", () => {
  const { app, e, key, posted, $ } = mount();
  assert.match($(".hint")!.textContent!, /🔒 Interactive/);
  assert.match($(".badge.policy")!.textContent!, /🔒 Interactive/);
  key("Tab", { shiftKey: true });
  assert.deepEqual(posted.at(-1), { type: "togglePolicy" });
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "policyChanged", policy: "auto", previous: "interactive" }) } });
  assert.match($(".badge.policy")!.textContent!, /🚀 Auto/);
});

test("mode and style are shown and follow their events; a style suggestion offers its command (REQ-LAYER-008)", () => {
  const { app, e, $ } = mount();
  assert.equal($(".badge.mode")!.dataset.mode, "restricted");
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "modeChanged", mode: "unrestricted", previous: "restricted", actor: "user", via: "setMode" }) } });
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "styleChanged", style: "plan", previous: "chat" }) } });
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "styleSuggestion", mode: "restricted", command: "/plan", text: "plan works best restricted — /plan?" }) } });
  assert.equal($(".badge.mode")!.dataset.mode, "unrestricted");
  assert.equal($(".badge.style")!.dataset.style, "plan");
  const action = [...$("main.timeline")!.querySelectorAll(".notice button")].find((b) => b.textContent === "/plan");
  assert.ok(action, "the suggestion's command is one click away");
});

test("hostile model and tool output never runs script in the webview (REQ-VSC-006)", () => {
  const { app, e, window, root } = mount({ mode: "unrestricted" });
  const send = (event: Parameters<typeof e.next>[0]) => app.receive({ type: "input", input: { type: "event", event: e.next(event) } });
  send({ kind: "textDelta", text: HOSTILE, requestId: 1 });
  send({ kind: "message", message: { seq: 2, messageId: "1", role: "assistant", content: [{ type: "text", text: HOSTILE }, { type: "toolUse", toolUseId: "t1", toolName: "bash", arguments: { command: HOSTILE } }], createdAt: 0 } });
  send({ kind: "toolStart", toolUseId: "t1", toolName: "bash", arguments: { command: HOSTILE }, mode: "unrestricted" });
  send({ kind: "message", message: { seq: 4, messageId: "2", role: "user", content: [{ type: "toolResult", toolUseId: "t1", content: HOSTILE, isError: false, images: [] }, { type: "text", text: HOSTILE }], createdAt: 0 } });
  send({ kind: "toolEnd", toolUseId: "t1", isError: false, summary: HOSTILE });
  send({ kind: "error", message: HOSTILE, errorKind: "llm" });
  send({ kind: "approvalRequested", toolUseId: "t2", toolName: HOSTILE, description: HOSTILE, arguments: { x: HOSTILE }, scopes: [{ kind: "prefix", rule: HOSTILE, label: HOSTILE }, { kind: "tool", rule: HOSTILE, label: HOSTILE }], diff: `--- a/f\n+++ b/f\n@@ -1,1 +1,1 @@\n-${HOSTILE.split("\n")[0]}\n+${HOSTILE.split("\n")[2]}\n` });
  const all = [...root.querySelectorAll("*")];
  for (const el of all) {
    for (const attr of [...el.attributes]) {
      assert.doesNotMatch(attr.name, /^on/i, `${el.tagName} has ${attr.name}`);
      assert.doesNotMatch(attr.value, /javascript:/i, `${el.tagName}[${attr.name}]`);
    }
    for (const type of ["click", "error", "load", "mouseover", "focus"]) el.dispatchEvent(new window.Event(type));
  }
  for (const tag of ["script", "img", "svg", "iframe", "object", "embed", "style"]) {
    assert.equal(root.querySelectorAll(tag).length, 0, `no <${tag}> from the output`);
  }
  assert.equal((window as unknown as Record<string, unknown>).__pwned, undefined);
  assert.match(root.textContent!, /<script>window.__pwned=2<\/script>/, "the hostile text is shown as text");
  assert.ok(!root.textContent!.includes("\u001b"), "terminal escapes are removed");
});

test("pasted images are attached and sent as base64 with the message (REQ-VSC-005)", async () => {
  const { app, posted, $, key, window } = mount();
  const png = new window.File([new Uint8Array([137, 80, 78, 71])], "shot.png", { type: "image/png" });
  await app.attach([png as unknown as File]);
  assert.ok($(".attachment img"));
  const input = $("textarea[aria-label=Message]") as HTMLTextAreaElement;
  input.value = "what is this?";
  input.focus();
  key("Enter");
  assert.deepEqual(posted.at(-1), { type: "send", text: "what is this?", images: [{ mediaType: "image/png", data: "iVBORw==", name: "shot.png" }], attachments: [] });
  app.receive({ type: "sendResult", ok: true });
  assert.equal($(".attachment"), null, "attachments go with the message");
});

test("an applied review kept for an undo has an Undo button that names its change set (REQ-BASH-041)", () => {
  const { app, e, $, posted } = mount();
  const send = (event: ReturnType<typeof e.next>) => app.receive({ type: "input", input: { type: "event", event } });
  const told = "[phoenix-lsp: the command's changes to the workspace were reviewed and applied.]\n  modified a.txt\n" +
    "[phoenix-lsp: change set 0123456789ab; the user can undo it.]";
  send(e.next({ kind: "message", message: { seq: 1, messageId: "0", role: "assistant", content: [{ type: "toolUse", toolUseId: "t1", toolName: "bash", arguments: { command: "sed -i s/a/b/ a.txt" } }, { type: "toolUse", toolUseId: "t2", toolName: "bash", arguments: { command: "cat x" } }], createdAt: 0 } }));
  // t2's output merely quotes the words (a file's content): no button
  send(e.next({ kind: "message", message: { seq: 2, messageId: "1", role: "user", content: [{ type: "toolResult", toolUseId: "t1", content: told, isError: false, images: [] }, { type: "toolResult", toolUseId: "t2", content: told + "\nmore", isError: false, images: [] }], createdAt: 0 } }));
  assert.equal($(".tool[data-tool-use-id=t2] .undo-changes"), null);
  $(".tool[data-tool-use-id=t1] .undo-changes")!.click();
  assert.deepEqual(posted.at(-1), { type: "undoChanges", conversationId: CID, changeSetId: "0123456789ab" });
});

test("tool cards show the command and output; sub-agents nest under the spawning call", () => {
  const { app, e, $ } = mount();
  const child = new Events("agent-1", CID);
  const send = (event: ReturnType<typeof e.next>) => app.receive({ type: "input", input: { type: "event", event } });
  send(e.next({ kind: "message", message: { seq: 1, messageId: "0", role: "assistant", content: [{ type: "toolUse", toolUseId: "t1", toolName: "bash", arguments: { command: "ls -la" } }, { type: "toolUse", toolUseId: "sp", toolName: "spawn_agents", arguments: {} }], createdAt: 0 } }));
  send(e.next({ kind: "message", message: { seq: 2, messageId: "1", role: "user", content: [{ type: "toolResult", toolUseId: "t1", content: "total 0\n", isError: false, images: [] }], createdAt: 0 } }));
  send(e.next({ kind: "subAgentsSpawned", toolUseId: "sp", agents: [{ conversationId: "agent-1", task: "count the files" }] }));
  send(child.next({ kind: "textDelta", text: "counting", requestId: 1 }));
  assert.equal($(".tool[data-tool-use-id=t1] pre.command")!.textContent, "$ ls -la");
  assert.equal($(".tool[data-tool-use-id=t1] pre.output")!.textContent, "total 0\n");
  const nested = $(".tool[data-tool-use-id=sp] .sub-agent[data-conversation-id=agent-1]");
  assert.ok(nested);
  assert.match(nested!.textContent!, /count the files/);
  assert.match(nested!.textContent!, /counting/);
});

test("the 80% context warning offers to continue in a new conversation", () => {
  const { app, e, $, posted } = mount();
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "contextWarning", usedTokens: 820, contextWindow: 1000, fraction: 0.82 }) } });
  const warning = $(".context-warning")!;
  assert.ok(!warning.classList.contains("hidden"));
  (warning.querySelector("button") as HTMLButtonElement).click();
  assert.deepEqual(posted.at(-1), { type: "continueInNew" });
});

test("a long tool description is dimmed and folded to its first line; a click unfolds it; the choices stay (REQ-PERM-011)", () => {
  const { app, e, $, window } = mount({ mode: "unrestricted" });
  const long = ["Change one file with patch operations.", ...Array.from({ length: 24 }, (_, i) => `Line ${i + 2} of the manual.`)].join("\n");
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "approvalRequested", ...approval, description: long }) } });
  const details = $("[data-testid=dialog-description]") as HTMLDetailsElement;
  assert.equal(details.tagName, "DETAILS");
  assert.ok(details.classList.contains("dim"));
  assert.equal(details.open, false, "folded when the dialog opens");
  assert.equal(details.querySelector("summary")!.textContent, "Change one file with patch operations.");
  assert.match(details.textContent!, /Line 25 of the manual/, "the rest is there, folded");
  details.open = true;
  details.dispatchEvent(new window.Event("toggle"));
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "status", status: "awaiting_approval", previous: "running_tool", mode: "unrestricted" }) } });
  assert.equal(($("[data-testid=dialog-description]") as HTMLDetailsElement).open, true, "stays open while the dialog is");
  assert.equal(window.document.querySelectorAll("[data-testid=dialog-choice]").length, 3);
});

test("stable selectors: chat input, send button, timeline, messages with their role, the dialog with data-open, its choices, the status line", () => {
  const { app, e, $, window } = mount({ mode: "unrestricted" });
  assert.equal($("[data-testid=chat-input]")!.tagName, "TEXTAREA");
  assert.equal($("[data-testid=send-button]")!.tagName, "BUTTON");
  assert.ok($("[data-testid=timeline]"));
  assert.ok($("[data-testid=status-line]"));
  assert.equal($("[data-testid=approval-dialog]")!.dataset.open, "false");
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "message", message: { seq: 0, messageId: "0", role: "user", content: [{ type: "text", text: "hi" }], createdAt: 0 } }) } });
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "textDelta", text: "hel", requestId: 1 }) } });
  const roles = [...window.document.querySelectorAll("[data-testid=message]")].map((m) => (m as HTMLElement).dataset.role);
  assert.deepEqual(roles, ["user", "assistant"]);
  app.receive({
    type: "input",
    input: {
      type: "event",
      event: e.next({
        kind: "approvalRequested", toolUseId: "t9", toolName: "bash", description: "Run", arguments: { command: "git status" },
        scopes: [{ kind: "prefix", rule: "git status *", label: "bash: git status *" }, { kind: "tool", rule: "bash", label: "bash" }],
      }),
    },
  });
  assert.equal($("[data-testid=approval-dialog]")!.dataset.open, "true");
  const choices = [...window.document.querySelectorAll("[data-testid=dialog-choice]")] as HTMLElement[];
  assert.deepEqual(choices.map((c) => [c.dataset.key, c.dataset.scope ?? ""]), [["y", ""], ["n", ""], ["a", "narrow"], ["t", "tool"]]);
  assert.match(choices[2].textContent!, /git status \*/);
});

test("Always Allow's scope choice is posted with its rule (REQ-PERM-020)", () => {
  for (const [k, rule] of [["a", "git status *"], ["t", "bash"]] as const) {
    const { app, e, key, posted } = mount({ mode: "unrestricted" });
    app.receive({
      type: "input",
      input: {
        type: "event",
        event: e.next({
          kind: "approvalRequested", toolUseId: "t9", toolName: "bash", description: "Run", arguments: { command: "git status" },
          scopes: [{ kind: "prefix", rule: "git status *", label: "bash: git status *" }, { kind: "tool", rule: "bash", label: "bash" }],
        }),
      },
    });
    key(k);
    assert.deepEqual(posted.filter((m) => m.type === "answerApproval"), [
      { type: "answerApproval", conversationId: CID, toolUseId: "t9", decision: "alwaysAllow", rule },
    ]);
  }
});

test("a batch of host messages is applied in order and rendered once", () => {
  let renders = 0;
  const dom = new JSDOM('<!DOCTYPE html><body><div id="root"></div></body>');
  const root = dom.window.document.getElementById("root")!;
  const queued: (() => void)[] = [];
  const app = new ChatApp(root as unknown as HTMLElement, () => undefined, {
    sanitize: (html) => html,
    schedule: (render) => queued.push(() => {
      renders++;
      render();
    }),
  });
  const e = new Events();
  const view = apply(emptyView(CID), { type: "snapshot", snapshot: snapshot({ lastSeq: 0 }), merge: false });
  const deltas = Array.from({ length: 50 }, (_, i) => ({ type: "input" as const, input: { type: "event" as const, event: e.next({ kind: "textDelta", text: `w${i} `, requestId: 1 }) } }));
  app.receive({ type: "batch", messages: [{ type: "server", state: "ready" }, { type: "reset", view }, ...deltas] });
  assert.equal(queued.length, 1, "one render scheduled for the whole batch");
  queued.shift()!();
  assert.equal(renders, 1);
  assert.match(root.querySelector("[data-role=assistant]")!.textContent!, /w0 w1 w2 .* w48 w49/);
});

test("while the chat view is hidden, posts that come one by one are drawn in the next frame's one render, in order, no text lost (issue 35: the host posts each burst at once)", () => {
  const dom = new JSDOM('<!DOCTYPE html><body><div id="root"></div></body>');
  const root = dom.window.document.getElementById("root")!;
  const frames: (() => void)[] = [];
  const app = new ChatApp(root as unknown as HTMLElement, () => undefined, { sanitize: (html) => html, schedule: (render) => frames.push(render), visible: () => false });
  const e = new Events();
  const view = apply(emptyView(CID), { type: "snapshot", snapshot: snapshot({ lastSeq: 0 }), merge: false });
  app.receive({ type: "batch", messages: [{ type: "server", state: "ready" }, { type: "reset", view }] });
  while (frames.length > 0) frames.shift()!();
  const delta = (text: string) => ({ type: "input" as const, input: { type: "event" as const, event: e.next({ kind: "textDelta", text, requestId: 1 }) } });
  for (let i = 0; i < 30; i++) app.receive({ type: "batch", messages: [delta(`w${i} `)], at: i });
  assert.equal(root.querySelector("[data-role=assistant]"), null, "nothing drawn before the frame");
  assert.equal(frames.length, 1, "thirty posts before the frame: one render");
  frames.shift()!();
  const words = root.querySelector("[data-role=assistant]")!.textContent!.trim().split(/\s+/);
  assert.deepEqual(words, Array.from({ length: 30 }, (_, i) => `w${i}`));
});

const MODELS = {
  models: [
    { id: "claude-sonnet-4-6", name: "Claude Sonnet 4.6", contextWindow: 1_000_000 },
    { id: "claude-haiku-4-5", name: "Claude Haiku 4.5", contextWindow: 200_000 },
  ],
  defaultModel: "claude-sonnet-4-6",
  source: "builtin" as const,
  reason: "The built-in list is shown because no API key is set; any model id can still be chosen.",
};

test("the header's model picker lists the models with their window, marks the one in use, says why the list is built-in, and switches with setModel (REQ-VSC-010)", () => {
  const { app, e, posted, $, window } = mount({ model: "claude-sonnet-4-6" });
  const button = $("[data-testid=model-button]")!;
  assert.equal(button.dataset.model, "claude-sonnet-4-6", "the header shows the model in use (from getConversation)");
  assert.match(button.textContent!, /claude-sonnet-4-6/);
  assert.ok($("[data-testid=model-list]")!.classList.contains("hidden"));
  button.click();
  assert.deepEqual(posted.at(-1), { type: "listModels" }, "opening the picker asks the host for the list");
  assert.ok(!$("[data-testid=model-list]")!.classList.contains("hidden"));
  app.receive({ type: "models", models: MODELS });
  assert.match(button.textContent!, /Claude Sonnet 4\.6/, "the header names the model once the list is known");
  assert.equal($("[data-testid=model-reason]")!.textContent, MODELS.reason);
  const options = [...window.document.querySelectorAll<HTMLElement>("[data-testid=model-option]")];
  assert.deepEqual(options.map((o) => o.dataset.modelId), ["claude-sonnet-4-6", "claude-haiku-4-5"]);
  assert.match(options[0].textContent!, /Claude Sonnet 4\.6.*1M tokens.*in use/);
  assert.match(options[1].textContent!, /Claude Haiku 4\.5.*200K tokens/);
  assert.deepEqual(options.map((o) => o.getAttribute("aria-selected")), ["true", "false"]);
  options[1].click();
  assert.deepEqual(posted.at(-1), { type: "setModel", model: "claude-haiku-4-5" });
  assert.ok($("[data-testid=model-list]")!.classList.contains("hidden"), "the list closes after a choice");
  // the header follows the event, not the click
  assert.equal($("[data-testid=model-button]")!.dataset.model, "claude-sonnet-4-6");
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "modelChanged", model: "claude-haiku-4-5", previous: "claude-sonnet-4-6", contextWindow: 200_000 }) } });
  assert.equal($("[data-testid=model-button]")!.dataset.model, "claude-haiku-4-5");
  assert.match($("[data-testid=model-button]")!.textContent!, /Claude Haiku 4\.5/);
  assert.match($(".badge.usage")!.title, /200,000/, "the usage badge reads against the new window");
  // choosing the model in use again changes nothing
  $("[data-testid=model-button]")!.click();
  const again = window.document.querySelector<HTMLElement>("[data-testid=model-option][data-model-id=claude-haiku-4-5]")!;
  const count = posted.length;
  again.click();
  assert.equal(posted.length, count, "no setModel for the model in use");
});

test("the route selector beside the model shows the host's route, posts setRoute for the other one, and follows the host's answer (REQ-AGENT-001)", () => {
  const { app, posted, $, window } = mount({ model: "claude-sonnet-4-6" });
  const group = $("[data-testid=route-selector]")!;
  assert.equal(group.getAttribute("role"), "radiogroup");
  assert.ok(group.classList.contains("hidden"), "hidden until the server has said which route is in use");
  assert.equal(group.previousElementSibling, $("[data-testid=model-button]"), "right after the model button");
  app.receive({ type: "route", route: "ask" });
  assert.ok(!group.classList.contains("hidden"));
  assert.equal(group.dataset.route, "ask");
  const options = () => [...window.document.querySelectorAll<HTMLElement>("[data-testid=route-option]")];
  assert.deepEqual(options().map((o) => [o.dataset.route, o.textContent, o.getAttribute("role"), o.getAttribute("aria-checked")]), [
    ["ask", "Ask", "radio", "true"],
    ["agent", "Agent", "radio", "false"],
  ]);
  const count = posted.length;
  options()[0].click();
  assert.equal(posted.length, count, "the route in use again: nothing posted");
  options()[1].click();
  assert.deepEqual(posted.at(-1), { type: "setRoute", route: "agent" });
  assert.equal(group.dataset.route, "ask", "the selector follows the host's answer, not the click");
  app.receive({ type: "route", route: "agent" });
  assert.equal(group.dataset.route, "agent");
  assert.deepEqual(options().map((o) => o.getAttribute("aria-checked")), ["false", "true"]);
  assert.ok(options()[1].classList.contains("active") && !options()[0].classList.contains("active"));
  // the route is the machine's, not the conversation's: it stays across a conversation switch
  app.receive({ type: "reset", view: undefined });
  assert.equal(group.dataset.route, "agent");
  assert.ok(!group.classList.contains("hidden"));
});

test("a refused model switch shows the server's message in the banner (REQ-VSC-010)", () => {
  const { app, $ } = mount({ model: "claude-sonnet-4-6" });
  const text = "The context in use (170,000 tokens) does not fit claude-haiku-4-5; claude-sonnet-4-6 still answers. Continue in a new conversation from a summary and choose the model there.";
  app.receive({ type: "notice", level: "warning", text });
  assert.equal($(".banner .warning")!.textContent, text);
  assert.equal($("[data-testid=model-button]")!.dataset.model, "claude-sonnet-4-6");
});

test("the header's model picker shows one heading per provider, its models under it (issue 27)", () => {
  const { app, $, window } = mount({ model: "openai/gpt-4.1" });
  $("[data-testid=model-button]")!.click();
  const models = [
    ...MODELS.models,
    { id: "openai/gpt-4.1", name: "gpt-4.1 (openai)", contextWindow: 1_047_576, provider: "openai", contextWindowKnown: true },
    { id: "ollama/llama3.2", name: "llama3.2 (ollama)", contextWindow: 131_072, provider: "ollama", contextWindowKnown: true },
  ];
  app.receive({ type: "models", models: { ...MODELS, models, providers: [{ provider: "openai", listed: true }, { provider: "ollama", listed: true }] } });
  const rows = [...window.document.querySelectorAll<HTMLElement>("[data-testid=model-group], [data-testid=model-option]")];
  assert.deepEqual(rows.map((r) => r.dataset.testid === "model-group" ? `# ${r.textContent}` : r.dataset.modelId), [
    "# anthropic", "claude-sonnet-4-6", "claude-haiku-4-5", "# openai", "openai/gpt-4.1", "# ollama", "ollama/llama3.2",
  ]);
  assert.equal($("[data-testid=model-option][aria-selected=true]")!.dataset.modelId, "openai/gpt-4.1");
});

test("hostile model names and reasons stay text in the picker (REQ-VSC-006, REQ-VSC-010)", () => {
  const { app, window, $ } = mount({ model: HOSTILE });
  $("[data-testid=model-button]")!.click();
  app.receive({ type: "models", models: { models: [{ id: HOSTILE, name: HOSTILE, contextWindow: 1000 }], defaultModel: HOSTILE, source: "builtin", reason: HOSTILE } });
  assert.equal(window.document.querySelectorAll("[data-testid=model-list] img, [data-testid=model-list] script, [data-testid=model-list] svg").length, 0);
  assert.equal(window.document.querySelectorAll("[data-testid=model-button] img, [data-testid=model-button] script").length, 0);
  assert.equal((window as unknown as { __pwned?: number }).__pwned, undefined);
});

// ------------------------------------------------------------------------------------- issue 17

const FILES = ["src/hello.py", "docs/shell.md", "notes.md"].map((path) => ({ uri: `file:///home/user/project/${path}`, path }));

function typeInto(window: Window & typeof globalThis, input: HTMLTextAreaElement, text: string) {
  input.focus();
  for (const ch of text) {
    input.value += ch;
    input.selectionStart = input.selectionEnd = input.value.length;
    input.dispatchEvent(new window.Event("input", { bubbles: true }));
  }
}

test("typing @ opens the file picker, which filters as the user types; Enter attaches the file as a chip (REQ-VSC-011)", () => {
  const { app, posted, $, key, window } = mount();
  const input = $("[data-testid=chat-input]") as HTMLTextAreaElement;
  typeInto(window as never, input, "explain @");
  assert.deepEqual(posted.at(-1), { type: "listFiles" }, "the host is asked for the workspace's files");
  assert.ok(!$("[data-testid=file-picker]")!.classList.contains("hidden"));
  app.receive({ type: "files", files: FILES });
  const options = () => [...window.document.querySelectorAll("[data-testid=file-option]")].map((o) => (o as HTMLElement).dataset.path);
  assert.deepEqual(options(), ["@problems", "notes.md", "src/hello.py", "docs/shell.md"]);
  typeInto(window as never, input, "hel");
  assert.deepEqual(options(), ["src/hello.py", "docs/shell.md"], "filtered as the user types");
  assert.equal(posted.filter((m) => m.type === "listFiles").length, 1, "listed once per opening");
  key("Enter");
  assert.ok($("[data-testid=file-picker]")!.classList.contains("hidden"), "the picker closes");
  assert.equal(input.value, "explain ", "the @query leaves the input");
  const chip = $("[data-testid=attachment-chip]")!;
  assert.equal(chip.textContent!.trim(), "hello.py");
  assert.equal(chip.title, "src/hello.py (the whole file)");
  assert.ok(!posted.some((m) => m.type === "send"), "choosing does not send");
});

test("@problems asks the host for the current file's diagnostics; Escape closes the picker (REQ-VSC-011)", () => {
  const { posted, $, key, window } = mount();
  const input = $("[data-testid=chat-input]") as HTMLTextAreaElement;
  typeInto(window as never, input, "@prob");
  key("Enter");
  assert.deepEqual(posted.at(-1), { type: "attachProblems" });
  assert.equal(input.value, "");
  typeInto(window as never, input, "@");
  key("Escape");
  assert.ok($("[data-testid=file-picker]")!.classList.contains("hidden"));
  assert.equal(input.value, "@", "Escape keeps what was typed");
});

test("chips from the host show, a chip's × removes it, and the rest are sent as attachments, cleared once accepted (REQ-VSC-011)", () => {
  const { app, posted, $, key, window } = mount();
  const sel = fileChip("file:///home/user/project/src/hello.py", "src/hello.py", { startLine: 0, endLine: 1 });
  const other = fileChip("file:///home/user/project/notes.md", "notes.md");
  const problems = diagnosticsChip("file:///home/user/project/src/hello.py", "src/hello.py", [{ line: 0, severity: "error", message: "bad" }]);
  app.receive({ type: "attach", chips: [sel, other, problems] });
  const chips = () => [...window.document.querySelectorAll("[data-testid=attachment-chip]")].map((c) => c.textContent!.trim());
  assert.deepEqual(chips(), ["hello.py:1-2", "notes.md", "Problems: hello.py (1)"]);
  (window.document.querySelectorAll("[data-testid=remove-attachment]")[1] as HTMLElement).click();
  assert.deepEqual(chips(), ["hello.py:1-2", "Problems: hello.py (1)"]);
  const input = $("[data-testid=chat-input]") as HTMLTextAreaElement;
  input.value = "fix these";
  input.focus();
  key("Enter");
  assert.deepEqual(posted.at(-1), { type: "send", text: "fix these", images: [], attachments: [sel.attachment, problems.attachment] });
  assert.equal(chips().length, 2, "the draft stays until the server accepts it");
  key("Enter");
  assert.equal(posted.filter((m) => m.type === "send").length, 1, "one send at a time");
  app.receive({ type: "sendResult", ok: true });
  assert.deepEqual(chips(), []);
  assert.equal(input.value, "");
});

test("a refused attachment keeps the draft and the chips, marks the chip and shows the server's message (REQ-VSC-011)", () => {
  const { app, $, key, window } = mount();
  const ok = fileChip("file:///home/user/project/a.py", "a.py");
  const bad = fileChip("file:///etc/passwd", "/etc/passwd");
  app.receive({ type: "attach", chips: [ok, bad] });
  const input = $("[data-testid=chat-input]") as HTMLTextAreaElement;
  input.value = "look";
  input.focus();
  key("Enter");
  const message = "/etc/passwd is outside the workspace, so it was not attached (nothing was sent).";
  app.receive({ type: "batch", messages: [{ type: "notice", level: "error", text: message }, { type: "sendResult", ok: false, refused: 1 }] });
  assert.equal(input.value, "look");
  const chips = [...window.document.querySelectorAll("[data-testid=attachment-chip]")] as HTMLElement[];
  assert.deepEqual(chips.map((c) => c.dataset.refused), [undefined, "true"]);
  assert.equal($(".banner .error")!.textContent, message);
});

test("files dropped from the explorer are attached by their URIs; images still as images (REQ-VSC-011)", () => {
  const { posted, root, window } = mount();
  const data = new Map<string, string>([["text/uri-list", "# from the explorer\r\nfile:///home/user/project/notes.md\r\nfile:///home/user/project/src/hello.py"]]);
  const event = new window.Event("drop", { bubbles: true, cancelable: true }) as unknown as DragEvent;
  Object.defineProperty(event, "dataTransfer", { value: { files: [], getData: (t: string) => data.get(t) ?? "" } });
  root.dispatchEvent(event);
  assert.deepEqual(posted.at(-1), { type: "attachUris", uris: ["file:///home/user/project/notes.md", "file:///home/user/project/src/hello.py"] });
  assert.deepEqual(droppedUris({ getData: (t: string) => (t === "resourceurls" ? '["file:///a.py"]' : "") } as unknown as DataTransfer), ["file:///a.py"]);
});

test("hostile file names stay text in chips and in the picker (REQ-VSC-006)", () => {
  const { app, $, window } = mount();
  app.receive({ type: "attach", chips: [fileChip("file:///w/x", HOSTILE)] });
  typeInto(window as never, $("[data-testid=chat-input]") as HTMLTextAreaElement, "@");
  app.receive({ type: "files", files: [{ uri: "file:///w/x", path: HOSTILE }] });
  assert.equal(window.document.querySelectorAll(".composer img, .composer script, .composer svg, .composer iframe").length, 0);
  assert.equal((window as unknown as { __pwned?: number }).__pwned, undefined);
});

test("the instruction files in effect are listed at the top of the conversation, relative to the workspace (REQ-VSC-012)", () => {
  const { app, $, window } = mount({
    instructions: [
      { path: "/home/user/.config/phoenix-lsp/AGENTS.md", size: 10, kept: 10 },
      { path: "/home/user/project/AGENTS.md", size: 40000, kept: 32000 },
      { path: "/home/user/project/sub/CLAUDE.md", size: 3, kept: 0, problem: "not UTF-8" },
    ],
  });
  app.receive({ type: "workspace", folders: ["/home/user/project"], home: "/home/user" });
  const line = $("[data-testid=instructions]")!;
  assert.ok(!line.classList.contains("hidden"));
  const files = [...window.document.querySelectorAll("[data-testid=instruction-file]")].map((f) => f.textContent);
  assert.deepEqual(files, ["~/.config/phoenix-lsp/AGENTS.md", "AGENTS.md (cut: 32,000 of 40,000 bytes kept)", "sub/CLAUDE.md (skipped: not UTF-8)"]);
  assert.equal(line.previousElementSibling?.classList.contains("banner"), true, "above the timeline");
  app.receive({ type: "reset", view: apply(emptyView(CID), { type: "snapshot", snapshot: snapshot({ instructions: [] }), merge: false }) });
  assert.ok(line.classList.contains("hidden"), "rebuilt from the next snapshot: none in effect");
});

test("attachments in the transcript are folded under their label and shown as text (REQ-ATTACH-003, REQ-VSC-006)", () => {
  const { $, window } = mount({
    messages: [
      {
        seq: 1,
        messageId: "u1",
        role: "user",
        createdAt: 0,
        content: [
          { type: "text", text: "look" },
          { type: "text", text: `<attachment path="a.py" lines="a.py, lines 1-2">\n${HOSTILE}\n</attachment>` },
        ],
      },
    ],
    lastSeq: 1,
  });
  const item = $("[data-testid=message][data-role=attachment]")!;
  assert.equal(item.tagName, "DETAILS");
  assert.equal(item.querySelector("summary")!.textContent!.trim(), "a.py, lines 1-2");
  assert.equal(window.document.querySelectorAll("[data-role=attachment] img, [data-role=attachment] script, [data-role=attachment] svg").length, 0);
  assert.equal((window as unknown as { __pwned?: number }).__pwned, undefined);
});

test("a webview that opens after the first model list names the model as the status bar does (REQ-VSC-013)", () => {
  const dom = new JSDOM('<!DOCTYPE html><body><div id="root"></div></body>');
  const root = dom.window.document.getElementById("root")!;
  const app = new ChatApp(root as unknown as HTMLElement, () => undefined, { sanitize: (html) => html });
  const view = apply(emptyView(CID), { type: "snapshot", snapshot: snapshot({ model: "claude-sonnet-4-6" }), merge: false });
  // the host had the list before the view said "ready": its snapshot carries it
  const messages = snapshotMessages({
    server: { state: "ready" }, conversations: [], titles: {}, view, folders: [], models: { ...MODELS, source: "api" },
  });
  app.receive({ type: "batch", messages });
  const button = root.querySelector("[data-testid=model-button]") as HTMLElement;
  assert.equal(button.dataset.model, "claude-sonnet-4-6");
  assert.equal(button.textContent?.trim(), "Claude Sonnet 4.6");
});

test("a streamed answer is drawn in place: settled blocks are kept, only the block being written is drawn again (issue 35)", () => {
  const { app, e, $, window } = mount();
  const delta = (text: string) => app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "textDelta", text, requestId: 1 }) } });
  delta("First **paragraph**.\n\nSecond");
  const el = $("[data-testid=message][data-streaming=true]")!;
  const first = el.querySelector(".live-block")!;
  assert.match(first.innerHTML, /<strong>paragraph<\/strong>/);
  delta(" paragraph, ");
  delta("still <script>window.__pwned = 1</script> written");
  assert.equal($("[data-testid=message][data-streaming=true]"), el, "the same element: not rebuilt per delta");
  assert.equal(el.querySelector(".live-block"), first, "the settled block is not drawn again");
  assert.equal(el.querySelector(".live-tail")!.textContent!.trim(), "Second paragraph, still <script>window.__pwned = 1</script> written");
  assert.equal(el.querySelector("script"), null, "the tail goes through the sanitiser too");
  assert.equal((window as unknown as Record<string, unknown>).__pwned, undefined);
  delta("\n\nThird.");
  assert.equal(el.querySelectorAll(".live-block").length, 2);
  assert.equal(el.textContent!.replace(/\s+/g, " ").trim(), "First paragraph. Second paragraph, still <script>window.__pwned = 1</script> written Third.");
  assert.equal(el.dataset.role, "assistant");
});

/** A chat view whose sanitiser counts its calls (each is one markdown rendering put in). */
function counted() {
  const dom = new JSDOM('<!DOCTYPE html><body><div id="root"></div></body>');
  const purify = createDOMPurify(dom.window as unknown as Window & typeof globalThis);
  const calls = { sanitize: 0 };
  const root = dom.window.document.getElementById("root")!;
  const app = new ChatApp(root as unknown as HTMLElement, () => undefined, {
    sanitize: (html) => {
      calls.sanitize++;
      return purify.sanitize(html, SANITIZE_CONFIG) as string;
    },
    hasFocus: () => false,
  });
  app.receive({ type: "reset", view: apply(emptyView(CID), { type: "snapshot", snapshot: snapshot(), merge: false }) });
  const e = new Events();
  const delta = (text: string) => app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "textDelta", text, requestId: 1 }) } });
  return { root, calls, delta, purify };
}

test("a plain paragraph being streamed grows in place: each delta appended to its text, no markdown drawn again (issue 35)", () => {
  const { root, calls, delta } = counted();
  delta("First **paragraph**.\n\nThe second one");
  const el = root.querySelector("[data-testid=message][data-streaming=true]")!;
  const text = el.querySelector(".live-tail p")!.firstChild!;
  const before = calls.sanitize;
  for (const part of [" goes on,", " and on: 1234;", "5678; (still) plain", "  "]) delta(part);
  assert.equal(calls.sanitize, before, "no markdown rendered for a plain continuation");
  assert.equal(el.querySelector(".live-tail p")!.firstChild, text, "the same text node (what the user selected in it stays)");
  assert.equal(el.querySelector(".live-tail")!.textContent, "The second one goes on, and on: 1234;5678; (still) plain\n");
  delta("**bold** now");
  assert.equal(calls.sanitize, before + 1, "markdown again once it is needed");
  assert.match(el.querySelector(".live-tail")!.innerHTML, /<strong>bold<\/strong>/);
});

test("a streamed answer drawn in place, plain paragraphs appended, is what rendering it whole gives, after every delta (issue 35)", () => {
  let seed = 35;
  const next = () => ((seed = (seed * 1103515245 + 12345) % 2147483648) / 2147483648);
  const pieces = ["word ", "more", " text", ", ", "1234;", ". ", "x.py ", "**b**", "`c`", "\n\n", "\n", "- item", "# T", "  ", "a@b", ": ", "é"];
  for (let round = 0; round < 30; round++) {
    const { root, delta, purify } = counted();
    let text = "";
    for (let i = 0; i < 40; i++) {
      const part = pieces[Math.floor(next() * pieces.length)];
      text += part;
      delta(part);
      const el = root.querySelector("[data-testid=message][data-streaming=true]") as HTMLElement;
      const cut = settledLength(text);
      const whole = (purify.sanitize(renderMarkdown(text.slice(0, cut)), SANITIZE_CONFIG) as string) + (purify.sanitize(renderMarkdown(text.slice(cut)), SANITIZE_CONFIG) as string);
      const drawn = [...el.children].map((c) => c.innerHTML).join("");
      assert.equal(drawn, whole, JSON.stringify(text));
    }
  }
});

test("an MCP call is shown as 'create_issue on tracker'; its approval offers the tool's and the server's Always Allow, S posting the server's rule; a refused write says how to let it run (REQ-MCP-023)", () => {
  const { app, e, key, posted, $, root } = mount({ mode: "unrestricted" });
  const send = (event: ReturnType<typeof e.next>) => app.receive({ type: "input", input: { type: "event", event } });
  send(e.next({ kind: "message", message: { seq: 1, messageId: "0", role: "assistant", content: [{ type: "toolUse", toolUseId: "r1", toolName: "mcp__tracker__list_issues", arguments: {} }], createdAt: 0 } }));
  send(e.next({ kind: "message", message: { seq: 2, messageId: "1", role: "user", content: [{ type: "toolResult", toolUseId: "r1", content: "#1 the build is red", isError: false, images: [] }], createdAt: 0 } }));
  assert.equal($(".tool[data-tool-use-id=r1] .tool-name")!.textContent, " list_issues on tracker");
  assert.equal($(".tool[data-tool-use-id=r1] pre.output")!.textContent, "#1 the build is red");
  send(e.next({ kind: "toolRefused", toolUseId: "w0", toolName: "mcp__tracker__create_issue", by: "mode" }));
  assert.equal($(".tool[data-tool-use-id=w0] .tool-name")!.textContent, " create_issue on tracker");
  assert.match($(".tool[data-tool-use-id=w0] .tool-state")!.textContent!, /switch to Unrestricted/);
  send(e.next({
    kind: "approvalRequested", toolUseId: "w1", toolName: "mcp__tracker__create_issue", description: "Open a new issue.", arguments: { title: "flaky" },
    scopes: [{ kind: "tool", rule: "mcp__tracker__create_issue", label: "mcp__tracker__create_issue" }, { kind: "tool", rule: "mcp__tracker__*", label: "mcp__tracker__*" }],
  }));
  assert.equal($("[data-testid=dialog-title]")!.textContent, "create_issue on tracker");
  const choices = [...root.querySelectorAll(".choice")].map((c) => (c as HTMLElement).textContent);
  assert.deepEqual(choices.slice(2).map((c) => c!.replace(/[AS]$/, "")), ["Always Allow create_issue", "Always Allow every tool of tracker"]);
  key("s");
  assert.deepEqual(posted.filter((m) => m.type === "answerApproval"), [
    { type: "answerApproval", conversationId: CID, toolUseId: "w1", decision: "alwaysAllow", rule: "mcp__tracker__*" },
  ]);
});

test("a reopened conversation shows a tool's image under its call and the user's image by label, as the live call did (REQ-MCP-024)", () => {
  const image = (id: string, label: string) => ({ type: "image" as const, imageId: id, mediaType: "image/png", size: 3000, label, handle: `image://${id}` });
  const history = [
    { seq: 1, messageId: "0", role: "user" as const, content: [{ type: "text" as const, text: "show me the chart" }, image("a".repeat(64), "image (PNG, 2 KB)")], createdAt: 0 },
    { seq: 3, messageId: "1", role: "assistant" as const, content: [{ type: "toolUse" as const, toolUseId: "p1", toolName: "mcp__tracker__picture", arguments: { kind: "png" } }], createdAt: 0 },
    { seq: 5, messageId: "2", role: "user" as const, content: [{ type: "toolResult" as const, toolUseId: "p1", content: "here is png", isError: false, images: [image("b".repeat(64), "image (PNG, 3 KB)")] }], createdAt: 0 },
  ];
  const { $, root } = mount({ messages: history, lastSeq: 6 });
  assert.equal($(".tool[data-tool-use-id=p1] .tool-name")!.textContent, " picture on tracker");
  assert.equal($(".tool[data-tool-use-id=p1] pre.output")!.textContent, "image (PNG, 3 KB)\nhere is png");
  assert.equal(root.querySelector(".image-ref")!.textContent, " image (PNG, 2 KB)");
});

/**
 * The chat view as the webview wires it (main.ts): `schedule` is the page's next frame, held here until the test
 * runs it, and the page is shown. `layout` records every read of the timeline's layout and what it was scrolled to.
 */
function framed() {
  const dom = new JSDOM('<!DOCTYPE html><body><div id="root"></div></body>');
  const root = dom.window.document.getElementById("root")!;
  const frames: (() => void)[] = [];
  // a variable, not a literal: the options an older chat view did not know are left to it to ignore
  const options = { sanitize: (html: string) => html, schedule: (run: () => void) => frames.push(run), visible: () => true };
  const app = new ChatApp(root as unknown as HTMLElement, () => undefined, options);
  const timeline = root.querySelector<HTMLElement>("[data-testid=timeline]")!;
  const layout = { reads: 0, scrollHeight: 900, clientHeight: 300, scrollTop: 600, scrolledTo: [] as number[] };
  const read = (name: "scrollHeight" | "clientHeight") => ({ get: () => (layout.reads++, layout[name]), configurable: true });
  Object.defineProperty(timeline, "scrollHeight", read("scrollHeight"));
  Object.defineProperty(timeline, "clientHeight", read("clientHeight"));
  Object.defineProperty(timeline, "scrollTop", {
    get: () => (layout.reads++, layout.scrollTop),
    set: (v: number) => layout.scrolledTo.push(v),
    configurable: true,
  });
  const e = new Events();
  const view = apply(emptyView(CID), { type: "snapshot", snapshot: snapshot({ lastSeq: 0 }), merge: false });
  app.receive({ type: "batch", messages: [{ type: "server", state: "ready" }, { type: "reset", view }] });
  while (frames.length > 0) frames.shift()!();
  const delta = (text: string) => ({ type: "batch" as const, messages: [{ type: "input" as const, input: { type: "event" as const, event: e.next({ kind: "textDelta", text, requestId: 1 }) } }] });
  const answer = () => root.querySelector("[data-role=assistant]")?.textContent ?? "";
  return { window: dom.window, frames, timeline, layout, delta, answer, app };
}

test("a shown chat view draws a delta when its message comes, not in the next frame (issue 35: delta -> rendered waited for the frame and its other work)", () => {
  const { app, frames, delta, answer } = framed();
  app.receive(delta("first "));
  assert.match(answer(), /first/, "the delta is in the DOM before any frame ran");
  app.receive(delta("second "));
  assert.match(answer(), /first second/);
  while (frames.length > 0) frames.shift()!();
  assert.equal(answer().trim(), "first second", "the frame draws nothing twice");
});

test("drawing a delta reads no layout; the timeline's end is kept in view in the next frame, once for what came before it (issue 35)", () => {
  const { app, frames, delta, layout, answer } = framed();
  layout.reads = 0;
  layout.scrolledTo = [];
  for (let i = 0; i < 5; i++) app.receive(delta(`w${i} `));
  assert.match(answer(), /w0 w1 w2 w3 w4/);
  assert.equal(layout.reads, 0, "no layout read while drawing (it would lay the page out per message)");
  assert.equal(frames.length, 1, "one frame asked for the five messages");
  layout.scrollHeight = 1200;
  while (frames.length > 0) frames.shift()!();
  assert.deepEqual(layout.scrolledTo, [1200], "in the frame: scrolled to the end");
});

test("a user who scrolled up in the timeline is not pulled to its end by what streams in, and is again once back at the end", () => {
  const { app, frames, delta, layout, timeline, window } = framed();
  layout.scrolledTo = [];
  layout.scrollTop = 100; // 500 px above the end
  timeline.dispatchEvent(new window.Event("scroll"));
  app.receive(delta("more "));
  while (frames.length > 0) frames.shift()!();
  assert.deepEqual(layout.scrolledTo, [], "left where the user is reading");
  layout.scrollTop = 600; // back at the end
  timeline.dispatchEvent(new window.Event("scroll"));
  app.receive(delta("again "));
  while (frames.length > 0) frames.shift()!();
  assert.deepEqual(layout.scrolledTo, [900]);
});

test("a running turn's icon in the status line turns a quarter at each tick of a timer, not by a CSS animation (which makes Chromium draw the page every frame), and the timer stops with the turn (issue 35)", () => {
  const dom = new JSDOM('<!DOCTYPE html><body><div id="root"></div></body>');
  const root = dom.window.document.getElementById("root")!;
  const timers: { ms: number; run: () => void; stopped: boolean }[] = [];
  const every = (ms: number, run: () => void) => {
    const t = { ms, run, stopped: false };
    timers.push(t);
    return () => void (t.stopped = true);
  };
  const options = { sanitize: (html: string) => html, every }; // a variable: an older view ignores what it does not know
  const app = new ChatApp(root as unknown as HTMLElement, () => undefined, options);
  const e = new Events();
  const view = apply(emptyView(CID), { type: "snapshot", snapshot: snapshot({ lastSeq: 0 }), merge: false });
  app.receive({ type: "batch", messages: [{ type: "server", state: "ready" }, { type: "reset", view }] });
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "status", status: "awaiting_llm", previous: "idle", mode: "restricted" }) } });
  const icon = root.querySelector<HTMLElement>("[data-testid=status-line] .codicon-loading")!;
  assert.ok(icon, "a running turn shows the loading icon");
  assert.ok(!icon.classList.contains("codicon-modifier-spin"), "no CSS animation");
  assert.equal(timers.filter((t) => !t.stopped).length, 1);
  const timer = timers[0];
  assert.equal(timer.ms, 250);
  assert.equal(icon.dataset.turn, "0");
  timer.run();
  assert.equal(icon.dataset.turn, "1");
  timer.run();
  timer.run();
  timer.run();
  assert.equal(icon.dataset.turn, "0", "four quarters make a turn");
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "status", status: "idle", previous: "awaiting_llm", mode: "restricted" }) } });
  assert.ok(timers.every((t) => t.stopped), "the turn ended: no timer left");
  assert.equal(root.querySelector("[data-testid=status-line] .codicon-loading"), null);
});
