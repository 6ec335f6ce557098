-- The user's ways in: the :Phoenix* commands (REQ-NVIM-001) and the chat buffer's keys.
local chat = require("phoenix.chat")
local compose = require("phoenix.compose")
local config = require("phoenix.config")
local conversation = require("phoenix.conversation")
local models = require("phoenix.models")
local protocol = require("phoenix.protocol")
local route = require("phoenix.route")
local server = require("phoenix.server")
local status = require("phoenix.status")

local M = {}

-- Show the chat (a conversation is started when there is none), with its keys.
function M.open_chat()
  local win = chat.open(config.options.chat_position)
  local buf = vim.api.nvim_win_get_buf(win)
  local keys = config.options.keys
  local function map(lhs, fn)
    if lhs then
      vim.keymap.set("n", lhs, fn, { buffer = buf, silent = true })
    end
  end
  map(keys.send, function()
    compose.prompt(compose.send)
  end)
  map(keys.cancel, conversation.cancel)
  map(keys.toggle_policy, conversation.toggle_policy)
  map(keys.model, function()
    models.set_model(nil)
  end)
  if not status.state.conversation then
    conversation.new()
  end
  return win
end

local function starting_with(list)
  return function(lead)
    return vim.tbl_filter(function(item)
      return item:sub(1, #lead) == lead
    end, list)
  end
end

function M.define()
  local command = vim.api.nvim_create_user_command
  command("Phoenix", function()
    M.open_chat()
  end, { desc = "Open the Phoenix chat" })
  command("PhoenixSend", function(opts)
    local function send(question)
      if opts.range > 0 then
        question = compose.selection_message(question, opts.line1, opts.line2)
      end
      if compose.send(question) then
        chat.open(config.options.chat_position)
      end
    end
    if opts.args ~= "" then
      send(opts.args)
    else
      compose.prompt(send)
    end
  end, { nargs = "*", range = true, desc = "Send a message (with a range: the selected lines and a question)" })
  command("PhoenixAttach", function(opts)
    if opts.range > 0 then
      compose.attach_lines(opts.line1, opts.line2)
    else
      compose.attach_lines(nil, nil)
    end
  end, { range = true, desc = "Attach the selected lines (no range: the whole file) to the next message" })
  command("PhoenixAttachFile", function(opts)
    compose.attach_files(opts.fargs)
  end, { nargs = "+", complete = "file", desc = "Attach files to the next message" })
  command("PhoenixAttachProblems", compose.attach_problems,
    { desc = "Attach the current buffer's diagnostics to the next message" })
  command("PhoenixAttachClear", compose.clear_attachments, { desc = "Remove the attachments not sent yet" })
  command("PhoenixReloadInstructions", conversation.reload_instructions,
    { desc = "Read AGENTS.md / CLAUDE.md again for this conversation" })
  command("PhoenixCancel", conversation.cancel, { desc = "Stop the current turn" })
  command("PhoenixUndo", function(opts)
    conversation.undo(opts.args ~= "" and opts.args or nil)
  end, { nargs = "?", desc = "Take back the latest accepted change set (or the one whose id is given)" })
  command("PhoenixBackground", function(opts)
    local pid, stop = nil, false
    for _, word in ipairs(opts.fargs) do
      if word == "stop" then
        stop = true
      elseif tonumber(word) then
        pid = tonumber(word)
      else
        vim.notify("Usage: :PhoenixBackground [PID] [stop]", vim.log.levels.WARN)
        return
      end
    end
    conversation.background(pid, stop)
  end, { nargs = "*", desc = "Show what a running background command changed so far; with stop: stop it and review" })
  command("PhoenixMode", function(opts)
    conversation.set_mode(opts.args)
  end, {
    nargs = 1,
    complete = starting_with(protocol.Mode),
    desc = "Switch the mode: restricted (read-only) or unrestricted",
  })
  command("PhoenixPolicy", function(opts)
    conversation.set_policy(opts.args ~= "" and opts.args or nil)
  end, {
    nargs = "?",
    complete = starting_with(protocol.Policy),
    desc = "Set or toggle the approval policy",
  })
  command("PhoenixStyle", function(opts)
    conversation.set_style(opts.args ~= "" and opts.args or nil)
  end, {
    nargs = "?",
    complete = starting_with(protocol.Style),
    desc = "Set the style",
  })
  command("PhoenixModel", function(opts)
    models.set_model(opts.args ~= "" and opts.args or nil)
  end, {
    nargs = "?",
    complete = function(lead)
      return starting_with(models.model_ids())(lead)
    end,
    desc = "Choose the model of the conversation (a picker without an argument)",
  })
  command("PhoenixRoute", function(opts)
    route.set_route(opts.args ~= "" and opts.args or nil)
  end, {
    nargs = "?",
    complete = starting_with(route.ROUTES),
    desc = "Choose the route of the next messages: ask or agent (a picker without an argument)",
  })
  command("PhoenixConversations", conversation.choose, { desc = "List conversations and switch" })
  command("PhoenixNew", function()
    conversation.new()
    chat.open(config.options.chat_position)
  end, { desc = "Start a new conversation" })
  command("PhoenixRestart", server.restart, { desc = "Restart the server (the chat stays and catches up)" })
end

return M
