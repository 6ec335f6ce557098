/**
 * The chat view's header: the conversation's title (a button opening the list of conversations), the model
 * button with its list (REQ-VSC-010), the route selector (REQ-AGENT-001) and the badges of mode, policy, style
 * and context usage (REQ-LAYER-008).
 */

import { policyLabel } from "../core/labels";
import { modelGroups, modelListNote, modelName, providerNotes, windowText } from "../core/models";
import { ROUTES, routeLabel } from "../core/routes";
import { statusText } from "../core/status";
import type { ConversationSummary, ListModelsResult, Route } from "../protocol/wire";
import { Memo, type PartContext } from "./dom";

export class Header {
  private conversations: ConversationSummary[] = [];
  private titles: Record<string, string> = {};
  private listVersion = 0;
  private listOpen = false;
  private modelsOpen = false;
  private models: ListModelsResult | undefined;
  private modelsVersion = 0;
  /** the route of the next messages (the host's `route`; undefined until the server has said) */
  private route: Route | undefined;
  private readonly convButton: HTMLElement;
  private readonly modelButton: HTMLElement;
  private readonly routes: HTMLElement;
  private readonly badges: HTMLElement;
  private readonly list: HTMLElement;
  private readonly modelList: HTMLElement;
  private readonly shown = { header: new Memo(), models: new Memo(), route: new Memo() };

  constructor(
    private readonly c: PartContext,
    root: HTMLElement,
  ) {
    const dom = c.dom;
    const header = dom.add(root, "header", "bar");
    this.convButton = dom.button(header, "", "conv-button", () => this.toggleList(), "Conversations");
    dom.button(header, "", "icon-button codicon codicon-add", () => c.post({ type: "newConversation" }), "New conversation");
    this.modelButton = dom.button(header, "", "model-button", () => this.toggleModels(), "Model (click to choose)");
    this.modelButton.dataset.testid = "model-button";
    this.modelButton.setAttribute("aria-haspopup", "listbox");
    // the route selector, beside the model (REQ-AGENT-001): one button per route, the selected one checked
    this.routes = dom.add(header, "div", "route-selector hidden");
    this.routes.dataset.testid = "route-selector";
    this.routes.setAttribute("role", "radiogroup");
    this.routes.setAttribute("aria-label", "Route");
    for (const route of ROUTES) {
      const label = routeLabel(route);
      const option = dom.button(this.routes, label.text, `route-option ${route}`, () => this.chooseRoute(route), label.tooltip);
      option.dataset.testid = "route-option";
      option.dataset.route = route;
      option.setAttribute("role", "radio");
    }
    this.badges = dom.add(header, "div", "badges");
    this.list = dom.add(root, "div", "conv-list hidden");
    this.modelList = dom.add(root, "div", "model-list conv-list hidden");
    this.modelList.dataset.testid = "model-list";
    this.modelList.setAttribute("role", "listbox");
    this.modelList.setAttribute("aria-label", "Models");
  }

  // ------------------------------------------------------------------------------- host messages

  setConversations(conversations: ConversationSummary[], titles: Record<string, string>): void {
    this.listVersion++;
    this.conversations = conversations;
    this.titles = titles;
  }

  setModels(models: ListModelsResult): void {
    // the picker asks again each time it opens: the same list again redraws nothing
    if (JSON.stringify(models) !== JSON.stringify(this.models)) this.modelsVersion++;
    this.models = models;
  }

  setRoute(route: Route): void {
    this.route = route;
  }

  /** Escape closes the list of conversations; true when it was open. */
  closeList(): boolean {
    if (!this.listOpen) return false;
    this.listOpen = false;
    return true;
  }

  // -------------------------------------------------------------------------------------- render

  render(): void {
    const v = this.c.view();
    const title = v ? this.titleOf(v.conversationId) : "No conversation";
    const usage = v?.usage ? `${Math.round(v.usage.fraction * 100)}:${v.usage.usedTokens}:${v.contextWarning}` : "";
    const list = this.listOpen ? `${this.listVersion}:${v?.status}` : "";
    const key = [title, this.listOpen, list, v?.conversationId, v?.mode, v?.sandbox?.available, v?.policy, v?.style, usage].join("|");
    this.renderModels();
    this.renderRoute();
    if (this.shown.header.same(key)) return;
    const dom = this.c.dom;
    this.convButton.textContent = "";
    dom.icon(this.convButton, "comment-discussion");
    dom.text(this.convButton, "span", "conv-title", title);
    dom.icon(this.convButton, this.listOpen ? "chevron-up" : "chevron-down");
    this.badges.replaceChildren();
    if (v) {
      const unavailable = v.sandbox !== undefined && !v.sandbox.available;
      const mode = dom.button(
        this.badges,
        v.mode === "restricted" ? "Restricted" : "Unrestricted",
        `badge mode ${v.mode}${unavailable ? " warning" : ""}`,
        () => this.c.post({ type: "toggleMode" }),
        v.mode === "restricted" ? "Mode: restricted (click to unrestrict)" : "Mode: unrestricted (click to restrict)",
      );
      mode.dataset.mode = v.mode;
      const policy = policyLabel(v.policy);
      const p = dom.button(this.badges, policy.text, `badge policy ${v.policy}`, () => this.c.post({ type: "togglePolicy" }), policy.tooltip);
      p.dataset.policy = v.policy;
      const s = dom.button(this.badges, v.style, "badge style", () => this.c.post({ type: "setStyle" }), "Style (click to change)");
      s.dataset.style = v.style;
      if (v.usage) {
        const pct = Math.round(v.usage.fraction * 100);
        const u = dom.add(this.badges, "span", `badge usage${v.contextWarning ? " warning" : ""}`);
        u.textContent = `${pct}%`;
        u.title = `Context: ${v.usage.usedTokens.toLocaleString()} of ${v.usage.contextWindow.toLocaleString()} tokens`;
      }
    }
    this.list.classList.toggle("hidden", !this.listOpen);
    if (this.listOpen) this.renderList();
  }

