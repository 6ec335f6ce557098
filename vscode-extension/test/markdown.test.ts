import { test } from "node:test";
import assert from "node:assert/strict";
import { escapeHtml, plainParagraph, renderMarkdown, settledLength, stripTerminalEscapes } from "../src/core/markdown";
import { HOSTILE } from "./fixtures";

test("markdown renders with highlighted code blocks", () => {
  const html = renderMarkdown("**bold** and `code`\n\n```python\ndef f():\n    return 1\n```\n");
  assert.match(html, /<strong>bold<\/strong>/);
  assert.match(html, /<code class="hljs language-python">/);
  assert.match(html, /<span class="hljs-keyword">def<\/span>/);
});

test("raw HTML, script and javascript: links in model output stay text (REQ-VSC-006)", () => {
  const html = renderMarkdown(HOSTILE);
  assert.doesNotMatch(html, /<script/i);
  assert.doesNotMatch(html, /<img/i);
  assert.doesNotMatch(html, /<svg/i);
  assert.doesNotMatch(html, /<iframe/i);
  assert.doesNotMatch(html, /<div/i);
  assert.doesNotMatch(html, /href="javascript:/i);
  assert.doesNotMatch(html, /\son\w+="/i, "no event handler attribute survives as markup");
  assert.match(html, /&lt;script&gt;/);
  assert.ok(!html.includes("\u001b"), "no escape character survives");
});

test("only http(s) and mailto links become links", () => {
  assert.match(renderMarkdown("[a](https://example.com)"), /<a href="https:\/\/example.com">a<\/a>/);
  assert.doesNotMatch(renderMarkdown("[a](vbscript:x) [b](data:text/html,x) [c](file:///etc/passwd)"), /<a /);
});

test("terminal escape sequences and control characters are removed", () => {
  assert.equal(stripTerminalEscapes("\u001b[31mred\u001b[0m \u001b]0;title\u0007ok\r\n\u0008x\u009b2J"), "red ok\nx");
  assert.equal(escapeHtml(`<a href="x">'&'</a>`), "&lt;a href=&quot;x&quot;&gt;&#39;&amp;&#39;&lt;/a&gt;");
});

test("a streamed answer is settled up to its last blank line before a block at the margin, outside code fences (issue 35)", () => {
  assert.equal(settledLength("one paragraph still being writ"), 0);
  assert.equal(settledLength("first\n\nsecond"), "first\n\n".length);
  assert.equal(settledLength("a\n\nb\n\nc is being writ"), "a\n\nb\n\n".length, "the last boundary");
  assert.equal(settledLength("first\n\n"), 0, "no line after the blank one yet: the next may continue a list");
  assert.equal(settledLength("first\n\n "), 0, "nor a line that starts indented");
  assert.equal(settledLength("- item\n\n    indented continuation"), 0, "an indented line continues the list item");
  const fenced = "text\n\n```python\nx = 1\n\ny = 2\n";
  assert.equal(settledLength(fenced), "text\n\n".length, "a blank line inside an open fence settles nothing");
  const closed = `${fenced}\`\`\`\n\nafter`;
  assert.equal(settledLength(closed), closed.length - "after".length, "after the fence closes it does");
  assert.equal(settledLength("~~~\n```\n\nstill code\n"), 0, "a fence closes only with its own kind");
  assert.equal(settledLength("text\n\n```"), "text\n\n".length, "a fence being opened starts a block");
  assert.equal(settledLength(closed, "text\n\n".length), closed.length - "after".length, "from a settled length found before");
});

test("rendering a streamed answer's settled blocks apart gives the whole answer's rendering", () => {
  const answer = "# Title\n\nSome **bold** text.\n\n```ts\nconst a = 1;\n\nconst b = 2;\n```\n\nA [link](https://example.com).\n";
  const cut = settledLength(answer);
  assert.ok(cut > 0);
  assert.equal(renderMarkdown(answer.slice(0, cut)) + renderMarkdown(answer.slice(cut)), renderMarkdown(answer));
});

/** A small seeded generator (mulberry32), so a failing case is the same at every run. */
function random(seed: number): () => number {
  return () => {
    seed = (seed + 0x6d2b79f5) | 0;
    let t = Math.imul(seed ^ (seed >>> 15), 1 | seed);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

test("a plain paragraph is what markdown renders it as, over random text with every markdown character (issue 35)", () => {
  const next = random(35);
  const alphabet = [..."abcxyzé9017 ,;?'\"()%=+-/.:@*_~`[]!\\<>&#|{}^$\t\n", "py", "com", "http", "www", "1.", "2)", "  "];
  let plain = 0;
  for (let i = 0; i < 20_000; i++) {
    let text = "";
    const length = 1 + Math.floor(next() * 12);
    for (let j = 0; j < length; j++) text += alphabet[Math.floor(next() * alphabet.length)];
    const paragraph = plainParagraph(text);
    if (paragraph === undefined) continue;
    plain++;
    // markdown-it escapes &, <, > and " (never here but for the quote), not the apostrophe
    assert.equal(renderMarkdown(text), `<p>${paragraph.replace(/"/g, "&quot;")}</p>\n`, JSON.stringify(text));
  }
  assert.ok(plain > 1000, `only ${plain} of the random texts were plain: the test says little`);
});

test("what markdown or linkify acts on is not a plain paragraph (issue 35)", () => {
  for (const text of [
    "see setup.py", "go to http://example.com", "//host/path", "mail a@b.co", "1. item", "2) item", "- item", "+ item",
    "# title", "> quote", "**bold**", "a_b_", "`code`", "[a](https://x.y)", "x &amp; y", "\tcode", "    code", " lead",
    "two\nlines", "back\\slash", "<b>", "~~gone~~", "a | b", "e.g. this", "",
  ]) {
    assert.equal(plainParagraph(text), undefined, JSON.stringify(text));
  }
  assert.equal(plainParagraph("It works. Then: this, (that) and 50% more / less  "), "It works. Then: this, (that) and 50% more / less");
  assert.equal(plainParagraph("1234;5678;"), "1234;5678;");
});
