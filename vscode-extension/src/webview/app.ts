/**
 * The chat view inside the webview: renders the folded conversation view, the approval dialog and the
 * composer, and posts the user's actions to the extension host. DOM only (no `vscode`): `main.ts` wires
 * it to `acquireVsCodeApi()`, the tests to jsdom.
 *
 * Safety: every piece of model or tool text goes in through `textContent`, except markdown, which is
 * rendered with raw HTML disabled and then sanitised (`sanitize`) before `innerHTML`.
 */

import { apply, openRequest, type ConversationView, type OpenRequest, type Item, type Notice, type SubAgent, type ToolCard } from "../core/reducer";
import {
  approvalDialog,
  compactArguments,
  wholeArguments,
  handleKey,
  shortcutHint,
  upgradeDialog,
  type Answer,
  type DialogState,
} from "../core/dialog";
import { diffLines } from "../core/diff";
import { renderMarkdown, stripTerminalEscapes } from "../core/markdown";
import { isBusy, policyLabel, statusText } from "../core/labels";
import type { HostMessage, ImageAttachment, ServerState, ViewMessage } from "../core/messages";
import { modelGroups, modelListNote, modelName, providerNotes, windowText } from "../core/models";
import { ROUTES, routeLabel } from "../core/routes";
import { DialogFocus } from "./focus";
import type { ConversationSummary, ListModelsResult, Route } from "../protocol/wire";
import {
  addChips,
  fileChip,
  fuzzyFilter,
  instructionsLine,
  mentionAt,
  PROBLEMS,
  type Chip,
  type WorkspaceFile,
} from "../core/attachments";

export interface AppOptions {
  /** HTML sanitiser for rendered markdown (DOMPurify in the webview) */
  sanitize: (html: string) => string;
  /** render scheduling; the webview batches per animation frame, tests render at once */
  schedule?: (render: () => void) => void;
  /** whether the chat has the keyboard (default: its document's `hasFocus()`); tests stand in for the workbench */
  hasFocus?: () => boolean;
}

interface Rendered {
  sig: string;
  el: HTMLElement;
}

const MAX_IMAGES = 20;
const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
/** what a drag from VS Code's explorer carries: URIs in one of these (the first found wins) */
const URI_LIST_TYPES = ["application/vnd.code.uri-list", "text/uri-list", "resourceurls", "codefiles"];

type PickerEntry = { kind: "problems" } | { kind: "file"; file: WorkspaceFile };

export class ChatApp {
  view: ConversationView | undefined;
  dialog: DialogState | undefined;
  private request: OpenRequest | undefined;
  private answered = new Set<string>();
  private server: { state: ServerState; message?: string } = { state: "starting" };
  private conversations: ConversationSummary[] = [];
  private titles: Record<string, string> = {};
  private listOpen = false;
  private modelsOpen = false;
  private models: ListModelsResult | undefined;
  private modelsVersion = 0;
  /** the route of the next messages (the host's `route`; undefined until the server has said) */
  private route: Route | undefined;
  private images: ImageAttachment[] = [];
  private notices: { level: string; text: string }[] = [];
  /** the composer's chips: attachments of the next message (issue 17) */
  private chips: Chip[] = [];
  /** the key of the chip the server refused last (shown marked until the draft changes) */
  private refusedChip: string | undefined;
  /** what was sent and not yet answered (`sendResult`): the draft stays until the server accepts it */
  private sending: { text: string; images: ImageAttachment[]; chips: Chip[] } | undefined;
  /** the `@` picker: where its `@` starts in the input, the query after it, the highlighted entry */
  private picker: { start: number; query: string; selected: number } | undefined;
  private files: WorkspaceFile[] | undefined;
  private filesVersion = 0;
  private folders: string[] = [];
  private home: string | undefined;
  private rendered = new Map<string, Rendered>();
  /** what each part last rendered, so a frame rebuilds only the parts whose content changed */
  private shown: Record<string, string> = {};
  private listVersion = 0;
  private descriptionOpen = false;
  private readonly focus = new DialogFocus();
  private readonly doc: Document;
  private readonly el: Record<string, HTMLElement> = {};
  private readonly input: HTMLTextAreaElement;
  private readonly sendButton: HTMLButtonElement;

