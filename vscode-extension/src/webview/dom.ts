/**
 * What every part of the chat view shares: building DOM nodes (text only through `textContent`), markdown
 * through the sanitiser, and the context a part works in (the view, posting to the host, asking for a redraw).
 */

import { diffLines } from "../core/diff";
import { fileLabel, type ReviewFile } from "../core/review";
import { renderMarkdown, stripTerminalEscapes } from "../core/markdown";
import type { ViewMessage } from "../core/messages";
import type { ConversationView } from "../core/reducer";

export class Dom {
  constructor(
    readonly doc: Document,
    /** HTML sanitiser for rendered markdown (DOMPurify in the webview) */
    private readonly sanitize: (html: string) => string,
  ) {}

  node(tag: string, className: string): HTMLElement {
    const el = this.doc.createElement(tag);
    if (className) el.className = className;
    return el;
  }

  add(parent: HTMLElement, tag: string, className: string): HTMLElement {
    const el = this.node(tag, className);
    parent.append(el);
    return el;
  }

  /** A span of text (terminal escapes removed). */
  text(parent: HTMLElement, tag: string, className: string, text: string): HTMLElement {
    const el = this.add(parent, tag, className);
    el.textContent = stripTerminalEscapes(text);
    return el;
  }

  icon(parent: HTMLElement, name: string): void {
    const i = this.add(parent, "span", `codicon codicon-${name}`);
    i.setAttribute("aria-hidden", "true");
  }

  button(parent: HTMLElement, text: string, className: string, onClick: () => void, title?: string): HTMLButtonElement {
    const b = this.add(parent, "button", className) as HTMLButtonElement;
    b.type = "button";
    if (text) b.textContent = text;
    if (title) {
      b.title = title;
      b.setAttribute("aria-label", title);
    }
    b.addEventListener("click", onClick);
    return b;
  }

  markdown(el: HTMLElement, text: string): void {
    el.innerHTML = renderMarkdown(text, this.sanitize);
  }

  /** A unified diff as a table of lines with their old and new numbers. */
  diff(parent: HTMLElement, diff: string): void {
    const table = this.add(parent, "div", "diff");
    for (const line of diffLines(diff)) {
      const row = this.add(table, "div", `diff-line ${line.type}`);
      this.add(row, "span", "ln").textContent = line.oldLine !== undefined ? String(line.oldLine) : "";
      this.add(row, "span", "ln").textContent = line.newLine !== undefined ? String(line.newLine) : "";
      const sign = line.type === "add" ? "+" : line.type === "del" ? "-" : line.type === "context" ? " " : "";
      this.add(row, "span", "code").textContent = `${sign}${stripTerminalEscapes(line.text)}`;
    }
  }

  /**
   * The files of a multi-file diff (REQ-VSC-017): one row each (status, path, +/− counts), its diff folded and
   * drawn only when unfolded, so a list of hundreds opens at once. `opened` holds the unfolded paths across
   * redraws; `openDiff`, when given, adds a button that shows the file in VS Code's diff editor.
   */
  files(parent: HTMLElement, files: ReviewFile[], opened: Set<string>, openDiff?: (file: ReviewFile) => void): HTMLElement {
    const list = this.add(parent, "ul", "review-files");
    for (const file of files) {
      const li = this.add(list, "li", `review-file ${file.status}`);
      li.dataset.testid = "review-file";
      li.dataset.path = file.path;
      li.dataset.status = file.status;
      const details = this.add(li, "details", "") as HTMLDetailsElement;
      const summary = this.add(details, "summary", "");
      this.text(summary, "span", "review-status", file.status);
      this.text(summary, "span", "review-path", file.oldPath ? `${file.oldPath} → ${file.path}` : file.path);
      this.text(summary, "span", "review-counts", `+${file.added} −${file.removed}`).title = fileLabel(file);
      if (openDiff) {
        const open = this.button(li, "Open diff", "link open-diff", () => openDiff(file),
          `Show ${file.path}'s proposed change in VS Code's diff editor`);
        open.dataset.testid = "review-open-diff";
      }
      const draw = () => {
        if (details.open && !details.querySelector(".diff")) this.diff(details, file.diff);
      };
      details.open = opened.has(file.path);
      draw();
      details.addEventListener("toggle", () => {
        if (details.open) opened.add(file.path);
        else opened.delete(file.path);
        draw();
      });
    }
    return list;
  }
}

/** What a part of the chat view works with. */
export interface PartContext {
  dom: Dom;
  /** the conversation shown (undefined: none yet) */
  view(): ConversationView | undefined;
  post(message: ViewMessage): void;
  /** redraw now (after a user action in the part) */
  render(): void;
  /** run in the page's next frame: what reads the layout, which the frame makes anyway (never while drawing) */
  frame(run: () => void): void;
  /** run every `ms` until the returned function is called (the webview's setInterval; none in tests) */
  every(ms: number, run: () => void): () => void;
}

/** A part redraws only when the key of what it shows changed since it last drew. */
export class Memo {
  private last: string | undefined;

  same(key: string): boolean {
    if (this.last === key) return true;
    this.last = key;
    return false;
  }

  /** Draw again at the next render, whatever the key. */
  forget(): void {
    this.last = undefined;
  }
}
