/**
 * Tool names as people read them (REQ-MCP-023), as the terminal chat, Neovim, ACP and the plain clients word
 * them: an MCP tool `mcp__<server>__<tool>` is "<tool> on <server>", and the Always Allow rule
 * `mcp__<server>__*` is "every tool of <server>". Any other name is itself. Pure, so unit-tested.
 */

/** The server and the tool of an MCP tool's name (or rule); undefined for any other name. A server's name holds
 * no `__` (it is sanitised so), so the first `__` after `mcp__` ends it. */
export function mcpParts(name: string): { server: string; tool: string } | undefined {
  if (!name.startsWith("mcp__")) return undefined;
  const rest = name.slice("mcp__".length);
  const at = rest.indexOf("__");
  if (at <= 0 || at + 2 >= rest.length) return undefined;
  return { server: rest.slice(0, at), tool: rest.slice(at + 2) };
}

/** A tool's name as shown: `create_issue on tracker` for `mcp__tracker__create_issue`. */
export function toolWords(name: string): string {
  const parts = mcpParts(name);
  return parts ? `${parts.tool} on ${parts.server}` : name;
}

/** What an Always Allow rule covers, as shown: an MCP tool (`create_issue`) or its whole server
 * (`every tool of tracker`); any other rule as itself. */
export function scopeWords(rule: string): string {
  const parts = mcpParts(rule);
  if (!parts) return rule;
  return parts.tool === "*" ? `every tool of ${parts.server}` : parts.tool;
}