  constructor(
    private readonly root: HTMLElement,
    private readonly post: (message: ViewMessage) => void,
    private readonly options: AppOptions,
  ) {
    this.doc = root.ownerDocument;
    root.replaceChildren();
    root.classList.add("phoenix");
    const header = this.add(root, "header", "bar");
    this.el.convButton = this.button(header, "", "conv-button", () => this.toggleList(), "Conversations");
    this.button(header, "", "icon-button codicon codicon-add", () => this.post({ type: "newConversation" }), "New conversation");
    this.el.modelButton = this.button(header, "", "model-button", () => this.toggleModels(), "Model (click to choose)");
    this.el.modelButton.dataset.testid = "model-button";
    this.el.modelButton.setAttribute("aria-haspopup", "listbox");
    // the route selector, beside the model (REQ-AGENT-001): one button per route, the selected one checked
    this.el.routes = this.add(header, "div", "route-selector hidden");
    this.el.routes.dataset.testid = "route-selector";
    this.el.routes.setAttribute("role", "radiogroup");
    this.el.routes.setAttribute("aria-label", "Route");
    for (const route of ROUTES) {
      const label = routeLabel(route);
      const option = this.button(this.el.routes, label.text, `route-option ${route}`, () => this.chooseRoute(route), label.tooltip);
      option.dataset.testid = "route-option";
      option.dataset.route = route;
      option.setAttribute("role", "radio");
    }
    this.el.badges = this.add(header, "div", "badges");
    this.el.list = this.add(root, "div", "conv-list hidden");
    this.el.models = this.add(root, "div", "model-list conv-list hidden");
    this.el.models.dataset.testid = "model-list";
    this.el.models.setAttribute("role", "listbox");
    this.el.models.setAttribute("aria-label", "Models");
    this.el.banner = this.add(root, "div", "banner hidden");
    this.el.instructions = this.add(root, "div", "instructions dim hidden");
    this.el.instructions.dataset.testid = "instructions";
    this.el.timeline = this.add(root, "main", "timeline");
    this.el.timeline.setAttribute("role", "log");
    this.el.timeline.dataset.testid = "timeline";
    this.el.timeline.setAttribute("aria-live", "polite");
    this.el.statusLine = this.add(root, "div", "status-line");
    this.el.statusLine.dataset.testid = "status-line";
    this.el.context = this.add(root, "div", "context-warning hidden");
    this.el.dialog = this.add(root, "section", "dialog hidden");
    this.el.dialog.setAttribute("role", "dialog");
    this.el.dialog.setAttribute("aria-modal", "true");
    this.el.dialog.tabIndex = -1;
    this.el.dialog.dataset.testid = "approval-dialog";
    this.el.dialog.dataset.open = "false";
    const composer = this.add(root, "footer", "composer");
    this.el.picker = this.add(composer, "div", "file-picker conv-list hidden");
    this.el.picker.dataset.testid = "file-picker";
    this.el.picker.setAttribute("role", "listbox");
    this.el.picker.setAttribute("aria-label", "Attach a file");
    this.el.attachments = this.add(composer, "div", "attachments");
    this.el.attachments.dataset.testid = "attachments";
    this.input = this.add(composer, "textarea", "input") as HTMLTextAreaElement;
    this.input.rows = 3;
    this.input.placeholder = "Ask Phoenix… (Enter to send, Shift+Enter for a new line, @ attaches a file, Shift+Tab toggles the approval policy)";
    this.input.setAttribute("aria-label", "Message");
    this.input.dataset.testid = "chat-input";
    const actions = this.add(composer, "div", "composer-actions");
    this.el.hint = this.add(actions, "span", "hint");
    this.sendButton = this.button(actions, "Send", "send", () => this.sendOrCancel(), "Send (Enter)");
    this.sendButton.dataset.testid = "send-button";
    this.doc.addEventListener("keydown", (e) => this.onKey(e), true);
    this.input.addEventListener("paste", (e) => this.onPaste(e));
    this.input.addEventListener("input", () => this.onInput());
    root.addEventListener("dragover", (e) => e.preventDefault());
    root.addEventListener("drop", (e) => this.onDrop(e));
    // the user comes back to the chat (a click in it, or the workbench focusing the view): an open dialog
    // takes the keyboard then, not before
    this.doc.defaultView?.addEventListener("focus", () => this.onChatFocus());
    this.render();
  }

  // ------------------------------------------------------------------------------- host messages

  receive(message: HostMessage): void {
    this.take(message);
    this.schedule();
  }

  /** Apply one host message to the state; rendering waits for the next frame (`schedule`). */
  private take(message: HostMessage): void {
    switch (message.type) {
      case "batch":
        for (const m of message.messages) this.take(m);
        break;
      case "reset":
        this.view = message.view;
        this.rendered.clear();
        this.el.timeline.replaceChildren();
        break;
      case "input":
        if (this.view) apply(this.view, message.input);
        break;
      case "conversations":
        this.listVersion++;
        this.conversations = message.conversations;
        this.titles = message.titles;
        break;
      case "server":
        this.server = { state: message.state, message: message.message };
        break;
      case "notice":
        this.notices.push({ level: message.level, text: message.text });
        if (this.notices.length > 3) this.notices.shift();
        break;
      case "focusInput":
        this.input.focus();
        break;
      case "models":
        // the picker asks again each time it opens: the same list again redraws nothing
        if (JSON.stringify(message.models) !== JSON.stringify(this.models)) this.modelsVersion++;
        this.models = message.models;
        break;
      case "route":
        this.route = message.route;
        break;
      case "attach":
        this.chips = addChips(this.chips, message.chips);
        this.refusedChip = undefined;
        break;
      case "files":
        this.files = message.files;
        this.filesVersion++;
        break;
      case "workspace":
        this.folders = message.folders;
        this.home = message.home;
        this.shown.instructions = "";
        break;
      case "sendResult":
        this.sendEnded(message.ok, message.refused);
        break;
    }
  }

