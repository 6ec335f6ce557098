/**
 * The conversation itself: messages, streamed answers, notices, tool cards with their diffs and output, and
 * sub-agents nested under the call that spawned them. Each item is rebuilt only when its signature changed.
 */

import { compactArguments } from "../core/dialog";
import { plainParagraph, settledLength, stripTerminalEscapes } from "../core/markdown";
import type { ConversationView, Item, Notice, SubAgent, ToolCard } from "../core/reducer";
import { changeSetOf, isReviewCall, reviewHeadline, reviewOf } from "../core/review";
import { statusText } from "../core/status";
import { toolWords } from "../core/toolNames";
import type { ToolName } from "../protocol/wire";
import type { PartContext } from "./dom";

interface Rendered {
  sig: string;
  el: HTMLElement;
  /** the answer being streamed, drawn in place (only the stream item has one) */
  live?: LiveMarkdown;
}

/**
 * A streamed answer drawn in place (issue 35): its settled blocks (`settledLength`) are rendered once and
 * kept; only the block still being written is rendered again each frame, so a frame costs the size of that
 * block, not of the whole answer, and the element (and what the user selected in it) stays. While that block
 * is one plain paragraph (`plainParagraph`: text no markdown rule acts on), what a frame adds is appended to
 * its text node instead: no markdown, no sanitiser, no new nodes, however long the paragraph grows.
 */
class LiveMarkdown {
  private settled = 0;
  private text = "";
  private readonly tail: HTMLElement;
  /** the tail's text while it is drawn as one plain paragraph (appended to), else undefined */
  private plain: Text | undefined;

  constructor(
    private readonly c: PartContext,
    readonly el: HTMLElement,
  ) {
    this.tail = c.dom.add(el, "div", "live-tail");
  }

  update(text: string): void {
    if (!text.startsWith(this.text.slice(0, this.settled))) {
      // not a continuation (the reducer rebuilt it): start over
      this.el.replaceChildren(this.tail);
      this.settled = 0;
    }
    this.text = text;
    const settled = settledLength(text, this.settled);
    if (settled > this.settled) {
      const block = this.c.dom.node("div", "live-block");
      this.c.dom.markdown(block, text.slice(this.settled, settled));
      this.el.insertBefore(block, this.tail);
      this.settled = settled;
      this.plain = undefined;
    }
    this.drawTail(text.slice(settled));
  }

  private drawTail(source: string): void {
    const paragraph = plainParagraph(source);
    if (paragraph === undefined) {
      this.plain = undefined;
      this.c.dom.markdown(this.tail, source);
    } else if (this.plain && paragraph.startsWith(this.plain.data)) {
      if (paragraph.length > this.plain.data.length) this.plain.appendData(paragraph.slice(this.plain.data.length));
    } else {
      // what renderMarkdown gives for it: <p>text</p> and a line break
      const doc = this.tail.ownerDocument;
      const p = doc.createElement("p");
      this.plain = doc.createTextNode(paragraph);
      p.append(this.plain);
      this.tail.replaceChildren(p, "\n");
    }
  }
}

export class Timeline {
  private readonly el: HTMLElement;
  private readonly rendered = new Map<string, Rendered>();
  /** the live drawing renderItem made for the stream item it was last asked for (taken by render) */
  private live: LiveMarkdown | undefined;
  /**
   * Whether the user is at the timeline's end, which it is kept at as it grows: read when the timeline scrolls
   * (its layout is made then), never while drawing, where a read after the drawing's writes made the browser
   * lay the page out there and then, once per message (issue 35).
   */
  private atEnd = true;
  /** a frame is asked to bring the end into view */
  private following = false;

  constructor(
    private readonly c: PartContext,
    root: HTMLElement,
  ) {
    this.el = c.dom.add(root, "main", "timeline");
    this.el.setAttribute("role", "log");
    this.el.dataset.testid = "timeline";
    this.el.setAttribute("aria-live", "polite");
    this.el.addEventListener("scroll", () => {
      this.atEnd = this.el.scrollHeight - this.el.scrollTop - this.el.clientHeight < 40;
    }, { passive: true });
  }

