/**
 * The extension's entry (src/extension.ts, issue 35): the language client is started when VS Code loads the
 * module, before `activate`, with the server spawned at load; an error at load falls back to starting in
 * `activate`. The module is loaded as VS Code loads it, with its `vscode` API stubbed (the settings point the
 * server command at this node, so a real process is spawned) and its second bundle (`./host.js`) a recorder
 * of what the entry asks of it, in order.
 */

import { test, afterEach } from "node:test";
import assert from "node:assert/strict";
import Module from "node:module";
import type { ChildProcess } from "node:child_process";
import type * as Extension from "../src/extension";
import type { Launch } from "../src/host/launch";

type Call = { what: "startHost" | "attachHost" | "stop" | "logError" | "activate"; detail?: unknown };

interface Loaded {
  extension: { activate(context: unknown): Promise<void>; deactivate: typeof Extension.deactivate };
  calls: Call[];
  processes: Promise<ChildProcess>[];
}

const loader = Module as unknown as { _load(request: string, parent: { filename?: string } | null, isMain: boolean): unknown };
const realLoad = loader._load;
const spawned: Promise<ChildProcess>[] = [];

afterEach(async () => {
  loader._load = realLoad;
  for (const process of spawned.splice(0)) (await process.catch(() => undefined))?.kill();
});

/** Loads a fresh src/extension.js as VS Code would; `failStartHost` makes the host's start throw that many times. */
function loadExtension(failStartHost = 0): Loaded {
  const calls: Call[] = [];
  const vscode = {
    workspace: {
      workspaceFolders: undefined,
      getConfiguration: () => ({
        get: (key: string, fallback: unknown) =>
          // a real process that stays until it is killed: what the entry spawns
          ({ "server.command": process.execPath, "server.args": ["-e", "setTimeout(() => {}, 60000)"] })[key] ?? fallback,
      }),
    },
  };
  const host = {
    startHost(launched: Launch, marks: { loadedAt: number; activatedAt?: number }) {
      const detail: { launched: Launch; marks: unknown; result?: unknown } = { launched, marks };
      calls.push({ what: "startHost", detail });
      if (launched.ok) spawned.push(launched.process);
      if (failStartHost-- > 0) throw new Error("the language client cannot be made");
      const started = {
        logs: { error: (message: string, error: unknown) => calls.push({ what: "logError", detail: { message, error } }) },
        server: { stop: async () => void calls.push({ what: "stop", detail: started }) },
        started: Promise.resolve(),
      };
      detail.result = started;
      return started;
    },
    async attachHost(context: unknown, started: unknown, activatedAt: number) {
      calls.push({ what: "attachHost", detail: { context, started, activatedAt } });
    },
  };
  loader._load = function (request, parent, isMain) {
    if (request === "vscode") return vscode;
    if (request === "./host.js" && parent?.filename?.endsWith("extension.js")) return host;
    return realLoad.call(this, request, parent, isMain);
  };
  const path = require.resolve("../src/extension");
  delete require.cache[path];
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const extension = require(path) as Loaded["extension"];
  return { extension, calls, processes: spawned };
}

const context = { subscriptions: [] };

test("the language client is started when the module loads, before activate; activate attaches to it (REQ-VSC-001, issue 35)", async () => {
  const { extension, calls } = loadExtension();
  assert.deepEqual(calls.map((c) => c.what), ["startHost"], "the client starts at load, before VS Code calls activate");
  const { launched, marks } = calls[0].detail as { launched: Launch; marks: { activatedAt?: number } };
  assert.ok(launched.ok, "it is given the server spawned at load");
  assert.equal((await launched.process).spawnfile, process.execPath);
  assert.equal(marks.activatedAt, undefined);
  const started = (calls[0].detail as { result: unknown }).result;

  await extension.activate(context);
  assert.deepEqual(calls.map((c) => c.what), ["startHost", "attachHost"], "activate starts nothing again");
  const attached = calls[1].detail as { context: unknown; started: unknown };
  assert.equal(attached.context, context);
  assert.equal(attached.started, started, "the client started at load");
  assert.equal(spawned.length, 1, "one server process");

  await extension.deactivate();
  assert.deepEqual(calls.map((c) => c.what), ["startHost", "attachHost", "stop"], "deactivate stops the client started at load");
  assert.equal(calls[2].detail, attached.started);
});

test("an error at load falls back to starting in activate, with the process spawned at load, and is logged (REQ-VSC-001)", async () => {
  const { extension, calls } = loadExtension(1);
  assert.deepEqual(calls.map((c) => c.what), ["startHost"]);
  const atLoad = (calls[0].detail as { launched: Launch }).launched;

  await extension.activate(context);
  assert.deepEqual(calls.map((c) => c.what), ["startHost", "startHost", "logError", "attachHost"]);
  const inActivate = calls[1].detail as { launched: Launch; marks: { activatedAt?: number } };
  assert.equal(inActivate.launched, atLoad, "the server spawned at load is used, not a second one");
  assert.ok(inActivate.marks.activatedAt !== undefined);
  const logged = calls[2].detail as { message: string; error: Error };
  assert.match(logged.message, /started at activation instead/);
  assert.match(logged.error.message, /cannot be made/);

  await extension.deactivate();
  assert.equal(calls.at(-1)?.what, "stop", "deactivate stops the client started in activate");
});

test("a second activation in the same host spawns and starts its own client", async () => {
  const { extension, calls } = loadExtension();
  await extension.activate(context);
  await extension.deactivate();
  await extension.activate(context);
  assert.deepEqual(calls.map((c) => c.what), ["startHost", "attachHost", "stop", "startHost", "attachHost"]);
  const first = (calls[0].detail as { launched: Launch }).launched;
  const second = (calls[3].detail as { launched: Launch }).launched;
  assert.ok(second.ok && first.ok && second.process !== first.process, "a new server process");
  assert.equal(spawned.length, 2);
  await extension.deactivate();
  assert.equal(calls.at(-1)?.what, "stop");
});

test("when the client cannot be started at load nor in activate, activate fails and the process spawned at load is ended", async () => {
  const { extension, calls } = loadExtension(2);
  const atLoad = (calls[0].detail as { launched: Launch }).launched;
  await assert.rejects(extension.activate(context), /cannot be made/);
  assert.ok(atLoad.ok);
  const child = await atLoad.process;
  if (child.exitCode === null && child.signalCode === null) await new Promise((resolve) => child.once("exit", resolve));
  assert.equal(child.signalCode, "SIGTERM", "no server is left running behind a failed activation");
});
