/**
 * Which documents the extension saves after the server's workspace edit (issue 36, REQ-VSC-018).
 *
 * A bash command's reviewed changes, and the undo of a change set, are changes to the disk: the command wrote
 * its files and the undo puts back their bytes. VS Code applies a workspace edit to its buffers and leaves them
 * unsaved (a created file is empty on disk until saved), so without a save the disk would not hold what the
 * user accepted and the next command would read the old bytes. A patch stays an unsaved edit, as before.
 * The server names the edit in its label (`phoenix: a bash command's changes (…)`, `phoenix: undo …`).
 */

/** The parts of an LSP workspace edit read here (only `documentChanges`: the server sends nothing else). */
export interface EditShape {
  documentChanges?: ReadonlyArray<
    | { kind?: undefined; textDocument: { uri: string } }
    | { kind: "create"; uri: string }
    | { kind: "rename"; oldUri: string; newUri: string }
    | { kind: "delete"; uri: string }
  >;
}

const LANDS_ON_DISK = /^phoenix: (a bash command's changes \(|undo )/;

/** Whether the edit labelled so is a change to the disk that the extension saves once applied. */
export function savedAfterApply(label: string | undefined): boolean {
  return label !== undefined && LANDS_ON_DISK.test(label);
}

/**
 * The URIs to save after the edit applied: every document the edit created, renamed to or edited, once each,
 * in the edit's order, none that it deleted afterwards. Empty for an edit that is not saved.
 */
export function urisToSave(label: string | undefined, edit: EditShape): string[] {
  if (!savedAfterApply(label)) return [];
  const out: string[] = [];
  for (const change of edit.documentChanges ?? []) {
    if (change.kind === "create") out.push(change.uri);
    else if (change.kind === "rename") {
      const at = out.indexOf(change.oldUri);
      if (at >= 0) out.splice(at, 1);
      out.push(change.newUri);
    } else if (change.kind === "delete") {
      const at = out.indexOf(change.uri);
      if (at >= 0) out.splice(at, 1);
    } else if (change.kind === undefined && "textDocument" in change) out.push(change.textDocument.uri);
  }
  return [...new Set(out)];
}
