/**
 * Everything activation sets up once the server is spawned (`extension.ts` spawns it first): the language
 * client, the controller, the chat view, the commands. Bundled apart as `dist/host.js` and loaded after the
 * spawn, so its load (the language client is most of the extension's code) runs while the server boots.
 */

import * as vscode from "vscode";
import { CHAT_VIEW_ID } from "./chatView";
import { registerCommands } from "./commands";
import { Controller } from "./controller";
import type { Launch } from "./launch";
import { Logs } from "./logging";
import { ServerManager } from "./server";
import { onServerSettingsChanged } from "./settings";

/** Sets everything up; `started` settles when the client has started (or failed, which the user is told). */
export function activateHost(
  context: vscode.ExtensionContext,
  launched: Launch,
  /** Date.now() when `activate` was called and when this bundle was loaded (the ready line says them) */
  marks?: { activatedAt: number; loadedAt: number },
): { server: ServerManager; started: Promise<void> } {
  const logs = new Logs();
  const controller = new Controller(context, logs);
  const server = new ServerManager(
    logs,
    {
      starting: () => controller.serverStarting(),
      ready: (client, info) => {
        controller.serverReady(client, info).catch((error) => logs.error("opening the conversation failed", error));
      },
      failed: (message) => controller.serverFailed(message),
      event: (event) => controller.onEvent(event),
    },
    launched,
    marks,
  );
  context.subscriptions.push(
    logs,
    controller,
    server,
    vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, controller.chat),
    ...registerCommands(controller, server, logs),
    onServerSettingsChanged(() => {
      logs.info("server settings changed: restarting the server");
      void server.restart();
    }),
  );
  return { server, started: server.start() };
}
