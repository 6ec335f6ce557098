/**
 * Ties the server, the active conversation, the chat view, the status bar and the commands together.
 * It holds no state of its own that matters: the conversation is whatever the server says
 * (`ConversationSession`); only the id of the conversation last shown and the user's display names for
 * conversations are remembered here.
 */

import * as os from "node:os";
import * as path from "node:path";
import * as vscode from "vscode";
import { findView, openRequest, type ConversationView } from "../core/reducer";
import { BUSY_CONTEXT, STYLES, togglePolicy } from "../core/labels";
import { isBusy } from "../core/status";
import { modelGroups, modelListNote, providerNotes } from "../core/models";
import { ROUTES, routeLabel, withRoute } from "../core/routes";
import { inFolder } from "../core/inFolder";
import { reviewOf } from "../core/review";
import {
  diagnosticsChip,
  excludeGlob,
  fileChip,
  MAX_LISTED_FILES,
  selectionLines,
  toDiagnosticIn,
  type Chip,
  type WorkspaceFile,
} from "../core/attachments";
import { BurstOutbox, nodeTimer } from "../core/outbox";
import { snapshotMessages, type HostMessage, type ImageAttachment, type ServerState, type ViewMessage } from "../core/messages";
import { errorField, errorKind, errorMessage, errorReason, type PhoenixClient } from "../protocol/client";
import { reviewBackground } from "../core/background";
import { ConversationSession } from "../protocol/session";
import type {
  AlwaysAllowRule,
  Attachment,
  ConversationSummary,
  Decision,
  ListModelsResult,
  PhoenixEvent,
  Route,
  SandboxInfo,
  SendMessageParams,
} from "../protocol/wire";
import { ChatViewProvider } from "./chatView";
import { ProposedDocuments } from "./diffDocuments";
import type { Logs } from "./logging";
import { conversationDefaults, openSettings } from "./settings";
import { StatusBar } from "./statusBar";

const ACTIVE_KEY = "phoenix.activeConversation";
const TITLES_KEY = "phoenix.conversationTitles";

export class Controller implements vscode.Disposable {
  readonly chat: ChatViewProvider;
  private readonly statusBar = new StatusBar();
  private readonly proposed = new ProposedDocuments();
  private client: PhoenixClient | undefined;
  private session: ConversationSession | undefined;
  private server: { state: ServerState; message?: string } = { state: "starting" };
  private sandbox: SandboxInfo | undefined;
  private conversations: ConversationSummary[] = [];
  private listTimer: ReturnType<typeof setTimeout> | undefined;
  /** messages to the chat view, one post per burst of events, at most two on their way (core/outbox.ts) */
  private readonly outbox = new BurstOutbox<HostMessage>((messages) => this.flush(messages), nodeTimer);
  private statusBarDirty = false;
  /** the last model list the server gave (names for the status bar; the picker asks again each time) */
  private models: ListModelsResult | undefined;
  /**
   * The route every message is sent with (REQ-AGENT-001): read from the server at its start (phoenix/getRoute),
   * then what the user chose (phoenix/setRoute). The server keeps it for the whole machine, not this window.
   */
  private route: Route | undefined;

  constructor(
    private readonly context: vscode.ExtensionContext,
    private readonly logs: Logs,
  ) {
    this.chat = new ChatViewProvider(
      context.extensionUri,
      () => this.fullState(),
      (m) => void this.onViewMessage(m),
      // the clock in the text: the log stamps a channel's first lines when its file is open (bench/vscode.py)
      () => this.logs.info(`the chat view's page is ready (its script ran) at ${Date.now()} ms since the epoch`),
    );
    // before any conversation the status bar shows what a new one starts with, which the settings say
    this.settingsListener = vscode.workspace.onDidChangeConfiguration((e) => {
      if (e.affectsConfiguration("phoenix.approvalPolicy") || e.affectsConfiguration("phoenix.style")) this.updateStatusBar();
    });
  }

  private readonly settingsListener: vscode.Disposable;

  get view(): ConversationView | undefined {
    return this.session?.view;
  }

  // ---------------------------------------------------------------------------------- server life

  serverStarting(): void {
    this.client = undefined;
    this.session?.close();
    this.session = undefined;
    this.setServer("starting");
  }

  serverFailed(message: string): void {
    this.client = undefined;
    this.setServer("failed", message);
  }

