-- The chat buffer: persisted messages rendered as Markdown, the answer streamed in as it arrives, and a
-- window that follows the end only while the cursor is on the last line (scrolling up keeps the place).
--
-- The buffer is three parts: a header (the project instructions in effect), the conversation (the body), and
-- a footer (the attachments that go with the next message, as chips). Each part is replaced on its own; the
-- body's line numbers (stream_start) count from the body's first line, so a new header moves nothing.
local names = require("phoenix.names")

local M = {}

local buf = nil
local stream_start = nil -- 0-based line of the body where the streamed (not yet persisted) answer begins
local header = {} -- the lines above the conversation
local footer = {} -- the lines below it
local body_count = 0 -- the conversation's lines

local function valid()
  return buf and vim.api.nvim_buf_is_valid(buf)
end

local set_lines

function M.buffer()
  if valid() then
    return buf
  end
  buf = vim.api.nvim_create_buf(false, true)
  vim.api.nvim_buf_set_name(buf, "phoenix://chat")
  vim.bo[buf].buftype = "nofile"
  vim.bo[buf].bufhidden = "hide"
  vim.bo[buf].swapfile = false
  vim.bo[buf].filetype = "markdown"
  vim.bo[buf].modifiable = false
  stream_start = nil
  body_count = 0
  local lines = vim.list_extend(vim.list_extend({}, header), footer)
  if #lines > 0 then
    set_lines(0, -1, lines)
  end
  return buf
end

-- Windows showing the chat whose cursor is on the last line: they follow the new text.
local function followers()
  local out = {}
  local count = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == buf and vim.api.nvim_win_get_cursor(win)[1] >= count then
      table.insert(out, win)
    end
  end
  return out
end

set_lines = function(first, last, lines)
  local follow = followers()
  vim.bo[buf].modifiable = true
  vim.api.nvim_buf_set_lines(buf, first, last, false, lines)
  vim.bo[buf].modifiable = false
  local count = vim.api.nvim_buf_line_count(buf)
  for _, win in ipairs(follow) do
    vim.api.nvim_win_set_cursor(win, { count, 0 })
  end
end

-- Replace the lines first..last (0-based, last exclusive) of the whole buffer. A buffer always has a line: when
-- header, body and footer are all empty, its one empty line is no part of them and is replaced too.
local function write(first, last, lines)
  if #header + body_count + #footer == 0 then
    first, last = 0, -1
  end
  set_lines(first, last, lines)
end

