/**
 * The phoenix/* requests and the phoenix/event notification over any JSON-RPC connection: a
 * `vscode-languageclient` LanguageClient in the extension, a `vscode-jsonrpc` MessageConnection in the
 * end-to-end test. No `vscode` import.
 */

import type * as W from "./wire";

/** The part of a JSON-RPC connection the client needs (LanguageClient and MessageConnection both fit). */
export interface Connection {
  sendRequest<R>(method: string, params: unknown): Promise<R>;
  // eslint-disable-next-line @typescript-eslint/no-explicit-any -- both libraries' generic handler type
  onNotification(method: string, handler: (...params: any[]) => void): { dispose(): void };
}

/** A JSON-RPC error answer, with the protocol's `data.kind` (REQ-PROTO-003). */
export interface RpcErrorLike {
  code: number;
  message: string;
  data?: Partial<W.ErrorData>;
}

export function rpcError(error: unknown): RpcErrorLike | undefined {
  if (error && typeof error === "object" && "code" in error && "message" in error) {
    const e = error as { code: unknown; message: unknown; data?: unknown };
    if (typeof e.code === "number" && typeof e.message === "string") {
      const data = e.data && typeof e.data === "object" ? (e.data as RpcErrorLike["data"]) : undefined;
      return { code: e.code, message: e.message, data };
    }
  }
  return undefined;
}

/** The kind of a phoenix error (`agentBusy`, `contextExhausted`, ...), or undefined. */
export function errorKind(error: unknown): string | undefined {
  return rpcError(error)?.data?.kind;
}

/** `data.reason` of a refusal (`context_too_large` when a model switch does not fit, ...), or undefined. */
export function errorReason(error: unknown): string | undefined {
  const data = rpcError(error)?.data as { reason?: unknown } | undefined;
  return typeof data?.reason === "string" ? data.reason : undefined;
}

/** `data.field` of an invalidParams error: the parameter refused (`attachments[2]`, ...), or undefined. */
export function errorField(error: unknown): string | undefined {
  const data = rpcError(error)?.data as { field?: unknown } | undefined;
  return typeof data?.field === "string" ? data.field : undefined;
}

/** A one-line message for the user: the server's own text (it says what, why and what next). */
export function errorMessage(error: unknown): string {
  const rpc = rpcError(error);
  if (rpc) return rpc.message;
  return error instanceof Error ? error.message : String(error);
}

export class PhoenixClient {
  constructor(private readonly connection: Connection) {}

  onEvent(handler: (event: W.PhoenixEvent) => void): { dispose(): void } {
    return this.connection.onNotification("phoenix/event", handler);
  }

  private request<R>(method: string, params: unknown): Promise<R> {
    return this.connection.sendRequest<R>(`phoenix/${method}`, params);
  }

  newConversation(params: W.NewConversationParams = {}): Promise<W.NewConversationResult> {
    return this.request("newConversation", params);
  }

  listConversations(includeSubAgents = false): Promise<W.ListConversationsResult> {
    return this.request("listConversations", { includeSubAgents });
  }

  getConversation(params: W.GetConversationParams): Promise<W.GetConversationResult> {
    return this.request("getConversation", params);
  }

  sendMessage(params: W.SendMessageParams): Promise<W.SendMessageResult> {
    return this.request("sendMessage", params);
  }

  cancel(conversationId: string): Promise<W.CancelResult> {
    return this.request("cancel", { conversationId });
  }

  setMode(conversationId: string, mode: W.Mode): Promise<W.SetModeResult> {
    return this.request("setMode", { conversationId, mode });
  }

  respondToModeUpgrade(conversationId: string, approve: boolean, toolUseId?: string): Promise<W.RespondToModeUpgradeResult> {
    return this.request("respondToModeUpgrade", { conversationId, approve, toolUseId });
  }

  /** `rule`: with `alwaysAllow`, the offered scope to add (REQ-PERM-020); absent = the narrowest. */
  respondToApproval(conversationId: string, toolUseId: string, decision: W.Decision, rule?: string): Promise<W.RespondToApprovalResult> {
    const params: W.RespondToApprovalParams = { conversationId, toolUseId, decision, ...(rule !== undefined ? { rule } : {}) };
    return this.request("respondToApproval", params);
  }

  setApprovalPolicy(conversationId: string, policy: W.Policy): Promise<W.SetApprovalPolicyResult> {
    return this.request("setApprovalPolicy", { conversationId, policy });
  }

  setStyle(conversationId: string, style: W.Style): Promise<W.SetStyleResult> {
    return this.request("setStyle", { conversationId, style });
  }

  triggerContinuation(conversationId: string): Promise<W.TriggerContinuationResult> {
    return this.request("triggerContinuation", { conversationId });
  }

  listAlwaysAllowed(conversationId: string): Promise<W.ListAlwaysAllowedResult> {
    return this.request("listAlwaysAllowed", { conversationId });
  }

  /** The models to choose from (REQ-MODEL-001): the API's list, or the built-in one with a `reason`. */
  listModels(refresh = false): Promise<W.ListModelsResult> {
    return this.request("listModels", refresh ? { refresh } : {});
  }

  /** Switch the conversation's model between turns (REQ-MODEL-003); refused while busy or when the context does not fit. */
  setModel(conversationId: string, model: string): Promise<W.SetModelResult> {
    const params: W.SetModelParams = { conversationId, model };
    return this.request("setModel", params);
  }

  /** The route persisted for this machine (REQ-PROTO-051): `ask` unless a client chose `agent`. */
  getRoute(): Promise<W.GetRouteResult> {
    return this.request("getRoute", {});
  }

  /** Persist the route every client uses from now on (REQ-PROTO-052); answers the previous one too. */
  setRoute(route: W.Route): Promise<W.SetRouteResult> {
    const params: W.SetRouteParams = { route };
    return this.request("setRoute", params);
  }

  /** Revoke one rule of the tool (`rule`), or every rule of it (REQ-PERM-021). */
  /** Take back an accepted change set (REQ-BASH-041): `latest`, or its id. */
  undoChanges(conversationId: string, changeSetId = "latest"): Promise<W.UndoChangesResult> {
    return this.request("undoChanges", { conversationId, changeSetId });
  }

  /**
   * A running background command's changes so far, read-only, or (`stop`) the command stopped so that all it
   * changed is reviewed (REQ-BASH-045); `pid` picks one, none: every running one.
   */
  reviewBackground(conversationId: string, pid?: number, stop = false): Promise<W.ReviewBackgroundResult> {
    return this.request("reviewBackground", { conversationId, ...(pid !== undefined ? { pid } : {}), stop });
  }

  revokeAlwaysAllow(conversationId: string, toolName: string, rule?: string): Promise<W.RevokeAlwaysAllowResult> {
    const params: W.RevokeAlwaysAllowParams = { conversationId, toolName, ...(rule !== undefined ? { rule } : {}) };
    return this.request("revokeAlwaysAllow", params);
  }
}