  /** The header's model button (the model in use, by name when the list knows it) and its list (REQ-VSC-010). */
  private renderModels(): void {
    const v = this.c.view();
    const current = v?.model ?? "";
    const key = [Boolean(v), current, this.modelsOpen, this.modelsVersion].join("|");
    if (this.shown.models.same(key)) return;
    const dom = this.c.dom;
    const b = this.modelButton;
    b.replaceChildren();
    b.dataset.model = current;
    b.classList.toggle("hidden", !v);
    b.setAttribute("aria-expanded", String(this.modelsOpen));
    dom.icon(b, "sparkle");
    dom.text(b, "span", "model-name", ` ${modelName(current, this.models?.models) || "model"}`);
    dom.icon(b, this.modelsOpen ? "chevron-up" : "chevron-down");
    b.title = current ? `Model: ${current} (click to choose another)` : "Model (click to choose)";
    const list = this.modelList;
    list.classList.toggle("hidden", !this.modelsOpen || !v);
    list.replaceChildren();
    if (!this.modelsOpen || !v) return;
    if (!this.models) {
      dom.add(list, "div", "dim").textContent = "Asking the server for the models…";
      return;
    }
    for (const note of [modelListNote(this.models), ...providerNotes(this.models)]) {
      if (!note) continue;
      const n = dom.text(list, "div", "model-reason dim", note);
      n.dataset.testid = "model-reason";
    }
    for (const group of modelGroups(this.models, current)) {  // one heading per provider (issue 27)
      const heading = dom.text(list, "div", "model-group dim", group.provider);
      heading.dataset.testid = "model-group";
      heading.setAttribute("role", "presentation");
      for (const choice of group.choices) {
        const row = dom.add(list, "div", `conv-row model-row${choice.current ? " active" : ""}`);
        const pick = dom.button(row, "", "conv-pick model-pick", () => {
          this.modelsOpen = false;
          if (!choice.current) this.c.post({ type: "setModel", model: choice.id });
          this.c.render();
        });
        pick.dataset.testid = "model-option";
        pick.dataset.modelId = choice.id;
        pick.setAttribute("role", "option");
        pick.setAttribute("aria-selected", String(choice.current));
        dom.icon(pick, choice.current ? "check" : "blank");
        dom.text(pick, "span", "conv-row-title", ` ${choice.label}`);
        const window = this.models.models.find((m) => m.id === choice.id)?.contextWindow;
        const details = [choice.id, window ? `${windowText(window)} tokens` : "", choice.current ? "in use" : "", choice.isDefault ? "default" : ""];
        dom.text(pick, "span", "dim", ` · ${details.filter(Boolean).join(" · ")}`);
      }
    }
  }

  /** The route selector: hidden until the host knows the route; the selected route checked (REQ-AGENT-001). */
  private renderRoute(): void {
    const current = this.route;
    if (this.shown.route.same(String(current))) return;
    const group = this.routes;
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
    this.c.post({ type: "setRoute", route });
  }

  private toggleModels(): void {
    this.modelsOpen = !this.modelsOpen;
    if (this.modelsOpen) {
      this.listOpen = false;
      this.c.post({ type: "listModels" }); // the host answers with `models`
    }
    this.c.render();
  }

  private toggleList(): void {
    this.listOpen = !this.listOpen;
    if (this.listOpen) this.modelsOpen = false;
    if (this.listOpen) this.c.post({ type: "switchConversation" }); // asks the host to refresh the list
    this.c.render();
  }

  private renderList(): void {
    const dom = this.c.dom;
    const list = this.list;
    const current = this.c.view()?.conversationId;
    list.replaceChildren();
    if (this.conversations.length === 0) dom.add(list, "div", "dim").textContent = "No conversations yet.";
    for (const c of this.conversations) {
      const row = dom.add(list, "div", `conv-row${c.conversationId === current ? " active" : ""}`);
      const pick = dom.button(row, "", "conv-pick", () => {
        this.listOpen = false;
        this.c.post({ type: "switchConversation", conversationId: c.conversationId });
        this.c.render();
      });
      dom.text(pick, "span", "conv-row-title", this.titles[c.conversationId] || c.title || "(untitled)");
      dom.add(pick, "span", "dim").textContent = ` · ${statusText(c.status)} · ${c.messageCount} messages`;
      if (c.status === "exhausted" && c.conversationId === current) {
        dom.button(row, "Continue", "link", () => this.c.post({ type: "continueInNew" }), "Continue in a new conversation");
      }
    }
    const foot = dom.add(list, "div", "conv-actions");
    dom.button(foot, "Rename…", "link", () => this.c.post({ type: "renameConversation" }));
    dom.button(foot, "Always-allow rules…", "link", () => this.c.post({ type: "manageAlwaysAllowed" }));
  }

  private titleOf(id: string): string {
    const summary = this.conversations.find((c) => c.conversationId === id);
    return this.titles[id] || summary?.title || "New conversation";
  }
}
