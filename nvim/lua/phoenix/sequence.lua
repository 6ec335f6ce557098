-- The catch-up rule (REQ-PROTO-020, REQ-PROTO-007), decided here and nowhere else in the plugin: a
-- conversation's events come numbered 1, 2, 3...; an event numbered at most the last one processed was seen
-- already (a catch-up covered it), the one after it is next, and any later one means events were missed, which
-- phoenix/getConversation with `afterSeq` = the last one processed fills in.
local M = {}

-- "seen", "next" or "gap".
function M.place(last_seq, seq)
  if seq <= last_seq then
    return "seen"
  elseif seq == last_seq + 1 then
    return "next"
  end
  return "gap"
end

return M
