-- The approval dialog of seed 003: a floating window with the tool name, its description dimmed, the
-- arguments as compact JSON, the diff of a patch, a vertical list of choices with the first selected,
-- j/k or arrows + Enter, letter shortcuts, Escape = deny. While it is open it keeps the focus and the chat
-- refuses input (REQ-PERM-011..014). Upgrade requests use the same window.
-- Nothing of the arguments or the diff is cut (REQ-PERM-023): a dialog taller than the screen scrolls
-- (Ctrl-U / Ctrl-D, gg), and its hint says so.
local compat = require("phoenix.compat")
local review = require("phoenix.review")

local M = {}

local ns = vim.api.nvim_create_namespace("phoenix_dialog")
local current = nil -- { buf, win, choices, selected, on_choice, id, augroup }

function M.is_open()
  return current ~= nil
end

function M.current_id()
  return current and current.id
end

local function wrap(text, width)
  local out = {}
  for _, paragraph in ipairs(vim.split(text or "", "\n", { plain = true })) do
    local line = ""
    for word in paragraph:gmatch("%S+") do
      if line == "" then
        line = word
      elseif #line + 1 + #word <= width then
        line = line .. " " .. word
      else
        table.insert(out, line)
        line = word
      end
    end
    table.insert(out, line)
  end
  return out
end