  private scheduled = false;
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    const run = () => {
      this.scheduled = false;
      this.render();
    };
    (this.options.schedule ?? ((fn) => fn()))(run);
  }

  // -------------------------------------------------------------------------------------- render

  render(): void {
    this.syncDialog();
    this.renderHeader();
    this.renderBanner();
    this.renderInstructions();
    this.renderTimeline();
    this.renderStatus();
    this.renderDialog();
    this.renderComposer();
  }

  /** True when `part`'s key is unchanged since it was last rendered (then it is left alone). */
  private same(part: string, key: string): boolean {
    if (this.shown[part] === key) return true;
    this.shown[part] = key;
    return false;
  }

  private renderHeader(): void {
    const v = this.view;
    const title = v ? this.titleOf(v.conversationId) : "No conversation";
    const usage = v?.usage ? `${Math.round(v.usage.fraction * 100)}:${v.usage.usedTokens}:${v.contextWarning}` : "";
    const list = this.listOpen ? `${this.listVersion}:${v?.status}` : "";
    const key = [title, this.listOpen, list, v?.conversationId, v?.mode, v?.sandbox?.available, v?.policy, v?.style, usage].join("|");
    this.renderModels();
    this.renderRoute();
    if (this.same("header", key)) return;
    this.el.convButton.textContent = "";
    this.icon(this.el.convButton, "comment-discussion");
    this.add(this.el.convButton, "span", "conv-title").textContent = stripTerminalEscapes(title);
    this.icon(this.el.convButton, this.listOpen ? "chevron-up" : "chevron-down");
    this.el.badges.replaceChildren();
    if (v) {
      const unavailable = v.sandbox !== undefined && !v.sandbox.available;
      const mode = this.button(
        this.el.badges,
        v.mode === "restricted" ? "Restricted" : "Unrestricted",
        `badge mode ${v.mode}${unavailable ? " warning" : ""}`,
        () => this.post({ type: "toggleMode" }),
        v.mode === "restricted" ? "Mode: restricted (click to unrestrict)" : "Mode: unrestricted (click to restrict)",
      );
      mode.dataset.mode = v.mode;
      const policy = policyLabel(v.policy);
      const p = this.button(this.el.badges, policy.text, `badge policy ${v.policy}`, () => this.post({ type: "togglePolicy" }), policy.tooltip);
      p.dataset.policy = v.policy;
      const s = this.button(this.el.badges, v.style, "badge style", () => this.post({ type: "setStyle" }), "Style (click to change)");
      s.dataset.style = v.style;
      if (v.usage) {
        const pct = Math.round(v.usage.fraction * 100);
        const u = this.add(this.el.badges, "span", `badge usage${v.contextWarning ? " warning" : ""}`);
        u.textContent = `${pct}%`;
        u.title = `Context: ${v.usage.usedTokens.toLocaleString()} of ${v.usage.contextWindow.toLocaleString()} tokens`;
      }
    }
    this.el.list.classList.toggle("hidden", !this.listOpen);
    if (this.listOpen) this.renderList();
  }

  /** The header's model button (the model in use, by name when the list knows it) and its list (REQ-VSC-010). */
  private renderModels(): void {
    const v = this.view;
    const current = v?.model ?? "";
    const key = [Boolean(v), current, this.modelsOpen, this.modelsVersion].join("|");
    if (this.same("models", key)) return;
    const b = this.el.modelButton;
    b.replaceChildren();
    b.dataset.model = current;
    b.classList.toggle("hidden", !v);
    b.setAttribute("aria-expanded", String(this.modelsOpen));
    this.icon(b, "sparkle");
    this.add(b, "span", "model-name").textContent = ` ${stripTerminalEscapes(modelName(current, this.models?.models) || "model")}`;
    this.icon(b, this.modelsOpen ? "chevron-up" : "chevron-down");
    b.title = current ? `Model: ${current} (click to choose another)` : "Model (click to choose)";
    const list = this.el.models;
    list.classList.toggle("hidden", !this.modelsOpen || !v);
    list.replaceChildren();
    if (!this.modelsOpen || !v) return;
    if (!this.models) {
      this.add(list, "div", "dim").textContent = "Asking the server for the models…";
      return;
    }
    for (const note of [modelListNote(this.models), ...providerNotes(this.models)]) {
      if (!note) continue;
      const n = this.add(list, "div", "model-reason dim");
      n.dataset.testid = "model-reason";
      n.textContent = stripTerminalEscapes(note);
    }
    for (const group of modelGroups(this.models, current)) {  // one heading per provider (issue 27)
      const heading = this.add(list, "div", "model-group dim");
      heading.dataset.testid = "model-group";
      heading.setAttribute("role", "presentation");
      heading.textContent = stripTerminalEscapes(group.provider);
      for (const choice of group.choices) {
        const row = this.add(list, "div", `conv-row model-row${choice.current ? " active" : ""}`);
        const pick = this.button(row, "", "conv-pick model-pick", () => {
          this.modelsOpen = false;
          if (!choice.current) this.post({ type: "setModel", model: choice.id });
          this.render();
        });
        pick.dataset.testid = "model-option";
        pick.dataset.modelId = choice.id;
        pick.setAttribute("role", "option");
        pick.setAttribute("aria-selected", String(choice.current));
        this.icon(pick, choice.current ? "check" : "blank");
        this.add(pick, "span", "conv-row-title").textContent = ` ${stripTerminalEscapes(choice.label)}`;
        const window = this.models.models.find((m) => m.id === choice.id)?.contextWindow;
        const details = [choice.id, window ? `${windowText(window)} tokens` : "", choice.current ? "in use" : "", choice.isDefault ? "default" : ""];
        this.add(pick, "span", "dim").textContent = ` · ${stripTerminalEscapes(details.filter(Boolean).join(" · "))}`;
      }
    }
  }

  /** The route selector: hidden until the host knows the route; the selected route checked (REQ-AGENT-001). */
  private renderRoute(): void {
    const current = this.route;
    if (this.same("route", String(current))) return;
    const group = this.el.routes;
    group.classList.toggle("hidden", current === undefined);
    group.dataset.route = current ?? "";
    for (const option of group.querySelectorAll<HTMLElement>("[data-testid=route-option]")) {
      const checked = option.dataset.route === current;
      option.setAttribute("aria-checked", String(checked));
      option.classList.toggle("active", checked);
    }
  }

  /** A click on a route: the host persists it (phoenix/setRoute) and answers with `route`; the same route is a no-op. */
  private chooseRoute(route: Route): void {
    if (route === this.route) return;
    this.post({ type: "setRoute", route });
  }

  private toggleModels(): void {
    this.modelsOpen = !this.modelsOpen;
    if (this.modelsOpen) {
      this.listOpen = false;
      this.post({ type: "listModels" }); // the host answers with `models`
    }
    this.render();
  }

  private renderList(): void {
    const list = this.el.list;
    list.replaceChildren();
    if (this.conversations.length === 0) this.add(list, "div", "dim").textContent = "No conversations yet.";
    for (const c of this.conversations) {
      const row = this.add(list, "div", `conv-row${c.conversationId === this.view?.conversationId ? " active" : ""}`);
      const pick = this.button(row, "", "conv-pick", () => {
        this.listOpen = false;
        this.post({ type: "switchConversation", conversationId: c.conversationId });
        this.render();
      });
      this.add(pick, "span", "conv-row-title").textContent = stripTerminalEscapes(this.titles[c.conversationId] || c.title || "(untitled)");
      this.add(pick, "span", "dim").textContent = ` · ${statusText(c.status)} · ${c.messageCount} messages`;
      if (c.status === "exhausted" && c.conversationId === this.view?.conversationId) {
        this.button(row, "Continue", "link", () => this.post({ type: "continueInNew" }), "Continue in a new conversation");
      }
    }
    const foot = this.add(list, "div", "conv-actions");
    this.button(foot, "Rename…", "link", () => this.post({ type: "renameConversation" }));
    this.button(foot, "Always-allow rules…", "link", () => this.post({ type: "manageAlwaysAllowed" }));
  }

  private renderBanner(): void {
    const b = this.el.banner;
    b.replaceChildren();
    const s = this.server;
    const show = s.state !== "ready" || this.notices.length > 0;
    b.classList.toggle("hidden", !show);
    if (s.state === "starting") this.add(b, "div", "info").textContent = "Starting the Phoenix server…";
    if (s.state === "failed" || s.state === "stopped") {
      const row = this.add(b, "div", "error");
      this.add(row, "span", "").textContent = s.message ?? "The Phoenix server is not running.";
      this.button(row, "Show log", "link", () => this.post({ type: "showLog" }));
      this.button(row, "Open settings", "link", () => this.post({ type: "openSettings" }));
    }
    for (const n of this.notices) this.add(b, "div", n.level).textContent = stripTerminalEscapes(n.text);
  }

  /** The line at the top of the conversation naming the project instruction files in effect (REQ-INSTR-003). */
  private renderInstructions(): void {
    const files = this.view?.instructions ?? [];
    const entries = instructionsLine(files, this.folders, this.home);
    if (this.same("instructions", `${this.view?.conversationId}|${entries.join("\n")}`)) return;
    const line = this.el.instructions;
    line.replaceChildren();
    line.classList.toggle("hidden", entries.length === 0);
    if (entries.length === 0) return;
    this.icon(line, "book");
    this.add(line, "span", "").textContent = " Instructions: ";
    entries.forEach((entry, i) => {
      if (i > 0) this.add(line, "span", "").textContent = " · ";
      const f = files[i];
      const el = this.add(line, "span", `instruction-file${f.problem ? " warning" : f.kept < f.size ? " cut" : ""}`);
      el.dataset.testid = "instruction-file";
      el.textContent = stripTerminalEscapes(entry);
      el.title = f.path;
    });
  }

  private renderTimeline(): void {
    const timeline = this.el.timeline;
    const v = this.view;
    if (!v) {
      if (!timeline.querySelector(".empty")) {
        timeline.replaceChildren();
        this.add(timeline, "div", "empty dim").textContent = "Start a conversation: type a message below.";
      }
      return;
    }
    const atBottom = timeline.scrollHeight - timeline.scrollTop - timeline.clientHeight < 40;
    const wanted: HTMLElement[] = [];
    const seen = new Set<string>();
    for (const item of v.items) {
      const sig = this.signature(v, item);
      seen.add(item.key);
      let r = this.rendered.get(item.key);
      if (!r || r.sig !== sig) {
        const el = this.renderItem(v, item);
        el.dataset.testid = "message";
        el.dataset.role = roleOf(item);
        if (r && r.el.tagName === "DETAILS" && el.tagName === "DETAILS") {
          (el as HTMLDetailsElement).open = (r.el as HTMLDetailsElement).open;
        }
        r = { sig, el };
        this.rendered.set(item.key, r);
      }
      wanted.push(r.el);
    }
    for (const key of [...this.rendered.keys()]) if (!seen.has(key)) this.rendered.delete(key);
    wanted.forEach((el, i) => {
      if (timeline.children[i] !== el) timeline.insertBefore(el, timeline.children[i] ?? null);
    });
    while (timeline.children.length > wanted.length) timeline.lastElementChild!.remove();
    if (atBottom) timeline.scrollTop = timeline.scrollHeight;
  }

  private signature(v: ConversationView, item: Item): string {
    if (item.type === "tool") {
      const card = v.tools[item.toolUseId];
      const agents = card?.agents.map((id) => this.subSignature(v.subAgents[id])).join(",") ?? "";
      const pending = v.pendingApproval?.toolUseId === item.toolUseId ? "p" : "";
      return `${card?.rev ?? 0}:${agents}:${pending}`;
    }
    return String(item.rev);
  }

  private subSignature(sub: SubAgent | undefined): string {
    if (!sub) return "";
    return `${sub.status}${sub.outcome ?? ""}${sub.view.rev}`;
  }

  private renderItem(v: ConversationView, item: Item): HTMLElement {
    switch (item.type) {
      case "text": {
        const el = this.node("div", `msg ${item.role}${item.tag ? ` tagged tag-${item.tag}` : ""}`);
        if (item.role === "user" && !item.tag) {
          el.textContent = stripTerminalEscapes(item.text); // the user's own words, as typed
        } else {
          this.markdown(el, item.text);
        }
        return el;
      }
      case "image": {
        const el = this.node("div", `msg ${item.role} image-ref dim`);
        this.icon(el, "file-media");
        this.add(el, "span", "").textContent = ` image (${item.mediaType})`;
        return el;
      }
      case "stream": {
        const el = this.node("div", "msg assistant streaming");
        el.dataset.streaming = "true";
        this.markdown(el, item.text);
        return el;
      }
      case "attachment": {
        // what was attached, folded to its label (the model saw the body once, REQ-ATTACH-003)
        const el = this.node("details", "msg user attachment-ref dim") as HTMLDetailsElement;
        const summary = this.add(el, "summary", "");
        this.icon(summary, "file");
        this.add(summary, "span", "").textContent = ` ${stripTerminalEscapes(item.label)}`;
        this.add(el, "pre", "attachment-body").textContent = stripTerminalEscapes(item.body);
        return el;
      }
      case "notice":
        return this.renderNotice(item.notice);
      case "tool":
        return this.renderTool(v, v.tools[item.toolUseId]);
    }
  }

  private renderNotice(n: Notice): HTMLElement {
    const el = this.node("div", `notice ${n.level}`);
    this.icon(el, n.level === "error" ? "error" : n.level === "warning" ? "warning" : "info");
    this.add(el, "span", "notice-text").textContent = ` ${stripTerminalEscapes(n.text)}`;
    if (n.action) {
      const action = n.action;
      this.button(el, action.label, "link", () => {
        if (action.kind === "continueInNew") this.post({ type: "continueInNew" });
        else if (action.kind === "sendCommand" && action.argument) this.post({ type: "send", text: action.argument, images: [], attachments: [] });
        else if (action.kind === "openSettings") this.post({ type: "openSettings" });
        else if (action.kind === "retryLast") this.retryLast();
      });
    }
    return el;
  }

  private retryLast(): void {
    const last = [...(this.view?.items ?? [])].reverse().find((i) => i.type === "text" && i.role === "user" && !i.tag);
    if (last && last.type === "text") this.post({ type: "send", text: last.text, images: [], attachments: [] });
  }

  private renderTool(v: ConversationView, card: ToolCard | undefined): HTMLElement {
    const el = this.node("details", `tool state-${card?.state ?? "pending"}`) as HTMLDetailsElement;
    if (!card) return el;
    el.dataset.toolUseId = card.toolUseId;
    const summary = this.add(el, "summary", "tool-head");
    this.icon(summary, toolIcon(card.toolName));
    this.add(summary, "span", "tool-name").textContent = ` ${stripTerminalEscapes(card.toolName)}`;
    this.add(summary, "span", "tool-brief dim").textContent = ` ${toolBrief(card)}`;
    this.add(summary, "span", `tool-state state-${card.state}`).textContent = stateText(card);
    const body = this.add(el, "div", "tool-body");
    if (card.toolName === "bash" && typeof card.arguments.command === "string") {
      this.add(body, "pre", "command").textContent = `$ ${stripTerminalEscapes(card.arguments.command)}`;
    } else if (card.toolName !== "spawn_agents") {
      this.add(body, "pre", "arguments").textContent = stripTerminalEscapes(compactArguments(card.arguments));
    }
    if (card.diff) this.renderDiff(body, card.diff.diff);
    const output = card.output ?? card.summary;
    if (output) {
      const pre = this.add(body, "pre", `output${card.state === "error" ? " error" : ""}`);
      pre.textContent = stripTerminalEscapes(output);
    }
    if (card.agents.length > 0) {
      const agents = this.add(body, "div", "agents");
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
    const el = this.node("details", `sub-agent status-${sub.status}`) as HTMLDetailsElement;
    el.dataset.conversationId = sub.conversationId;
    const head = this.add(el, "summary", "");
    this.icon(head, sub.outcome === "failed" ? "error" : sub.outcome === "submitted" ? "pass" : "loading");
    this.add(head, "span", "").textContent = ` ${stripTerminalEscapes(sub.task || sub.conversationId)}`;
    this.add(head, "span", "dim").textContent = ` · ${sub.outcome ?? statusText(sub.view.status || sub.status)}`;
    const body = this.add(el, "div", "sub-body");
    for (const item of sub.view.items.slice(-30)) body.append(this.renderItem(sub.view, item));
    if (sub.reason) this.add(body, "div", "notice error").textContent = stripTerminalEscapes(sub.reason);
    return el;
  }

  private renderDiff(parent: HTMLElement, diff: string): void {
    const table = this.add(parent, "div", "diff");
    for (const line of diffLines(diff)) {
      const row = this.add(table, "div", `diff-line ${line.type}`);
      this.add(row, "span", "ln").textContent = line.oldLine !== undefined ? String(line.oldLine) : "";
      this.add(row, "span", "ln").textContent = line.newLine !== undefined ? String(line.newLine) : "";
      const sign = line.type === "add" ? "+" : line.type === "del" ? "-" : line.type === "context" ? " " : "";
      this.add(row, "span", "code").textContent = `${sign}${stripTerminalEscapes(line.text)}`;
    }
  }

  private renderStatus(): void {
    const line = this.el.statusLine;
    const v = this.view;
    const key = v
      ? [v.status, JSON.stringify(v.retry ?? null), v.contextWarning, v.usage ? Math.round(v.usage.fraction * 100) : ""].join("|")
      : "";
    if (this.same("status", key)) return;
    line.replaceChildren();
    if (!v) return;
    const busy = isBusy(v.status);
    if (busy) this.icon(line, "loading codicon-modifier-spin");
    this.add(line, "span", "status-text").textContent = ` ${statusText(v.status)}`;
    line.dataset.status = v.status;
    if (v.retry) {
      const r = v.retry;
      this.add(line, "span", "retry warning").textContent =
        ` · retrying (${r.attempt}/${r.maxAttempts}) in ${Math.round(r.delayMs / 100) / 10} s: ${stripTerminalEscapes(r.reason)}`;
    }
    if (busy) this.button(line, "Cancel", "link", () => this.post({ type: "cancel" }), "Cancel the current turn (Escape)");
    const ctx = this.el.context;
    ctx.replaceChildren();
    const warn = v.contextWarning && v.status !== "exhausted" && v.usage;
    ctx.classList.toggle("hidden", !warn);
    if (warn && v.usage) {
      this.icon(ctx, "warning");
      this.add(ctx, "span", "").textContent =
        ` Context ${Math.round(v.usage.fraction * 100)}% full: answers may degrade soon. `;
      this.button(ctx, "Continue in a new conversation", "link", () => this.post({ type: "continueInNew" }));
    }
  }

  // ---------------------------------------------------------------------------------------- dialog

  /** Open, keep or close the dialog to match the view's open request (the server decides). */
  private syncDialog(): void {
    const request = this.view ? openRequest(this.view) : undefined;
    this.request = request;
    if (request?.approval) {
      if (!this.dialog || this.dialog.kind !== "approval" || this.dialog.id !== request.approval.toolUseId) {
        this.dialog = approvalDialog(request.approval);
        this.descriptionOpen = false;
      }
    } else if (request?.upgrade) {
      if (!this.dialog || this.dialog.kind !== "upgrade" || this.dialog.id !== request.upgrade.toolUseId) {
        this.dialog = upgradeDialog(request.upgrade);
      }
    } else {
      this.dialog = undefined;
    }
  }

  private renderDialog(): void {
    const box = this.el.dialog;
    const d = this.dialog;
    const r = this.request;
    const wasOpen = box.dataset.open === "true";
    const key = d && r
      ? [d.kind, d.id, d.selected, this.answered.has(d.id), r.conversationId, this.view?.conversationId, r.approval?.diff?.length ?? "", this.descriptionOpen].join("|")
      : "";
    const takeFocus = this.focus.shown(d && r ? d.id : undefined, this.chatHasFocus());
    if (this.same("dialog", key)) return; // a redraw never moves the focus
    box.replaceChildren();
    box.classList.toggle("hidden", !d);
    box.dataset.open = String(Boolean(d && r)); // tests and styles read this, not the class
    if (!d || !r) {
      // the keyboard goes back to the input, if the user is still in the chat
      if (wasOpen && this.doc.activeElement === box && this.chatHasFocus()) this.input.focus();
      return;
    }
    box.dataset.kind = d.kind;
    box.dataset.id = d.id;
    box.dataset.conversationId = r.conversationId;
    if (d.kind === "approval" && r.approval) {
      const a = r.approval;
      if (r.conversationId !== this.view?.conversationId) {
        this.add(box, "div", "dialog-agent dim").textContent = "A sub-agent asks:";
      }
      const title = this.add(box, "div", "dialog-title tool-name");
      title.textContent = stripTerminalEscapes(a.toolName);
      title.dataset.testid = "dialog-title";
      if (a.description) this.renderDescription(box, stripTerminalEscapes(a.description));
      // all of them: the user approves only what they saw (REQ-PERM-023); the box wraps and scrolls
      this.add(box, "pre", "dialog-arguments").textContent = stripTerminalEscapes(wholeArguments(a.arguments));
      if (a.diff) {
        this.renderDiff(box, a.diff);
        const open = this.button(box, "Open diff", "link open-diff", () =>
          this.post({ type: "openDiff", conversationId: r.conversationId, toolUseId: a.toolUseId }),
          "Show the proposed change in VS Code's diff editor",
        );
        open.dataset.testid = "open-diff";
      }
    } else if (d.kind === "upgrade" && r.upgrade) {
      this.add(box, "div", "dialog-title").textContent = "The agent asks to unrestrict this conversation";
      this.add(box, "div", "dialog-reason").textContent = stripTerminalEscapes(r.upgrade.reason);
    }
    const list = this.add(box, "ul", "choices");
    list.setAttribute("role", "listbox");
    d.choices.forEach((choice, i) => {
      const li = this.add(list, "li", `choice${i === d.selected ? " selected" : " dim"}`);
      li.setAttribute("role", "option");
      li.setAttribute("aria-selected", String(i === d.selected));
      li.dataset.testid = "dialog-choice";
      if (choice.key) li.dataset.key = choice.key;
      if (choice.scope) li.dataset.scope = choice.scope;
      this.add(li, "span", "choice-label").textContent = stripTerminalEscapes(choice.label);
      if (choice.key) this.add(li, "kbd", "").textContent = choice.key.toUpperCase();
      li.addEventListener("click", () => this.answer(choice.answer));
    });
    this.add(box, "div", "dialog-hint dim").textContent = stripTerminalEscapes(shortcutHint(d));
    if (this.answered.has(d.id)) this.add(box, "div", "dim").textContent = "Sent; waiting for the server…";
    if (takeFocus) box.focus();
  }

  private chatHasFocus(): boolean {
    return (this.options.hasFocus ?? (() => this.doc.hasFocus()))();
  }

  /** The chat got the focus back: an open dialog takes it (a click inside the dialog already put it there). */
  private onChatFocus(): void {
    const box = this.el.dialog;
    if (this.focus.returned() && !box.contains(this.doc.activeElement)) box.focus();
  }

  /**
   * The tool's description, dimmed and folded to its first line (a patch's runs to ~25 lines and would push
   * the choices below the fold); a click unfolds it. REQ-PERM-011.
   */
  private renderDescription(box: HTMLElement, text: string): void {
    const [first, ...rest] = text.trim().split("\n");
    const more = rest.join("\n").trim();
    if (!more) {
      this.add(box, "div", "dialog-description dim").textContent = first;
      return;
    }
    const details = this.add(box, "details", "dialog-description dim") as HTMLDetailsElement;
    details.dataset.testid = "dialog-description";
    details.open = this.descriptionOpen;
    this.add(details, "summary", "dialog-description-first").textContent = first;
    this.add(details, "div", "dialog-description-rest").textContent = more;
    details.addEventListener("toggle", () => {
      this.descriptionOpen = details.open; // kept while this dialog is open
    });
  }

  private answer(answer: Answer): void {
    const r = this.request;
    if (!r || !this.dialog) return;
    const id = answer.toolUseId;
    if (this.answered.has(id)) return; // one answer per request
    this.answered.add(id);
    if (answer.kind === "approval") {
      this.post({
        type: "answerApproval",
        conversationId: r.conversationId,
        toolUseId: answer.toolUseId,
        decision: answer.decision,
        ...(answer.rule !== undefined ? { rule: answer.rule } : {}), // the scope chosen (REQ-PERM-020)
      });
    } else {
      this.post({ type: "answerUpgrade", conversationId: r.conversationId, toolUseId: answer.toolUseId, approve: answer.approve });
    }
    this.render();
  }

  // ------------------------------------------------------------------------------------ composer

  private renderComposer(): void {
    const blocked = this.dialog !== undefined;
    const images = this.images.map((i) => `${i.name}:${i.data.length}`).join(",");
    const chips = this.chips.map((c) => c.key).join(",");
    const picker = this.picker ? `${this.picker.query}:${this.picker.selected}:${this.filesVersion}` : "";
    const key = [blocked, this.view ? isBusy(this.view.status) : "", this.view?.policy, images, chips, this.refusedChip, picker, Boolean(this.sending)].join("|");
    if (this.same("composer", key)) return;
    this.input.disabled = blocked;
    this.root.classList.toggle("dialog-open", blocked);
    const busy = this.view ? isBusy(this.view.status) : false;
    this.sendButton.textContent = busy ? "Stop" : "Send";
    this.sendButton.disabled = blocked;
    this.el.hint.textContent = blocked
      ? "Answer the request above first (Y / N / A, Esc denies)."
      : this.view
        ? `${policyLabel(this.view.policy).text} · Shift+Tab toggles`
        : "";
    const att = this.el.attachments;
    att.replaceChildren();
    this.images.forEach((image, i) => {
      const chip = this.add(att, "span", "attachment");
      const img = this.add(chip, "img", "thumb") as HTMLImageElement;
      img.src = `data:${image.mediaType};base64,${image.data}`;
      img.alt = image.name;
      this.button(chip, "", "icon-button codicon codicon-close", () => {
        this.images.splice(i, 1);
        this.render();
      }, `Remove ${image.name}`);
    });
    for (const c of this.chips) {
      const chip = this.add(att, "span", `attachment chip${c.key === this.refusedChip ? " refused" : ""}`);
      chip.dataset.testid = "attachment-chip";
      chip.dataset.kind = c.attachment.kind ?? "file";
      chip.dataset.key = c.key;
      if (c.key === this.refusedChip) chip.dataset.refused = "true";
      chip.title = c.title;
      this.icon(chip, c.attachment.kind === "diagnostics" ? "warning" : "file");
      this.add(chip, "span", "chip-label").textContent = ` ${stripTerminalEscapes(c.label)}`;
      const remove = this.button(chip, "", "icon-button codicon codicon-close", () => {
        this.chips = this.chips.filter((x) => x.key !== c.key);
        if (this.refusedChip === c.key) this.refusedChip = undefined;
        this.render();
      }, `Remove ${c.label}`);
      remove.dataset.testid = "remove-attachment";
    }
    this.renderPicker();
  }

  // ------------------------------------------------------------------------------- the @ picker

  private pickerEntries(): PickerEntry[] {
    const p = this.picker;
    if (!p) return [];
    const entries: PickerEntry[] = [];
    if (PROBLEMS.startsWith(p.query.toLowerCase())) entries.push({ kind: "problems" });
    for (const file of fuzzyFilter(this.files ?? [], p.query, 30)) entries.push({ kind: "file", file });
    return entries;
  }

  private renderPicker(): void {
    const box = this.el.picker;
    box.replaceChildren();
    box.classList.toggle("hidden", !this.picker);
    if (!this.picker) return;
    const entries = this.pickerEntries();
    const selected = Math.min(this.picker.selected, Math.max(entries.length - 1, 0));
    entries.forEach((entry, i) => {
      const row = this.add(box, "div", `conv-row picker-row${i === selected ? " active" : ""}`);
      row.dataset.testid = "file-option";
      row.setAttribute("role", "option");
      row.setAttribute("aria-selected", String(i === selected));
      if (entry.kind === "problems") {
        row.dataset.path = "@problems";
        this.icon(row, "warning");
        this.add(row, "span", "").textContent = " @problems";
        this.add(row, "span", "dim").textContent = " · the current file's problems";
      } else {
        row.dataset.path = entry.file.path;
        this.icon(row, "file");
        const slash = entry.file.path.lastIndexOf("/");
        this.add(row, "span", "").textContent = ` ${stripTerminalEscapes(entry.file.path.slice(slash + 1))}`;
        if (slash > 0) this.add(row, "span", "dim").textContent = ` · ${stripTerminalEscapes(entry.file.path.slice(0, slash))}`;
      }
      row.addEventListener("mousedown", (e) => e.preventDefault()); // keep the focus in the input
      row.addEventListener("click", () => this.choose(entry));
    });
    if (!this.files) this.add(box, "div", "dim").textContent = "Listing the workspace's files…";
    else if (entries.length === 0) this.add(box, "div", "dim").textContent = "No file matches.";
  }

  /** The input changed: open, follow or close the `@` picker. */
  private onInput(): void {
    if (this.refusedChip) this.refusedChip = undefined;
    const mention = mentionAt(this.input.value, this.input.selectionStart ?? this.input.value.length);
    if (!mention) {
      if (this.picker) {
        this.picker = undefined;
        this.render();
      }
      return;
    }
    if (!this.picker) this.post({ type: "listFiles" }); // the host answers with `files`
    const moved = this.picker?.query !== mention.query;
    this.picker = { start: mention.start, query: mention.query, selected: moved ? 0 : (this.picker?.selected ?? 0) };
    this.render();
  }

  /** Take the picker's choice: the `@query` leaves the input, a chip (or `@problems`) takes its place. */
  private choose(entry: PickerEntry): void {
    const p = this.picker;
    if (!p) return;
    const value = this.input.value;
    const end = p.start + 1 + p.query.length;
    this.input.value = value.slice(0, p.start) + value.slice(end);
    this.input.selectionStart = this.input.selectionEnd = p.start;
    this.picker = undefined;
    if (entry.kind === "problems") this.post({ type: "attachProblems" });
    else this.chips = addChips(this.chips, [fileChip(entry.file.uri, entry.file.path)]);
    this.input.focus();
    this.render();
  }

  /** Keys while the picker is open: arrows move, Enter / Tab choose, Escape closes. True when taken. */
  private pickerKey(e: KeyboardEvent): boolean {
    const p = this.picker;
    if (!p || e.target !== this.input) return false;
    const entries = this.pickerEntries();
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      const n = Math.max(entries.length, 1);
      p.selected = (Math.min(p.selected, n - 1) + (e.key === "ArrowDown" ? 1 : n - 1)) % n;
    } else if ((e.key === "Enter" || e.key === "Tab") && !e.shiftKey && !e.isComposing) {
      const entry = entries[Math.min(p.selected, entries.length - 1)];
      if (!entry) return false;
      e.preventDefault();
      e.stopPropagation();
      this.choose(entry);
      return true;
    } else if (e.key === "Escape") {
      this.picker = undefined;
    } else {
      return false;
    }
    e.preventDefault();
    e.stopPropagation();
    this.render();
    return true;
  }

  private sendOrCancel(): void {
    if (this.view && isBusy(this.view.status)) {
      this.post({ type: "cancel" });
      return;
    }
    this.send();
  }

  /**
   * Send the draft. It stays (text, images, chips) until the host says how the send ended (`sendResult`):
   * a refused attachment keeps everything so the user can remove the chip and send again.
   */
  private send(): void {
    if (this.dialog || this.sending) return;
    const text = this.input.value.trim();
    if (!text && this.images.length === 0 && this.chips.length === 0) return;
    this.picker = undefined;
    this.refusedChip = undefined;
    this.sending = { text, images: [...this.images], chips: [...this.chips] };
    this.post({ type: "send", text, images: this.images, attachments: this.chips.map((c) => c.attachment) });
    this.render();
  }

  private sendEnded(ok: boolean, refused?: number): void {
    const sent = this.sending;
    this.sending = undefined;
    if (!sent) return;
    if (ok) {
      if (this.input.value.trim() === sent.text) this.input.value = "";
      this.images = this.images.filter((i) => !sent.images.includes(i));
      const keys = new Set(sent.chips.map((c) => c.key));
      this.chips = this.chips.filter((c) => !keys.has(c.key));
    } else if (refused !== undefined) {
      this.refusedChip = sent.chips[refused]?.key;
    }
  }

  private onKey(e: KeyboardEvent): void {
    if (this.dialog) {
      // every key goes to the dialog while it is open (REQ-PERM-014)
      e.preventDefault();
      e.stopPropagation();
      const result = handleKey(this.dialog, e);
      this.dialog = result.state;
      if (result.answer) this.answer(result.answer);
      else this.render();
      return;
    }
    if (e.key === "Tab" && e.shiftKey && !e.ctrlKey && !e.altKey && !e.metaKey) {
      e.preventDefault();
      e.stopPropagation();
      this.post({ type: "togglePolicy" });
      return;
    }
    if (this.pickerKey(e)) return;
    if (e.target === this.input && e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      this.send();
      return;
    }
    if (e.key === "Escape" && this.listOpen) {
      this.listOpen = false;
      this.render();
    } else if (e.key === "Escape" && this.view && isBusy(this.view.status)) {
      this.post({ type: "cancel" });
    }
  }

  private onPaste(e: ClipboardEvent): void {
    const files = [...(e.clipboardData?.files ?? [])].filter((f) => IMAGE_TYPES.includes(f.type));
    if (files.length === 0) return;
    e.preventDefault();
    void this.attach(files);
  }

  /** A drop: image files are attached as images; files dragged from VS Code's explorer (URIs) as file chips. */
  private onDrop(e: DragEvent): void {
    e.preventDefault();
    const files = [...(e.dataTransfer?.files ?? [])].filter((f) => IMAGE_TYPES.includes(f.type));
    const uris = droppedUris(e.dataTransfer);
    if (uris.length > 0) this.post({ type: "attachUris", uris });
    void this.attach(files);
  }

  /** Add image files to the next message (base64 in `phoenix/sendMessage.images`). */
  async attach(files: File[]): Promise<void> {
    for (const file of files) {
      if (this.images.length >= MAX_IMAGES) break;
      const data = await readBase64(file);
      this.images.push({ mediaType: file.type, data, name: file.name || "image" });
    }
    this.render();
  }

  // --------------------------------------------------------------------------------------- helpers

  private toggleList(): void {
    this.listOpen = !this.listOpen;
    if (this.listOpen) this.modelsOpen = false;
    if (this.listOpen) this.post({ type: "switchConversation" }); // asks the host to refresh the list
    this.render();
  }

  private titleOf(id: string): string {
    const summary = this.conversations.find((c) => c.conversationId === id);
    return this.titles[id] || summary?.title || "New conversation";
  }

  private markdown(el: HTMLElement, text: string): void {
    el.innerHTML = renderMarkdown(text, this.options.sanitize);
  }

  private node(tag: string, className: string): HTMLElement {
    const el = this.doc.createElement(tag);
    if (className) el.className = className;
    return el;
  }

  private add(parent: HTMLElement, tag: string, className: string): HTMLElement {
    const el = this.node(tag, className);
    parent.append(el);
    return el;
  }

  private icon(parent: HTMLElement, name: string): void {
    const i = this.add(parent, "span", `codicon codicon-${name}`);
    i.setAttribute("aria-hidden", "true");
  }

  private button(parent: HTMLElement, text: string, className: string, onClick: () => void, title?: string): HTMLButtonElement {
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
}

