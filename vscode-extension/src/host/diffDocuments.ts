/**
 * "Open diff": the proposed result of a patch as a read-only virtual document beside the current buffer,
 * in VS Code's diff editor, before the user decides.
 */

import * as path from "node:path";
import * as vscode from "vscode";
import { applyUnifiedDiff } from "../core/diff";

export const PROPOSED_SCHEME = "phoenix-proposed";

export class ProposedDocuments implements vscode.TextDocumentContentProvider, vscode.Disposable {
  private readonly contents = new Map<string, string>();
  /** the proposed document of each approval whose diff was opened (by tool call id), until it is decided */
  private readonly proposals = new Map<string, vscode.Uri>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly registration = vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, this);

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? "";
  }

  /**
   * Show `diff` (a unified diff of `file`) applied to the file's current text. `pending`: the id of the
   * approval it waits for; its tab closes when that is decided (`settled`).
   */
  async open(file: string, diff: string, label: string, pending?: string): Promise<void> {
    const fileUri = vscode.Uri.file(file);
    const open = vscode.workspace.textDocuments.find((d) => d.uri.fsPath === fileUri.fsPath);
    let current = "";
    let exists = true;
    if (open) {
      current = open.getText();
    } else {
      try {
        current = new TextDecoder().decode(await vscode.workspace.fs.readFile(fileUri));
      } catch {
        exists = false;
      }
    }
    const proposed = applyUnifiedDiff(current, diff);
    const right = vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: fileUri.path, query: `proposed=${encodeURIComponent(label)}` });
    this.contents.set(right.toString(), proposed);
    if (pending) this.proposals.set(pending, right);
    this.changed.fire(right);
    let left = fileUri;
    if (!exists) {
      left = vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: fileUri.path, query: "empty" });
      this.contents.set(left.toString(), "");
    }
    const title = `${path.basename(file)} ↔ proposed by Phoenix (${label})`;
    await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: true });
  }

  /**
   * The approval `toolUseId` was decided (allowed, denied, cancelled): its diff tab, titled "waiting for your
   * approval", closes; an allowed change is in the file's own editor now.
   */
  async settled(toolUseId: string): Promise<void> {
    const right = this.proposals.get(toolUseId);
    if (!right) return;
    this.proposals.delete(toolUseId);
    const tabs = vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .filter((tab) => tab.input instanceof vscode.TabInputTextDiff && tab.input.modified.toString() === right.toString());
    if (tabs.length > 0) await vscode.window.tabGroups.close(tabs, true);
    this.contents.delete(right.toString());
  }

  dispose(): void {
    this.registration.dispose();
    this.changed.dispose();
  }
}
