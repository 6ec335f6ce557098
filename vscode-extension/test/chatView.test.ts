/**
 * The chat view's provider (src/host/chatView.ts) says when each page's script has run (its "ready"), which the
 * host logs with the clock in the text: bench/vscode.py's window reload -> the chat usable reads it (issue 35).
 * The `vscode` API is stubbed as VS Code hands the provider a webview view.
 */

import { test, afterEach } from "node:test";
import assert from "node:assert/strict";
import Module from "node:module";
import type * as ChatView from "../src/host/chatView";

const loader = Module as unknown as { _load(request: string, parent: { filename?: string } | null, isMain: boolean): unknown };
const realLoad = loader._load;

afterEach(() => {
  loader._load = realLoad;
});

function loadChatView(): typeof ChatView {
  const vscode = { Uri: { joinPath: (base: { path: string }, ...parts: string[]) => ({ path: [base.path, ...parts].join("/") }) } };
  loader._load = function (request, parent, isMain) {
    if (request === "vscode") return vscode;
    return realLoad.call(this, request, parent, isMain);
  };
  const path = require.resolve("../src/host/chatView");
  delete require.cache[path];
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require(path) as typeof ChatView;
}

/** A webview view as VS Code gives it: what the provider posts, and the page's messages sent to it. */
function fakeView() {
  const posted: unknown[] = [];
  let receive: ((message: unknown) => void) | undefined;
  const view = {
    visible: true,
    webview: {
      options: {},
      html: "",
      cspSource: "vscode-webview:",
      asWebviewUri: (uri: { path: string }) => ({ toString: () => `webview:${uri.path}` }),
      onDidReceiveMessage: (handler: (message: unknown) => void) => void (receive = handler),
      postMessage: async (message: unknown) => void posted.push(message),
    },
    onDidDispose: () => undefined,
  };
  return { view, posted, send: (message: unknown) => receive?.(message) };
}

test("the chat view says when each page's script has run, once per page, and only then (issue 35: the chat usable)", () => {
  const { ChatViewProvider } = loadChatView();
  const readies: number[] = [];
  const forwarded: unknown[] = [];
  const provider = new ChatViewProvider(
    { path: "/ext" } as never,
    () => [{ type: "server", state: "starting" }] as never,
    (m) => forwarded.push(m),
    () => readies.push(readies.length),
  );
  const first = fakeView();
  provider.resolveWebviewView(first.view as never);
  assert.match(first.view.webview.html, /webview\.js/, "the page loads the chat's script");
  assert.equal(readies.length, 0, "a page made is not a page whose script ran");
  first.send({ type: "send", text: "hi" });
  assert.equal(readies.length, 0, "another message is not the page's ready");
  first.send({ type: "ready" });
  assert.equal(readies.length, 1);
  assert.deepEqual(first.posted, [{ type: "server", state: "starting" }], "the page is given the state at its ready");
  assert.deepEqual(forwarded, [{ type: "send", text: "hi" }], "ready is the provider's, not the controller's");
  const second = fakeView(); // the view made again (hidden and shown, or the window's page reloaded)
  provider.resolveWebviewView(second.view as never);
  second.send({ type: "ready" });
  assert.equal(readies.length, 2, "a new page says it again");
});