local function draw()
  local c = current
  local lines, marks = {}, {}
  local function add(text, group)
    table.insert(lines, text)
    if group then
      table.insert(marks, { #lines - 1, group })
    end
  end
  add(c.opts.title, "Title")
  for _, line in ipairs(wrap(c.opts.description, c.width)) do
    if line ~= "" then
      add(line, "Comment") -- dimmed (seed 003, 7.4)
    end
  end
  add("")
  if c.opts.body then -- laid out by the caller (a multi-file review: its files, summary and diffs)
    for _, item in ipairs(c.opts.body) do -- as they are: a diff's and a list's leading spaces mean something
      for _, line in ipairs(vim.split(item[1], "\n", { plain = true })) do
        add(line, item[2])
      end
    end
  elseif c.opts.summary then -- a patch: its file and what it changes, above its diff (the diff shows all of it)
    for _, line in ipairs(wrap(c.opts.summary, c.width)) do
      add(line)
    end
  elseif c.opts.arguments then
    for _, line in ipairs(wrap(c.opts.arguments, c.width)) do
      add(line, "String")
    end
  end
  if c.opts.diff and c.opts.diff ~= "" and not c.opts.body then
    add("")
    -- each file's hunks without its two header lines, the hunks read by their own line counts: a changed line
    -- that looks like a header ("--- x" is the removed line "-- x", a Lua or SQL comment) is shown, never dropped
    local files = review.split(c.opts.diff)
    local shown = #files > 0 and {} or vim.split(c.opts.diff, "\n", { plain = true })
    for _, file in ipairs(files) do
      vim.list_extend(shown, file.lines)
    end
    for _, line in ipairs(shown) do
      if line ~= "" then
        local group = (line:sub(1, 1) == "+" and "DiffAdd") or (line:sub(1, 1) == "-" and "DiffDelete") or nil
        add(line, group)
      end
    end
  end
  add("")
  c.first_choice = #lines
  for i, choice in ipairs(c.choices) do
    local selected = i == c.selected
    add((selected and " ▸ " or "   ") .. choice.label .. " ", selected and "PmenuSel" or "Comment")
  end
  add("")
  add(c.opts.hint, "Comment")
  vim.bo[c.buf].modifiable = true
  vim.api.nvim_buf_set_lines(c.buf, 0, -1, false, lines)
  vim.bo[c.buf].modifiable = false
  vim.api.nvim_buf_clear_namespace(c.buf, ns, 0, -1)
  for _, mark in ipairs(marks) do
    compat.highlight(c.buf, ns, mark[2], mark[1], 0, -1)
  end
  return #lines
end

function M.close()
  local c = current
  if not c then
    return
  end
  current = nil
  pcall(vim.api.nvim_del_augroup_by_id, c.augroup)
  if vim.api.nvim_win_is_valid(c.win) then
    vim.api.nvim_win_close(c.win, true)
  end
  if c.previous and vim.api.nvim_win_is_valid(c.previous) then
    vim.api.nvim_set_current_win(c.previous)
  end
end

local function choose(value)
  local c = current
  if not c then
    return
  end
  M.close()
  c.on_choice(value)
end

local function move(step)
  local c = current
  c.selected = (c.selected - 1 + step) % #c.choices + 1
  draw()
  vim.api.nvim_win_set_cursor(c.win, { c.first_choice + c.selected, 0 })
end

-- opts: { id, title, description, arguments (text), diff, summary (text shown instead of the arguments: a
--         patch's file and changes, whose diff shows the rest), body = { {text, group} } (the lines shown
--         instead of the arguments and the diff: a multi-file review), choices = { {label, value, key} }, cancel_value,
--         on_choice = function(value), ui = "float" | "select" }
function M.open(opts)
  M.close()
  if opts.ui == "select" then -- Telescope / fzf users get their picker (vim.ui.select)
    current = { id = opts.id, select = true }
    local prompt = opts.title .. (opts.description and (": " .. opts.description) or "")
    if opts.body then
      local texts = {}
      for _, item in ipairs(opts.body) do
        table.insert(texts, item[1])
      end
      prompt = prompt .. "\n" .. table.concat(texts, "\n")
    elseif opts.summary or opts.arguments then -- the whole call, as in the float (REQ-PERM-023)
      prompt = prompt .. "\n" .. (opts.summary or opts.arguments)
    end
    if opts.diff and opts.diff ~= "" and not opts.body then
      prompt = prompt .. "\n" .. opts.diff
    end
    vim.ui.select(opts.choices, {
      prompt = prompt,
      format_item = function(item)
        return item.label
      end,
    }, function(item)
      current = nil
      opts.on_choice(item and item.value or opts.cancel_value)
    end)
    return
  end
  local width = math.min(math.max(50, math.floor(vim.o.columns * 0.6)), vim.o.columns - 4)
  local buf = vim.api.nvim_create_buf(false, true)
  vim.bo[buf].bufhidden = "wipe"
  current = {
    id = opts.id,
    buf = buf,
    opts = opts,
    choices = opts.choices,
    selected = 1, -- Allow (or Approve) is selected when the dialog opens (seed 003, 8.3)
    on_choice = opts.on_choice,
    width = width - 2,
    previous = vim.api.nvim_get_current_win(),
  }
  local keys = {}
  for _, choice in ipairs(opts.choices) do
    table.insert(keys, choice.key:upper() .. " " .. choice.label:lower())
  end
  opts.hint = table.concat(keys, " · ") .. " · j/k ↑/↓ Enter · Esc " .. opts.cancel_label
  local total = draw()
  local height = math.min(total, vim.o.lines - 4)
  if total > height then -- more than fits: say that the rest is there (REQ-PERM-023)
    opts.hint = opts.hint .. " · Ctrl-U/Ctrl-D scroll: " .. (total - height) .. " more lines"
    draw()
  end
  local win = vim.api.nvim_open_win(buf, true, {
    relative = "editor",
    width = width,
    height = height,
    row = math.max(0, math.floor((vim.o.lines - height) / 2) - 1),
    col = math.floor((vim.o.columns - width) / 2),
    style = "minimal",
    border = "rounded",
  })
  current.win = win
  vim.wo[win].wrap = true
  vim.wo[win].cursorline = false
  vim.api.nvim_win_set_cursor(win, { current.first_choice + 1, 0 })
  local function map(lhs, fn)
    vim.keymap.set("n", lhs, fn, { buffer = buf, nowait = true, silent = true })
  end
  map("j", function() move(1) end)
  map("<Down>", function() move(1) end)
  map("k", function() move(-1) end)
  map("<Up>", function() move(-1) end)
  map("<CR>", function() choose(current.choices[current.selected].value) end)
  map("<Esc>", function() choose(opts.cancel_value) end) -- Escape denies (seed 003, 6.7)
  map("q", function() choose(opts.cancel_value) end)
  for _, choice in ipairs(opts.choices) do
    map(choice.key:lower(), function() choose(choice.value) end)
    map(choice.key:upper(), function() choose(choice.value) end)
  end
  -- Keystrokes go to the dialog while it is open (seed 003, 10.3): leaving it brings the focus back.
  current.augroup = vim.api.nvim_create_augroup("phoenix_dialog", { clear = true })
  vim.api.nvim_create_autocmd("WinEnter", {
    group = current.augroup,
    callback = function()
      local c = current
      if c and not c.select and vim.api.nvim_get_current_win() ~= c.win and vim.api.nvim_win_is_valid(c.win) then
        vim.schedule(function()
          if current == c and vim.api.nvim_win_is_valid(c.win) then
            vim.api.nvim_set_current_win(c.win)
          end
        end)
      end
    end,
  })
end

-- What the dialog shows now, for tests and for :checkhealth-like inspection.
function M.snapshot()
  local c = current
  if not c or c.select then
    return nil
  end
  local groups = {}
  for _, mark in ipairs(vim.api.nvim_buf_get_extmarks(c.buf, ns, 0, -1, { details = true })) do
    groups[tostring(mark[2])] = mark[4].hl_group
  end
  return {
    lines = vim.api.nvim_buf_get_lines(c.buf, 0, -1, false),
    groups = groups, -- line number (0-based, as a string) -> its highlight group
    selected = c.choices[c.selected].label,
    focused = vim.api.nvim_get_current_win() == c.win,
  }
end

return M
