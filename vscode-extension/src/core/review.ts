/**
 * A multi-file review (issue 36, REQ-VSC-017): an approval whose diff spans several files, as the server sends
 * a bash command's captured changes (a host call named like the patch tool, `arguments` = `{command, files,
 * more?}`, `diff` = the summary of what is not an editor edit as `# ` lines before the first file, then the
 * git-style unified diff of every text file, then maybe a `# not shown ...` line). This module is the one place
 * that reads that shape, so a change of it is adapted here. Pure: no DOM, no `vscode`.
 *
 * The diff is split by its hunks' own line counts, never by a line that merely looks like a file header: a
 * file whose text holds `--- a/x` and `+++ b/y` lines cannot add a file of its own to the list.
 */

import type { ApprovalRequest } from "../protocol/wire";

export type FileStatus = "created" | "deleted" | "renamed" | "modified";

export interface ReviewFile {
  /** the path the change leaves (the old path for a deletion) */
  path: string;
  /** a rename's old path */
  oldPath?: string;
  status: FileStatus;
  added: number;
  removed: number;
  /** this file's part of the unified diff, its headers included */
  diff: string;
}

export interface Review {
  /** the command whose changes these are, when the approval names one */
  command?: string;
  files: ReviewFile[];
  /** what is not an editor edit (binary files, ignored folders, modes, symlinks), refusals and conflicts */
  summary: string[];
  /** the changed paths the approval's arguments name that have no diff here (the server's part) */
  others: string[];
  /** paths the arguments leave out (`more`) */
  more: number;
}

const HUNK = /^@@ -\d+(?:,(\d+))? \+\d+(?:,(\d+))? @@/;

function headerPath(text: string): string {
  const p = text.split("\t")[0];
  return p === "/dev/null" ? p : p.replace(/^[ab]\//, "");
}

/** The files of a unified diff, each with its counts, and the `# ` lines around them (the summary). */
export function splitDiff(diff: string): { files: ReviewFile[]; notes: string[] } {
  const lines = diff.split("\n");
  if (lines[lines.length - 1] === "") lines.pop();
  const files: ReviewFile[] = [];
  const notes: string[] = [];
  let i = 0;
  while (i < lines.length) {
    const line = lines[i];
    if (line.startsWith("--- ") && i + 1 < lines.length && lines[i + 1].startsWith("+++ ")) {
      const start = i;
      const oldPath = headerPath(line.slice(4));
      const newPath = headerPath(lines[i + 1].slice(4));
      let added = 0;
      let removed = 0;
      i += 2;
      for (let m = HUNK.exec(lines[i] ?? ""); m; m = HUNK.exec(lines[i] ?? "")) {
        let oldLeft = m[1] === undefined ? 1 : Number(m[1]);
        let newLeft = m[2] === undefined ? 1 : Number(m[2]);
        i++;
        // the hunk's body is exactly its counted lines (and the "\ No newline" notes among them)
        while (i < lines.length && (oldLeft > 0 || newLeft > 0 || lines[i].startsWith("\\"))) {
          const kind = lines[i][0];
          if (kind === "\\") {
            i++;
            continue;
          }
          if (kind === "+") {
            added++;
            newLeft--;
          } else if (kind === "-") {
            removed++;
            oldLeft--;
          } else {
            oldLeft--;
            newLeft--;
          }
          i++;
        }
      }
      const status: FileStatus =
        oldPath === "/dev/null" ? "created" : newPath === "/dev/null" ? "deleted" : oldPath !== newPath ? "renamed" : "modified";
      files.push({
        path: status === "deleted" ? oldPath : newPath,
        ...(status === "renamed" ? { oldPath } : {}),
        status,
        added,
        removed,
        diff: `${lines.slice(start, i).join("\n")}\n`,
      });
      continue;
    }
    if (line.startsWith("# ")) notes.push(line.slice(2));
    else if (line === "#") notes.push("");
    i++;
  }
  return { files, notes };
}

/**
 * The review an approval asks about, or undefined when it is not one: a bash command's changes (the arguments'
 * `command` and `files`), or any approval whose diff spans more than one file.
 */
/**
 * Whether a call's arguments are those of a review's question (the server's host call of a bash command, named
 * like the patch tool: the `command` and the changed `files`). Such a call has no start or end of its own: the
 * bash call it belongs to carries the outcome, so its card is done once allowed and shows the command, never
 * its arguments as JSON.
 */
export function isReviewCall(args: Record<string, unknown> | undefined): boolean {
  return !!args && typeof args.command === "string" && Array.isArray(args.files);
}

export function reviewOf(approval: Pick<ApprovalRequest, "arguments" | "diff">): Review | undefined {
  const args = approval.arguments ?? {};
  const listed = Array.isArray(args.files) ? args.files.filter((f): f is string => typeof f === "string") : undefined;
  if (!approval.diff && !listed) return undefined;
  const { files, notes } = splitDiff(approval.diff ?? "");
  if (!listed && files.length < 2) return undefined;
  const shown = new Set(files.flatMap((f) => (f.oldPath ? [f.path, f.oldPath] : [f.path])));
  return {
    ...(typeof args.command === "string" ? { command: args.command } : {}),
    files,
    summary: notes,
    others: (listed ?? []).filter((p) => !shown.has(p)),
    more: typeof args.more === "number" ? args.more : 0,
  };
}

/** A file's line in the list: its status, its path (a rename from its old path) and its counts. */
export function fileLabel(file: ReviewFile): string {
  const where = file.oldPath ? `${file.oldPath} → ${file.path}` : file.path;
  return `${file.status} ${where} +${file.added} −${file.removed}`;
}

/** One line saying what the review holds. */
export function reviewHeadline(review: Review): string {
  const n = review.files.length;
  const added = review.files.reduce((s, f) => s + f.added, 0);
  const removed = review.files.reduce((s, f) => s + f.removed, 0);
  const rest = review.others.length; // the server's part the arguments name (its counts are in the summary)
  const others = rest ? `, ${rest} other change${rest === 1 ? "" : "s"}` : "";
  return `${n} text file${n === 1 ? "" : "s"} (+${added} −${removed})${others}`;
}

/**
 * The change set a bash call's result says was kept for an undo (REQ-BASH-040: "change set <12 hex>; the user can
 * undo it"), or undefined: the applied review's Undo button takes back that one, never merely the latest.
 */
export function changeSetOf(output: string | undefined): string | undefined {
  const found = /\[phoenix-lsp: change set ([0-9a-f]{12}); the user can undo it\.\]\s*$/.exec(output ?? "");
  return found?.[1];
}
