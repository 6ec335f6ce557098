-- The chat's header: the project instructions in effect (REQ-NVIM-017), the model that answers and the key
-- that picks another (REQ-NVIM-018), and the route of the next messages (REQ-AGENT-001). Either part is kept
-- when only another changes.
local attach_list = require("phoenix.attach")
local chat = require("phoenix.chat")
local config = require("phoenix.config")
local status = require("phoenix.status")

local M = {}

local files = nil -- the instructions in effect; nil until the conversation named them

local function thousands(n)
  local text, count = tostring(n), 1
  while count > 0 do
    text, count = text:gsub("^(%d+)(%d%d%d)", "%1,%2")
  end
  return text
end

-- The line naming the project instructions in effect, farthest first:
-- "Instructions: ~/.config/phoenix-lsp/AGENTS.md (cut: 30,000 of 40,000 bytes kept) · AGENTS.md".
function M.instructions_line(list)
  if not list or #list == 0 then
    return "Instructions: none (no AGENTS.md or CLAUDE.md found)"
  end
  local parts = {}
  for _, f in ipairs(list) do
    local text = attach_list.shown(config.root, f.path)
    if f.problem and f.problem ~= vim.NIL then
      text = text .. " (" .. f.problem .. ")"
    elseif f.kept < f.size then
      text = string.format("%s (cut: %s of %s bytes kept)", text, thousands(f.kept), thousands(f.size))
    end
    table.insert(parts, text)
  end
  return "Instructions: " .. table.concat(parts, " · ")
end

function M.model_line()
  local key = config.options and config.options.keys and config.options.keys.model
  local model = status.state.model
  local line = "Model: " .. ((model and model ~= "") and model or "(none yet)")
  if key then
    line = line .. "  (" .. key .. " or :PhoenixModel to choose)"
  end
  return line
end

-- The route beside the model (REQ-AGENT-001): the machine's choice, read from the server at start.
function M.route_line()
  local route = status.state.route
  return "Route: " .. (route or "(not known yet)") .. "  (:PhoenixRoute ask|agent to choose)"
end

function M.show()
  chat.set_header({ M.instructions_line(files or {}), M.model_line(), M.route_line() })
end

-- Redraw the header when it is shown already (before the conversation names its instructions it is not: a
-- header then would read "Instructions: none" until they arrive).
function M.refresh()
  if files then
    M.show()
  end
end

function M.show_instructions(list)
  files = list
  M.show()
end

return M
