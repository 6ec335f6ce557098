/**
 * Activation, server first (issue 35): the server is spawned when VS Code loads this module, which it does
 * to activate the extension, at the same time as it reads the extension's stored state (the context
 * `activate` is given waits for that read); the rest of the extension (`dist/host.js`, see host/main.ts: the
 * language client, the controller, the views) is loaded after the spawn, while the server boots. This entry
 * is its own small bundle, so nothing heavy is loaded before the spawn.
 */

import type * as vscode from "vscode";
import { launchServer, type Launch } from "./host/launch";
import type * as Host from "./host/main";
import type { ServerManager } from "./host/server";

/** the server spawned at load, for the first activation (a later one in the same host spawns its own) */
let launched: Launch | undefined = launchServer();
let server: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const activatedAt = Date.now();
  const first = launched ?? launchServer();
  launched = undefined;
  // the second bundle, beside this one in dist/ (esbuild.mjs keeps this require as it is)
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  const host = require("./host.js") as typeof Host;
  const { server: manager, started } = host.activateHost(context, first, { activatedAt, loadedAt: Date.now() });
  server = manager;
  await started;
}

export async function deactivate(): Promise<void> {
  await server?.stop();
}