/** `data-role` of a timeline entry: who said it, or what it is (tests select on it). */
function roleOf(item: Item): string {
  if (item.type === "text") return item.tag ? `${item.role}-${item.tag}` : item.role;
  if (item.type === "stream") return "assistant";
  if (item.type === "image") return item.role;
  return item.type;
}

function toolIcon(name: string): string {
  if (name === "bash") return "terminal";
  if (name === "patch") return "diff";
  if (name === "read_file") return "file";
  if (name === "list_directory") return "folder";
  if (name === "search_files") return "search";
  if (name === "spawn_agents") return "organization";
  if (name === "request_mode_upgrade") return "unlock";
  return "tools";
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
      return "refused by the mode";
    case "denied":
      return "denied";
    case "cancelled":
      return "cancelled";
  }
}

/** The URIs a drag from VS Code's explorer carries (a uri-list, or a JSON list of URIs or paths). */
export function droppedUris(data: DataTransfer | null | undefined): string[] {
  if (!data) return [];
  for (const type of URI_LIST_TYPES) {
    const raw = data.getData(type);
    if (!raw) continue;
    if (raw.trimStart().startsWith("[")) {
      try {
        const list = JSON.parse(raw) as unknown;
        if (Array.isArray(list)) return list.filter((u): u is string => typeof u === "string");
      } catch {
        continue;
      }
    }
    return raw
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith("#"));
  }
  return [];
}

function readBase64(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => {
      const url = String(reader.result);
      resolve(url.slice(url.indexOf(",") + 1));
    };
    reader.onerror = () => reject(reader.error ?? new Error(`could not read ${file.name}`));
    reader.readAsDataURL(file);
  });
}
