/**
 * The multi-file review (issue 36, REQ-VSC-017): the approval of a bash command's captured changes read into a
 * list of files (core/review.ts) and shown in the chat view's dialog under jsdom.
 */

import { readFileSync } from "node:fs";
import * as path from "node:path";
import { test } from "node:test";
import assert from "node:assert/strict";
import { JSDOM } from "jsdom";
import createDOMPurify from "dompurify";
import { ChatApp } from "../src/webview/app";
import { apply, emptyView } from "../src/core/reducer";
import { SANITIZE_CONFIG } from "../src/core/markdown";
import type { ViewMessage } from "../src/core/messages";
import { reviewOf, splitDiff } from "../src/core/review";
import { CID, Events, HOSTILE, shellReview, snapshot } from "./fixtures";

function mount() {
  const dom = new JSDOM('<!DOCTYPE html><body><div id="root"></div></body>', { runScripts: "dangerously" });
  const window = dom.window;
  const purify = createDOMPurify(window as unknown as Window & typeof globalThis);
  const posted: ViewMessage[] = [];
  const root = window.document.getElementById("root")!;
  const app = new ChatApp(root as unknown as HTMLElement, (m) => posted.push(m), {
    sanitize: (html) => purify.sanitize(html, SANITIZE_CONFIG) as string,
    hasFocus: () => true,
  });
  const view = apply(emptyView(CID), { type: "snapshot", snapshot: snapshot({ mode: "unrestricted", status: "running_tool" }), merge: false });
  app.receive({ type: "server", state: "ready" });
  app.receive({ type: "reset", view });
  const e = new Events();
  const send = (body: Parameters<Events["next"]>[0]) => app.receive({ type: "input", input: { type: "event", event: e.next(body) } });
  const ask = (approval: ReturnType<typeof shellReview>) =>
    app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "approvalRequested", ...approval }) } });
  const $ = (sel: string) => window.document.querySelector(sel) as HTMLElement | null;
  const $$ = (sel: string) => [...window.document.querySelectorAll(sel)] as HTMLElement[];
  return { window, posted, ask, send, $, $$ };
}

test("a shell review's diff is read into its files: status, path, +/- counts, and the summary (REQ-VSC-017)", () => {
  const review = reviewOf(shellReview(4))!;
  assert.equal(review.command, "sed -i s/one/ONE/ src/*.py");
  assert.deepEqual(
    review.files.map((f) => [f.status, f.path, f.oldPath, f.added, f.removed]),
    [
      ["created", "src/mod000.py", undefined, 2, 0],
      ["deleted", "src/mod001.py", undefined, 0, 1],
      ["renamed", "src/mod002.py", "old/src/mod002.py", 0, 0],
      ["modified", "src/mod003.py", undefined, 1, 1],
    ],
  );
  assert.ok(review.files[3].diff.startsWith("--- a/src/mod003.py\n+++ b/src/mod003.py\n@@ -1,4 +1,4 @@\n"));
  assert.equal(review.summary[0], "4 text file(s) as editor edits; 2 other change(s) placed by the server");
  assert.ok(review.summary.includes("  created node_modules/x.js"));
  assert.deepEqual(review.others, ["build/out.bin", "node_modules/x.js"]);
  // a one-file patch is no review; its dialog stays as it was
  assert.equal(reviewOf({ arguments: { path: "f.py" }, diff: "--- a/f.py\n+++ b/f.py\n@@ -1,1 +1,2 @@\n a\n+x\n" }), undefined);
});

test("a file's text that looks like a file header does not add a file to the review (REQ-VSC-017)", () => {
  // the file removes a line "-- a/evil.py" and adds "++ b/evil.py": its diff holds "--- a/evil.py\n+++ b/evil.py"
  const diff = "--- a/real.py\n+++ b/real.py\n@@ -1,2 +1,2 @@\n--- a/evil.py\n++++ b/evil.py\n keep\n";
  const { files } = splitDiff(diff);
  assert.deepEqual(files.map((f) => [f.path, f.added, f.removed]), [["real.py", 1, 1]]);
});

