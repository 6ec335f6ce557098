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
  /** the proposed documents of each approval whose diffs were opened (by tool call id), until it is decided */
  private readonly proposals = new Map<string, vscode.Uri[]>();
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly registration = vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, this);

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? "";
  }

  /**
   * Show `diff` (a unified diff of `file`) applied to the file's current text. `pending`: the id of the
   * approval it waits for; its tab closes when that is decided (`settled`). `source`: the file whose text the
   * diff applies to when it is not `file` (a rename's old path; null: none, a created file).
   */
  async open(file: string, diff: string, label: string, pending?: string, source?: string | null): Promise<void> {
    const fileUri = vscode.Uri.file(file);
    const sourceUri = source ? vscode.Uri.file(source) : fileUri;
    const open = source === null ? undefined : vscode.workspace.textDocuments.find((d) => d.uri.fsPath === sourceUri.fsPath);
    let current = "";
    let exists = source !== null;
    if (open) {
      current = open.getText();
    } else if (exists) {
      try {
        current = new TextDecoder().decode(await vscode.workspace.fs.readFile(sourceUri));
      } catch {
        exists = false;
      }
    }
    const proposed = applyUnifiedDiff(current, diff);
    const right = vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: fileUri.path, query: `proposed=${encodeURIComponent(label)}` });
    this.contents.set(right.toString(), proposed);
    if (pending) this.proposals.set(pending, [...(this.proposals.get(pending) ?? []), right]);
    this.changed.fire(right);
    let left = sourceUri;
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
    const rights = this.proposals.get(toolUseId);
    if (!rights) return;
    this.proposals.delete(toolUseId);
    const names = new Set(rights.map((r) => r.toString()));
    const tabs = vscode.window.tabGroups.all
      .flatMap((group) => group.tabs)
      .filter((tab) => tab.input instanceof vscode.TabInputTextDiff && names.has(tab.input.modified.toString()));
    if (tabs.length > 0) await vscode.window.tabGroups.close(tabs, true);
    for (const name of names) this.contents.delete(name);
  }

  dispose(): void {
    this.registration.dispose();
    this.changed.dispose();
  }
}
