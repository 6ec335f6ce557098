import { test } from "node:test";
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import * as path from "node:path";
import { BUSY_CONTEXT, modeLabel, newConversationLabels, policyLabel, statusBarKey, styleLabel, togglePolicy } from "../src/core/labels";
import { isBusy, STATUSES } from "../src/core/status";
import { chatPage, contentSecurityPolicy, makeNonce } from "../src/core/html";

test("the policy indicator reads 🚀 Auto / 🔒 Interactive and toggles (REQ-PERM-009, REQ-PERM-010)", () => {
  assert.equal(policyLabel("auto").text, "🚀 Auto");
  assert.equal(policyLabel("interactive").text, "🔒 Interactive");
  assert.equal(togglePolicy("auto"), "interactive");
  assert.equal(togglePolicy("interactive"), "auto");
});

test("the mode item names the mode and warns when the sandbox is unavailable (REQ-LAYER-008)", () => {
  assert.match(modeLabel("restricted").text, /Restricted/);
  const ok = modeLabel("unrestricted", { available: true, landlockAbi: 7, missing: [] });
  assert.ok(!ok.warning);
  const warn = modeLabel("unrestricted", { available: false, reason: "Landlock is disabled", missing: [] });
  assert.equal(warn.warning, true);
  assert.match(warn.text, /warning/);
  assert.match(warn.tooltip, /Landlock is disabled/);
  assert.match(styleLabel("plan").text, /plan/);
});

test("the webview page has a strict CSP: nonce'd script only, no inline style, nothing remote (REQ-VSC-006)", () => {
  const csp = contentSecurityPolicy("vscode-resource:", "abc");
  assert.match(csp, /default-src 'none'/);
  assert.match(csp, /script-src 'nonce-abc'(;|$)/);
  assert.doesNotMatch(csp, /unsafe-inline|unsafe-eval|https?:|\*/);
  const page = chatPage({ cspSource: "vscode-resource:", nonce: "abc", scriptUri: "vscode-resource:/dist/webview.js", styleUris: ["vscode-resource:/media/chat.css"] });
  const scripts = page.match(/<script[^>]*>/g) ?? [];
  assert.equal(scripts.length, 1);
  assert.match(scripts[0], /nonce="abc"/);
  assert.match(scripts[0], /src="vscode-resource:\/dist\/webview.js"/);
  assert.doesNotMatch(page, /\son[a-z]+=/i, "no inline event handlers");
  assert.doesNotMatch(page, /<style/i);
  const nonce = makeNonce((n) => new Uint8Array(n).map((_, i) => i * 7));
  assert.match(nonce, /^[A-Za-z0-9]{32}$/);
});

test("the status bar is touched only when the server, mode, sandbox, policy or style change (not per delta)", () => {
  const view = { mode: "restricted" as const, policy: "interactive" as const, style: "chat" as const };
  const key = statusBarKey(view, "ready");
  assert.equal(statusBarKey({ ...view }, "ready"), key);
  assert.notEqual(statusBarKey({ ...view, policy: "auto" }, "ready"), key);
  assert.notEqual(statusBarKey({ ...view, mode: "unrestricted" }, "ready"), key);
  assert.notEqual(statusBarKey({ ...view, style: "plan" }, "ready"), key);
  assert.notEqual(statusBarKey(view, "starting"), key);
});

test("before any conversation the status bar shows the mode, policy and style a new one starts with (REQ-VSC-013)", () => {
  const sandbox = { available: true, landlockAbi: 7, missing: [] };
  const first = newConversationLabels({ sandbox, policy: "interactive", style: "chat" });
  assert.equal(first.mode.text, "$(lock) Restricted");
  assert.match(first.mode.tooltip, /^No conversation yet: a new one starts restricted\. .*Click to open the chat\.$/);
  assert.equal(first.policy.text, "🔒 Interactive");
  assert.match(first.policy.tooltip, /phoenix\.approvalPolicy/);
  assert.equal(first.style.text, "$(comment-discussion) chat");
  const auto = newConversationLabels({ sandbox, policy: "auto", style: "plan" });
  assert.equal(auto.policy.text, "🚀 Auto");
  assert.equal(auto.style.text, "$(comment-discussion) plan");
  // without the sandbox a new conversation starts unrestricted, and the item warns
  const bare = newConversationLabels({ sandbox: { available: false, reason: "no Landlock", missing: [] }, policy: "interactive", style: "chat" });
  assert.equal(bare.mode.text, "$(warning) Unrestricted");
  assert.equal(bare.mode.warning, true);
  assert.match(bare.mode.tooltip, /starts unrestricted.*no Landlock/);
});

test("the chat view's stop button shows only while a turn runs (REQ-VSC-014)", () => {
  const pkg = JSON.parse(readFileSync(path.join(__dirname, "..", "..", "package.json"), "utf8")) as {
    contributes: { menus: Record<string, { command: string; when?: string }[]> };
  };
  const stop = pkg.contributes.menus["view/title"].find((m) => m.command === "phoenix.vscode.cancel");
  assert.ok(stop?.when?.split("&&").map((c) => c.trim()).includes(BUSY_CONTEXT), `view/title stop: ${stop?.when}`);
  const busy = STATUSES.filter((s) => isBusy(s));
  assert.deepEqual(busy, ["awaiting_llm", "running_tool", "awaiting_agents", "summarizing"]);
});
