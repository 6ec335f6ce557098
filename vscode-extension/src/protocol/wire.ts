/**
 * TEMPORARY wire types, until `specs/protocol.schema.json` lands and `protocol.generated.ts` replaces
 * them (then this file only re-exports generated names). Field names follow specs/protocol.md.
 */

export type Mode = "restricted" | "unrestricted";
export type Style = "chat" | "discussion" | "plan" | "development" | "task";
export type Policy = "auto" | "interactive";
export type Status =
  | "idle"
  | "awaiting_llm"
  | "running_tool"
  | "awaiting_approval"
  | "awaiting_upgrade"
  | "awaiting_agents"
  | "summarizing"
  | "error"
  | "exhausted"
  | "finished";
export type Decision = "allow" | "deny" | "alwaysAllow";

export interface SandboxInfo {
  available: boolean;
  landlockAbi: number | null;
  reason?: string | null;
  missing: string[];
}

export type ContentBlock =
  | { type: "text"; text: string }
  | { type: "image"; imageId: string; mediaType: string }
  | { type: "toolUse"; toolUseId: string; toolName: string; arguments: Record<string, unknown> }
  | { type: "toolResult"; toolUseId: string; content: string; isError: boolean };

export interface WireMessage {
  seq: number;
  messageId: string;
  role: "user" | "assistant";
  tag?: string;
  content: ContentBlock[];
  createdAt: string | number;
}

export interface AlwaysAllowOption {
  label?: string;
  scope?: string;
  toolName?: string;
  prefix?: string;
  [key: string]: unknown;
}

export interface ApprovalRequest {
  approvalId: string;
  toolUseId: string;
  toolName: string;
  description: string;
  arguments: Record<string, unknown>;
  diff?: string;
  alwaysAllowOptions?: AlwaysAllowOption[];
}

export interface UpgradeRequest {
  requestId: string;
  toolUseId: string;
  reason: string;
}

export interface ContextUsage {
  usedTokens: number;
  contextWindow: number;
  fraction: number;
}

export interface NewConversationParams {
  workingDirectory?: string;
  model?: string;
  style?: Style;
  approvalPolicy?: Policy;
  continueFrom?: string;
  seedWithSummary?: boolean;
}
export interface NewConversationResult {
  conversationId: string;
  mode: Mode;
  style: Style;
  approvalPolicy: Policy;
  workingDirectory: string;
  model: string;
  sandbox: SandboxInfo;
  continuedFrom?: string;
}

export interface ConversationSummary {
  conversationId: string;
  title: string;
  status: Status;
  model: string;
  createdAt: string | number;
  updatedAt: string | number;
  messageCount: number;
  continuedFrom?: string;
  parentConversationId?: string;
}
export interface ListConversationsResult {
  conversations: ConversationSummary[];
}

export interface GetConversationParams {
  conversationId: string;
  afterSeq?: number;
  limit?: number;
}
export interface GetConversationResult {
  conversationId: string;
  parentConversationId?: string;
  isSubAgent: boolean;
  status: Status;
  mode: Mode;
  style: Style;
  approvalPolicy: Policy;
  workingDirectory: string;
  model: string;
  alwaysAllowed: string[];
  contextUsage: ContextUsage;
  pendingApproval?: ApprovalRequest;
  pendingUpgrade?: UpgradeRequest;
  continuationSummary?: string;
  continuedFrom?: string;
  subAgents: { conversationId: string; task: string; status: Status }[];
  messages: WireMessage[];
  lastSeq: number;
  hasMore: boolean;
  sandbox?: SandboxInfo;
  error?: string;
}

export interface SendMessageParams {
  conversationId: string;
  text: string;
  images?: { mediaType: string; data: string }[];
  route?: "ask" | "agent";
}
export interface SendMessageResult {
  accepted: boolean;
  messageId: string;
  command?: "execute" | "plan";
  mode?: Mode;
}

interface Base {
  conversationId: string;
  parentConversationId?: string;
  seq: number;
  time: string | number;
}

export type PhoenixEvent = Base &
  (
    | { kind: "status"; status: Status; previous: Status; mode: Mode }
    | { kind: "message"; message: WireMessage }
    | { kind: "textDelta"; text: string; requestId: string | number }
    | { kind: "toolStart"; toolUseId: string; toolName: string; arguments: Record<string, unknown>; mode: Mode }
    | { kind: "toolEnd"; toolUseId: string; isError: boolean; summary: string }
    | { kind: "toolRefused"; toolUseId: string; toolName: string; by: string }
    | { kind: "diff"; toolUseId: string; path: string; diff: string }
    | { kind: "modeChanged"; mode: Mode; previous: Mode; actor: string; via?: string | null }
    | { kind: "styleChanged"; style: Style; previous: Style }
    | { kind: "styleSuggestion"; mode: Mode; command: string; text: string }
    | { kind: "policyChanged"; policy: Policy; previous: Policy }
    | ({ kind: "approvalRequested" } & ApprovalRequest)
    | { kind: "approvalResolved"; approvalId: string; decision: string }
    | ({ kind: "upgradeRequested" } & UpgradeRequest)
    | { kind: "upgradeResolved"; requestId: string; approved: boolean; cancelled: boolean }
    | { kind: "alwaysAllowChanged"; toolName: string; allowed: boolean }
    | { kind: "retry"; attempt: number; maxAttempts: number; delayMs: number; reason: string }
    | ({ kind: "usage" } & ContextUsage)
    | ({ kind: "contextWarning" } & ContextUsage)
    | ({ kind: "continuationStarted" } & ContextUsage)
    | { kind: "continuation"; summary: string; fallback: boolean }
    | { kind: "subAgentsSpawned"; toolUseId: string; agents: { conversationId: string; task: string }[] }
    | { kind: "subAgentFinished"; agentId: string; outcome: "submitted" | "failed"; reason?: string | null }
    | { kind: "error"; message: string; errorKind: string }
  );

export type EventKind = PhoenixEvent["kind"];
