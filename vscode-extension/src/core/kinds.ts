/**
 * REQ-PROTO-055: every table keyed by event kind or tool name names every one of the protocol's. The
 * compiler checks the tables against the generated types (`Record<EventKind, …>`, `Record<ToolName, …>`); the
 * unit tests compare their keys with the schema itself through `tableProblems`, so a kind added to the schema
 * fails them until the extension decides what it does with it.
 */

/** What is wrong with a table against the protocol's kinds: each kind it lacks, each key that is no kind. */
export function tableProblems(table: string, keys: Iterable<string>, kinds: Iterable<string>): string[] {
  const have = new Set(keys);
  const wanted = [...kinds];
  const problems = wanted
    .filter((kind) => !have.has(kind))
    .map((kind) => `${table} does not handle the kind '${kind}': add it to the table (what the consumer does with it, or why it ignores it)`);
  for (const key of have) {
    if (!wanted.includes(key)) problems.push(`${table} has the key '${key}', which is no kind of the protocol: remove it`);
  }
  return problems;
}
