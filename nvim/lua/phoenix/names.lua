-- Tool names as people read them (REQ-MCP-023), as the terminal chat, ACP and the plain clients word them: an MCP
-- tool mcp__<server>__<tool> is "<tool> on <server>", an Always Allow rule mcp__<server>__* is "every tool of
-- <server>". Any other name is itself.
local M = {}

-- The server and the tool of an MCP tool's name (or rule), nil for any other name. The server part holds no "__"
-- (the server's name is sanitised so), so the first "__" after "mcp__" ends it.
local function parts(name)
  if type(name) ~= "string" or name:sub(1, 5) ~= "mcp__" then
    return nil
  end
  local rest = name:sub(6)
  local at = rest:find("__", 1, true)
  if not at or at == 1 or at + 2 > #rest then
    return nil
  end
  return rest:sub(1, at - 1), rest:sub(at + 2)
end

function M.tool(name)
  local server, tool = parts(name)
  if not server then
    return name
  end
  return tool .. " on " .. server
end

function M.scope(rule)
  local server, tool = parts(rule)
  if not server then
    return rule
  end
  return tool == "*" and ("every tool of " .. server) or tool
end

-- Whether a name (or rule) is an MCP tool's.
function M.is_mcp(name)
  return parts(name) ~= nil
end

return M
