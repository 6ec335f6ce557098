-- Approvals and upgrade requests in the dialog (REQ-NVIM-006, REQ-NVIM-007), answered to the server.
local compat = require("phoenix.compat")
local config = require("phoenix.config")
local dialog = require("phoenix.dialog")
local names = require("phoenix.names")
local review = require("phoenix.review")
local rpc = require("phoenix.rpc")

local M = {}

-- The Always Allow choices: one per scope the approval offers (REQ-PERM-020), each naming the rule it adds, the
-- narrowest first (A) and the whole tool last (T), as the VS Code dialog does (REQ-PERM-024). An MCP tool's are
-- the tool (A) and every tool of its server (S), named so (REQ-MCP-023).
function M.always_choices(scopes)
  scopes = scopes or {}
  if #scopes == 0 then
    return { { label = "Always Allow", value = { decision = "alwaysAllow" }, key = "a" } }
  end
  local choices = {}
  for i, scope in ipairs(scopes) do
    local last = i == #scopes and i > 1
    local mcp = names.is_mcp(scope.rule)
    local label = (mcp and ("Always Allow " .. names.scope(scope.rule)))
      or (scope.kind == "tool" and ("Always Allow every " .. scope.rule .. " call"))
      or ("Always Allow " .. scope.label)
    local key = (i == 1 and "a") or (last and (mcp and "s" or "t")) or tostring(i)
    table.insert(choices, { label = label, value = { decision = "alwaysAllow", rule = scope.rule }, key = key })
  end
  return choices
end

-- A patch in words, above its diff: "calc.py: 2 changes, 3 lines added, 1 removed".
function M.patch_summary(arguments, diff)
  local added, removed = 0, 0
  for _, file in ipairs(review.split(diff)) do -- counted by the hunks, so "-- x" removed is a removed line
    added, removed = added + file.added, removed + file.removed
  end
  local changes = type(arguments.patches) == "table" and #arguments.patches or 0
  local path = type(arguments.path) == "string" and arguments.path or "?"
  return string.format("%s: %d %s, %d %s added, %d removed", path, changes, changes == 1 and "change" or "changes",
    added, added == 1 and "line" or "lines", removed)
end

function M.ask(ev)
  -- All of the arguments and all of the diff: the user approves only what they saw (REQ-PERM-023); a patch is
  -- shown as its file, a summary and its diff, which hold all of its arguments
  local args = compat.json(ev.arguments or vim.empty_dict())
  local summary, body = nil, nil
  local changes = review.of(ev.arguments, ev.diff)
  if changes then -- a multi-file review (REQ-NVIM-021): the command, the files, the summary, each file's diff
    body = review.body(changes)
  elseif ev.diff and ev.diff ~= "" and type(ev.arguments) == "table" then
    summary = M.patch_summary(ev.arguments, ev.diff)
  end
  local choices = {
    { label = "Allow", value = { decision = "allow" }, key = "y" },
    { label = "Deny", value = { decision = "deny" }, key = "n" },
  }
  vim.list_extend(choices, M.always_choices(ev.scopes))
  dialog.open({
    id = ev.toolUseId,
    ui = config.options.ui,
    title = names.tool(ev.toolName),
    description = vim.split(ev.description or "", "\n\n", { plain = true })[1],
    arguments = args,
    summary = summary,
    body = body,
    diff = ev.diff,
    choices = choices,
    cancel_value = { decision = "deny" },
    cancel_label = "deny",
    on_choice = function(answer)
      rpc.async(function()
        rpc.ask("phoenix/respondToApproval", {
          conversationId = ev.conversationId,
          toolUseId = ev.toolUseId,
          decision = answer.decision,
          rule = answer.rule, -- the scope the user picked (nil: not Always Allow)
        })
      end)
    end,
  })
end

function M.ask_upgrade(ev)
  dialog.open({
    id = ev.toolUseId,
    ui = config.options.ui,
    title = "Phoenix asks to make changes (unrestricted mode)",
    description = ev.reason,
    choices = {
      { label = "Approve", value = true, key = "y" },
      { label = "Deny", value = false, key = "n" },
    },
    cancel_value = false,
    cancel_label = "deny",
    on_choice = function(approve)
      rpc.async(function()
        rpc.ask("phoenix/respondToModeUpgrade", {
          conversationId = ev.conversationId,
          approve = approve,
          toolUseId = ev.toolUseId,
        })
      end)
    end,
  })
end

return M