  /** In the next frame, where the page is laid out anyway: the end in view, if the user was there. */
  private followEnd(): void {
    if (!this.atEnd || this.following) return;
    this.following = true;
    this.c.frame(() => {
      this.following = false;
      if (this.atEnd) this.el.scrollTop = this.el.scrollHeight;
    });
  }

  /** Another conversation (or the same one rebuilt): nothing drawn before is kept. */
  reset(): void {
    this.rendered.clear();
    this.el.replaceChildren();
  }

  render(): void {
    const timeline = this.el;
    const v = this.c.view();
    if (!v) {
      if (!timeline.querySelector(".empty")) {
        timeline.replaceChildren();
        this.c.dom.add(timeline, "div", "empty dim").textContent = "Start a conversation: type a message below.";
      }
      return;
    }
    const wanted: HTMLElement[] = [];
    const seen = new Set<string>();
    for (const item of v.items) {
      const sig = this.signature(v, item);
      seen.add(item.key);
      let r = this.rendered.get(item.key);
      if (r?.live && item.type === "stream") {
        if (r.sig !== sig) r.live.update(item.text);
        r.sig = sig;
      } else if (!r || r.sig !== sig) {
        const el = this.renderItem(v, item);
        el.dataset.testid = "message";
        el.dataset.role = roleOf(item);
        if (r && r.el.tagName === "DETAILS" && el.tagName === "DETAILS") {
          (el as HTMLDetailsElement).open = (r.el as HTMLDetailsElement).open;
        }
        r = { sig, el, live: item.type === "stream" ? this.live : undefined };
        this.live = undefined;
        this.rendered.set(item.key, r);
      }
      wanted.push(r.el);
    }
    for (const key of [...this.rendered.keys()]) if (!seen.has(key)) this.rendered.delete(key);
    wanted.forEach((el, i) => {
      if (timeline.children[i] !== el) timeline.insertBefore(el, timeline.children[i] ?? null);
    });
    while (timeline.children.length > wanted.length) timeline.lastElementChild!.remove();
    this.followEnd();
  }

  private signature(v: ConversationView, item: Item): string {
    if (item.type === "tool") {
      const card = v.tools[item.toolUseId];
      const agents = card?.agents.map((id) => subSignature(v.subAgents[id])).join(",") ?? "";
      const pending = v.pendingApproval?.toolUseId === item.toolUseId ? "p" : "";
      return `${card?.rev ?? 0}:${agents}:${pending}`;
    }
    return String(item.rev);
  }

  private renderItem(v: ConversationView, item: Item): HTMLElement {
    const dom = this.c.dom;
    switch (item.type) {
      case "text": {
        const el = dom.node("div", `msg ${item.role}${item.tag ? ` tagged tag-${item.tag}` : ""}`);
        if (item.role === "user" && !item.tag) {
          el.textContent = stripTerminalEscapes(item.text); // the user's own words, as typed
        } else {
          dom.markdown(el, item.text);
        }
        return el;
      }
      case "image": {
        const el = dom.node("div", `msg ${item.role} image-ref dim`);
        dom.icon(el, "file-media");
        dom.add(el, "span", "").textContent = ` ${item.label ?? `image (${item.mediaType})`}`;
        return el;
      }
      case "stream": {
        const el = dom.node("div", "msg assistant streaming");
        el.dataset.streaming = "true";
        if (v === this.c.view()) {
          this.live = new LiveMarkdown(this.c, el);
          this.live.update(item.text);
        } else {
          dom.markdown(el, item.text); // a sub-agent's answer, redrawn with its card
        }
        return el;
      }
      case "attachment": {
        // what was attached, folded to its label (the model saw the body once, REQ-ATTACH-003)
        const el = dom.node("details", "msg user attachment-ref dim") as HTMLDetailsElement;
        const summary = dom.add(el, "summary", "");
        dom.icon(summary, "file");
        dom.text(summary, "span", "", ` ${item.label}`);
        dom.text(el, "pre", "attachment-body", item.body);
        return el;
      }
      case "notice":
        return this.renderNotice(item.notice);
      case "tool":
        return this.renderTool(v, v.tools[item.toolUseId]);
    }
  }

