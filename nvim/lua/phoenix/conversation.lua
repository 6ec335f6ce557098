-- The active conversation: which one it is (remembered per workspace across Neovim sessions), starting,
-- switching and listing conversations, and the requests that act on it (cancel, mode, policy, style,
-- instructions).
local chat = require("phoenix.chat")
local config = require("phoenix.config")
local dialog = require("phoenix.dialog")
local events = require("phoenix.events")
local header = require("phoenix.header")
local protocol = require("phoenix.protocol")
local rpc = require("phoenix.rpc")
local status = require("phoenix.status")

local M = {}

local function state_path()
  return config.options.state_file or (vim.fn.stdpath("data") .. "/phoenix-nvim.json")
end

-- The conversation each workspace showed last: { [root] = conversation id }.
function M.remembered()
  local ok, data = pcall(function()
    return vim.fn.json_decode(table.concat(vim.fn.readfile(state_path()), "\n"))
  end)
  return (ok and type(data) == "table") and data or {}
end

local function remember(conversation_id)
  local data = M.remembered()
  data[config.root] = conversation_id
  pcall(vim.fn.mkdir, vim.fn.fnamemodify(state_path(), ":h"), "p")
  pcall(vim.fn.writefile, { vim.fn.json_encode(data) }, state_path())
end

local function use(conv, cid)
  status.update({
    conversation = cid,
    mode = conv.mode,
    policy = conv.policy,
    style = conv.style,
    model = conv.model,
    status = "idle",
    last_seq = 0,
    sandbox = conv.sandbox,
  })
  events.reset()
  chat.set_conversation(cid)
  remember(cid)
end

-- Inside rpc.async: make sure there is an active conversation.
function M.ensure()
  if status.state.conversation then
    return true
  end
  local err, result = rpc.call("phoenix/newConversation", { workingDirectory = config.working_directory() })
  if err then
    rpc.report("could not start a conversation: " .. rpc.error_text(err), vim.log.levels.ERROR)
    return false
  end
  use(result, result.conversationId)
  chat.clear()
  -- the instructions in effect are named by getConversation only (newConversation does not list them)
  local _, conv = rpc.call("phoenix/getConversation", { conversationId = result.conversationId, limit = 1 })
  if conv and status.state.conversation == result.conversationId then
    header.show_instructions(conv.instructions)
  end
  return true
end

-- In the background: call `method` on the active conversation with the parameters make_params() returns
-- (conversationId added). A conversation is started first when there is none, unless `existing` is set,
-- in which case nothing is done without one.
function M.act(method, make_params, existing)
  rpc.async(function()
    if existing then
      if not status.state.conversation then
        return
      end
    elseif not M.ensure() then
      return
    end
    local params = make_params and make_params() or {}
    params.conversationId = status.state.conversation
    rpc.ask(method, params)
  end)
end

-- Start a new conversation and show it (empty) in the chat. The old one stays on the server
-- (:PhoenixConversations switches back). `status.update` cannot clear a field (a nil value is no entry in
-- a Lua table), so the active conversation is forgotten here, with whatever was held for it.
function M.new()
  dialog.close()
  status.state.conversation = nil
  status.state.last_seq = 0
  events.reset()
  rpc.async(function()
    M.ensure()
  end)
end

-- Switch to a conversation and show it (REQ-PROTO-007: the whole history from the server).
function M.open(cid)
  rpc.async(function()
    local err, conv = rpc.call("phoenix/getConversation", { conversationId = cid, limit = 1 })
    if err then
      rpc.report(rpc.error_text(err), vim.log.levels.WARN)
      return
    end
    dialog.close()
    use(conv, cid)
    events.catch_up(0)
  end)
end

-- :PhoenixConversations: "+ New conversation", then the conversations (newest first), through vim.ui.select.
function M.choose()
  rpc.async(function()
    local err, result = rpc.call("phoenix/listConversations", vim.empty_dict())
    if err then
      rpc.report(rpc.error_text(err), vim.log.levels.WARN)
      return
    end
    local items = { { title = "New conversation" } }
    vim.list_extend(items, result.conversations)
    vim.ui.select(items, {
      prompt = "Phoenix conversations",
      format_item = function(item)
        if not item.conversationId then
          return "+ " .. item.title
        end
        local title = item.title ~= "" and item.title or "(empty)"
        return string.format("%s  [%s, %d messages]", title, item.status or "?", item.messageCount or 0)
      end,
    }, function(item)
      if not item then
        return
      elseif not item.conversationId then
        M.new()
        chat.open(config.options.chat_position)
      else
        M.open(item.conversationId)
        chat.open(config.options.chat_position)
      end
    end)
  end)
