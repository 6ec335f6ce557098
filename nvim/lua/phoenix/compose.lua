-- Writing the next message: asking for its text (the text of a refused message is offered again), a
-- selection as a fenced block, the attachments that go with it (REQ-NVIM-016), and sending it (REQ-NVIM-004,
-- REQ-NVIM-019).
local attach_list = require("phoenix.attach")
local chat = require("phoenix.chat")
local config = require("phoenix.config")
local conversation = require("phoenix.conversation")
local dialog = require("phoenix.dialog")
local refusal = require("phoenix.refusal")
local rpc = require("phoenix.rpc")
local status = require("phoenix.status")

local M = {}

M.draft = nil -- the text of the last message the server refused: the next prompt offers it again

local function show_chips()
  local chips = attach_list.chips()
  chat.set_footer(chips ~= "" and { "", chips } or {})
end

-- Ask for a message; the text of a message the server refused is offered again (and forgotten once used).
function M.prompt(on_text)
  if dialog.is_open() then
    rpc.report("answer the open approval first", vim.log.levels.WARN)
    return
  end
  local default = M.draft
  vim.ui.input({ prompt = "Ask Phoenix: ", default = default }, function(text)
    if text and vim.trim(text) ~= "" then
      if M.draft == default then
        M.draft = nil
      end
      on_text(text)
    end
  end)
end

-- The lines line1..line2 of the current buffer as a fenced block naming the file, then the question.
function M.selection_message(question, line1, line2)
  local lines = vim.api.nvim_buf_get_lines(0, line1 - 1, line2, false)
  local name = vim.fn.fnamemodify(vim.api.nvim_buf_get_name(0), ":.")
  local fence = "```"
  for _, line in ipairs(lines) do
    if line:find("```", 1, true) then
      fence = "````"
    end
  end
  return string.format("%s\n\nIn `%s`, lines %d-%d:\n%s%s\n%s\n%s", question, name, line1, line2, fence,
    vim.bo.filetype, table.concat(lines, "\n"), fence)
end

-- Send text (REQ-PERM-014: refused while an approval dialog is open), with the pending attachments
-- (REQ-NVIM-016): they are forgotten once the server took the message, and kept when it refused it, as is the
-- text (REQ-NVIM-019).
function M.send(text)
  if dialog.is_open() then
    rpc.report("answer the open approval first (Y allow, N deny, A always allow, Esc deny)", vim.log.levels.WARN)
    return false
  end
  text = text or ""
  local items, entries = attach_list.take()
  if vim.trim(text) == "" and #items == 0 then
    return false
  end
  rpc.async(function()
    if not conversation.ensure() then
      return
    end
    local params = { conversationId = status.state.conversation, text = text }
    if #items > 0 then
      params.attachments = items
    end
    if status.state.route then
      params.route = status.state.route -- the selected route goes with every message (REQ-AGENT-001)
    end
    local err = rpc.call("phoenix/sendMessage", params)
    if err then
      -- nothing the user typed is lost: the next prompt offers it again
      M.draft = text ~= "" and text or M.draft
      rpc.report(refusal.send(err, vim.tbl_map(function(entry)
        return entry.label
      end, entries)), vim.log.levels.WARN)
      return
    end
    if #entries > 0 then
      attach_list.sent(entries)
      show_chips()
    end
  end)
  return true
end

local function attached(label, problem)
  if not label then
    rpc.report(problem, vim.log.levels.WARN)
    return
  end
  show_chips()
  rpc.report(string.format("attached %s (%d with the next message)", label, #attach_list.pending))
end

-- The file of the current buffer, or nil after telling the user why there is none.
local function current_file()
  local bufnr = vim.api.nvim_get_current_buf()
  local name = vim.api.nvim_buf_get_name(bufnr)
  if vim.bo[bufnr].buftype ~= "" or name == "" then
    rpc.report("the current buffer is not a file, so there is nothing to attach", vim.log.levels.WARN)
    return nil
  end
  return bufnr, vim.fn.fnamemodify(name, ":p")
end

-- Attach the current buffer's file, or its lines line1..line2 (1-based) when given: read by the server from
-- the buffer (unsaved text included) when it is attached to the server, else from disk.
function M.attach_lines(line1, line2)
  local _, path = current_file()
  if path then
    attached(attach_list.file(config.root, path, line1, line2))
  end
end

-- Attach files by name (relative to the current directory; ~, %, $VAR and wildcards expanded).
function M.attach_files(names)
  for _, name in ipairs(names) do
    local paths = vim.tbl_filter(function(path)
      return path ~= ""
    end, vim.split(vim.fn.expand(name), "\n", { plain = true }))
    if #paths == 0 then
      paths = { name } -- a name expand() cannot read: reported below as not found
    end
    for _, path in ipairs(paths) do
      local full = vim.fn.fnamemodify(path, ":p"):gsub("/$", "")
      if vim.fn.isdirectory(full) == 1 then
        rpc.report(path .. " is a directory; attach the files in it (" .. path .. "/*)", vim.log.levels.WARN)
      elseif vim.fn.filereadable(full) == 0 then
        rpc.report(path .. " is not a file that can be read, so it was not attached", vim.log.levels.WARN)
      else
        attached(attach_list.file(config.root, full, nil, nil))
      end
    end
  end
end

-- Attach the problems Neovim shows for the current buffer (vim.diagnostic), as they are now.
function M.attach_problems()
  local bufnr, path = current_file()
  if path then
    local label, count = attach_list.problems(config.root, bufnr, path)
    if not label then
      attached(nil, count) -- count: why not
      return
    end
    attached(string.format("%s (%d %s)", label, count, count == 1 and "problem" or "problems"))
  end
end

function M.clear_attachments()
  attach_list.clear()
  show_chips()
end

-- The labels of the attachments that go with the next message.
function M.attachments()
  return attach_list.labels()
end

return M