  private renderNotice(n: Notice): HTMLElement {
    const dom = this.c.dom;
    const el = dom.node("div", `notice ${n.level}`);
    dom.icon(el, n.level === "error" ? "error" : n.level === "warning" ? "warning" : "info");
    dom.text(el, "span", "notice-text", ` ${n.text}`);
    if (n.action) {
      const action = n.action;
      dom.button(el, action.label, "link", () => {
        if (action.kind === "continueInNew") this.c.post({ type: "continueInNew" });
        else if (action.kind === "sendCommand" && action.argument) this.c.post({ type: "send", text: action.argument, images: [], attachments: [] });
        else if (action.kind === "openSettings") this.c.post({ type: "openSettings" });
        else if (action.kind === "retryLast") this.retryLast();
      });
    }
    return el;
  }

  private retryLast(): void {
    const last = [...(this.c.view()?.items ?? [])].reverse().find((i) => i.type === "text" && i.role === "user" && !i.tag);
    if (last && last.type === "text") this.c.post({ type: "send", text: last.text, images: [], attachments: [] });
  }

  private renderTool(v: ConversationView, card: ToolCard | undefined): HTMLElement {
    const dom = this.c.dom;
    const el = dom.node("details", `tool state-${card?.state ?? "pending"}`) as HTMLDetailsElement;
    if (!card) return el;
    el.dataset.toolUseId = card.toolUseId;
    const summary = dom.add(el, "summary", "tool-head");
    const icon = toolIcon(card.toolName);
    dom.icon(summary, icon ?? "question");
    dom.text(summary, "span", "tool-name", ` ${toolWords(card.toolName)}`);
    if (icon === undefined) {
      // a tool this version does not know (a newer server): shown, and said (REQ-PROTO-055)
      dom.add(summary, "span", "tool-unknown dim").textContent = " (a tool this extension does not know: update it)";
    }
    dom.add(summary, "span", "tool-brief dim").textContent = ` ${toolBrief(card)}`;
    dom.add(summary, "span", `tool-state state-${card.state}`).textContent = stateText(card);
    const body = dom.add(el, "div", "tool-body");
    if ((card.toolName === "bash" || isReviewCall(card.arguments)) && typeof card.arguments.command === "string") {
      dom.add(body, "pre", "command").textContent = `$ ${stripTerminalEscapes(card.arguments.command)}`;
    } else if (card.toolName !== "spawn_agents") {
      dom.text(body, "pre", "arguments", compactArguments(card.arguments));
    }
    const review = card.diff ? reviewOf({ arguments: card.arguments, diff: card.diff.diff }) : undefined;
    if (review && v.pendingApproval?.toolUseId === card.toolUseId) {
      dom.text(body, "div", "review-headline dim", `${reviewHeadline(review)}: the review is open below`); // one list
    } else if (review) dom.files(body, review.files, new Set()); // several files: a list, each diff drawn when opened
    else if (card.diff) dom.diff(body, card.diff.diff);
    const output = card.output ?? card.summary;
    if (output) dom.text(body, "pre", `output${card.state === "error" ? " error" : ""}`, output);
    const changeSet = card.toolName === "bash" ? changeSetOf(card.output) : undefined;
    if (changeSet) {  // the applied review, kept for an undo (REQ-BASH-041)
      dom.button(body, "Undo these changes", "link undo-changes", () =>
        this.c.post({ type: "undoChanges", conversationId: v.conversationId, changeSetId: changeSet }),
        `Take back change set ${changeSet}: a file changed since is kept as it is`);
    }
    if (card.agents.length > 0) {
      const agents = dom.add(body, "div", "agents");
      for (const id of card.agents) {
        const sub = v.subAgents[id];
        if (sub) agents.append(this.renderSubAgent(sub));
      }
      el.open = true;
    }
    if (card.diff || card.state === "running" || card.state === "error" || v.pendingApproval?.toolUseId === card.toolUseId) {
      el.open = true;
    }
    return el;
  }

