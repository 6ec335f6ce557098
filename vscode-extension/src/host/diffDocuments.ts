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
  private readonly changed = new vscode.EventEmitter<vscode.Uri>();
  readonly onDidChange = this.changed.event;
  private readonly registration = vscode.workspace.registerTextDocumentContentProvider(PROPOSED_SCHEME, this);

  provideTextDocumentContent(uri: vscode.Uri): string {
    return this.contents.get(uri.toString()) ?? "";
  }

  /** Show `diff` (a unified diff of `file`) applied to the file's current text. */
  async open(file: string, diff: string, label: string): Promise<void> {
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
    this.changed.fire(right);
    let left = fileUri;
    if (!exists) {
      left = vscode.Uri.from({ scheme: PROPOSED_SCHEME, path: fileUri.path, query: "empty" });
      this.contents.set(left.toString(), "");
    }
    const title = `${path.basename(file)} ↔ proposed by Phoenix (${label})`;
    await vscode.commands.executeCommand("vscode.diff", left, right, title, { preview: true });
  }

  dispose(): void {
    this.registration.dispose();
    this.changed.dispose();
  }
}