  async serverReady(client: PhoenixClient, info: { sandbox?: unknown }): Promise<void> {
    this.client = client;
    this.sandbox = info.sandbox as SandboxInfo | undefined;
    const session = new ConversationSession(client);
    session.onError = (error) => this.logs.error("catching up with the server failed", error);
    session.onChange((change) => {
      if (change.type === "reset") this.post({ type: "reset", view: change.view });
      else this.post({ type: "input", input: change.input });
      this.statusBarDirty = true; // updated once per flush, and only items whose text changed
    });
    this.session = session;
    this.setServer("ready");
    // the models' names for the header and the status bar (the picker asks again when it opens)
    this.listModels().catch((error) => this.logs.error("listing the models failed", error));
    this.readRoute().catch((error) => this.logs.error("reading the route failed (messages take the server's route)", error));
    await this.refreshList();
    const remembered = this.context.workspaceState.get<string>(ACTIVE_KEY);
    const candidate = remembered ?? this.conversations[0]?.conversationId;
    if (candidate) {
      try {
        await this.open(candidate);
      } catch (error) {
        this.logs.error(`could not reopen conversation ${candidate}`, error);
        await this.context.workspaceState.update(ACTIVE_KEY, undefined);
      }
    }
  }

  onEvent(event: PhoenixEvent): void {
    this.session?.handleEvent(event);
    if (event.kind === "approvalResolved") {
      this.proposed.settled(event.toolUseId).catch((error) => this.logs.error("closing the proposed diff failed", error));
    }
    if (event.kind === "status" && !event.parentConversationId) this.scheduleListRefresh();
  }

  private setServer(state: ServerState, message?: string): void {
    this.server = { state, message };
    this.post({ type: "server", state, message });
    this.updateStatusBar();
  }

  private updateStatusBar(): void {
    this.statusBarDirty = false;
    const view = this.view;
    if (view && !view.sandbox && this.sandbox) view.sandbox = this.sandbox;
    // the settings say what a new conversation starts with, shown only while there is none: read then, not
    // at each flush of a stream (each read builds the whole configuration in the extension host)
    this.statusBar.update(view?.loaded ? view : undefined, this.server.state, this.models?.models, () => {
      const defaults = conversationDefaults();
      return { sandbox: this.sandbox, policy: defaults.policy, style: defaults.style };
    });
    this.setBusy(view?.loaded ? isBusy(view.status) : false);
  }

  /** a context key VS Code has not been told is unset, which `when` clauses read as false: nothing to say at
   *  activation (a command to the workbench while the window loads and the server starts) */
  private busy = false;

  /** The `phoenix.busy` context key: the chat view's stop button (view/title) shows only while a turn runs. */
  private setBusy(busy: boolean): void {
    if (busy === this.busy) return;
    this.busy = busy;
    void vscode.commands.executeCommand("setContext", BUSY_CONTEXT, busy);
  }

  // -------------------------------------------------------------------------------- view messages

  private fullState(): HostMessage[] {
    return snapshotMessages({
      server: this.server,
      conversations: this.conversations,
      titles: this.titles(),
      view: this.view,
      folders: (vscode.workspace.workspaceFolders ?? []).map((f) => f.uri.fsPath),
      home: os.homedir(),
      route: this.route,
      models: this.models,
    });
  }

  /**
   * Messages to the webview are queued and sent together: one postMessage (one IPC hop through the workbench)
   * per burst of events, right after the I/O that brought them, or, while two posts are on their way, when the first was
   * handed over (core/outbox.ts); the webview draws each as it comes.
   */
  private post(message: HostMessage): void {
    if (message.type === "reset") this.outbox.drop((m) => m.type === "input" || m.type === "reset");
    this.outbox.push(message);
  }

  /** posts a burst; the outbox holds the next until the answer settles (the workbench handed this one over) */
  private flush(messages: HostMessage[]): Thenable<boolean> | undefined {
    const posted = this.chat.post({ type: "batch", messages, at: Date.now() });
    if (this.statusBarDirty) this.updateStatusBar();
    return posted;
  }

  private notice(level: "info" | "warning" | "error", text: string): void {
    this.post({ type: "notice", level, text });
    if (level === "error") this.logs.error(text);
  }

