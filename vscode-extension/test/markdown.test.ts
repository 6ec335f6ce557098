import { test } from "node:test";
import assert from "node:assert/strict";
import { escapeHtml, renderMarkdown, stripTerminalEscapes } from "../src/core/markdown";
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
