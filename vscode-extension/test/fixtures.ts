/** Builders for wire values in unit tests (shapes as specs/protocol.md describes them). */

import type { GetConversationResult, PhoenixEvent } from "../src/protocol/wire";

export const CID = "c-1";

type EventBody = PhoenixEvent extends infer E ? (E extends PhoenixEvent ? Omit<E, "conversationId" | "seq" | "time"> : never) : never;

export class Events {
  seq = 0;
  constructor(
    readonly conversationId = CID,
    readonly parentConversationId?: string,
  ) {}

  next(body: EventBody, seq?: number): PhoenixEvent {
    this.seq = seq ?? this.seq + 1;
    return {
      conversationId: this.conversationId,
      ...(this.parentConversationId ? { parentConversationId: this.parentConversationId } : {}),
      seq: this.seq,
      time: 0,
      ...body,
    } as PhoenixEvent;
  }
}

export function snapshot(overrides: Partial<GetConversationResult> = {}): GetConversationResult {
  return {
    conversationId: CID,
    isSubAgent: false,
    status: "idle",
    mode: "restricted",
    style: "chat",
    policy: "interactive",
    workingDirectory: "/home/user/project",
    model: "m",
    alwaysAllowed: [],
    alwaysAllowRules: [],
    instructions: [],
    contextUsage: { usedTokens: 10, contextWindow: 1000, fraction: 0.01 },
    usage: {
      total: { inputTokens: 0, outputTokens: 0, cacheWriteTokens: 0, cacheReadTokens: 0, requests: 0 },
      subAgents: { inputTokens: 0, outputTokens: 0, cacheWriteTokens: 0, cacheReadTokens: 0, requests: 0 },
    },
    subAgents: [],
    messages: [],
    lastSeq: 0,
    hasMore: false,
    sandbox: { available: true, landlockAbi: 7, missing: [] },
    ...overrides,
  };
}

export const HOSTILE = [
  '<img src=x onerror="window.__pwned=1">',
  "<script>window.__pwned=2</script>",
  "[click me](javascript:window.__pwned=3)",
  '<a href="javascript:window.__pwned=4">x</a>',
  "\u001b]8;;javascript:window.__pwned=5\u0007link\u001b]8;;\u0007 \u001b[31mred\u001b[0m \u001b[2J",
  '<svg onload="window.__pwned=6"></svg>',
  '<iframe src="javascript:window.__pwned=7"></iframe>',
  "![x](https://example.invalid/x.png)",
  '```html\n<script>window.__pwned=8</script>\n```',
  '<div style="background:url(javascript:window.__pwned=9)" onclick="window.__pwned=10">x</div>',
].join("\n\n");