end

function M.cancel()
  events.stopping()
  M.act("phoenix/cancel", nil, true)
end

function M.set_mode(mode)
  M.act("phoenix/setMode", function()
    return { mode = mode }
  end)
end

-- Set the policy; without one, toggle it (REQ-PERM-010), from the policy of the conversation (which may be
-- started just now).
function M.set_policy(policy)
  M.act("phoenix/setApprovalPolicy", function()
    return { policy = policy or (status.state.policy == "auto" and "interactive" or "auto") }
  end)
end

function M.toggle_policy()
  M.set_policy(nil)
end

function M.set_style(style)
  -- a suggestion (REQ-LAYER-006) arrives as a styleSuggestion event and is shown in the chat
  local function apply(chosen)
    if chosen then
      M.act("phoenix/setStyle", function()
        return { style = chosen }
      end)
    end
  end
  if style then
    apply(style)
  else
    vim.ui.select(protocol.Style, { prompt = "Phoenix style" }, apply)
  end
end

-- Inside rpc.async: `method` asked about the active conversation (its id added to `params`). Its id and the result;
-- nil once the user is told why not: there is no conversation, or the server refused (`failed` says what did not
-- happen, the server's error why).
local function ask_active(method, params, failed)
  local cid = status.state.conversation
  if not cid then
    rpc.report("there is no conversation (:Phoenix starts one)", vim.log.levels.WARN)
    return nil
  end
  params.conversationId = cid
  local err, result = rpc.call(method, params)
  if err then
    rpc.report(failed .. ": " .. rpc.error_text(err), vim.log.levels.WARN)
    return nil
  end
  return cid, result
end

-- An outcome's lines as a note in the chat, when conversation `cid` is still the one shown.
local function note(cid, lines)
  if status.state.conversation == cid then
    chat.note(table.concat(lines, "\n"))
  end
end

-- Take back an accepted change set (REQ-BASH-041): the latest, or the one named by its id. The text files come as
-- one workspace edit that Neovim applies (its own undo redoes it); the rest is the server's. The outcome is a
-- note in the chat, each file kept because it changed since named.
function M.undo(change_set)
  rpc.async(function()
    local cid, result = ask_active("phoenix/undoChanges", { changeSetId = change_set or "latest" },
      "nothing was undone")
    if not cid then
      return
    end
    local lines = { result.message }
    for _, refused in ipairs(result.refused or {}) do
      table.insert(lines, "  kept: " .. refused.path .. ": " .. refused.why)
    end
    note(cid, lines)
    rpc.report(result.message, (result.undone and #(result.refused or {}) == 0) and vim.log.levels.INFO
      or vim.log.levels.WARN)
  end)
end

-- A running background command's changes (REQ-BASH-045): what it changed so far, read-only, shown in the chat as
-- its paths and diff; with stop, the command is stopped and all it changed is reviewed like any command's changes
-- (its question comes as any review's). `pid` picks one command (nil: every running one).
function M.background(pid, stop)
  rpc.async(function()
    local cid, result = ask_active("phoenix/reviewBackground", { pid = pid, stop = stop or false },
      "no background changes shown")
    if not cid then
      return
    end
    local lines = { result.message }
    for _, command in ipairs(result.commands or {}) do
      table.insert(lines, "PID " .. command.pid .. " `" .. command.command:sub(1, 80) .. "`:")
      for _, path in ipairs(command.files or {}) do
        table.insert(lines, "  " .. path)
      end
      if not stop and command.diff ~= "" then
        table.insert(lines, command.diff)
      end
    end
    note(cid, lines)
    rpc.report(result.message, vim.log.levels.INFO)
  end)
end

-- Read the project instructions again for the active conversation (REQ-INSTR-002: between turns; they take
-- effect from the next turn) and show the files now in effect.
function M.reload_instructions()
  rpc.async(function()
    local cid, result = ask_active("phoenix/reloadInstructions", {}, "could not reload the instructions")
    if not cid then
      return
    end
    if status.state.conversation == cid then
      header.show_instructions(result.instructions)
      chat.note(result.changed and "instructions reloaded: the next turn uses them" or "instructions unchanged")
    end
  end)
end

return M