-- Replace the lines first..last of the body (0-based, last exclusive; nil: to the body's end).
local function set_body(first, last, lines)
  last = last or body_count
  write(#header + first, #header + last, lines)
  body_count = body_count - (last - first) + #lines
end

function M.append(lines)
  M.buffer()
  set_body(body_count, body_count, lines)
end

-- The lines above the conversation (the project instructions in effect); {} removes them.
function M.set_header(lines)
  M.buffer()
  write(0, #header, lines)
  header = lines
end

-- The lines below the conversation (the attachments that go with the next message); {} removes them.
function M.set_footer(lines)
  M.buffer()
  local first = #header + body_count
  write(first, first + #footer, lines)
  footer = lines
end

-- Which conversation the chat shows (b:phoenix_conversation, for statuslines and scripts).
function M.set_conversation(cid)
  vim.b[M.buffer()].phoenix_conversation = cid
end

-- Empty the conversation (the header and the footer stay).
function M.clear()
  M.buffer()
  stream_start = nil
  set_body(0, nil, {})
end

local function split(text)
  return vim.split(text or "", "\n", { plain = true })
end

local function compact(value)
  local text = require("phoenix.compat").json(value)
  if #text > 300 then
    text = text:sub(1, 300) .. "…"
  end
  return text
end

-- A streamed piece of the answer.
function M.stream(text)
  M.buffer()
  if not stream_start then
    M.append({ "", "## Phoenix", "" })
    stream_start = body_count - 3
  end
  local at = #header + body_count - 1
  local last = vim.api.nvim_buf_get_lines(buf, at, at + 1, false)[1] or ""
  local pieces = split(last .. text)
  set_body(body_count - 1, body_count, pieces)
end

-- An attachment as the transcript keeps it (REQ-ATTACH-003: `<attachment path="..." lines="...">` and the
-- text) is shown as one line naming it: "📄 calc.py, lines 2-3", "📄 problems in calc.py".
local function attachment_line(text)
  local label = text:match('^<attachment path="[^"\n]*" lines="([^"\n]*)">\n')
  if label then
    return "📄 " .. label
  end
  local path = text:match('^<attachment path="([^"\n]*)" kind="diagnostics">\n')
  if path then
    return "📄 problems in " .. path
  end
  return nil
end

local function block_lines(block)
  local lines = {}
  local attached = block.type == "text" and block.text and attachment_line(block.text)
  if attached then
    table.insert(lines, attached)
  elseif block.type == "text" and block.text and block.text ~= "" then
    vim.list_extend(lines, split(block.text))
  elseif block.type == "toolUse" then
    table.insert(lines, string.format("● %s %s", names.tool(block.toolName), compact(block.arguments)))
  elseif block.type == "toolResult" then
    -- the images the model got first, by the label the server words for every client ("image (PNG, 12 KB)")
    local content = {}
    for _, image in ipairs(block.images or {}) do
      table.insert(content, image.label)
    end
    vim.list_extend(content, split(block.content or ""))
    local mark = block.isError and "  ✗ " or "  ⎿ "
    for i, line in ipairs(content) do
      if i > 6 then
        table.insert(lines, "    … (" .. (#content - 6) .. " more lines)")
        break
      end
      table.insert(lines, (i == 1 and mark or "    ") .. line)
    end
  elseif block.type == "image" then
    table.insert(lines, "[" .. (block.label or ("image " .. (block.mediaType or ""))) .. "]")
  end
  return lines
end

local function render_blocks(message)
  local lines = {}
  for _, block in ipairs(message.content or {}) do
    vim.list_extend(lines, block_lines(block))
  end
  return lines
end

local SYSTEM = "[system] "

-- Where a block of a user-role message belongs: what the user typed or attached ("you"), a tool's result (shown
-- under the call that asked for it, "result"), or the server's own words to the model ("system": a note such
-- as a mode change, tag "note", or a text starting with "[system] ").
local function place(message, block)
  if block.type == "toolResult" then
    return "result"
  elseif block.type == "text" and (message.tag == "note" or (block.text or ""):sub(1, #SYSTEM) == SYSTEM) then
    return "system"
  end
  return "you"
end

local HEADINGS = { you = "## You", system = "## Note to the model" }

-- A user-role message: each run of blocks under its own heading (tool results under none: they follow the call).
local function user_lines(message)
  local lines, current = {}, nil
  for _, block in ipairs(message.content or {}) do
    local where = place(message, block)
    if where ~= current and HEADINGS[where] then
      vim.list_extend(lines, { "", HEADINGS[where], "" })
    end
    current = where
    if where == "system" and (block.text or ""):sub(1, #SYSTEM) == SYSTEM then
      block = { type = "text", text = block.text:sub(#SYSTEM + 1) }
    end
    vim.list_extend(lines, block_lines(block))
  end
  return lines
end

-- A persisted message; an assistant message replaces the text streamed for it.
function M.message(message)
  M.buffer()
  if message.role == "assistant" then
    local first = stream_start
    stream_start = nil
    local lines = { "", "## Phoenix", "" }
    vim.list_extend(lines, render_blocks(message))
    if first then
      set_body(first, nil, lines)
    else
      M.append(lines)
    end
    return
  end
  if message.tag == "continuation" then
    M.append({ "", "## Summary of the earlier conversation", "" })
    M.append(render_blocks(message))
  else
    M.append(user_lines(message))
  end
end

-- A note in the chat (a mode change, an answered approval, an error).
function M.note(text)
  M.append(vim.tbl_map(function(line)
    return "> " .. line
  end, split(text)))
end

function M.diff(path, diff)
  local lines = { "", "```diff" }
  for _, line in ipairs(split(diff)) do
    if line ~= "" then
      table.insert(lines, line)
    end
  end
  table.insert(lines, "```")
  M.append(lines)
end

-- Keep a streamed answer that will never be persisted (the user stopped it) as it is: the next answer starts
-- below it. Returns whether there was one.
function M.keep_stream()
  local had = stream_start ~= nil
  stream_start = nil
  return had
end

-- Drop a streamed answer that will never be persisted (an error; a catch-up shows the persisted messages).
function M.drop_stream()
  if stream_start and valid() then
    set_body(stream_start, nil, {})
  end
  stream_start = nil
end

function M.lines()
  if not valid() then
    return {}
  end
  return vim.api.nvim_buf_get_lines(buf, 0, -1, false)
end

-- Show the chat in a window (a vertical split on the right unless it is shown already).
function M.open(position)
  local b = M.buffer()
  for _, win in ipairs(vim.api.nvim_list_wins()) do
    if vim.api.nvim_win_get_buf(win) == b then
      vim.api.nvim_set_current_win(win)
      return win
    end
  end
  if position == "current" then
    vim.api.nvim_set_current_buf(b)
  elseif position == "bottom" then
    vim.cmd("botright split")
    vim.api.nvim_set_current_buf(b)
  else
    vim.cmd("botright vsplit")
    vim.api.nvim_set_current_buf(b)
  end
  local win = vim.api.nvim_get_current_win()
  vim.wo[win].wrap = true
  vim.wo[win].linebreak = true
  vim.api.nvim_win_set_cursor(win, { vim.api.nvim_buf_line_count(b), 0 })
  return win
end

return M
