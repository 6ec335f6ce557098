-- The route of the next messages, the machine's choice kept by the server (REQ-AGENT-001, REQ-PROTO-051/052).
local chat = require("phoenix.chat")
local header = require("phoenix.header")
local protocol = require("phoenix.protocol")
local rpc = require("phoenix.rpc")
local status = require("phoenix.status")

local M = {}

M.ROUTES = protocol.Route

-- Inside rpc.async: the route the server keeps for this machine (phoenix/getRoute); nil after telling why not
-- (messages are then sent without one, and the server uses its own).
function M.read_route()
  local err, result = rpc.call("phoenix/getRoute", vim.empty_dict())
  if err then
    rpc.report("could not read the route: " .. rpc.error_text(err), vim.log.levels.WARN)
    return nil
  end
  status.update({ route = result.route })
  header.refresh()
  return result.route
end

-- Choose the route of the next messages, for every client of this machine (phoenix/setRoute: the server
-- persists it). Without a route: a picker of the two. A refusal shows the server's message and changes nothing.
function M.set_route(route)
  if not route or route == "" then
    local current = status.state.route
    vim.ui.select(M.ROUTES, {
      prompt = "Phoenix route",
      kind = "phoenix_route",
      format_item = function(r)
        local words = r == "ask" and "the model answers and calls tools itself"
          or "an orchestrator plans and runs scripts"
        return (r == current and "● " or "  ") .. r .. "  (" .. words .. ")"
      end,
    }, function(r)
      if r and r ~= current then
        M.set_route(r)
      end
    end)
    return
  end
  rpc.async(function()
    local err, result = rpc.call("phoenix/setRoute", { route = route })
    if err then
      rpc.report("the route was not changed: " .. rpc.error_text(err), vim.log.levels.WARN)
      return
    end
    status.update({ route = result.route })
    header.refresh()
    chat.note(string.format("route: %s (was %s; every client on this machine)", result.route, result.previous))
  end)
end

return M
