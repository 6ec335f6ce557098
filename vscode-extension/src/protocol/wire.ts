/**
 * The wire types the extension uses, by the names its modules know them. Every type here is a generated
 * one (src/protocol.generated.ts, from specs/protocol.schema.json) or a part of one: nothing is written
 * by hand, so a change on the server shows up as a type error here.
 */

import type * as G from "../protocol.generated";

export type Mode = G.Mode;
export type Style = G.Style;
export type Policy = G.Policy;
export type Decision = G.Decision;
export type Status = G.GetConversationResult["status"];

export type SandboxInfo = G.SandboxInfo;
export type ContextUsage = G.ContextUsage;
export type WireMessage = G.MessageView;
export type ContentBlock = G.MessageView["content"][number];
export type ApprovalRequest = G.PendingApproval;
export type UpgradeRequest = G.PendingUpgrade;

export type NewConversationParams = G.NewConversationParams;
export type NewConversationResult = G.NewConversationResult;
export type ConversationSummary = G.ConversationSummary;
export type ListConversationsResult = G.ListConversationsResult;
export type GetConversationParams = G.GetConversationParams;
export type GetConversationResult = G.GetConversationResult;
export type SendMessageParams = G.SendMessageParams;
export type SendMessageResult = G.SendMessageResult;
export type ImageIn = G.ImageIn;
export type CancelResult = G.CancelResult;
export type SetModeResult = G.SetModeResult;
export type RespondToModeUpgradeResult = G.RespondToModeUpgradeResult;
export type RespondToApprovalParams = G.RespondToApprovalParams;
export type RespondToApprovalResult = G.RespondToApprovalResult;
export type SetApprovalPolicyResult = G.SetApprovalPolicyResult;
export type SetStyleResult = G.SetStyleResult;
export type TriggerContinuationResult = G.TriggerContinuationResult;
export type ListAlwaysAllowedResult = G.ListAlwaysAllowedResult;
export type AlwaysAllowRule = G.AlwaysAllowRule;
export type AlwaysAllowScope = G.AlwaysAllowScope;
export type RevokeAlwaysAllowParams = G.RevokeAlwaysAllowParams;
export type RevokeAlwaysAllowResult = G.RevokeAlwaysAllowResult;
export type UndoChangesResult = G.UndoChangesResult;
export type ReviewBackgroundResult = G.ReviewBackgroundResult;
export type BackgroundChanges = G.BackgroundChanges;
export type ErrorData = G.ErrorData;
export type ListModelsResult = G.ListModelsResult;
export type ModelView = G.ModelView;
export type SetModelParams = G.SetModelParams;
export type SetModelResult = G.SetModelResult;
/** how a message is processed: `ask` (the model calls tools) or `agent` (the orchestrator), specs/modes.md */
export type Route = G.GetRouteResult["route"];
export type GetRouteResult = G.GetRouteResult;
export type SetRouteParams = G.SetRouteParams;
export type SetRouteResult = G.SetRouteResult;

export type PhoenixEvent = G.PhoenixEvent;
export type EventKind = PhoenixEvent["kind"];
/** every tool the model can call (REQ-PROTO-055): a tool call's display is keyed by it */
export type ToolName = G.ToolName;
export type FileAttachment = G.FileAttachment;
export type DiagnosticsAttachment = G.DiagnosticsAttachment;
export type Attachment = FileAttachment | DiagnosticsAttachment;
export type DiagnosticIn = G.DiagnosticIn;
export type LineRange = G.LineRange;
export type InstructionFileView = G.InstructionFileView;
