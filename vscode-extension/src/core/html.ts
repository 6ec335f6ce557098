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

export function contentSecurityPolicy(cspSource: string, nonce: string): string {
  return [
    "default-src 'none'",
    `img-src ${cspSource} data:`,
    `style-src ${cspSource}`,
    `font-src ${cspSource}`,
    `script-src 'nonce-${nonce}'`,
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

/** A fresh nonce per page (32 characters from [A-Za-z0-9]); `random` returns bytes. */
export function makeNonce(random: (n: number) => Uint8Array): string {
  const alphabet = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789";
  return [...random(32)].map((b) => alphabet[b % alphabet.length]).join("");
}