  async onViewMessage(m: ViewMessage): Promise<void> {
    try {
      switch (m.type) {
        case "ready":
          return;
        case "send":
          return await this.sendFromView(m.text, m.images, m.attachments ?? []);
        case "listFiles":
          this.post({ type: "files", files: await this.listFiles() });
          return;
        case "attachProblems":
          return await this.attachProblems();
        case "attachUris":
          return this.attachUris(m.uris);
        case "answerApproval":
          return await this.answerApproval(m.conversationId, m.toolUseId, m.decision, m.rule);
        case "answerUpgrade":
          await this.need().respondToModeUpgrade(m.conversationId, m.approve, m.toolUseId);
          return;
        case "openDiff":
          return await this.openDiff(m.conversationId, m.toolUseId, m.path);
        case "undoChanges":
          return await this.undoChanges(m.changeSetId, m.conversationId);
        case "togglePolicy":
          return await this.togglePolicy();
        case "toggleMode":
          return await this.toggleMode();
        case "setStyle":
          return await this.setStyle();
        case "listModels":
          await this.listModels();
          return;
        case "setModel":
          return await this.setModel(m.model);
        case "setRoute":
          return await this.setRoute(m.route);
        case "cancel":
          return await this.cancel();
        case "newConversation":
          await this.newConversation();
          return;
        case "switchConversation":
          if (m.conversationId) return await this.open(m.conversationId);
          return await this.refreshList();
        case "renameConversation":
          return await this.rename();
        case "continueInNew":
          return await this.continueInNew();
        case "manageAlwaysAllowed":
          return await this.manageAlwaysAllowed();
        case "openSettings":
          await openSettings();
          return;
        case "showLog":
          this.logs.show();
          return;
      }
    } catch (error) {
      // a refused model switch is a warning: nothing changed, and the server's message says how to go on
      this.notice(errorReason(error) === "context_too_large" ? "warning" : "error", errorMessage(error));
      if (errorKind(error) === "requestNotOpen" && this.session) void this.reload();
    }
  }

  // ------------------------------------------------------------------------------------- actions

  private need(): PhoenixClient {
    if (!this.client) {
      throw new Error(
        this.server.state === "failed"
          ? "The Phoenix server is not running: see the log, fix the setting and run “Phoenix: Restart the Server”."
          : "The Phoenix server is still starting; try again in a moment.",
      );
    }
    return this.client;
  }

  private needView(): ConversationView {
    const view = this.view;
    if (!view) throw new Error("No conversation is open: send a message or run “Phoenix: New Conversation” first.");
    return view;
  }

  async open(conversationId: string): Promise<void> {
    const session = this.session;
    if (!session) throw new Error("The Phoenix server is not ready yet.");
    await session.open(conversationId);
    await this.context.workspaceState.update(ACTIVE_KEY, conversationId);
    this.post({ type: "conversations", conversations: this.conversations, activeId: conversationId, titles: this.titles() });
    this.updateStatusBar();
  }

  private async reload(): Promise<void> {
    const id = this.view?.conversationId;
    if (id) await this.open(id);
  }

  async newConversation(extra: { continueFrom?: string; model?: string } = {}): Promise<string> {
    const client = this.need();
    const defaults = conversationDefaults();
    const folder = vscode.workspace.workspaceFolders?.[0]?.uri.fsPath;
    const result = await client.newConversation({
      ...defaults,
      ...(folder ? { workingDirectory: folder } : {}),
      ...(extra.continueFrom ? { continueFrom: extra.continueFrom, seedWithSummary: true } : {}),
      ...(extra.model ? { model: extra.model } : {}),
    });
    this.sandbox = result.sandbox;
    await this.open(result.conversationId);
    await this.refreshList();
    this.post({ type: "focusInput" });
    return result.conversationId;
  }

  /**
   * The chat view's send: the view keeps its draft until `sendResult` says the server took it; a refused
   * attachment (`invalidParams` with `data.field` = `attachments[i]`) shows the server's message, which
   * names the file, and marks its chip.
   */
  private async sendFromView(text: string, images: ImageAttachment[], attachments: Attachment[]): Promise<void> {
    let ok = false;
    let refused: number | undefined;
    try {
      ok = await this.send(text, images, attachments);
    } catch (error) {
      const field = /^attachments\[(\d+)\]/.exec(errorField(error) ?? "");
      if (field) refused = Number(field[1]);
      throw error;
    } finally {
      this.post({ type: "sendResult", ok, ...(refused !== undefined ? { refused } : {}) });
    }
  }

