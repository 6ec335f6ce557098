/**
 * The editor's sight (specs/sight.md, issue 29): answers the server's requests for what VS Code knows.
 *
 * - `phoenix/editorDiagnostics`: `vscode.languages.getDiagnostics`, from every extension. When the server
 *   gives the count of changes it saw before its edit (`since`), the answer waits for
 *   `onDidChangeDiagnostics` on those files (at most `settleMs`), then for a short quiet spell, since a
 *   language server often reports in steps (TypeScript: syntax, then semantics).
 * - `phoenix/editorLocations`: the editor's own providers, `vscode.executeDefinitionProvider` and
 *   `vscode.executeReferenceProvider`; for a document the editor had not loaded, asked again within
 *   `waitMs` while they answer nothing or nothing beyond that document (its language server still
 *   starting).
 *
 * Positions are LSP's on both sides: zero-based lines, UTF-16 characters (VS Code's own).
 */

import * as vscode from "vscode";
import type {
  EditorDiagnostic,
  EditorDiagnosticsParams,
  EditorDiagnosticsResult,
  EditorLocationsParams,
  EditorLocationsResult,
  EditorRange,
} from "../protocol.generated";

/** After the first change, the answer waits this long without another one (within settleMs). */
const QUIET_MS = 250;
/** The pauses between the asks for a definition or references while the answer is empty. */
const FIRST_PAUSE_MS = 100;
const LAST_PAUSE_MS = 1_000;

function range(r: vscode.Range): EditorRange {
  return {
    start: { line: r.start.line, character: r.start.character },
    end: { line: r.end.line, character: r.end.character },
  };
}

function code(c: vscode.Diagnostic["code"]): string | number | undefined {
  if (c === undefined || typeof c === "string" || typeof c === "number") return c;
  return c.value;
}

function toWire(d: vscode.Diagnostic): EditorDiagnostic {
  const wire: EditorDiagnostic = { range: range(d.range), severity: d.severity + 1, message: d.message };
  if (d.source) wire.source = d.source;
  const c = code(d.code);
  if (c !== undefined) wire.code = c;
  return wire;
}

export class Sight implements vscode.Disposable {
  /** uri (VS Code's string form) -> how often its diagnostics changed */
  private readonly changes = new Map<string, number>();
  private lastChange = 0;
  private readonly waiters = new Set<() => void>();
  private readonly subscription: vscode.Disposable;

  constructor() {
    this.subscription = vscode.languages.onDidChangeDiagnostics((e) => {
      for (const uri of e.uris) {
        const key = uri.toString();
        this.changes.set(key, (this.changes.get(key) ?? 0) + 1);
      }
      this.lastChange = Date.now();
      for (const wake of [...this.waiters]) wake();
    });
  }

  dispose(): void {
    this.subscription.dispose();
  }

  private count(uri: string): number {
    return this.changes.get(vscode.Uri.parse(uri).toString()) ?? 0;
  }

  private changedSince(since: Record<string, number>): boolean {
    return Object.entries(since).every(([uri, seen]) => this.count(uri) > seen);
  }

  /** Resolves when `ready()` holds or at `deadline` (Date.now() ms). */
  private waitFor(ready: () => boolean, deadline: number): Promise<void> {
    return new Promise((resolve) => {
      const check = (): void => {
        if (ready() || Date.now() >= deadline) {
          this.waiters.delete(check);
          clearTimeout(timer);
          resolve();
        }
      };
      const timer = setTimeout(check, Math.max(0, deadline - Date.now()));
      this.waiters.add(check);
      check();
    });
  }

  async diagnostics(params: EditorDiagnosticsParams): Promise<EditorDiagnosticsResult> {
    const since = params.since ?? {};
    if (Object.keys(since).length > 0 && params.settleMs > 0) {
      const deadline = Date.now() + params.settleMs;
      await this.waitFor(() => this.changedSince(since), deadline);
      if (this.changedSince(since)) {
        // a quiet spell: the next step of the same report usually follows within it
        while (Date.now() < deadline && Date.now() - this.lastChange < QUIET_MS) {
          await new Promise((resolve) => setTimeout(resolve, QUIET_MS - (Date.now() - this.lastChange)));
        }
      }
    }
    if (params.uris) {
      return {
        files: params.uris.map((uri) => ({
          uri,
          changes: this.count(uri),
          diagnostics: vscode.languages.getDiagnostics(vscode.Uri.parse(uri)).map(toWire),
        })),
      };
    }
    return {
      files: vscode.languages
        .getDiagnostics()
        .filter(([uri, list]) => uri.scheme === "file" && list.length > 0)
        .map(([uri, list]) => ({ uri: uri.toString(), changes: this.count(uri.toString()), diagnostics: list.map(toWire) })),
    };
  }

  /** The editor's own provider for a symbol. A document the editor had not loaded is opened (not shown) so
   *  that its language's extension activates. While that extension's server is still starting, its provider
   *  answers nothing, or only what the file itself shows (TypeScript's syntax server, while the project
   *  loads, finds the `import` line, not the definition it imports): for a document this host opened, an
   *  answer that is empty or lies wholly in that document is asked again, pausing a little longer each
   *  time, for at most `waitMs` (within the server's own wait). The document stays loaded after that: later
   *  lookups take the first answer, as they always do for a document the user has open. */
  async locations(params: EditorLocationsParams): Promise<EditorLocationsResult> {
    const deadline = Date.now() + (params.waitMs ?? 0);
    const uri = vscode.Uri.parse(params.uri);
    const key = uri.toString();
    const fresh = !vscode.workspace.textDocuments.some((d) => d.uri.toString() === key);
    await vscode.workspace.openTextDocument(uri);
    const position = new vscode.Position(params.position.line, params.position.character);
    const command = params.kind === "references" ? "vscode.executeReferenceProvider" : "vscode.executeDefinitionProvider";
    const ask = async (): Promise<(vscode.Location | vscode.LocationLink)[]> =>
      (await vscode.commands.executeCommand<(vscode.Location | vscode.LocationLink)[] | undefined>(
        command,
        uri,
        position,
      )) ?? [];
    const onlyHere = (locs: (vscode.Location | vscode.LocationLink)[]): boolean =>
      locs.every((loc) => ("targetUri" in loc ? loc.targetUri : loc.uri).toString() === key);
    let found = await ask();
    if (fresh && onlyHere(found)) {
      let pause = FIRST_PAUSE_MS;
      while (onlyHere(found) && Date.now() + pause < deadline) {
        await new Promise((resolve) => setTimeout(resolve, pause));
        const again = await ask();
        if (again.length > 0 || found.length === 0) found = again; // never trade an answer for none
        pause = Math.min(pause * 2, LAST_PAUSE_MS);
      }
    }
    return {
      locations: found.map((loc) =>
        "targetUri" in loc
          ? { uri: loc.targetUri.toString(), range: range(loc.targetSelectionRange ?? loc.targetRange) }
          : { uri: loc.uri.toString(), range: range(loc.range) },
      ),
    };
  }
}
