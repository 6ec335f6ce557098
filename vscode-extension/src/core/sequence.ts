/**
 * The catch-up rule (REQ-PROTO-007), once for the extension host and the webview: every event of a
 * conversation carries the next number of its `seq` series. Against the last number seen, an event is
 *
 * - `seen`: a duplicate (a catch-up overlapped the live stream): dropped;
 * - `next`: applied;
 * - `gap`: applied, and the events between were missed: the owner asks `phoenix/getConversation` with
 *   `afterSeq` = the last number seen before the gap and merges the answer, page by page while `hasMore`.
 */

import type { GetConversationParams } from "../protocol/wire";

export type SeqVerdict = "seen" | "next" | "gap";

export function seqVerdict(seq: number, lastSeq: number): SeqVerdict {
  if (seq <= lastSeq) return "seen";
  return seq === lastSeq + 1 ? "next" : "gap";
}

/** Messages per `getConversation` page, the first load and every catch-up alike. */
export const PAGE_LIMIT = 1000;

/** The request that closes a gap opened after `afterSeq` (or loads the first page, without it). */
export function catchUpRequest(conversationId: string, afterSeq?: number): GetConversationParams {
  return { conversationId, ...(afterSeq !== undefined ? { afterSeq } : {}), limit: PAGE_LIMIT };
}