  /** Send a message; false when the server declined it in a way the user is told about (context exhausted). */
  async send(text: string, images: ImageAttachment[], attachments: Attachment[] = []): Promise<boolean> {
    const client = this.need();
    const id = this.view?.conversationId ?? (await this.newConversation());
    try {
      await client.sendMessage(
        withRoute(
          {
            conversationId: id,
            text,
            // the schema caps both lists at 20 as tuple types; the composer attaches at most 20 of each
            ...(images.length > 0
              ? { images: images.map((i) => ({ mediaType: i.mediaType, data: i.data })) as SendMessageParams["images"] }
              : {}),
            ...(attachments.length > 0 ? { attachments: attachments as SendMessageParams["attachments"] } : {}),
          },
          this.route, // the selected route goes with every message (REQ-AGENT-001)
        ),
      );
    } catch (error) {
      const kind = errorKind(error);
      if (kind === "contextExhausted") {
        this.notice("warning", `${errorMessage(error)} Use “Continue in a new conversation”.`);
        return false;
      }
      throw error;
    }
    this.scheduleListRefresh();
    return true;
  }

  // ------------------------------------------------------------------------------- attachments

  /** Give chips to the chat view (revealed first), even when it is not open yet. */
  private async addChips(chips: Chip[]): Promise<void> {
    if (chips.length === 0) return;
    await this.chat.reveal();
    this.chat.postWhenReady({ type: "attach", chips });
    this.post({ type: "focusInput" });
  }

  private shownPath(uri: vscode.Uri): string {
    return vscode.workspace.asRelativePath(uri, (vscode.workspace.workspaceFolders?.length ?? 0) > 1);
  }

