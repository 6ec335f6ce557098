/**
 * Model and tool output as safe text: markdown with raw HTML disabled and only http(s)/mailto links,
 * code blocks highlighted (highlight.js escapes what it emits), terminal escape sequences removed.
 * The webview sanitises the HTML once more (DOMPurify, a tag/attribute allow-list) before it is inserted,
 * and its Content-Security-Policy runs no script without the page's nonce. Pure: no DOM here.
 */

import MarkdownIt from "markdown-it";
import hljs from "highlight.js/lib/core";
import bash from "highlight.js/lib/languages/bash";
import c from "highlight.js/lib/languages/c";
import cpp from "highlight.js/lib/languages/cpp";
import css from "highlight.js/lib/languages/css";
import diff from "highlight.js/lib/languages/diff";
import go from "highlight.js/lib/languages/go";
import java from "highlight.js/lib/languages/java";
import javascript from "highlight.js/lib/languages/javascript";
import json from "highlight.js/lib/languages/json";
import markdown from "highlight.js/lib/languages/markdown";
import python from "highlight.js/lib/languages/python";
import rust from "highlight.js/lib/languages/rust";
import shell from "highlight.js/lib/languages/shell";
import sql from "highlight.js/lib/languages/sql";
import typescript from "highlight.js/lib/languages/typescript";
import xml from "highlight.js/lib/languages/xml";
import yaml from "highlight.js/lib/languages/yaml";

const LANGUAGES = {
  bash, c, cpp, css, diff, go, java, javascript, json, markdown, python, rust, shell, sql, typescript, xml, yaml,
};

const SAFE_LINK = /^(https?:|mailto:)/i;

let parser: InstanceType<typeof MarkdownIt> | undefined;

/**
 * The markdown parser with its highlighter's languages, made at the first markdown rendered, not when the
 * webview's script loads (issue 35): the chat view loads with the window and needs neither until it shows an
 * answer (about 10 ms of CPU measured under node, moved off the view's load).
 */
function markdownParser(): InstanceType<typeof MarkdownIt> {
  if (parser) return parser;
  for (const [name, language] of Object.entries(LANGUAGES)) hljs.registerLanguage(name, language);
  hljs.registerAliases(["sh", "zsh", "console"], { languageName: "bash" });
  hljs.registerAliases(["ts", "tsx"], { languageName: "typescript" });
  hljs.registerAliases(["js", "jsx", "mjs", "cjs"], { languageName: "javascript" });
  hljs.registerAliases(["py"], { languageName: "python" });
  hljs.registerAliases(["html", "svg"], { languageName: "xml" });
  hljs.registerAliases(["yml"], { languageName: "yaml" });
  hljs.registerAliases(["rs"], { languageName: "rust" });
  const md = new MarkdownIt({
    html: false, // raw HTML in model output is shown as text, never parsed
    linkify: true,
    breaks: false,
    highlight(code: string, lang: string): string {
      const language = lang && hljs.getLanguage(lang) ? lang : undefined;
      try {
        const value = language ? hljs.highlight(code, { language, ignoreIllegals: true }).value : escapeHtml(code);
        return `<pre class="code"><code class="hljs${language ? ` language-${language}` : ""}">${value}</code></pre>`;
      } catch {
        return `<pre class="code"><code class="hljs">${escapeHtml(code)}</code></pre>`;
      }
    },
  });
  md.validateLink = (url: string): boolean => SAFE_LINK.test(url.trim());
  // images in model output would load remote content (the CSP blocks it anyway): show their alt text
  md.renderer.rules.image = (tokens: { content: string }[], idx: number) => escapeHtml(tokens[idx].content || "image");
  parser = md;
  return md;
}

/** Markdown to HTML; `sanitize` (DOMPurify in the webview) runs on the result. */
export function renderMarkdown(text: string, sanitize: (html: string) => string = (h) => h): string {
  return sanitize(markdownParser().render(stripTerminalEscapes(text)));
}

const HTML_ESCAPES: Record<string, string> = {
  "&": "&amp;",
  "<": "&lt;",
  ">": "&gt;",
  '"': "&quot;",
  "'": "&#39;",
};

