/** The extension's settings (contributes.configuration in package.json), read in one place. */

import * as vscode from "vscode";
import type { Policy, Style } from "../protocol/wire";

export const SECTION = "phoenix";

export interface ServerSettings {
  command: string;
  args: string[];
  env: Record<string, string>;
}

export function serverSettings(): ServerSettings {
  const c = vscode.workspace.getConfiguration(SECTION);
  const env = c.get<Record<string, unknown>>("server.env", {});
  return {
    command: c.get<string>("server.command", "") ?? "",
    args: (c.get<unknown[]>("server.args", []) ?? []).map(String),
    env: Object.fromEntries(Object.entries(env ?? {}).map(([k, v]) => [k, String(v)])),
  };
}

export interface ConversationDefaults {
  model?: string;
  style: Style;
  policy: Policy;
}

export function conversationDefaults(): ConversationDefaults {
  const c = vscode.workspace.getConfiguration(SECTION);
  const model = (c.get<string>("model", "") ?? "").trim();
  return {
    model: model || undefined,
    style: c.get<Style>("style", "chat"),
    policy: c.get<Policy>("approvalPolicy", "interactive"),
  };
}

/** Calls `listener` when a setting that needs a server restart changes. */
export function onServerSettingsChanged(listener: () => void): vscode.Disposable {
  return vscode.workspace.onDidChangeConfiguration((e) => {
    if (e.affectsConfiguration(`${SECTION}.server`)) listener();
  });
}

export function openSettings(): Thenable<unknown> {
  return vscode.commands.executeCommand("workbench.action.openSettings", `@ext:phoenix-lsp.phoenix-lsp`);
}
