/** The chat view in the side bar: a webview with a strict CSP that talks to the controller by messages. */

import { randomBytes } from "node:crypto";
import * as vscode from "vscode";
import { chatPage, makeNonce } from "../core/html";
import type { HostMessage, ViewMessage } from "../core/messages";

export const CHAT_VIEW_ID = "phoenix.vscode.chat";

export class ChatViewProvider implements vscode.WebviewViewProvider {
  private view: vscode.WebviewView | undefined;
  private ready = false;
  /** messages that must not be lost while the view is not there yet (chips added from the editor) */
  private queued: HostMessage[] = [];

  constructor(
    private readonly extensionUri: vscode.Uri,
    /** the full state to send when a (new) webview says it is ready */
    private readonly snapshot: () => HostMessage[],
    private readonly onMessage: (message: ViewMessage) => void,
    /** each page's script has run and asked for the state (the log says when: bench/vscode.py's chat usable) */
    private readonly onPageReady: () => void = () => undefined,
  ) {}

  resolveWebviewView(view: vscode.WebviewView): void {
    this.view = view;
    this.ready = false;
    const dist = vscode.Uri.joinPath(this.extensionUri, "dist");
    const media = vscode.Uri.joinPath(this.extensionUri, "media");
    view.webview.options = { enableScripts: true, localResourceRoots: [dist, media] };
    const uri = (base: vscode.Uri, ...parts: string[]) => view.webview.asWebviewUri(vscode.Uri.joinPath(base, ...parts)).toString();
    view.webview.html = chatPage({
      cspSource: view.webview.cspSource,
      nonce: makeNonce((n) => randomBytes(n)),
      scriptUri: uri(dist, "webview.js"),
      styleUris: [uri(dist, "codicons", "codicon.css"), uri(media, "chat.css")],
    });
    view.webview.onDidReceiveMessage((message: ViewMessage) => {
      if (message.type === "ready") {
        this.ready = true;
        this.onPageReady();
        for (const m of [...this.snapshot(), ...this.queued.splice(0)]) void view.webview.postMessage(m);
        return;
      }
      this.onMessage(message);
    });
    view.onDidDispose(() => {
      if (this.view === view) {
        this.view = undefined;
        this.ready = false;
      }
    });
  }

  /** Post `message`; the answer settles once the workbench handed it to the view (none when not posted). */
  post(message: HostMessage): Thenable<boolean> | undefined {
    if (!this.view || !this.ready) return undefined; // the snapshot on "ready" covers it
    return this.view.webview.postMessage(message);
  }

  /** Post now, or when the view next says it is ready (a command may add chips before the view exists). */
  postWhenReady(message: HostMessage): void {
    if (this.view && this.ready) void this.view.webview.postMessage(message);
    else this.queued.push(message);
  }

  get visible(): boolean {
    return this.view?.visible ?? false;
  }

  async reveal(): Promise<void> {
    if (this.view) this.view.show(true);
    else await vscode.commands.executeCommand(`${CHAT_VIEW_ID}.focus`);
  }
}