export function escapeHtml(text: string): string {
  return text.replace(/[&<>"']/g, (ch) => HTML_ESCAPES[ch]);
}

// CSI (ESC [ ... final), OSC (ESC ] ... BEL or ESC \), other two-byte ESC sequences, and C1 CSI.
// eslint-disable-next-line no-control-regex
const TERMINAL_ESCAPES = /\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b[@-Z\\-_]|\x9b[0-?]*[ -/]*[@-~]/g;
// eslint-disable-next-line no-control-regex
const CONTROL = /[\x00-\x08\x0b\x0c\x0e-\x1f\x7f\x80-\x9f]/g;

/** Tool output without terminal control: escape sequences and control characters removed, \r\n kept as \n. */
export function stripTerminalEscapes(text: string): string {
  return text.replace(TERMINAL_ESCAPES, "").replace(/\r\n/g, "\n").replace(/\r/g, "\n").replace(CONTROL, "");
}

/** The tag and attribute allow-list the webview gives DOMPurify. */
export const SANITIZE_CONFIG = {
  ALLOWED_TAGS: [
    "a", "p", "br", "hr", "em", "strong", "s", "del", "code", "pre", "span", "blockquote", "ul", "ol", "li",
    "h1", "h2", "h3", "h4", "h5", "h6", "table", "thead", "tbody", "tr", "th", "td",
  ],
  ALLOWED_ATTR: ["href", "class", "start", "title"],
  ALLOWED_URI_REGEXP: /^(?:https?:|mailto:)/i,
  ALLOW_DATA_ATTR: false,
};

const FENCE = /^ {0,3}(`{3,}|~{3,})/;

/**
 * How much of a streamed answer is settled (issue 35): the end of its last blank line outside a code fence
 * that a line starting at the margin follows (a line still being written counts by its first character), at or after `from` (a settled length found before). What comes
 * before it is whole markdown blocks that later text can no longer change (the next block starts at the
 * margin, so it continues no list item or indented code), rendered once while the rest is re-rendered per
 * frame. `from` is itself a settled length (outside any fence). The answer's final rendering is of the whole
 * text, so a block that would have joined the next (a loose list) differs only while it streams.
 */
export function settledLength(text: string, from = 0): number {
  let settled = from;
  let fence: string | undefined;
  let blank = false;
  let at = from;
  while (at < text.length) {
    const found = text.indexOf("\n", at);
    // the last line may still be being written: its first character already says whether a block starts
    const end = found < 0 ? text.length : found;
    const line = text.slice(at, end);
    if (fence !== undefined) {
      const close = FENCE.exec(line);
      if (close && close[1][0] === fence[0] && close[1].length >= fence.length && line.trim() === close[1]) fence = undefined;
    } else if (line.trim() === "") {
      blank = true;
    } else {
      if (blank && /^\S/.test(line)) settled = at;
      blank = false;
      const open = FENCE.exec(line);
      if (open) fence = open[1];
    }
    at = end + 1;
  }
  return settled;
}

/**
 * Text that markdown renders as one paragraph of that very text (issue 35): letters, digits, spaces and the
 * punctuation no markdown rule acts on, on one line, starting with a letter or a digit. Left out: everything
 * an inline rule reads (`*_~\`[]!\\<>&`), what starts a block (a list's `- + *`, `#`, `>`, a number with `.`
 * or `)` first), a tab, a line break, `@`, `//`, and `.` or `:` before anything but a space (a link linkify would
 * find: `setup.py`, `http://`, `//host`, `a@b.co`). The webview appends the rest of such a paragraph as text instead of
 * rendering it again each frame (webview/timeline.ts); the markdown test compares the two over random text.
 */
const PLAIN = /^(?!\d{1,9}[.)])[\p{L}\p{N}](?:[\p{L}\p{N} ,;?'"()%=+-]|\/(?!\/)|[.:](?= |$))*$/u;

/** The paragraph's text if `text` renders as exactly one plain paragraph (trailing spaces dropped, as markdown
 *  does), else undefined: a `<p>` holding that text is then what renderMarkdown gives. */
export function plainParagraph(text: string): string | undefined {
  return PLAIN.test(text) ? text.trimEnd() : undefined;
}
