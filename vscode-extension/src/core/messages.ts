/**
 * Messages between the extension host and the chat webview (not the wire protocol: those types are
 * generated from the server's schema).
 */

import type { ConversationView, ReducerInput } from "./reducer";
import type { Attachment, ConversationSummary, Decision, ListModelsResult, Route } from "../protocol/wire";
import type { Chip, WorkspaceFile } from "./attachments";

export type ServerState = "starting" | "ready" | "failed" | "stopped";

export type HostMessage =
  | { type: "reset"; view: ConversationView | undefined }
  | { type: "input"; input: ReducerInput }
  | { type: "conversations"; conversations: ConversationSummary[]; activeId?: string; titles: Record<string, string> }
  | { type: "server"; state: ServerState; message?: string }
  | { type: "notice"; level: "info" | "warning" | "error"; text: string }
  | { type: "focusInput" }
  /** the answer to the view's `listModels` (the header's model picker) */
  | { type: "models"; models: ListModelsResult }
  /** the route the next messages take (from phoenix/getRoute at start, then each phoenix/setRoute's answer) */
  | { type: "route"; route: Route }
  /** chips for the composer (a selection, a dropped file, `@problems`): added to the draft */
  | { type: "attach"; chips: Chip[] }
  /** the answer to `listFiles`: the workspace's files for the `@` picker */
  | { type: "files"; files: WorkspaceFile[] }
  /**
   * how a `send` ended: ok clears the draft (text, images and chips sent); refused keeps all of it, with
   * `refused` the index of the attachment the server refused (`data.field` = `attachments[i]`)
   */
  | { type: "sendResult"; ok: boolean; refused?: number }
  /** the workspace folders' paths (and the home directory) that paths are shown relative to */
  | { type: "workspace"; folders: string[]; home?: string }
  /**
   * several messages in one postMessage (the host batches per burst of events, core/outbox.ts: one IPC hop);
   * `at`: Date.now() at the post, so bench/vscode.py can tell the host's part of a delta's way from the hop
   */
  | { type: "batch"; messages: HostMessage[]; at?: number };

export interface ImageAttachment {
  mediaType: string;
  /** base64, no data: prefix */
  data: string;
  name: string;
}

export type ViewMessage =
  | { type: "ready" }
  | { type: "send"; text: string; images: ImageAttachment[]; attachments: Attachment[] }
  /** the `@` picker opened: the host lists the workspace's files (`files` answers) */
  | { type: "listFiles" }
  /** `@problems`: the host attaches the current file's diagnostics (`attach` answers) */
  | { type: "attachProblems" }
  /** files dropped on the chat (from the explorer): the host attaches those in the workspace */
  | { type: "attachUris"; uris: string[] }
  | {
      type: "answerApproval";
      conversationId: string;
      toolUseId: string;
      decision: Decision;
      /** alwaysAllow: the scope chosen (REQ-PERM-020) */
      rule?: string;
    }
  | { type: "answerUpgrade"; conversationId: string; toolUseId: string; approve: boolean }
  /** `path`: one file of a multi-file review (REQ-VSC-017) */
  | { type: "openDiff"; conversationId: string; toolUseId: string; path?: string }
  /** the applied review's Undo button (REQ-BASH-041): the change set its result named */
  | { type: "undoChanges"; conversationId: string; changeSetId: string }
  | { type: "togglePolicy" }
  | { type: "toggleMode" }
  | { type: "setStyle" }
  /** the header's model picker opened: the host asks the server for the list (`models` answers) */
  | { type: "listModels" }
  | { type: "setModel"; model: string }
  /** the header's route selector: the user chose another route (the host persists it with phoenix/setRoute) */
  | { type: "setRoute"; route: Route }
  | { type: "cancel" }
  | { type: "newConversation" }
  | { type: "switchConversation"; conversationId?: string }
  | { type: "renameConversation" }
  | { type: "continueInNew" }
  | { type: "manageAlwaysAllowed" }
  | { type: "openSettings" }
  | { type: "showLog" };

/** What the host knows that a (new) webview needs, whatever it missed before it said it was ready. */
export interface HostState {
  server: { state: ServerState; message?: string };
  conversations: ConversationSummary[];
  titles: Record<string, string>;
  view: ConversationView | undefined;
  folders: string[];
  home?: string;
  route?: Route;
  /** the last model list the server gave (the header names the model by it) */
  models?: ListModelsResult;
}

/**
 * The messages that bring a webview that just said `ready` up to date: a message posted before that was
 * dropped (the first model list, asked for as the server starts, usually is), so everything it carried is here.
 */
export function snapshotMessages(s: HostState): HostMessage[] {
  return [
    { type: "server", state: s.server.state, message: s.server.message },
    { type: "conversations", conversations: s.conversations, activeId: s.view?.conversationId, titles: s.titles },
    { type: "reset", view: s.view },
    { type: "workspace", folders: s.folders, home: s.home },
    ...(s.route ? [{ type: "route" as const, route: s.route }] : []),
    ...(s.models ? [{ type: "models" as const, models: s.models }] : []),
  ];
}
