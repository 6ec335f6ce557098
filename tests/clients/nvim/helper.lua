-- Test helpers for the headless Neovim tests: wait for a condition, compare, and report to pytest.
local T = { data = {}, deprecated = {} }

-- Every call of vim.deprecate (Neovim's own warning for a deprecated API, whether or not it is shown yet)
-- is recorded with where it came from; pytest fails the scenario when there was one (REQ-NVIM-001).
local deprecate = vim.deprecate
vim.deprecate = function(name, alternative, version, ...)
  table.insert(T.deprecated, string.format("%s (use %s; %s): %s", name, tostring(alternative), tostring(version),
    debug.traceback("", 2)))
  return deprecate(name, alternative, version, ...)
end

T.python = os.getenv("PHOENIX_TEST_PYTHON")
T.data_dir = os.getenv("PHOENIX_TEST_DATA")
T.result_file = os.getenv("PHOENIX_TEST_RESULT")

-- A step's wait is bounded by what is left of the scenario's own time (PHOENIX_TEST_BUDGET_MS: pytest's timeout for
-- the run, less the time to report), not by a bound of its own: on a loaded machine one step (a first turn: the
-- server's SDK import, a sandboxed command, two model requests) alone took longer than the 60 s each step had,
-- while the scenario as a whole had four minutes. A step that never comes still fails, naming what it waited for.
local started = vim.loop.hrtime()
local budget_ms = tonumber(os.getenv("PHOENIX_TEST_BUDGET_MS") or "") or 60000

function T.wait(what, cond, timeout_ms)
  local left = math.max(budget_ms - (vim.loop.hrtime() - started) / 1e6, 0)
  if not vim.wait(timeout_ms or left, cond, 20) then
    error("timed out waiting for " .. what, 2)
  end
end

function T.eq(actual, expected, what)
  if not vim.deep_equal(actual, expected) then
    error(string.format("%s: expected %s, got %s", what, vim.inspect(expected), vim.inspect(actual)), 2)
  end
end

function T.ok(value, what)
  if not value then
    error("not true: " .. what, 2)
  end
end

-- Run the Ex `command` with vim.notify captured until it has said something; returns what it said.
function T.notes_of(command)
  local notes, notify = {}, vim.notify
  vim.notify = function(message) table.insert(notes, message) end
  local ok, err = pcall(function()
    vim.cmd(command)
    T.wait("a message from :" .. command, function() return #notes > 0 end)
  end)
  vim.notify = notify
  if not ok then error(err, 0) end
  return notes
end

-- phoenix-lsp's command line with these arguments: forked by the test worker's zygote when pytest gave its
-- launcher (tests/e2e/zygote_launch.py: the same server without seconds of imports per start), else a fresh
-- interpreter.
T.launcher = os.getenv("PHOENIX_TEST_LAUNCHER")

function T.phoenix(...)
  local start = { T.python, "-m", "phoenix_lsp" }
  if T.launcher and T.launcher ~= "" then
    start = { T.python, "-S", T.launcher }
  end
  return vim.list_extend(start, { ... })
end

function T.server_cmd()
  return T.phoenix("serve", "--data-dir", T.data_dir)
end

function T.setup(opts)
  local phoenix = require("phoenix")
  phoenix.setup(vim.tbl_extend("force", {
    cmd = T.server_cmd(),
    state_file = T.data_dir .. "/nvim-state.json",
    chat_position = "current",
  }, opts or {}))
  T.wait("the server to start", function()
    local c = phoenix.client_id and vim.lsp.get_client_by_id(phoenix.client_id)
    return c and c.initialized
  end)
  return phoenix
end

function T.chat_text()
  return table.concat(require("phoenix.chat").lines(), "\n")
end

function T.keys(keys)
  vim.api.nvim_feedkeys(vim.api.nvim_replace_termcodes(keys, true, false, true), "mx", false)
end

-- The next vim.ui.select is answered as a user answers Neovim's own menu (inputlist): the entry whose label
-- contains `label` is chosen by typing its number and Enter once the menu is up. The labels shown are
-- recorded in T.data.menus.
function T.pick(label)
  local builtin = vim.ui.select
  vim.ui.select = function(items, opts, on_choice)
    vim.ui.select = builtin
    local labels, index = {}, nil
    for i, item in ipairs(items) do
      labels[i] = opts.format_item and opts.format_item(item) or tostring(item)
      if not index and labels[i]:find(label, 1, true) then
        index = i
      end
    end
    T.data.menus = T.data.menus or {}
    table.insert(T.data.menus, labels)
    assert(index, "no entry " .. label .. " in " .. vim.inspect(labels))
    local timer = (vim.uv or vim.loop).new_timer()
    timer:start(300, 0, function()  -- fires while Neovim waits in the menu's prompt
      timer:close()
      vim.api.nvim_input(index .. "<CR>")
    end)
    return builtin(items, opts, on_choice)
  end
end

function T.idle()
  local s = require("phoenix").state
  T.wait("the conversation to be idle", function()
    return s.status == "idle"
  end)
end

local function finish(ok, err)
  local file = io.open(T.result_file, "w")
  file:write(vim.fn.json_encode({ ok = ok, error = err and tostring(err) or vim.NIL, data = T.data,
    deprecated = T.deprecated }))
  file:close()
  vim.cmd("qall!")
end

function T.run(fn)
  vim.schedule(function()
    local ok, err = xpcall(fn, debug.traceback)
    finish(ok, err)
  end)
end

return T
