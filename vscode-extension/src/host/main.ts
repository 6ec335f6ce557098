/**
 * Everything the extension sets up once the server is spawned (`extension.ts` spawns it first), in two steps
 * (issue 35): `startHost` starts the language client with the spawned process and needs no ExtensionContext,
 * so `extension.ts` calls it as soon as the module is loaded, while VS Code reads the extension's stored state;
 * `attachHost` is `activate`'s part: the controller, the chat view and the commands, given what the server
 * said meanwhile (held until then, core/heldCalls.ts), and everything handed to the context for disposal.
 * Bundled apart as `dist/host.js` and loaded after the spawn, so its load (the language client is most of the
 * extension's code) runs while the server boots.
 */

import * as vscode from "vscode";
import { HeldCalls } from "../core/heldCalls";
import { CHAT_VIEW_ID } from "./chatView";
import { registerCommands } from "./commands";
import { Controller } from "./controller";
import type { Launch } from "./launch";
import { Logs } from "./logging";
import { ServerManager, type ServerEvents, type StartMarks } from "./server";
import { onServerSettingsChanged } from "./settings";

/** At most this many `phoenix/event`s are held for a controller not there yet (none is open before it is). */
export const HELD_EVENTS = 256;

/** A language client started, waiting for `activate` to attach the rest. */
export interface Started {
  logs: Logs;
  server: ServerManager;
  /** the server's news until the controller exists */
  held: HeldCalls<ServerEvents>;
  /** settles when the client has started (or failed, which the user is told) */
  started: Promise<void>;
}

/** Starts the language client with the spawned server; undoes what it made if it throws. */
export function startHost(launched: Launch, marks: StartMarks): Started {
  const logs = new Logs();
  try {
    const held = new HeldCalls<ServerEvents>(HELD_EVENTS);
    const server = new ServerManager(
      logs,
      {
        starting: () => held.keep((e) => e.starting()),
        ready: (client, info) => held.keep((e) => e.ready(client, info)),
        failed: (message) => held.keep((e) => e.failed(message)),
        // droppable: the controller opens a conversation only once attached, reading it whole from the server
        event: (event) => held.droppable((e) => e.event(event)),
      },
      launched,
      marks,
    );
    return { logs, server, held, started: server.start() };
  } catch (error) {
    logs.dispose();
    throw error;
  }
}

/** `activate`'s part: everything that needs the context, given the server's news so far. */
export async function attachHost(context: vscode.ExtensionContext, started: Started, activatedAt: number): Promise<void> {
  const { logs, server, held } = started;
  server.noteActivated(activatedAt);
  const made: vscode.Disposable[] = [];
  try {
    const controller = new Controller(context, logs);
    made.push(controller);
    made.push(
      vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, controller.chat),
      ...registerCommands(controller, server, logs),
      onServerSettingsChanged(() => {
        logs.info("server settings changed: restarting the server");
        void server.restart();
      }),
    );
    const dropped = held.attach({
      starting: () => controller.serverStarting(),
      ready: (client, info) => {
        controller.serverReady(client, info).catch((error) => logs.error("opening the conversation failed", error));
      },
      failed: (message) => controller.serverFailed(message),
      event: (event) => controller.onEvent(event),
    });
    if (dropped > 0) logs.info(`${dropped} server events came before activation and were not kept (at most ${HELD_EVENTS} are)`);
  } catch (error) {
    // never half-activated: the client started at load stops with what was made here
    for (const disposable of made) disposable.dispose();
    await server.stop();
    logs.error("activation failed", error);
    logs.dispose();
    throw error;
  }
  context.subscriptions.push(logs, server, ...made);
  await started.started;
}
