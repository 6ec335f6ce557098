/**
 * The lines above the conversation: the server's state and the host's notices (the banner), and the project
 * instruction files in effect (REQ-INSTR-003, REQ-VSC-012).
 */

import { instructionsLine } from "../core/attachments";
import type { ServerState } from "../core/messages";
import { Memo, type PartContext } from "./dom";

export class Banner {
  private server: { state: ServerState; message?: string } = { state: "starting" };
  private notices: { level: string; text: string }[] = [];
  private folders: string[] = [];
  private home: string | undefined;
  private readonly banner: HTMLElement;
  private readonly instructions: HTMLElement;
  private readonly shownInstructions = new Memo();

  constructor(
    private readonly c: PartContext,
    root: HTMLElement,
  ) {
    this.banner = c.dom.add(root, "div", "banner hidden");
    this.instructions = c.dom.add(root, "div", "instructions dim hidden");
    this.instructions.dataset.testid = "instructions";
  }

  setServer(state: ServerState, message?: string): void {
    this.server = { state, message };
  }

  notice(level: string, text: string): void {
    this.notices.push({ level, text });
    if (this.notices.length > 3) this.notices.shift();
  }

  /** The workspace folders (and home) that instruction paths are shown relative to. */
  setWorkspace(folders: string[], home: string | undefined): void {
    this.folders = folders;
    this.home = home;
    this.shownInstructions.forget();
  }

  render(): void {
    this.renderBanner();
    this.renderInstructions();
  }

  private renderBanner(): void {
    const dom = this.c.dom;
    const b = this.banner;
    b.replaceChildren();
    const s = this.server;
    const show = s.state !== "ready" || this.notices.length > 0;
    b.classList.toggle("hidden", !show);
    if (s.state === "starting") dom.add(b, "div", "info").textContent = "Starting the Phoenix server…";
    if (s.state === "failed" || s.state === "stopped") {
      const row = dom.add(b, "div", "error");
      dom.add(row, "span", "").textContent = s.message ?? "The Phoenix server is not running.";
      dom.button(row, "Show log", "link", () => this.c.post({ type: "showLog" }));
      dom.button(row, "Open settings", "link", () => this.c.post({ type: "openSettings" }));
    }
    for (const n of this.notices) dom.text(b, "div", n.level, n.text);
  }

  /** The line at the top of the conversation naming the project instruction files in effect (REQ-INSTR-003). */
  private renderInstructions(): void {
    const dom = this.c.dom;
    const view = this.c.view();
    const files = view?.instructions ?? [];
    const entries = instructionsLine(files, this.folders, this.home);
    if (this.shownInstructions.same(`${view?.conversationId}|${entries.join("\n")}`)) return;
    const line = this.instructions;
    line.replaceChildren();
    line.classList.toggle("hidden", entries.length === 0);
    if (entries.length === 0) return;
    dom.icon(line, "book");
    dom.add(line, "span", "").textContent = " Instructions: ";
    entries.forEach((entry, i) => {
      if (i > 0) dom.add(line, "span", "").textContent = " · ";
      const f = files[i];
      const el = dom.text(line, "span", `instruction-file${f.problem ? " warning" : f.kept < f.size ? " cut" : ""}`, entry);
      el.dataset.testid = "instruction-file";
      el.title = f.path;
    });
  }
}
