-- The state of the active conversation as the last events left it, and the statusline function.
local M = {}

M.state = {
  conversation = nil, -- the active conversation's id
  mode = nil,
  policy = nil,
  style = nil,
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

-- For 'statusline' / lualine: "phoenix restricted · 🔒 interactive · chat · ready".
function M.statusline()
  local s = M.state
  if not s.conversation then
    return "phoenix: no conversation"
  end
  return string.format(
    "phoenix %s · %s · %s · %s",
    s.mode or "?",
    M.policy_label(s.policy),
    s.style or "?",
    M.status_words(s.status)
  )
end

function M.update(fields)
  for key, value in pairs(fields) do
    M.state[key] = value
  end
  vim.cmd("redrawstatus!")
end

return M
