-- The active conversation's events (phoenix/event) shown in the chat, in order: each is processed once, in
-- its sequence (phoenix.sequence decides), and a gap is filled from the server (catch_up).
local approval = require("phoenix.approval")
local chat = require("phoenix.chat")
local dialog = require("phoenix.dialog")
local header = require("phoenix.header")
local names = require("phoenix.names")
local rpc = require("phoenix.rpc")
local sequence = require("phoenix.sequence")
local status = require("phoenix.status")

local M = {}

local catching_up = false
local held = {} -- events that arrived during a catch-up
local stopped = false -- the user stopped the turn (:PhoenixCancel, <C-c>) and it has not ended yet

-- The user stopped the turn: when it ends, what arrived of the answer stays, marked (REQ-NVIM-009).
function M.stopping()
  local st = status.state.status
  stopped = stopped or (st ~= nil and st ~= "idle" and st ~= "error" and st ~= "exhausted")
end

-- Another conversation is shown: nothing held or stopped for the previous one applies.
function M.reset()
  held = {}
  stopped = false
end

M.handle = {}
local handle = M.handle

function handle.status(ev)
  status.update({ status = ev.status, mode = ev.mode or status.state.mode })
  if ev.status == "idle" and stopped then
    -- what arrived of a stopped answer stays, marked (it is never persisted, so the model does not see it)
    stopped = false
    if chat.keep_stream() then
      chat.note("stopped by you: the unfinished answer above stays here only (it is not part of the conversation)")
    else
      chat.note("stopped by you")
    end
  elseif ev.status == "idle" or ev.status == "error" then
    stopped = false
    chat.drop_stream() -- a failed answer is never persisted
  end
end

function handle.message(ev)
  chat.message(ev.message)
end

function handle.textDelta(ev)
  chat.stream(ev.text)
end

function handle.modeChanged(ev)
  status.update({ mode = ev.mode })
  chat.note("mode: " .. ev.mode)
end

function handle.policyChanged(ev)
  status.update({ policy = ev.policy })
  chat.note("policy: " .. status.policy_label(ev.policy))
end

function handle.styleChanged(ev)
  status.update({ style = ev.style })
  chat.note("style: " .. ev.style)
end

function handle.modelChanged(ev)
  status.update({ model = ev.model })
  header.show()
  chat.note(string.format("model: %s (was %s; %s-token context window)", ev.model, ev.previous or "?",
    status.window_text(ev.contextWindow)))
end

function handle.styleSuggestion(ev)
  chat.note(ev.text .. " (" .. ev.command .. ")")
end

function handle.approvalRequested(ev)
  approval.ask(ev)
end

function handle.approvalResolved(ev)
  if dialog.current_id() == ev.toolUseId then
    dialog.close() -- answered elsewhere (another client, a cancel)
  end
  chat.note("approval: " .. ev.decision)
end

-- Which rule was granted (or revoked), in words: the user sees what Always Allow added (REQ-PERM-024).
function handle.alwaysAllowChanged(ev)
  local what = names.scope(ev.toolName)
  if ev.scope == "prefix" and ev.rule and ev.rule ~= "" then
    what = ev.toolName .. ": " .. ev.rule
  end
  if ev.allowed then
    chat.note("always allowed in this conversation: " .. what)
  else
    chat.note("asks again in this conversation: " .. what)
  end
end

function handle.upgradeRequested(ev)
  approval.ask_upgrade(ev)
end

function handle.upgradeResolved(ev)
  if dialog.current_id() == ev.toolUseId then
    dialog.close()
  end
  chat.note(ev.approved and "changes allowed (unrestricted)" or "changes not allowed")
end

function handle.diff(ev)
  chat.diff(ev.path, ev.diff)
end

function handle.error(ev)
  chat.note("error: " .. (ev.message or ""))
end

-- REQ-SEC-012: what the model request had withheld, by source (never the value)
function handle.secretWithheld(ev)
  chat.note(ev.message or "a secret was withheld from the model's request")
end

function handle.toolRefused(ev)
  local mode = status.state.mode or "this"
  local hint = mode == "restricted" and " (:PhoenixMode unrestricted switches to Unrestricted)" or ""
  chat.note(names.tool(ev.toolName) .. " refused in " .. mode .. " mode" .. hint)
end