  private renderSubAgent(sub: SubAgent): HTMLElement {
    const dom = this.c.dom;
    const el = dom.node("details", `sub-agent status-${sub.status}`) as HTMLDetailsElement;
    el.dataset.conversationId = sub.conversationId;
    const head = dom.add(el, "summary", "");
    dom.icon(head, sub.outcome === "failed" ? "error" : sub.outcome === "submitted" ? "pass" : "loading");
    dom.text(head, "span", "", ` ${sub.task || sub.conversationId}`);
    dom.add(head, "span", "dim").textContent = ` · ${sub.outcome ?? statusText(sub.view.status || sub.status)}`;
    const body = dom.add(el, "div", "sub-body");
    for (const item of sub.view.items.slice(-30)) body.append(this.renderItem(sub.view, item));
    if (sub.reason) dom.text(body, "div", "notice error", sub.reason);
    return el;
  }
}

function subSignature(sub: SubAgent | undefined): string {
  if (!sub) return "";
  return `${sub.status}${sub.outcome ?? ""}${sub.view.rev}`;
}

/** `data-role` of a timeline entry: who said it, or what it is (tests select on it). */
function roleOf(item: Item): string {
  if (item.type === "text") return item.tag ? `${item.role}-${item.tag}` : item.role;
  if (item.type === "stream") return "assistant";
  if (item.type === "image") return item.role;
  return item.type;
}

/**
 * The codicon of each tool's card: a `Record` of every tool of the schema (REQ-PROTO-055), so a new tool is a
 * compile error here until it has one; the unit tests compare its keys with the schema's `ToolName`.
 */
export const TOOL_ICONS: Record<ToolName, string> = {
  read_file: "file",
  list_directory: "folder",
  search_files: "search",
  bash: "terminal",
  patch: "diff",
  request_mode_upgrade: "unlock",
  spawn_agents: "organization",
  submit_result: "pass",
  describe_tools: "book",
  run_plan: "play",
  call_tool: "plug",
  use_ask_route: "arrow-swap",
  editor_problems: "warning",
  find_definition: "symbol-method",
  find_references: "references",
  "mcp__*": "plug", // every MCP tool, mcp__<server>__<tool> (issue 37)
};

/** The icon of a tool's card, or undefined for a tool this version does not know. */
export function toolIcon(name: string): string | undefined {
  if (name.startsWith("mcp__")) return TOOL_ICONS["mcp__*"];
  return Object.hasOwn(TOOL_ICONS, name) ? TOOL_ICONS[name as ToolName] : undefined;
}

function toolBrief(card: ToolCard): string {
  const a = card.arguments;
  const pick = a.command ?? a.path ?? a.pattern ?? a.query ?? "";
  const text = stripTerminalEscapes(typeof pick === "string" ? pick : JSON.stringify(pick));
  return text.length > 80 ? `${text.slice(0, 80)}…` : text;
}

function stateText(card: ToolCard): string {
  switch (card.state) {
    case "pending":
      return "waiting";
    case "running":
      return "running";
    case "done":
      return card.decision === "alwaysAllow" ? "done (always allowed)" : "done";
    case "error":
      return "failed";
    case "refused":
      return "refused by the mode: Restricted runs reads only; switch to Unrestricted to let it run";
    case "denied":
      return "denied";
    case "cancelled":
      return "cancelled";
  }
}
