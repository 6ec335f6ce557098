/**
 * Starts `phoenix-lsp` over stdio with vscode-languageclient, announcing the rich client
 * (`capabilities.experimental.phoenix`), restarts it when its settings change, and never fails silently:
 * a server that cannot start becomes a notification with "Show log" and "Open settings".
 */

import * as fs from "node:fs";
import * as path from "node:path";
import * as vscode from "vscode";
import {
  LanguageClient,
  State,
  type ClientCapabilities,
  type LanguageClientOptions,
  type ServerOptions,
  type StaticFeature,
} from "vscode-languageclient/node";
import { discoverServer, isFailure, type ServerCommand } from "../core/discovery";
import { PhoenixClient } from "../protocol/client";
import type { EditorDiagnosticsParams, EditorLocationsParams } from "../protocol.generated";
import type { PhoenixEvent } from "../protocol/wire";
import type { Logs } from "./logging";
import { describe } from "./logging";
import { openSettings, serverSettings } from "./settings";
import { Sight } from "./sight";

/** Announces the phoenix protocol in `initialize`, so the server sends `phoenix/event`s (REQ-PROTO-001). */
class PhoenixFeature implements StaticFeature {
  fillClientCapabilities(capabilities: ClientCapabilities): void {
    // editorSight: the server may ask what the editor knows (host/sight.ts, REQ-SIGHT-002)
    capabilities.experimental = {
      ...(capabilities.experimental as object | undefined),
      phoenix: { version: 1, editorSight: true },
    };
  }
  getState(): { kind: "static" } {
    return { kind: "static" };
  }
  initialize(): void {}
  clear(): void {}
}

export interface ServerEvents {
  starting(): void;
  ready(client: PhoenixClient, info: { sandbox?: unknown }): void;
  failed(message: string): void;
  event(event: PhoenixEvent): void;
}

function isExecutable(file: string): boolean {
  try {
    fs.accessSync(file, fs.constants.X_OK);
    return fs.statSync(file).isFile();
  } catch {
    return false;
  }
}

export function findServer(): ServerCommand | { message: string; tried: string[] } {
  const settings = serverSettings();
  return discoverServer({
    command: settings.command,
    args: settings.args,
    path: (process.env.PATH ?? "").split(path.delimiter),
    workspaceFolders: (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
    platform: process.platform,
    isExecutable,
  });
}

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private sight: Sight | undefined;
  private starting: Promise<void> | undefined;

  constructor(
    private readonly logs: Logs,
    private readonly events: ServerEvents,
  ) {}

  get running(): boolean {
    return this.client?.state === State.Running;
  }

  async restart(): Promise<void> {
    await this.stop();
    await this.start();
  }

  start(): Promise<void> {
    this.starting ??= this.doStart().finally(() => (this.starting = undefined));
    return this.starting;
  }

  private async doStart(): Promise<void> {
    this.events.starting();
    const found = findServer();
    if (isFailure(found)) {
      this.logs.error(`${found.message} Tried: ${found.tried.join(", ") || "(nothing)"}`);
      this.fail(found.message);
      return;
    }
    const settings = serverSettings();
    const cwd = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    this.logs.info(`starting the server (${found.source}): ${found.command} ${found.args.join(" ")}`);
    const serverOptions: ServerOptions = {
      command: found.command,
      args: found.args,
      options: { env: { ...process.env, ...settings.env }, cwd },
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      outputChannel: this.logs.output,
      traceOutputChannel: this.logs.trace,
      // the chat view tells the user; the client's own popups would say it twice
      revealOutputChannelOn: 4,
    };
    const client = new LanguageClient("phoenix", "Phoenix", serverOptions, clientOptions);
    client.registerFeature(new PhoenixFeature());
    // registered before start, so no approval is ever shown to nobody (REQ-PERM-016)
    client.onNotification("phoenix/event", (event: PhoenixEvent) => this.events.event(event));
    this.sight ??= new Sight();
    const sight = this.sight;
    client.onRequest("phoenix/editorDiagnostics", (params: EditorDiagnosticsParams) => sight.diagnostics(params));
    client.onRequest("phoenix/editorLocations", (params: EditorLocationsParams) => sight.locations(params));
    client.onDidChangeState((e) => {
      if (e.newState === State.Stopped && this.client === client) {
        this.logs.error("the server stopped");
      }
    });
    this.client = client;
    try {
      await client.start();
    } catch (error) {
      this.client = undefined;
      const message =
        `The Phoenix server did not start (${found.command}): ${describe(error)}. ` +
        "Check the log, or set `phoenix.server.command` to a working `phoenix-lsp`.";
      this.logs.error(message);
      this.fail(message);
      return;
    }
    const experimental = client.initializeResult?.capabilities.experimental as { phoenix?: { sandbox?: unknown } } | undefined;
    this.logs.info("the server is ready");
    const connection = {
      sendRequest: <R>(method: string, params: unknown) => client.sendRequest<R>(method, params),
      // phoenix/event is already routed above (a second handler would replace that one)
      onNotification: (method: string, handler: (params: unknown) => void) => client.onNotification(method, handler),
    };
    this.events.ready(new PhoenixClient(connection), { sandbox: experimental?.phoenix?.sandbox });
  }

  private fail(message: string): void {
    this.events.failed(message);
    void vscode.window.showErrorMessage(message, "Show log", "Open settings").then((choice) => {
      if (choice === "Show log") this.logs.show();
      if (choice === "Open settings") void openSettings();
    });
  }

  async stop(): Promise<void> {
    const client = this.client;
    this.client = undefined;
    if (client && client.state !== State.Stopped) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.logs.error("stopping the server failed", error);
      }
    }
  }

  dispose(): void {
    void this.stop();
    this.sight?.dispose();
  }
}
