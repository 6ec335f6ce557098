/**
 * Status bar: mode (with a warning when the sandbox is unavailable), approval policy, style (REQ-PERM-009)
 * and the model in use (REQ-VSC-010).
 */

import * as vscode from "vscode";
import { modeLabel, newConversationLabels, policyLabel, statusBarKey, styleLabel, type NewConversationStart } from "../core/labels";
import { modelLabel } from "../core/models";
import type { ModelView } from "../protocol/wire";
import type { ConversationView } from "../core/reducer";
import type { ServerState } from "../core/messages";

/** The mode item's text while the server starts: a still icon (the real-VS-Code test waits for it to go). */
export const STARTING_TEXT = "$(sync) Phoenix";

export class StatusBar implements vscode.Disposable {
  private readonly mode = vscode.window.createStatusBarItem("phoenix.mode", vscode.StatusBarAlignment.Left, 50);
  private readonly policy = vscode.window.createStatusBarItem("phoenix.policy", vscode.StatusBarAlignment.Left, 49);
  private readonly style = vscode.window.createStatusBarItem("phoenix.style", vscode.StatusBarAlignment.Left, 48);
  private readonly model = vscode.window.createStatusBarItem("phoenix.model", vscode.StatusBarAlignment.Left, 47);

  constructor() {
    this.mode.name = "Phoenix mode";
    this.policy.name = "Phoenix approval policy";
    this.style.name = "Phoenix style";
    this.mode.command = "phoenix.vscode.toggleMode";
    this.policy.command = "phoenix.vscode.togglePolicy";
    this.style.command = "phoenix.vscode.setStyle";
    this.model.name = "Phoenix model";
    this.model.command = "phoenix.vscode.chooseModel";
  }

  private shown = "";

  /** Touches the items only when what they show changed (not on every streamed delta). */
  /** `startWith`: what a new conversation starts with, asked only when there is no conversation to show */
  update(
    view: ConversationView | undefined,
    server: ServerState,
    models: readonly ModelView[] | undefined,
    startWith: () => NewConversationStart,
  ): void {
    const start = view || server !== "ready" ? undefined : startWith();
    const startKey = start ? `${start.sandbox?.available ?? ""}|${start.policy}|${start.style}` : "";
    const key = `${statusBarKey(view, server)}|${view?.model ?? ""}|${models?.length ?? 0}|${startKey}`;
    if (key === this.shown) return;
    this.shown = key;
    if (server !== "ready") {
      // no spinning icon while the server starts: the workbench redraws a spinning item 20 times a second,
      // on the cores the server starts on (issue 35); the tooltip says what it waits for
      this.mode.text = server === "starting" ? STARTING_TEXT : "$(error) Phoenix";
      this.mode.tooltip = server === "starting" ? "Starting the Phoenix server…" : "The Phoenix server is not running. Click to show the log.";
      this.mode.command = server === "starting" ? undefined : "phoenix.vscode.showLog";
      this.mode.backgroundColor = server === "failed" ? new vscode.ThemeColor("statusBarItem.errorBackground") : undefined;
      this.mode.show();
      this.policy.hide();
      this.style.hide();
      this.model.hide();
      return;
    }
    this.mode.command = "phoenix.vscode.toggleMode";
    if (!view) {
      // no conversation yet: what the first one starts with, so mode and policy are visible on first open
      const labels = newConversationLabels(start ?? startWith());
      this.mode.text = labels.mode.text;
      this.mode.tooltip = labels.mode.tooltip;
      this.mode.command = "phoenix.vscode.focusChat";
      this.mode.backgroundColor = labels.mode.warning ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
      this.policy.text = labels.policy.text;
      this.policy.tooltip = labels.policy.tooltip;
      this.policy.command = { title: "Open the setting", command: "workbench.action.openSettings", arguments: ["phoenix.approvalPolicy"] };
      this.style.text = labels.style.text;
      this.style.tooltip = labels.style.tooltip;
      this.style.command = { title: "Open the setting", command: "workbench.action.openSettings", arguments: ["phoenix.style"] };
      this.mode.show();
      this.policy.show();
      this.style.show();
      this.model.hide();
      return;
    }
    this.policy.command = "phoenix.vscode.togglePolicy";
    this.style.command = "phoenix.vscode.setStyle";
    const mode = modeLabel(view.mode, view.sandbox);
    this.mode.text = mode.text;
    this.mode.tooltip = mode.tooltip;
    this.mode.backgroundColor = mode.warning ? new vscode.ThemeColor("statusBarItem.warningBackground") : undefined;
    const policy = policyLabel(view.policy);
    this.policy.text = policy.text;
    this.policy.tooltip = policy.tooltip;
    const style = styleLabel(view.style);
    this.style.text = style.text;
    this.style.tooltip = style.tooltip;
    const model = modelLabel(view.model, models);
    this.model.text = model.text;
    this.model.tooltip = model.tooltip;
    this.mode.show();
    this.policy.show();
    this.style.show();
    if (view.model) this.model.show();
    else this.model.hide();
  }

  dispose(): void {
    this.mode.dispose();
    this.policy.dispose();
    this.style.dispose();
    this.model.dispose();
  }
}