test("the dialog shows a multi-file review: the command, each file with its counts, the summary, no raw JSON (REQ-VSC-017)", () => {
  const { ask, $, $$, posted } = mount();
  ask(shellReview(4));
  assert.equal($("[data-testid=approval-dialog]")!.dataset.open, "true");
  assert.equal($("[data-testid=dialog-title]")!.textContent, "patch");
  assert.equal($("[data-testid=review-command]")!.textContent, "$ sed -i s/one/ONE/ src/*.py");
  assert.equal($(".dialog-arguments"), null, "the arguments are the list, not JSON");
  const rows = $$("[data-testid=approval-dialog] [data-testid=review-file]");
  assert.deepEqual(rows.map((r) => [r.dataset.status, r.dataset.path]), [
    ["created", "src/mod000.py"], ["deleted", "src/mod001.py"], ["renamed", "src/mod002.py"], ["modified", "src/mod003.py"],
  ]);
  assert.equal(rows[2].querySelector(".review-path")!.textContent, "old/src/mod002.py → src/mod002.py");
  assert.equal(rows[3].querySelector(".review-counts")!.textContent, "+1 −1");
  assert.match($("[data-testid=review-headline]")!.textContent!, /^4 text files \(\+3 −2\), 2 other changes$/);
  assert.deepEqual($$("[data-testid=review-other]").map((o) => o.textContent), ["other change: build/out.bin", "other change: node_modules/x.js"]);
  assert.match($("[data-testid=review-summary]")!.textContent!, /ignored folder node_modules: 1 \(12 B\)\n {2}created node_modules\/x\.js/);
  // a file's diff is drawn when it is unfolded
  const details = rows[3].querySelector("details")! as HTMLDetailsElement;
  assert.equal(details.querySelector(".diff"), null);
  details.open = true;
  details.dispatchEvent(new (details.ownerDocument.defaultView!).Event("toggle"));
  const lines = [...details.querySelectorAll(".diff-line .code")].map((c) => c.textContent);
  assert.deepEqual(lines.slice(-5), [" zero", "-one 3", "+ONE 3", " two", " three"]);
  // one file in VS Code's diff editor; Allow answers for the whole
  (rows[1].querySelector("[data-testid=review-open-diff]") as HTMLElement).click();
  assert.deepEqual(posted.at(-1), { type: "openDiff", conversationId: CID, toolUseId: "r1", path: "src/mod001.py" });
  const allow = $$("[data-testid=dialog-choice]").find((c) => c.dataset.key === "y")!;
  allow.click();
  assert.deepEqual(posted.at(-1), { type: "answerApproval", conversationId: CID, toolUseId: "r1", decision: "allow" });
});

test("Deny answers a review for the whole, from the keyboard (REQ-VSC-017)", () => {
  const { ask, window, posted } = mount();
  ask(shellReview(3));
  const target = window.document.activeElement ?? window.document.body;
  target.dispatchEvent(new window.KeyboardEvent("keydown", { key: "n", bubbles: true, cancelable: true }));
  assert.deepEqual(posted.at(-1), { type: "answerApproval", conversationId: CID, toolUseId: "r1", decision: "deny" });
});

test("a review of 200 changed files lists every file and draws no diff line until one is opened (REQ-VSC-017)", () => {
  const { ask, $$, window } = mount();
  ask(shellReview(200));
  assert.equal($$("[data-testid=approval-dialog] [data-testid=review-file]").length, 200);
  assert.equal($$(".diff-line").length, 0, "the diffs of 200 files are drawn on demand");
  // the list stays what it is while the selection moves (a redraw keeps an unfolded file open)
  const details = $$("[data-testid=approval-dialog] [data-testid=review-file]")[150].querySelector("details")! as HTMLDetailsElement;
  details.open = true;
  details.dispatchEvent(new window.Event("toggle"));
  const target = window.document.activeElement ?? window.document.body;
  target.dispatchEvent(new window.KeyboardEvent("keydown", { key: "ArrowDown", bubbles: true, cancelable: true }));
  const again = $$("[data-testid=approval-dialog] [data-testid=review-file]")[150].querySelector("details")! as HTMLDetailsElement;
  assert.equal(again.open, true);
  assert.ok(again.querySelectorAll(".diff-line").length > 0);
  assert.equal($$(".diff-line").length, again.querySelectorAll(".diff-line").length);
});

