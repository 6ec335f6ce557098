/**
 * bench vscode's render figure (issue 35), run by bench/vscode.py: the chat view's cost of drawing a streamed
 * answer, per delta, in the webview's own code under jsdom (DOMPurify as in the webview), beside the baseline
 * measured in the same run: what each frame cost before, the whole answer's markdown rendered, sanitised and
 * put in again; and a paragraph streamed whole (bench vscode's stamps), appended to as it is drawn, beside its
 * markdown rendered per frame. Prints one JSON line. Not a test (no assertion):
 * `node out-test/test/render.bench.js [deltas]`.
 */

import { performance } from "node:perf_hooks";
import { JSDOM } from "jsdom";
import createDOMPurify from "dompurify";
import { ChatApp } from "../src/webview/app";
import { apply, emptyView } from "../src/core/reducer";
import { renderMarkdown, SANITIZE_CONFIG } from "../src/core/markdown";
import { CID, Events, snapshot } from "./fixtures";

const PARAGRAPH =
  "The change keeps the **parser** pure: it takes the bytes and returns `Result<Message, Error>`, and the caller " +
  "decides what to log. See [the spec](https://example.com/spec) for the framing rules.\n\n";
const LIST = "- first, with `code`\n- second, *emphasised*\n- third: a longer item that wraps over the line\n\n";
const CODE = "```python\ndef parse(data: bytes) -> Message:\n    header, _, body = data.partition(b\"\\r\\n\\r\\n\")\n    return Message(header, body)\n```\n\n";

function answer(bytes: number): string {
  let text = "";
  for (let i = 0; text.length < bytes; i++) text += [PARAGRAPH, LIST, CODE][i % 3];
  return text;
}

function chunks(text: string, n: number): string[] {
  const size = Math.ceil(text.length / n);
  return Array.from({ length: Math.ceil(text.length / size) }, (_, i) => text.slice(i * size, (i + 1) * size));
}

const deltas = Number(process.argv[2] ?? 600);
const text = answer(16_000);
const dom = new JSDOM('<!DOCTYPE html><body><div id="root"></div></body>');
const purify = createDOMPurify(dom.window as unknown as Window & typeof globalThis);
const sanitize = (html: string) => purify.sanitize(html, SANITIZE_CONFIG) as string;

// the chat view as it is: every delta rendered at once (one frame each, the 25 ms stream)
const root = dom.window.document.getElementById("root")!;
const app = new ChatApp(root as unknown as HTMLElement, () => undefined, { sanitize, hasFocus: () => false });
app.receive({ type: "reset", view: apply(emptyView(CID), { type: "snapshot", snapshot: snapshot({ lastSeq: 0 }), merge: false }) });
const e = new Events();
const parts = chunks(text, deltas);
const now: number[] = [];
for (const part of parts) {
  const t = performance.now();
  app.receive({ type: "input", input: { type: "event", event: e.next({ kind: "textDelta", text: part, requestId: 1 }) } });
  now.push(performance.now() - t);
}

// the baseline: each frame rendering the whole answer so far into a new element, as before
const before: number[] = [];
const box = dom.window.document.createElement("div");
dom.window.document.body.append(box);
let sofar = "";
for (const part of parts) {
  sofar += part;
  const t = performance.now();
  const el = dom.window.document.createElement("div");
  el.innerHTML = renderMarkdown(sofar, sanitize);
  box.replaceChildren(el);
  before.push(performance.now() - t);
}

// a paragraph streamed whole (bench vscode's stamps, "<ns>;" per delta, 600 of them): drawn as the chat view
// draws it (appended to its text), beside the baseline of its markdown rendered, sanitised and put in per frame
// (the block being written, before the plain paragraph's append)
const stamps = Array.from({ length: 600 }, (_, i) => `${1_000_000_000_000 + i * 25_000_000};`);
// in the document, as the baseline's element is (jsdom does less for a detached one)
const paragraphRoot = dom.window.document.createElement("div");
dom.window.document.body.append(paragraphRoot);
const paragraph = new ChatApp(paragraphRoot as unknown as HTMLElement, () => undefined, { sanitize, hasFocus: () => false });
paragraph.receive({ type: "reset", view: apply(emptyView(CID), { type: "snapshot", snapshot: snapshot({ lastSeq: 0 }), merge: false }) });
const pe = new Events();
const plainNow: number[] = [];
for (const stamp of stamps) {
  const t = performance.now();
  paragraph.receive({ type: "input", input: { type: "event", event: pe.next({ kind: "textDelta", text: stamp, requestId: 1 }) } });
  plainNow.push(performance.now() - t);
}
const plainBefore: number[] = [];
const tailEl = dom.window.document.createElement("div");
dom.window.document.body.append(tailEl);
let written = "";
for (const stamp of stamps) {
  written += stamp;
  const t = performance.now();
  tailEl.innerHTML = renderMarkdown(written, sanitize);
  plainBefore.push(performance.now() - t);
}

const tail = (xs: number[]) => xs.slice(-Math.max(1, Math.floor(xs.length / 10)));
const mean = (xs: number[]) => xs.reduce((a, b) => a + b, 0) / xs.length;
console.log(
  JSON.stringify({
    deltas: parts.length,
    bytes: text.length,
    total_ms: now.reduce((a, b) => a + b, 0),
    baseline_total_ms: before.reduce((a, b) => a + b, 0),
    last_tenth_mean_ms: mean(tail(now)),
    baseline_last_tenth_mean_ms: mean(tail(before)),
    paragraph_deltas: stamps.length,
    paragraph_bytes: written.length,
    paragraph_last_tenth_mean_ms: mean(tail(plainNow)),
    paragraph_baseline_last_tenth_mean_ms: mean(tail(plainBefore)),
  }),
);
