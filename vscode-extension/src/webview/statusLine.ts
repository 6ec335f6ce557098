/** The line under the conversation: its status (with retries and Cancel) and the context warning (REQ-BED-023). */

import { isBusy, statusText } from "../core/status";
import { Memo, type PartContext } from "./dom";

/** ms between the busy icon's quarter turns */
export const TURN_MS = 250;

export class StatusLine {
  /** stops the busy icon's timer */
  private turn: (() => void) | undefined;
  private readonly line: HTMLElement;
  private readonly context: HTMLElement;
  private readonly shown = new Memo();

  constructor(
    private readonly c: PartContext,
    root: HTMLElement,
  ) {
    this.line = c.dom.add(root, "div", "status-line");
    this.line.dataset.testid = "status-line";
    this.context = c.dom.add(root, "div", "context-warning hidden");
  }

  render(): void {
    const dom = this.c.dom;
    const line = this.line;
    const v = this.c.view();
    const key = v
      ? [v.status, JSON.stringify(v.retry ?? null), v.contextWarning, v.usage ? Math.round(v.usage.fraction * 100) : ""].join("|")
      : "";
    if (this.shown.same(key)) return;
    line.replaceChildren();
    this.turn?.();
    this.turn = undefined;
    if (!v) return;
    const busy = isBusy(v.status);
    if (busy) {
      // a quarter turn each TURN_MS by a timer (media/chat.css .busy-turn[data-turn]), not a CSS animation: while
      // one runs, Chromium draws the page every frame (issue 35: codicon's spin, and a stepped one alike, cost
      // the GPU process ~230 ms of CPU a second while a turn waited on the model); here, four frames a second
      dom.icon(line, "loading busy-turn");
      const icon = line.lastElementChild as HTMLElement;
      let step = 0;
      icon.dataset.turn = "0";
      this.turn = this.c.every(TURN_MS, () => {
        step = (step + 1) % 4;
        icon.dataset.turn = String(step);
      });
    }
    dom.add(line, "span", "status-text").textContent = ` ${statusText(v.status)}`;
    line.dataset.status = v.status;
    if (v.retry) {
      const r = v.retry;
      dom.text(line, "span", "retry warning", ` · retrying (${r.attempt}/${r.maxAttempts}) in ${Math.round(r.delayMs / 100) / 10} s: ${r.reason}`);
    }
    if (busy) dom.button(line, "Cancel", "link", () => this.c.post({ type: "cancel" }), "Cancel the current turn (Escape)");
    const ctx = this.context;
    ctx.replaceChildren();
    const warn = v.contextWarning && v.status !== "exhausted" && v.usage;
    ctx.classList.toggle("hidden", !warn);
    if (warn && v.usage) {
      dom.icon(ctx, "warning");
      dom.add(ctx, "span", "").textContent = ` Context ${Math.round(v.usage.fraction * 100)}% full: answers may degrade soon. `;
      dom.button(ctx, "Continue in a new conversation", "link", () => this.c.post({ type: "continueInNew" }));
    }
  }
}