-- The kinds this plugin shows nothing for, and why (REQ-PROTO-055): with M.handle they name every event kind of
-- the protocol (tests/clients/nvim/test_kinds.py compares them with the schema's), so a new kind fails the tests
-- until it is decided here.
M.ignored = {
  toolStart = "the status line says a tool runs; the call is shown from the persisted message",
  toolEnd = "the call's result is shown from the persisted message",
  retry = "the status line shows the turn as still thinking; an error that ends it is shown",
  usage = "the context usage is not shown in this plugin",
  contextWarning = "the context usage is not shown in this plugin; a full context ends the turn with its status",
  continuationStarted = "the status line shows the summarizing status",
  continuation = "the summary arrives as a persisted message",
  subAgentsSpawned = "the spawn_agents call is shown from the persisted message; sub-agents' questions are asked",
  subAgentFinished = "their results come back as the spawn_agents call's result",
}

-- What is wrong with the tables against the protocol's event kinds `kinds`: each kind neither handled nor
-- ignored, each key that is no kind, each kind both handled and ignored (empty when they are whole).
function M.check(kinds)
  local problems, wanted = {}, {}
  for _, kind in ipairs(kinds) do
    wanted[kind] = true
    if not handle[kind] and not M.ignored[kind] then
      table.insert(problems, "events.lua does not handle the kind '" .. kind .. "': add it to M.handle or M.ignored")
    elseif handle[kind] and M.ignored[kind] then
      table.insert(problems, "events.lua both handles and ignores the kind '" .. kind .. "'")
    end
  end
  for _, tbl in ipairs({ handle, M.ignored }) do
    for key in pairs(tbl) do
      if not wanted[key] then
        table.insert(problems, "events.lua has the key '" .. key .. "', which is no kind of the protocol: remove it")
      end
    end
  end
  table.sort(problems)
  return problems
end

local unknown = {} -- the unknown kinds said already: once each

local function dispatch(ev)
  local fn = handle[ev.kind]
  if fn then
    fn(ev)
  elseif not M.ignored[ev.kind] then
    -- a kind this plugin does not know (a newer server): said once, never dropped silently (REQ-PROTO-055)
    local kind = tostring(ev.kind):sub(1, 80)
    if not unknown[kind] then
      unknown[kind] = true
      rpc.report("the server sent an event of a kind this plugin does not know ('" .. kind
        .. "'); it is not shown. Update the phoenix plugin.", vim.log.levels.WARN)
    end
  end
end

-- The handler of phoenix/event (REQ-PROTO-020 / 007): events come numbered; a gap means some were missed.
function M.on_event(_, ev)
  if type(ev) ~= "table" then
    return
  end
  local s = status.state
  if ev.parentConversationId then
    if ev.parentConversationId == s.conversation then
      if ev.kind == "approvalRequested" then
        approval.ask(ev)
      elseif ev.kind == "upgradeRequested" then
        approval.ask_upgrade(ev)
      end
    end
    return
  end
  if ev.conversationId ~= s.conversation then
    return
  end
  if catching_up then
    table.insert(held, ev)
    return
  end
  local place = sequence.place(s.last_seq, ev.seq)
  if place == "seen" then
    return
  elseif place == "gap" then
    M.catch_up(s.last_seq)
    table.insert(held, ev)
    return
  end
  s.last_seq = ev.seq
  dispatch(ev)
end

-- Load the conversation after `after` (0: everything, into an emptied chat) and show it; then replay the events
-- held meanwhile.
function M.catch_up(after)
  catching_up = true
  rpc.async(function()
    local cid = status.state.conversation
    local last, conv = after, nil
    if after == 0 then
      chat.clear()
      chat.set_conversation(cid)
    end
    while true do
      local err, result = rpc.call("phoenix/getConversation", { conversationId = cid, afterSeq = last })
      if err then
        catching_up = false
        rpc.report("could not load the conversation: " .. rpc.error_text(err), vim.log.levels.WARN)
        return
      end
      conv = result
      chat.drop_stream()
      for _, message in ipairs(result.messages) do
        chat.message(message)
        last = math.max(last, message.seq)
      end
      if not result.hasMore then
        break
      end
    end
    status.update({
      mode = conv.mode,
      policy = conv.policy,
      style = conv.style,
      model = conv.model,
      status = conv.status,
      last_seq = conv.lastSeq,
    })
    header.show_instructions(conv.instructions)
    catching_up = false
    if conv.pendingApproval and dialog.current_id() ~= conv.pendingApproval.toolUseId then
      approval.ask(vim.tbl_extend("force", conv.pendingApproval, { conversationId = cid }))
    elseif conv.pendingUpgrade and dialog.current_id() ~= conv.pendingUpgrade.toolUseId then
      approval.ask_upgrade(vim.tbl_extend("force", conv.pendingUpgrade, { conversationId = cid }))
    end
    local pending = held
    held = {}
    for _, ev in ipairs(pending) do
      M.on_event(nil, ev)
    end
  end)
end

return M
