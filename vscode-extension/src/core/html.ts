/**
 * The chat webview's page: a strict Content-Security-Policy (no inline script or style, no remote
 * content; only the extension's own files and the nonce'd script), no inline event handlers. Pure.
 */

export interface PageInput {
  cspSource: string;
  nonce: string;
  scriptUri: string;
  styleUris: string[];
}

/** `nonce` undefined: a page that runs no script at all (`startingPage`). */
export function contentSecurityPolicy(cspSource: string, nonce: string | undefined): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `style-src ${cspSource}`,
    `font-src ${cspSource}`,
    nonce === undefined ? "script-src 'none'" : `script-src 'nonce-${nonce}'`,
    "connect-src 'none'",
    "frame-src 'none'",
    "form-action 'none'",
    "base-uri 'none'",
  ].join("; ");
}

const ATTRIBUTE_ESCAPES: Record<string, string> = { "&": "&amp;", '"': "&quot;", "<": "&lt;", ">": "&gt;" };
const attr = (value: string): string => value.replace(/[&"<>]/g, (ch) => ATTRIBUTE_ESCAPES[ch]);

export function chatPage(input: PageInput): string {
  const styles = input.styleUris.map((u) => `<link rel="stylesheet" href="${attr(u)}">`).join("\n    ");
  return `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="UTF-8">
    <meta http-equiv="Content-Security-Policy" content="${attr(contentSecurityPolicy(input.cspSource, input.nonce))}">
    <meta name="viewport" content="width=device-width, initial-scale=1.0">
    ${styles}
    <title>Phoenix</title>
  </head>
  <body>
    <div id="root"></div>
    <script nonce="${attr(input.nonce)}" src="${attr(input.scriptUri)}"></script>
  </body>
</html>`;
}

/**
 * The page the chat view shows while the server starts (issue 35): the words the chat's banner shows then, its
 * style, and no script. The chat's script (its load, parse and first drawing, on the renderer that also loads
 * the workbench) waits for the server's answer, so that it does not take a CPU from the server's start on a
 * window load; the chat can do nothing before that answer anyway.
 */
export function startingPage(input: Pick<PageInput, "cspSource" | "styleUris">): string {
  const styles = input.styleUris.map((u) => `<link rel="stylesheet" href="${attr(u)}">`).join("\n    ");
  return `<!DOCTYPE html>
<html lang="en">
  <head>
    <meta charset="UTF-8">
    <meta http-equiv="Content-Security-Policy" content="${attr(contentSecurityPolicy(input.cspSource, undefined))}">
    <meta name="viewport" content="width=device-width, initial-scale=1.0">
    ${styles}
    <title>Phoenix</title>
  </head>
  <body>
    <div class="banner"><div class="info" role="status">Starting the Phoenix server…</div></div>
  </body>
</html>`;
}

/** A fresh nonce per page (32 characters from [A-Za-z0-9]); `random` returns bytes. */
export function makeNonce(random: (n: number) => Uint8Array): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  return [...random(32)].map((b) => alphabet[b % alphabet.length]).join("");
}
