/**
 * The one rule by which the extension's host turns a path the server named (a file of a multi-file review,
 * issue 36) into a file it opens: inside the conversation's folder, or refused. Node only (the host, never the
 * webview).
 */

import * as path from "node:path";

/** `rel` inside `folder`, resolved; a path that is absolute elsewhere or climbs out is refused with an error. */
export function inFolder(folder: string, rel: string): string {
  const full = path.resolve(folder, rel);
  const inside = path.relative(folder, full);
  if (inside === "" || inside === ".." || inside.startsWith(`..${path.sep}`) || path.isAbsolute(inside)) {
    throw new Error(`The review names ${rel}, which is outside the workspace folder ${folder}; it is not opened.`);
  }
  return full;
}
