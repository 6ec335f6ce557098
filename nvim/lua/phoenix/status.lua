-- The state of the active conversation as the last events left it, and the statusline function.
local M = {}

M.state = {
  conversation = nil, -- the active conversation's id
  mode = nil,
  policy = nil,
  style = nil,
  model = nil, -- the model that answers the active conversation (issue 17)
  route = nil, -- the route of every message: "ask" or "agent", the machine's choice (issue 14; nil: not known yet)
  status = nil,
  last_seq = 0,
  sandbox = nil,
}

local WORDS = {
  idle = "ready",
  awaiting_llm = "thinking…",
  running_tool = "running a tool…",
  awaiting_approval = "waiting for your approval",
  awaiting_upgrade = "asks to make changes",
  awaiting_agents = "waiting for sub-agents…",
  summarizing = "summarizing…",
  error = "error",
  exhausted = "context full",
  finished = "finished",
}

-- REQ-PERM-009: the policy as the footer shows it.
function M.policy_label(policy)
  if policy == "auto" then
    return "🚀 auto"
  elseif policy == "interactive" then
    return "🔒 interactive"
  end
  return "?"
end

function M.status_words(status)
  return WORDS[status] or status or ""
end

-- For 'statusline' / lualine: "phoenix restricted · 🔒 interactive · chat · ready · ask · claude-sonnet-4-6"
-- (the route, then the model).
function M.statusline()
  local s = M.state
  if not s.conversation then
    return "phoenix: no conversation"
  end
  local line = string.format(
    "phoenix %s · %s · %s · %s",
    s.mode or "?",
    M.policy_label(s.policy),
    s.style or "?",
    M.status_words(s.status)
  )
  if s.route then
    line = line .. " · " .. s.route
  end
  if s.model and s.model ~= "" then
    line = line .. " · " .. s.model
  end
  return line
end

-- A context window in words: 200000 -> "200K", 1000000 -> "1M".
function M.window_text(tokens)
  if type(tokens) ~= "number" then
    return "?"
  elseif tokens >= 1000000 and tokens % 100000 == 0 then
    return string.format("%g", tokens / 1000000) .. "M"
  elseif tokens >= 1000 then
    return string.format("%d", math.floor(tokens / 1000 + 0.5)) .. "K"
  end
  return tostring(tokens)
end

function M.update(fields)
  for key, value in pairs(fields) do
    M.state[key] = value
  end
  vim.cmd("redrawstatus!")
end

return M