test("hostile paths and summary lines in a review stay text (REQ-VSC-017)", () => {
  const { ask, $$, window } = mount();
  const line = HOSTILE.split("\n")[0];
  const approval = shellReview(3);
  approval.diff = `# ${line}\n--- a/${line}\n+++ b/${line}\n@@ -1,1 +1,1 @@\n-a\n+${line}\n` + approval.diff;
  ask(approval);
  assert.ok($$("[data-testid=approval-dialog] [data-testid=review-file]").some((r) => r.dataset.path === line));
  assert.equal(window.document.querySelector("img"), null);
  assert.equal((window as unknown as Record<string, unknown>).__pwned, undefined);
});

test("the bash card keeps the diff of every file the review applied, listed by file (REQ-VSC-017)", () => {
  const { send, $$, window } = mount();
  send({ kind: "toolStart", toolUseId: "b1", toolName: "bash", arguments: { command: "sed -i s/a/b/ x y" }, mode: "unrestricted" });
  send({ kind: "diff", toolUseId: "b1", path: "/w/x", diff: "--- a/x\n+++ b/x\n@@ -1,1 +1,1 @@\n-a\n+b\n" });
  send({ kind: "diff", toolUseId: "b1", path: "/w/y", diff: "--- a/y\n+++ b/y\n@@ -1,1 +1,1 @@\n-a\n+c\n" });
  send({ kind: "toolEnd", toolUseId: "b1", isError: false, summary: "done" });
  const card = window.document.querySelector("[data-tool-use-id=b1]")!;
  const rows = [...card.querySelectorAll("[data-testid=review-file]")] as HTMLElement[];
  assert.deepEqual(rows.map((r) => [r.dataset.status, r.dataset.path]), [["modified", "x"], ["modified", "y"]]);
  assert.equal($$(".diff-line").length, 0, "drawn when a file is opened");
});

test("the server's own review event (tests/clients/shell_review_event.json) is read file by file (REQ-VSC-017)", () => {
  const file = path.resolve(__dirname, "../../../tests/clients/shell_review_event.json");
  const { event } = JSON.parse(readFileSync(file, "utf8")) as { event: ReturnType<typeof shellReview> };
  const review = reviewOf(event)!;
  assert.deepEqual(review.files.map((f) => [f.status, f.path, f.oldPath ?? "", f.added, f.removed]), [
    ["modified", "a.txt", "", 1, 1],
    ["deleted", "gone.txt", "", 0, 1],
    ["renamed", "moved.txt", "old.txt", 0, 0],
    ["created", "new.txt", "", 1, 0],
    ["modified", "tricky.txt", "", 1, 1],
  ]);
  assert.deepEqual(review.others, ["b.bin", "node_modules", "node_modules/p", "node_modules/p/i.js"]);
  assert.ok(review.summary.includes("ignored folder node_modules: 3 (2 B)"));
  const { ask, $$ } = mount();
  ask(event);
  assert.equal($$("[data-testid=approval-dialog] [data-testid=review-file]").length, 5);
});

test("a review's card, once allowed, is done and shows the command, not its arguments as JSON (REQ-VSC-017)", () => {
  // seen in the real VS Code: the card of an allowed review said "waiting" for good, above a JSON dump
  const { ask, send, window } = mount();
  const approval = shellReview(3, "b1.review");
  ask(approval);
  send({ kind: "approvalResolved", toolUseId: "b1.review", decision: "allow" });
  const card = window.document.querySelector("[data-tool-use-id='b1.review']")!;
  assert.equal(card.querySelector(".tool-state")!.textContent, "done");
  assert.equal(card.querySelector("pre.command")!.textContent, `$ ${String(approval.arguments.command)}`);
  assert.equal(card.querySelector("pre.arguments"), null, "no JSON of the arguments");
  assert.equal(card.querySelectorAll("[data-testid=review-file]").length, 3);
});

test("a denied review's card says denied (REQ-VSC-017)", () => {
  const { ask, send, window } = mount();
  ask(shellReview(2, "b2.review"));
  send({ kind: "approvalResolved", toolUseId: "b2.review", decision: "deny" });
  const card = window.document.querySelector("[data-tool-use-id='b2.review']")!;
  assert.equal(card.querySelector(".tool-state")!.textContent, "denied");
});
