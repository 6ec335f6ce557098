/** The webview's entry point: the chat app wired to VS Code's webview messaging. */

import DOMPurify from "dompurify";
import { ChatApp } from "./app";
import { SANITIZE_CONFIG } from "../core/markdown";
import type { HostMessage, ViewMessage } from "../core/messages";

declare function acquireVsCodeApi(): { postMessage(message: ViewMessage): void };

const vscode = acquireVsCodeApi();
const root = document.getElementById("root");
if (root) {
  const app = new ChatApp(root, (message) => vscode.postMessage(message), {
    sanitize: (html) => DOMPurify.sanitize(html, SANITIZE_CONFIG) as string,
    schedule: (run) => requestAnimationFrame(run),
    visible: () => document.visibilityState === "visible",
    every: (ms, run) => {
      const timer = setInterval(run, ms);
      return () => clearInterval(timer);
    },
  });
  window.addEventListener("message", (event: MessageEvent<HostMessage>) => app.receive(event.data));
  vscode.postMessage({ type: "ready" });
}
