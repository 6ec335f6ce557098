/** Activation only: each concern lives in its own module under `host/`. */

import * as vscode from "vscode";
import { CHAT_VIEW_ID } from "./host/chatView";
import { registerCommands } from "./host/commands";
import { Controller } from "./host/controller";
import { Logs } from "./host/logging";
import { ServerManager } from "./host/server";
import { onServerSettingsChanged } from "./host/settings";

let server: ServerManager | undefined;

export async function activate(context: vscode.ExtensionContext): Promise<void> {
  const logs = new Logs();
  const controller = new Controller(context, logs);
  server = new ServerManager(logs, {
    starting: () => controller.serverStarting(),
    ready: (client, info) => {
      controller.serverReady(client, info).catch((error) => logs.error("opening the conversation failed", error));
    },
    failed: (message) => controller.serverFailed(message),
    event: (event) => controller.onEvent(event),
  });
  context.subscriptions.push(
    logs,
    controller,
    server,
    vscode.window.registerWebviewViewProvider(CHAT_VIEW_ID, controller.chat),
    ...registerCommands(controller, server, logs),
    onServerSettingsChanged(() => {
      logs.info("server settings changed: restarting the server");
      void server?.restart();
    }),
  );
  await server.start();
}

export async function deactivate(): Promise<void> {
  await server?.stop();
}
