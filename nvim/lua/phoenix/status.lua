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

-- The status words (every status of the schema has one: tests/clients/nvim/test_protocol.py).
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

M.WORDS = WORDS

function M.status_words(status)
  return WORDS[status] or status or ""
end

-- For 'statusline' / lualine: "phoenix restricted 🔒 interactive · ready · chat · ask · claude-sonnet-4-6".
-- Mode and policy come first and are always shown; the status, style, route and model follow, as many as fit
-- in 60% of the width of the window the statusline is drawn for (`width`, default: the current window's,
-- which is that window while a statusline is drawn), so that a file name beside it keeps its place and a
-- narrow window still shows mode and policy.
function M.statusline(width)
  local s = M.state
  if not s.conversation then
    return "phoenix: no conversation"
  end
  local line = string.format("phoenix %s %s", s.mode or "?", M.policy_label(s.policy))
  width = width or vim.api.nvim_win_get_width(0)
  local budget = math.floor(width * 0.6)
  for _, part in ipairs({ M.status_words(s.status), s.style, s.route, s.model }) do
    if part and part ~= "" then
      local longer = line .. " · " .. part
      if vim.fn.strdisplaywidth(longer) > budget then
        break
      end
      line = longer
    end
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
