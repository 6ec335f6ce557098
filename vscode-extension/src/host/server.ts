/**
 * Starts `phoenix-lsp` over stdio with vscode-languageclient, announcing the rich client
 * (`capabilities.experimental.phoenix`), restarts it when its settings change, and never fails silently:
 * a server that cannot start becomes a notification with "Show log" and "Open settings".
 */

import type { ChildProcess } from "node:child_process";
import * as vscode from "vscode";
import {
  LanguageClient,
  State,
  type ApplyWorkspaceEditParams,
  type ApplyWorkspaceEditRequest,
  type ApplyWorkspaceEditResult,
  ResponseError,
  type ClientCapabilities,
  type LanguageClientOptions,
  type ServerOptions,
  type StaticFeature,
} from "vscode-languageclient/node";
import { PhoenixClient } from "../protocol/client";
import type { EditorDiagnosticsParams, EditorLocationsParams } from "../protocol.generated";
import type { PhoenixEvent } from "../protocol/wire";
import type { Logs } from "./logging";
import { describe } from "./logging";
import { busyPercent, parseCpuTicks, parseSchedstat, readyLine, schedSince } from "../core/startClock";
import { launchServer, readProc, type Launch } from "./launch";
import { openSettings } from "./settings";
import { Sight } from "./sight";
import { urisToSave, type EditShape } from "../core/landing";

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

/** Date.now() when host.js was loaded and when `activate` was called (the first start's ready line says them) */
export interface StartMarks {
  loadedAt: number;
  /** unset while the client started at load waits for `activate` (noteActivated) */
  activatedAt?: number;
}

export class ServerManager implements vscode.Disposable {
  private client: LanguageClient | undefined;
  private sight: Sight | undefined;
  private starting: Promise<void> | undefined;
  /** the server process of the running client (the client is given it, so stopping it is ours to check) */
  private process: ChildProcess | undefined;
  /** Date.now() at the first start's spawn, once its ready line is written (for noteActivated after it) */
  private firstReady: { spawnedAt: number } | undefined;

  constructor(
    private readonly logs: Logs,
    private readonly events: ServerEvents,
    /** the server spawned at activation, before this module was loaded (extension.ts); used by the first start */
    private launched?: Launch,
    /** when host.js was loaded and `activate` called, for the first start's ready line (extension.ts) */
    private marks?: StartMarks,
  ) {}

  /**
   * `activate` was called (the client may have started before it, host/main.ts): said in the first start's
   * ready line, or in a line of its own when that was written already (bench/vscode.py reads both).
   */
  noteActivated(at: number): void {
    if (this.marks) this.marks.activatedAt ??= at;
    if (this.firstReady) this.logs.info(`activate called ${Math.round(at - this.firstReady.spawnedAt)} ms after the spawn (after the server was ready)`);
  }

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
    const launch = this.launched ?? launchServer();
    const marks = this.launched ? this.marks : undefined;
    this.launched = undefined;
    if (!launch.ok) {
      this.logs.error(`${launch.failure.message} Tried: ${launch.failure.tried.join(", ") || "(nothing)"}`);
      this.fail(launch.failure.message);
      return;
    }
    const found = launch.found;
    let spawnedAt = launch.spawnedAt;
    let clock = launch.clock;
    /** Date.now() when the client has the process and sends `initialize` (the start-up figures) */
    let sentAt: number | undefined;
    this.logs.info(`starting the server (${found.source}): ${found.command} ${found.args.join(" ")}`);
    // the client calls this at each (re)start: the process spawned first, then a new one each time (a server
    // that crashed is restarted by the client itself)
    let first: Launch | undefined = launch;
    const serverOptions: ServerOptions = async () => {
      const current = first ?? launchServer();
      first = undefined;
      if (!current.ok) throw new Error(current.failure.message);
      spawnedAt = current.spawnedAt;
      clock = current.clock;
      this.process = await current.process;
      sentAt = Date.now();
      return this.process;
    };
    const clientOptions: LanguageClientOptions = {
      documentSelector: [{ scheme: "file" }, { scheme: "untitled" }],
      outputChannel: this.logs.output,
      traceOutputChannel: this.logs.trace,
      // the chat view tells the user; the client's own popups would say it twice
      revealOutputChannelOn: 4,
      middleware: { workspace: { handleApplyEdit: (params, next) => saveWhatLands(params, next, this.logs) } },
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
    // the bench reads the spawn time from here (the log stamps a line when its file is open, not when written)
    // and where the start-up time went (core/startClock.ts)
    const readyAt = Date.now();
    const pid = this.process?.pid;
    this.logs.info(
      readyLine({
        readyMs: readyAt - spawnedAt,
        activatedMs: marks?.activatedAt === undefined ? undefined : marks.activatedAt - spawnedAt,
        loadedMs: marks && marks.loadedAt - spawnedAt,
        sentMs: sentAt === undefined ? undefined : sentAt - spawnedAt,
        server: pid === undefined ? undefined : parseSchedstat(readProc(`/proc/${pid}/schedstat`)),
        host: schedSince(clock.host, parseSchedstat(readProc("/proc/self/schedstat"))),
        busy: busyPercent(clock.cpu, parseCpuTicks(readProc("/proc/stat"))),
      }),
    );
    if (marks && marks.activatedAt === undefined) this.firstReady = { spawnedAt };
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
    const process = this.process;
    this.client = undefined;
    this.process = undefined;
    if (client && client.state !== State.Stopped) {
      try {
        await client.stop(5000);
      } catch (error) {
        this.logs.error("stopping the server failed", error);
      }
    }
    // the client ends a process it spawned itself two seconds after shutdown if it is still there; it was given
    // this one, so the same check is made here
    if (process && process.exitCode === null && process.signalCode === null) {
      setTimeout(() => {
        if (process.exitCode === null && process.signalCode === null) process.kill();
      }, 2000).unref();
    }
  }

  dispose(): void {
    void this.stop();
    this.sight?.dispose();
  }
}

/**
 * Applies the server's workspace edit, then saves the documents of a bash command's accepted changes or of an
 * undo (REQ-VSC-018, core/landing.ts) before answering, so the server's "applied" means the disk holds them. A
 * document the user had unsaved changes in before the edit is left unsaved (the server refuses such a file
 * anyway); a save that fails is logged and leaves the buffer to the user, the edit stays applied.
 */
async function saveWhatLands(
  params: ApplyWorkspaceEditParams,
  next: ApplyWorkspaceEditRequest.HandlerSignature,
  logs: Logs,
): Promise<ApplyWorkspaceEditResult> {
  const uris = urisToSave(params.label, params.edit as EditShape);
  const dirty = new Set(vscode.workspace.textDocuments.filter((d) => d.isDirty).map((d) => d.uri.toString()));
  const answer = await next(params, new vscode.CancellationTokenSource().token);
  if (answer instanceof ResponseError) throw answer;
  const result = answer;
  if (!result.applied || uris.length === 0) return result;
  for (const uri of uris) {
    const doc = vscode.workspace.textDocuments.find((d) => d.uri.toString() === vscode.Uri.parse(uri).toString());
    if (!doc || !doc.isDirty || dirty.has(doc.uri.toString())) continue;
    if (!(await doc.save())) logs.error(`${doc.uri.fsPath} was changed by the accepted edit but could not be saved; save it yourself.`);
  }
  return result;
}