  /**
   * “Phoenix: Add Selection to Phoenix” (the editor's context menu and Ctrl+Alt+A): the active editor's file
   * and the selected lines as a chip; without a selection, the whole file. The server reads the unsaved buffer.
   */
  async addSelection(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor) throw new Error("No editor is active: open a file and select the lines to attach.");
    const doc = editor.document;
    if (doc.uri.scheme !== "file") throw new Error(`${doc.uri.toString()} is not a file on disk, so Phoenix cannot attach it.`);
    const chips = editor.selections.map((s) => fileChip(doc.uri.toString(), this.shownPath(doc.uri), selectionLines(s.start, s.end)));
    await this.addChips(chips);
  }

  /** `@problems`: the diagnostics of the active editor's file. */
  private async attachProblems(): Promise<void> {
    const editor = vscode.window.activeTextEditor;
    if (!editor) throw new Error("@problems attaches the problems of the file in the active editor, and no editor is active.");
    const uri = editor.document.uri;
    const diagnostics = vscode.languages.getDiagnostics(uri).map((d) => toDiagnosticIn(d));
    await this.addChips([diagnosticsChip(uri.toString(), this.shownPath(uri), diagnostics)]);
  }

  /** Files dropped on the chat: those in a workspace folder become chips; others are reported. */
  private attachUris(uris: string[]): void {
    const chips: Chip[] = [];
    const outside: string[] = [];
    for (const raw of uris) {
      let uri: vscode.Uri;
      try {
        uri = /^[a-z][a-z0-9+.-]*:/i.test(raw) && !/^[a-z]:\\/i.test(raw) ? vscode.Uri.parse(raw, true) : vscode.Uri.file(raw);
      } catch {
        outside.push(raw);
        continue;
      }
      if (uri.scheme === "file" && vscode.workspace.getWorkspaceFolder(uri)) chips.push(fileChip(uri.toString(), this.shownPath(uri)));
      else outside.push(uri.scheme === "file" ? uri.fsPath : raw);
    }
    if (outside.length > 0) this.notice("warning", `Only files in the workspace can be attached; not attached: ${outside.join(", ")}.`);
    if (chips.length > 0) this.post({ type: "attach", chips });
  }

  /** The workspace's files for the `@` picker: bounded, without the usual build and tool directories. */
  async listFiles(): Promise<WorkspaceFile[]> {
    const exclude = excludeGlob(
      vscode.workspace.getConfiguration("files").get<Record<string, unknown>>("exclude"),
      vscode.workspace.getConfiguration("search").get<Record<string, unknown>>("exclude"),
    );
    const uris = await vscode.workspace.findFiles("**/*", exclude, MAX_LISTED_FILES);
    return uris.map((uri) => ({ uri: uri.toString(), path: this.shownPath(uri) }));
  }

  private async answerApproval(conversationId: string, toolUseId: string, decision: Decision, rule?: string): Promise<void> {
    await this.need().respondToApproval(conversationId, toolUseId, decision, rule);
  }

  async togglePolicy(): Promise<void> {
    const view = this.needView();
    await this.need().setApprovalPolicy(view.conversationId, togglePolicy(view.policy));
  }

  /** Downgrade at once; an upgrade asks first (the user is the approver, `/execute` semantics). */
  async toggleMode(): Promise<void> {
    const view = this.needView();
    if (view.mode === "unrestricted") {
      await this.setMode("restricted");
      return;
    }
    const upgrade = openRequest(view)?.upgrade;
    const detail = upgrade
      ? `The agent asked for it: ${upgrade.reason}`
      : "Commands will run without the kernel sandbox and patches can change files (the approval policy still applies).";
    const choice = await vscode.window.showWarningMessage("Unrestrict this conversation?", { modal: true, detail }, "Unrestrict");
    if (choice === "Unrestrict") await this.setMode("unrestricted");
  }

  async setMode(mode: "restricted" | "unrestricted"): Promise<void> {
    const view = this.needView();
    try {
      await this.need().setMode(view.conversationId, mode);
    } catch (error) {
      if (errorKind(error) === "sandboxUnavailable") {
        void vscode.window.showWarningMessage(errorMessage(error));
        return;
      }
      throw error;
    }
  }

  async setStyle(): Promise<void> {
    const view = this.needView();
    const picked = await vscode.window.showQuickPick(
      STYLES.map((s) => ({ label: s, description: s === view.style ? "current" : undefined })),
      { title: "Phoenix: style (how the agent talks; the mode is unchanged)" },
    );
    if (picked) await this.need().setStyle(view.conversationId, picked.label as (typeof STYLES)[number]);
  }

  /** Ask the server for the models (REQ-MODEL-001: at most ~1.5 s) and give the list to the chat view. */
  async listModels(): Promise<ListModelsResult> {
    const result = await this.need().listModels();
    this.models = result;
    this.post({ type: "models", models: result });
    this.statusBarDirty = true;
    return result;
  }

  /**
   * Switch the open conversation's model (REQ-MODEL-003); without a conversation, start one with it.
   * A refusal (busy, or a context too large for the new window) propagates with the server's message,
   * which says what happened and how to go on; the header follows the `modelChanged` event.
   */
  async setModel(model: string): Promise<void> {
    const view = this.view;
    if (!view) {
      await this.newConversation({ model });
      return;
    }
    await this.need().setModel(view.conversationId, model);
  }

  /** Ask the server for the route (REQ-PROTO-051) and give it to the chat view's selector. */
  async readRoute(): Promise<Route> {
    const { route } = await this.need().getRoute();
    this.route = route;
    this.post({ type: "route", route });
    return route;
  }

  /**
   * Switch the route (REQ-PROTO-052): persisted by the server for every client on this machine, used from the
   * next message. The selector follows the server's answer; a refusal keeps the route and shows why.
   */
  async setRoute(route: Route): Promise<void> {
    const result = await this.need().setRoute(route);
    this.route = result.route;
    this.post({ type: "route", route: result.route });
    this.logs.info(`route: ${result.route} (was ${result.previous})`);
  }

  /** The palette's “Phoenix: Choose Route”: the selector's two routes in a quick pick. */
  async chooseRoute(): Promise<void> {
    const current = this.route ?? (await this.readRoute());
    const picked = await vscode.window.showQuickPick(
      ROUTES.map((r) => ({
        label: `${r === current ? "$(check) " : ""}${routeLabel(r).text}`,
        description: r === current ? "in use" : undefined,
        detail: routeLabel(r).tooltip,
        route: r,
      })),
      { title: "Phoenix: route of the next messages (every client on this machine)" },
    );
    if (picked && picked.route !== current) await this.setRoute(picked.route);
  }

  /** The palette's “Phoenix: Choose Model”: the same list as the header's picker, in a quick pick. */
  async chooseModel(): Promise<void> {
    const result = await this.listModels();
    const current = this.view?.model;
    const note = modelListNote(result);
    type Item = vscode.QuickPickItem & { id?: string; current?: boolean };
    const items: Item[] = [];
    for (const group of modelGroups(result, current)) {  // one separator per provider (issue 27)
      items.push({ label: group.provider, kind: vscode.QuickPickItemKind.Separator });
      for (const c of group.choices) {
        items.push({
          label: `${c.current ? "$(check) " : ""}${c.label}`,
          description: [c.description, c.current ? "in use" : "", c.isDefault ? "default" : ""].filter(Boolean).join(" · "),
          id: c.id,
          current: c.current,
        });
      }
    }
    const notes = [note, ...providerNotes(result)].filter(Boolean).join(" ");
    const picked = await vscode.window.showQuickPick(items, {
      title: "Phoenix: model of this conversation",
      placeHolder: notes || "Choose the model that answers from the next turn",
    });
    if (!picked || picked.current || !picked.id) return;
    try {
      await this.setModel(picked.id);
    } catch (error) {
      if (errorReason(error) === "context_too_large") {
        const action = "Continue in a New Conversation";
        const choice = await vscode.window.showWarningMessage(errorMessage(error), action);
        if (choice === action) await this.continueInNew();
        return;
      }
      throw error;
    }
  }

  async cancel(): Promise<void> {
    const view = this.view;
    if (view) await this.need().cancel(view.conversationId);
  }

  async refreshList(): Promise<void> {
    if (!this.client) return;
    const result = await this.client.listConversations();
    this.conversations = result.conversations;
    this.post({ type: "conversations", conversations: this.conversations, activeId: this.view?.conversationId, titles: this.titles() });
  }

  private scheduleListRefresh(): void {
    if (this.listTimer) return;
    this.listTimer = setTimeout(() => {
      this.listTimer = undefined;
      this.refreshList().catch((error) => this.logs.error("listing conversations failed", error));
    }, 500);
  }

  async pickConversation(): Promise<void> {
    await this.refreshList();
    const titles = this.titles();
    const picked = await vscode.window.showQuickPick(
      this.conversations.map((c) => ({
        label: titles[c.conversationId] || c.title || "(untitled)",
        description: `${c.status} · ${c.messageCount} messages`,
        id: c.conversationId,
      })),
      { title: "Phoenix: switch conversation" },
    );
    if (picked) await this.open(picked.id);
  }

  async rename(): Promise<void> {
    const view = this.needView();
    const titles = this.titles();
    const current = titles[view.conversationId] || this.conversations.find((c) => c.conversationId === view.conversationId)?.title;
    const name = await vscode.window.showInputBox({ title: "Rename conversation", value: current ?? "" });
    if (name === undefined) return;
    if (name.trim()) titles[view.conversationId] = name.trim();
    else delete titles[view.conversationId];
    await this.context.globalState.update(TITLES_KEY, titles);
    this.post({ type: "conversations", conversations: this.conversations, activeId: view.conversationId, titles });
  }

  private titles(): Record<string, string> {
    return { ...this.context.globalState.get<Record<string, string>>(TITLES_KEY, {}) };
  }

  /** Continue in a new conversation seeded with the summary (summarising first when not yet exhausted). */
  async continueInNew(): Promise<void> {
    const view = this.needView();
    const client = this.need();
    if (view.status !== "exhausted") {
      await client.triggerContinuation(view.conversationId);
      await this.waitFor(() => this.view?.conversationId === view.conversationId && this.view.status === "exhausted", 120_000);
    }
    await this.newConversation({ continueFrom: view.conversationId });
  }

  private waitFor(predicate: () => boolean, timeoutMs: number): Promise<void> {
    return new Promise((resolve, reject) => {
      if (predicate()) return resolve();
      const started = Date.now();
      const timer = setInterval(() => {
        if (predicate()) {
          clearInterval(timer);
          resolve();
        } else if (Date.now() - started > timeoutMs) {
          clearInterval(timer);
          reject(new Error("The summary of the conversation did not arrive in time; try “Continue in a new conversation” again."));
        }
      }, 100);
    });
  }

  /**
   * "Phoenix: Undo Last Change Set" (REQ-BASH-041): the server restores the rest and sends the text files as
   * one workspace edit, which VS Code applies (Edit > Undo redoes the change); what was kept is said.
   */
  async undoChanges(changeSetId = "latest", conversationId?: string): Promise<void> {
    const done = await this.need().undoChanges(conversationId ?? this.needView().conversationId, changeSetId);
    const kept = done.refused.map((r) => `${r.path} (${r.why})`).join("; ");
    if (done.undone && done.refused.length === 0) void vscode.window.showInformationMessage(done.message);
    else void vscode.window.showWarningMessage(kept && !done.message.includes(kept) ? `${done.message} ${kept}` : done.message);
  }

  /**
   * "Phoenix: Review Background Command" (REQ-BASH-045): a running background command's changes so far in a diff
   * document, then stop it for their review or keep it running (core/background.ts is the flow).
   */
  async reviewBackground(): Promise<void> {
    const client = this.need();
    await reviewBackground(client, {
      pick: async (items) => (await vscode.window.showQuickPick(items, { title: "Which background command?" }))?.pid,
      show: async (document) => {
        const doc = await vscode.workspace.openTextDocument({ language: "diff", content: document });
        await vscode.window.showTextDocument(doc, { preview: true, preserveFocus: true });
      },
      ask: (message, choices) => Promise.resolve(vscode.window.showInformationMessage(message, ...choices)),
      info: (message) => void vscode.window.showInformationMessage(message),
      warn: (message) => void vscode.window.showWarningMessage(message),
    }, this.needView().conversationId, errorMessage);
  }

  async manageAlwaysAllowed(): Promise<void> {
    const view = this.needView();
    const client = this.need();
    const { tools } = await client.listAlwaysAllowed(view.conversationId);
    if (tools.length === 0) {
      void vscode.window.showInformationMessage("This conversation has no always-allow rules: every write or exec call asks.");
      return;
    }
    const picked = await vscode.window.showQuickPick(
      tools.map((t) => ({ label: t.label, description: describeRule(t), rule: t })),
      { title: "Always-allow rules of this conversation: pick the ones to revoke", canPickMany: true },
    );
    for (const p of picked ?? []) await client.revokeAlwaysAllow(view.conversationId, p.rule.toolName, p.rule.rule);
  }

  /**
   * The proposed change of a tool call in VS Code's diff editor: a patch's file, or `file` of a multi-file
   * review (REQ-VSC-017), found in the review's own diff (never a path the view chose).
   */
  async openDiff(conversationId: string, toolUseId: string, file?: string): Promise<void> {
    const root = this.needView();
    const view = findView(root, conversationId) ?? root;
    const approval = view.pendingApproval?.toolUseId === toolUseId ? view.pendingApproval : undefined;
    const card = view.tools[toolUseId];
    const diff = approval?.diff ?? card?.diff?.diff;
    const args = approval?.arguments ?? card?.arguments ?? {};
    const label = approval ? "waiting for your approval" : "applied";
    const pending = approval ? toolUseId : undefined;
    if (file !== undefined) {
      const review = approval ? reviewOf(approval) : undefined;
      const one = review?.files.find((f) => f.path === file);
      if (!one) throw new Error(`${file} is not a file of this review; nothing to show.`);
      const target = inFolder(view.workingDirectory, one.path);
      const source = one.status === "created" ? undefined : inFolder(view.workingDirectory, one.oldPath ?? one.path);
      await this.proposed.open(target, one.diff, label, pending, source ?? null);
      return;
    }
    if (!diff || typeof args.path !== "string") {
      throw new Error("This tool call has no diff to show.");
    }
    const target = path.isAbsolute(args.path) ? args.path : path.join(view.workingDirectory, args.path);
    await this.proposed.open(target, diff, label, pending);
  }

  async focusChat(): Promise<void> {
    await this.chat.reveal();
  }

  dispose(): void {
    if (this.listTimer) clearTimeout(this.listTimer);
    this.outbox.dispose();
    this.settingsListener.dispose();
    this.statusBar.dispose();
    this.proposed.dispose();
  }
}

function describeRule(rule: AlwaysAllowRule): string {
  return rule.kind === "prefix"
    ? `${rule.toolName} commands whose every part starts so, in this conversation`
    : `every ${rule.toolName} call in this conversation`;
}
