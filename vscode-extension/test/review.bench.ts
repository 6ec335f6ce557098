/**
 * bench vscode's review figure (issue 36), run by bench/vscode.py: how long the chat view takes to open the
 * review of 200 changed files (the approval event received -> the dialog drawn with its list and summary), in
 * the webview's own code under jsdom (DOMPurify as in the webview), beside the baseline measured in the same
 * run: a one-file patch approval opened the same way. Prints one JSON line. Not a test (no assertion):
 * `node out-test/test/review.bench.js [files] [runs]`.
 */

import { performance } from "node:perf_hooks";
import { JSDOM } from "jsdom";
import createDOMPurify from "dompurify";
import { ChatApp } from "../src/webview/app";
import { apply, emptyView } from "../src/core/reducer";
import { SANITIZE_CONFIG } from "../src/core/markdown";
import { CID, Events, shellReview, snapshot } from "./fixtures";

const files = Number(process.argv[2] ?? 200);
const runs = Number(process.argv[3] ?? 15);

const ONE_FILE = {
  toolUseId: "p1",
  toolName: "patch",
  description: "Change a file in the workspace",
  arguments: { path: "src/mod003.py", patches: [{ operation: "replace", oldText: "one 3", newText: "ONE 3" }] },
  diff: "--- a/src/mod003.py\n+++ b/src/mod003.py\n@@ -1,4 +1,4 @@\n zero\n-one 3\n+ONE 3\n two\n three\n",
  scopes: [{ kind: "tool" as const, rule: "patch", label: "patch" }],
};

/** ms from the approval's event to the dialog drawn, in a fresh chat view. */
function open(approval: typeof ONE_FILE | ReturnType<typeof shellReview>): number {
  const dom = new JSDOM('<!DOCTYPE html><body><div id="root"></div></body>');
  const purify = createDOMPurify(dom.window as unknown as Window & typeof globalThis);
  const root = dom.window.document.getElementById("root")!;
  const app = new ChatApp(root as unknown as HTMLElement, () => undefined, {
    sanitize: (html) => purify.sanitize(html, SANITIZE_CONFIG) as string,
    hasFocus: () => true,
  });
  app.receive({ type: "server", state: "ready" });
  app.receive({ type: "reset", view: apply(emptyView(CID), { type: "snapshot", snapshot: snapshot({ mode: "unrestricted", status: "running_tool" }), merge: false }) });
  const e = new Events();
  const t = performance.now();
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "approvalRequested", ...approval }) } });
  const ms = performance.now() - t;
  const dialog = dom.window.document.querySelector("[data-testid=approval-dialog]") as HTMLElement;
  if (dialog.dataset.open !== "true") throw new Error("the dialog did not open: the figure would measure nothing");
  return ms;
}

const median = (xs: number[]) => [...xs].sort((a, b) => a - b)[Math.floor(xs.length / 2)];
const review = shellReview(files);
open(review); // warm both paths once (the JIT), as the webview is warm when an approval comes
open(ONE_FILE);
const reviews: number[] = [];
const patches: number[] = [];
for (let i = 0; i < runs; i++) {
  reviews.push(open(review));
  patches.push(open(ONE_FILE));
}
console.log(
  JSON.stringify({
    files,
    runs,
    diff_bytes: review.diff.length,
    review_open_ms: median(reviews),
    review_open_max_ms: Math.max(...reviews),
    patch_open_ms: median(patches),
  }),
);
