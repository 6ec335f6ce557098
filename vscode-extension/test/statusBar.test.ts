/**
 * The status bar's items (src/host/statusBar.ts) with the `vscode` API stubbed: each item VS Code would make is
 * a plain record of what the extension set on it.
 */

import { test, afterEach } from "node:test";
import assert from "node:assert/strict";
import Module from "node:module";
import type * as StatusBarModule from "../src/host/statusBar";

interface Item {
  id: string;
  text: string;
  shown: boolean;
  show(): void;
  hide(): void;
  dispose(): void;
}

const loader = Module as unknown as { _load(request: string, parent: unknown, isMain: boolean): unknown };
const realLoad = loader._load;

afterEach(() => {
  loader._load = realLoad;
});

function load(): { StatusBar: typeof StatusBarModule.StatusBar; items: Item[] } {
  const items: Item[] = [];
  const vscode = {
    StatusBarAlignment: { Left: 1, Right: 2 },
    ThemeColor: class {
      constructor(readonly id: string) {}
    },
    window: {
      createStatusBarItem: (id: string) => {
        const item: Item = {
          id, text: "", shown: false,
          show() { this.shown = true; },
          hide() { this.shown = false; },
          dispose() {},
        };
        items.push(item);
        return item;
      },
    },
  };
  loader._load = function (request, parent, isMain) {
    return request === "vscode" ? vscode : realLoad.call(this, request, parent, isMain);
  };
  const path = require.resolve("../src/host/statusBar");
  delete require.cache[path];
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const { StatusBar } = require(path) as typeof StatusBarModule;
  return { StatusBar, items };
}

test("while the server starts, the mode item shows a still icon, not a spinning one (issue 35: the workbench redraws a spinning item 20 times a second on the cores the server starts on)", () => {
  const { StatusBar, items } = load();
  const bar = new StatusBar();
  bar.update(undefined, "starting", undefined, () => ({ policy: "interactive", style: "chat" }));
  const mode = items.find((i) => i.id === "phoenix.mode")!;
  assert.ok(mode.shown, "the item says the server is starting");
  assert.match(mode.text, /^\$\(sync\) Phoenix$/);
  assert.doesNotMatch(mode.text, /~spin/);
  bar.update(undefined, "ready", undefined, () => ({ policy: "interactive", style: "chat" }));
  assert.doesNotMatch(mode.text, /\$\(sync/, "ready: the icon goes (the real-VS-Code test waits for that)");
});
