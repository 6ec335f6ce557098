-- A multi-file review (issue 36, REQ-NVIM-021): an approval whose diff spans several files, as the server sends a
-- bash command's captured changes (a host call named like the patch tool; arguments = { command, files, more? };
-- diff = the summary of what is not an editor edit as "# " lines before the first file, then the git-style
-- unified diff of every text file). This module is the one place that reads that shape, and lays it out for the
-- patch window: the command, the list of files (status, path, +/- counts), the summary, then each file's diff
-- under a heading of its own.
-- The diff is split by its hunks' own line counts, never by a line that merely looks like a file header: a file
-- whose text holds "--- a/x" and "+++ b/y" lines cannot add a file of its own to the list.
local M = {}

local function header_path(text)
  local p = vim.split(text, "\t", { plain = true })[1]
  if p == "/dev/null" then
    return p
  end
  return (p:gsub("^[ab]/", "", 1))
end

-- The files of a unified diff, each { path, old_path, status, added, removed, lines }, and the "# " notes.
function M.split(diff)
  local lines = vim.split(diff or "", "\n", { plain = true })
  if lines[#lines] == "" then
    table.remove(lines)
  end
  local files, notes = {}, {}
  local i = 1
  while i <= #lines do
    local line = lines[i]
    local nxt = lines[i + 1]
    if line:sub(1, 4) == "--- " and nxt and nxt:sub(1, 4) == "+++ " then
      local first = i
      local old_path, new_path = header_path(line:sub(5)), header_path(nxt:sub(5))
      local added, removed = 0, 0
      i = i + 2
      while lines[i] and lines[i]:match("^@@ %-%d+,?%d* %+%d+,?%d* @@") do
        local old_n = tonumber(lines[i]:match("^@@ %-%d+,(%d+)") or "1")
        local new_n = tonumber(lines[i]:match("^@@ %-%d+,?%d* %+%d+,(%d+)") or "1")
        i = i + 1
        -- the hunk's body is exactly its counted lines (and the "\ No newline" notes among them)
        while lines[i] and (old_n > 0 or new_n > 0 or lines[i]:sub(1, 1) == "\\") do
          local kind = lines[i]:sub(1, 1)
          if kind == "+" then
            added, new_n = added + 1, new_n - 1
          elseif kind == "-" then
            removed, old_n = removed + 1, old_n - 1
          elseif kind ~= "\\" then
            old_n, new_n = old_n - 1, new_n - 1
          end
          i = i + 1
        end
      end
      local status = (old_path == "/dev/null" and "created") or (new_path == "/dev/null" and "deleted")
        or (old_path ~= new_path and "renamed") or "modified"
      table.insert(files, {
        path = status == "deleted" and old_path or new_path,
        old_path = status == "renamed" and old_path or nil,
        status = status,
        added = added,
        removed = removed,
        lines = vim.list_slice(lines, first + 2, i - 1), -- the hunks, without the two header lines
      })
    else
      if line:sub(1, 2) == "# " then
        table.insert(notes, line:sub(3))
      end
      i = i + 1
    end
  end
  return files, notes
end

-- The review an approval asks about, or nil: a bash command's changes (arguments `command` and `files`), or any
-- approval whose diff spans more than one file.
function M.of(arguments, diff)
  arguments = type(arguments) == "table" and arguments or {}
  local listed = type(arguments.files) == "table" and arguments.files or nil
  if (diff == nil or diff == "") and not listed then
    return nil
  end
  local files, notes = M.split(diff)
  if not listed and #files < 2 then
    return nil
  end
  local shown = {}
  for _, f in ipairs(files) do
    shown[f.path] = true
    if f.old_path then
      shown[f.old_path] = true
    end
  end
  local others = {}
  for _, p in ipairs(listed or {}) do
    if type(p) == "string" and not shown[p] then
      table.insert(others, p)
    end
  end
  return {
    command = type(arguments.command) == "string" and arguments.command or nil,
    files = files,
    summary = notes,
    others = others,
    more = type(arguments.more) == "number" and arguments.more or 0,
  }
end

local function plural(n, word)
  return n .. " " .. word .. (n == 1 and "" or "s")
end

-- What the patch window shows for a review: { {text, highlight group or nil}, ... }.
function M.body(review)
  local out = {}
  local function add(text, group)
    table.insert(out, { text, group })
  end
  local added, removed = 0, 0
  for _, f in ipairs(review.files) do
    added, removed = added + f.added, removed + f.removed
  end
  local rest = #review.others -- the server's part the arguments name (its counts are in the summary)
  add(string.format("%s (+%d -%d)%s", plural(#review.files, "text file"), added, removed,
    rest > 0 and (", " .. plural(rest, "other change")) or ""))
  if review.command then
    add("$ " .. review.command, "String")
  end
  for _, f in ipairs(review.files) do
    local where = f.old_path and (f.old_path .. " -> " .. f.path) or f.path
    add(string.format("  %-8s %s +%d -%d", f.status, where, f.added, f.removed))
  end
  for _, p in ipairs(review.others) do
    add("  other    " .. p, "Comment")
  end
  if review.more > 0 then
    add("  ... and " .. review.more .. " more path(s)", "Comment")
  end
  if #review.summary > 0 then
    add("")
    for _, line in ipairs(review.summary) do
      add(line, "Comment")
    end
  end
  for _, f in ipairs(review.files) do
    add("")
    add(string.format("── %s %s ──", f.status, f.old_path and (f.old_path .. " -> " .. f.path) or f.path), "Title")
    for _, line in ipairs(f.lines) do
      local c = line:sub(1, 1)
      add(line, (c == "+" and "DiffAdd") or (c == "-" and "DiffDelete") or nil)
    end
  end
  return out
end

return M
