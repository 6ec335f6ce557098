/**
 * Activation, server first (issue 35). VS Code loads this module to activate the extension, then reads the
 * extension's stored state before it calls `activate` (the context it gives waits for that read): 0.1-1.4 s
 * on a window load. The server is spawned at load and the language client is started at load too, right
 * after the spawn (host/main.ts `startHost`: it needs no ExtensionContext, the output channel and the settings
 * come from the `vscode` module), so `initialize` goes out while VS Code reads the state. `activate` then
 * attaches what needs the context (the controller, the chat view, the commands, disposal) to the client
 * already starting (`attachHost`).
 *
 * Anything that throws at load is kept and logged by `activate`, which starts everything itself then (the
 * path before this change), with the process already spawned when there is one. A second activation in the
 * same host (after `deactivate`) spawns and starts its own.
 *
 * This entry is its own small bundle, so nothing heavy is loaded before the spawn; the rest of the extension
 * (`dist/host.js`: the language client, the controller, the views) is required after it.
 */

import type * as vscode from "vscode";
import { launchServer, type Launch } from "./host/launch";
import type * as Host from "./host/main";

/** the second bundle, beside this one in dist/ (esbuild.mjs keeps this require as it is) */
function loadHost(): typeof Host {
  // eslint-disable-next-line @typescript-eslint/no-require-imports
  return require("./host.js") as typeof Host;
}

/** the server spawned at load, for the first activation, when the client could not be started with it */
let launched: Launch | undefined;
/** the client started at load with the spawned server, waiting for `activate` */
let early: Host.Started | undefined;
/** what went wrong at load (activate logs it, then starts everything itself) */
let loadError: unknown;
/** the running host's server, stopped by `deactivate` (also the one started at load, if activate never came) */
let server: Host.Started["server"] | undefined;

try {
  launched = launchServer();
  const host = loadHost();
  early = host.startHost(launched, { loadedAt: Date.now() });
  launched = undefined;
  server = early.server;
} catch (error) {
  loadError = error;
  early = undefined;
}

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const activatedAt = Date.now();
  const started = early;
  early = undefined;
  if (started) {
    const host = loadHost(); // already loaded at module load: from the require cache
    await host.attachHost(context, started, activatedAt);
    return;
  }
  // the path before the start at load: everything here, with the server spawned at load when there is one
  const first = launched ?? launchServer();
  launched = undefined;
  let fresh: Host.Started;
  let host: typeof Host;
  try {
    host = loadHost();
    fresh = host.startHost(first, { loadedAt: Date.now(), activatedAt });
  } catch (error) {
    // no client was given the spawned process: it would outlive a failed activation
    if (first.ok) void first.process.then((child) => child.kill(), () => undefined);
    throw error;
  }
  server = fresh.server;
  if (loadError !== undefined) {
    fresh.logs.error("starting the language client while VS Code loaded the extension failed; started at activation instead", loadError);
    loadError = undefined;
  }
  await host.attachHost(context, fresh, activatedAt);
}

export async function deactivate(): Promise<void> {
  const stopping = server;
  server = undefined;
  await stopping?.stop();
}
