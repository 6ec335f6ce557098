/**
 * The palette commands. Every id starts with `phoenix.vscode.` so none can collide with a command the
 * server announces in `executeCommandProvider` (VS Code refuses to start a client whose server announces
 * an id the extension registered).
 */

import * as vscode from "vscode";
import { errorMessage } from "../protocol/client";
import type { Controller } from "./controller";
import type { Logs } from "./logging";
import type { ServerManager } from "./server";

export const COMMAND_PREFIX = "phoenix.vscode.";

export function registerCommands(controller: Controller, server: ServerManager, logs: Logs): vscode.Disposable[] {
  const run = (id: string, action: () => Promise<unknown> | unknown): vscode.Disposable =>
    vscode.commands.registerCommand(`${COMMAND_PREFIX}${id}`, async () => {
      try {
        await action();
      } catch (error) {
        logs.error(`${id} failed`, error);
        void vscode.window.showErrorMessage(errorMessage(error));
      }
    });
  return [
    run("newConversation", async () => {
      await controller.focusChat();
      await controller.newConversation();
    }),
    run("switchConversation", () => controller.pickConversation()),
    run("renameConversation", () => controller.rename()),
    run("continueConversation", () => controller.continueInNew()),
    run("cancel", () => controller.cancel()),
    run("toggleMode", () => controller.toggleMode()),
    run("restrict", () => controller.setMode("restricted")),
    run("unrestrict", () => controller.setMode("unrestricted")),
    run("togglePolicy", () => controller.togglePolicy()),
    run("setStyle", () => controller.setStyle()),
    run("chooseModel", () => controller.chooseModel()),
    run("chooseRoute", () => controller.chooseRoute()),
    run("addSelection", () => controller.addSelection()),
    run("manageAlwaysAllowed", () => controller.manageAlwaysAllowed()),
    run("undoChanges", () => controller.undoChanges()),
    run("reviewBackground", () => controller.reviewBackground()),
    run("restartServer", () => server.restart()),
    run("showLog", () => logs.show()),
    run("focusChat", () => controller.focusChat()),
  ];
}
