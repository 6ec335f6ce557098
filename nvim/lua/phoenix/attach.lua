-- Attachments waiting for the next message (REQ-NVIM-016): files, some of their lines, and a buffer's
-- diagnostics, in the wire form of phoenix/sendMessage (FileAttachment, DiagnosticsAttachment), each with the
-- label of its chip in the chat ("calc.py:2-3", "problems: calc.py").
--
-- vim.diagnostic.get exists from Neovim 0.6 on and is not deprecated, so no release needs another path here.
local M = {}

M.MAX = 20 -- attachments in one message (SendMessageParams)
local MAX_DIAGNOSTICS = 500
local MAX_MESSAGE = 4000 -- characters of one diagnostic's message
local MAX_SOURCE = 200

M.pending = {} -- { item = <the wire form>, label = <the chip> }, in the order attached

-- A path as the chips show it: relative to the workspace root when inside it, else with ~ for the home.
function M.shown(root, path)
  if path:sub(1, #root + 1) == root .. "/" then
    return path:sub(#root + 2)
  end
  return vim.fn.fnamemodify(path, ":~")
end

-- At most `limit` bytes of text, not ending inside a UTF-8 character (so the JSON stays valid).
local function cut(text, limit)
  if #text <= limit then
    return text
  end
  return (text:sub(1, limit):gsub("[\192-\255][\128-\191]*$", ""))
end

-- Add an attachment; the same label again replaces the earlier one (a newer snapshot of the problems).
-- Returns nil, or why it was not added.
local function add(item, label)
  for i, entry in ipairs(M.pending) do
    if entry.label == label then
      M.pending[i] = { item = item, label = label }
      return nil
    end
  end
  if #M.pending >= M.MAX then
    return string.format("a message takes at most %d attachments (:PhoenixAttachClear removes them)", M.MAX)
  end
  table.insert(M.pending, { item = item, label = label })
  return nil
end

-- Whether the file `path` lies in the workspace `root` (symbolic links followed, as the server does: it reads
-- only files of the workspace, REQ-ATTACH-001). The root "" is the root directory, which holds every file.
function M.inside(root, path)
  if root == "" then
    return true
  end
  local real_root = vim.fn.resolve(root):gsub("/$", "")
  local real = vim.fn.resolve(path)
  return real:sub(1, #real_root + 1) == real_root .. "/"
end

-- A file (an absolute path), or its lines first..last (1-based, inclusive). Returns the label, or nil and why not.
function M.file(root, path, first, last)
  if not M.inside(root, path) then
    return nil, string.format("%s is outside the workspace (%s), so it was not attached: Phoenix reads only the "
      .. "project's files. Attach a file of the project, or start Neovim in a folder that holds this one.",
      M.shown(root, path), vim.fn.fnamemodify(root, ":~"))
  end
  local item = { kind = "file", uri = vim.uri_from_fname(path) }
  local label = M.shown(root, path)
  if first then
    if last < first then
      first, last = last, first
    end
    item.range = { startLine = first - 1, endLine = last - 1 } -- 0-based, inclusive, as LSP counts
    label = label .. ":" .. (first == last and tostring(first) or (first .. "-" .. last))
  end
  local problem = add(item, label)
  if problem then
    return nil, problem
  end
  return label
end

local SEVERITY = { [1] = "error", [2] = "warning", [3] = "information", [4] = "hint" }

-- The problems Neovim shows for a buffer of the file `path`, as they are now. Returns the label and how many.
function M.problems(root, bufnr, path)
  local found = vim.diagnostic.get(bufnr)
  table.sort(found, function(a, b)
    return a.lnum < b.lnum
  end)
  local diagnostics = {}
  for i, d in ipairs(found) do
    if i > MAX_DIAGNOSTICS then
      break
    end
    table.insert(diagnostics, {
      line = d.lnum,
      severity = SEVERITY[d.severity],
      message = cut(d.message or "", MAX_MESSAGE),
      source = d.source and cut(tostring(d.source), MAX_SOURCE) or nil,
    })
  end
  local label = "problems: " .. M.shown(root, path)
  local problem = add({ kind = "diagnostics", uri = vim.uri_from_fname(path), diagnostics = diagnostics }, label)
  if problem then
    return nil, problem
  end
  return label, #diagnostics
end

function M.clear()
  M.pending = {}
end

-- The wire forms of the pending attachments (for phoenix/sendMessage), and the entries they came from.
function M.take()
  local entries = vim.list_extend({}, M.pending)
  return vim.tbl_map(function(entry)
    return entry.item
  end, entries), entries
end

-- Forget the entries that were sent (attachments added meanwhile stay).
function M.sent(entries)
  local gone = {}
  for _, entry in ipairs(entries) do
    gone[entry] = true
  end
  M.pending = vim.tbl_filter(function(entry)
    return not gone[entry]
  end, M.pending)
end

function M.labels()
  return vim.tbl_map(function(entry)
    return entry.label
  end, M.pending)
end

-- The chips as the chat shows them: "📎 calc.py:2-3  📎 problems: calc.py".
function M.chips()
  return table.concat(vim.tbl_map(function(label)
    return "📎 " .. label
  end, M.labels()), "  ")
end

return M
