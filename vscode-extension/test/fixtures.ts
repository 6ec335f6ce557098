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

/**
 * An approval of a bash command's captured changes, in the shape the server sends it (issue 36: a host call named
 * like the patch tool; `diff` = the summary as `# ` lines, then git-style diffs): `n` text files, the first
 * created, the second deleted, the third renamed, the rest modified; a binary file and an ignored folder in the
 * summary.
 */
export function shellReview(n: number, toolUseId = "r1") {
  const summary = [
    `${n} text file(s) as editor edits; 2 other change(s) placed by the server`,
    "binary: 1 (4 B)",
    "  created build/out.bin",
    "ignored folder node_modules: 1 (12 B)",
    "  created node_modules/x.js",
  ];
  const paths: string[] = [];
  let diff = summary.map((l) => `# ${l}\n`).join("");
  for (let i = 0; i < n; i++) {
    const p = `src/mod${String(i).padStart(3, "0")}.py`;
    paths.push(p);
    if (i === 0) diff += `--- /dev/null\n+++ b/${p}\n@@ -0,0 +1,2 @@\n+new one\n+new two\n`;
    else if (i === 1) diff += `--- a/${p}\n+++ /dev/null\n@@ -1,1 +0,0 @@\n-gone\n`;
    else if (i === 2) diff += `--- a/old/${p}\n+++ b/${p}\n`;
    else diff += `--- a/${p}\n+++ b/${p}\n@@ -1,4 +1,4 @@\n zero\n-one ${i}\n+ONE ${i}\n two\n three\n`;
  }
  const files = [...paths, "build/out.bin", "node_modules/x.js", "old/src/mod002.py"].sort();
  const more = Math.max(0, files.length - 50);
  return {
    toolUseId,
    toolName: "patch",
    description: `Apply what the bash command changed in the workspace: ${n} text file(s) as editor edits, 2 other change(s) placed by the server.`,
    arguments: { command: "sed -i s/one/ONE/ src/*.py", files: files.slice(0, 50), ...(more ? { more } : {}) },
    diff,
    scopes: [{ kind: "tool" as const, rule: "patch", label: "patch" }],
  };
}
