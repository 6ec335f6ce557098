-- The models to choose from and switching the active conversation's model (REQ-NVIM-015, REQ-MODEL-001/003).
local compat = require("phoenix.compat")
local conversation = require("phoenix.conversation")
local rpc = require("phoenix.rpc")
local status = require("phoenix.status")

local M = {}

M.models = nil -- the last phoenix/listModels answer (REQ-MODEL-001)

-- Inside rpc.async: the models to choose from (the server answers within ~1.5 s, with its built-in list and
-- a reason when the API cannot be asked). Returns the answer, or nil after telling the user why not.
function M.list_models()
  local err, result = rpc.call("phoenix/listModels", vim.empty_dict())
  if err then
    rpc.report("could not list the models: " .. rpc.error_text(err), vim.log.levels.WARN)
    return nil
  end
  M.models = result
  return result
end

-- The ids :PhoenixModel completes: from the last list the API gave, else asked now (at most 2 s; the built-in
-- list is a stand-in until the API's answer arrives, which the server then keeps).
function M.model_ids()
  if not M.models or M.models.source ~= "api" then
    local c = rpc.client()
    local answer = c and compat.request_sync(c, "phoenix/listModels", vim.empty_dict(), 2000)
    if answer and answer.result then
      M.models = answer.result
    end
  end
  local ids = {}
  for _, m in ipairs(M.models and M.models.models or {}) do
    table.insert(ids, m.id)
  end
  return ids
end

-- The provider of a model: the server's field, else the id's prefix, "anthropic" for a bare id (issue 27).
function M.model_provider(m)
  if type(m.provider) == "string" and m.provider ~= "" then
    return m.provider
  end
  return m.id:match("^([^/]+)/") or "anthropic"
end

-- The models grouped by provider (issue 27): the groups in the order their first model comes (the server
-- lists Anthropic's first), each group's models in the server's order. Returns the ordered list and how many
-- providers it has.
function M.group_models(models)
  local order, groups = {}, {}
  for _, m in ipairs(models) do
    local p = M.model_provider(m)
    if not groups[p] then
      groups[p] = {}
      table.insert(order, p)
    end
    table.insert(groups[p], m)
  end
  local out = {}
  for _, p in ipairs(order) do
    vim.list_extend(out, groups[p])
  end
  return out, #order
end

-- A picker entry: "Claude Haiku 4.5  claude-haiku-4-5 · 200K tokens  (in use)", a deprecated model's with
-- "(deprecated, retires 2026-11-30)"; with several providers each
-- entry starts with its provider ("openai │ gpt-4.1 ..."), the list being grouped by provider.
function M.model_label(m, current, default, with_provider)
  local marks = {}
  if m.id == current then
    table.insert(marks, "in use")
  end
  if m.id == default then
    table.insert(marks, "default")
  end
  if m.lifecycle == "deprecated" then -- REQ-MODEL-014: when it stops answering
    table.insert(marks, type(m.retiresAt) == "string" and ("deprecated, retires " .. m.retiresAt) or "deprecated")
  end
  local window = m.contextWindow and (" · " .. status.window_text(m.contextWindow) .. " tokens") or ""
  if m.contextWindow and m.contextWindowKnown == false then
    window = window .. " (assumed: set it in the providers file)"
  end
  local label = string.format("%s  %s%s", (m.name and m.name ~= "") and m.name or m.id, m.id, window)
  if #marks > 0 then
    label = label .. "  (" .. table.concat(marks, ", ") .. ")"
  end
  if with_provider then
    label = M.model_provider(m) .. " │ " .. label
  end
  return (m.id == current and "● " or "  ") .. label
end

-- Switch the model of the active conversation (REQ-MODEL-003: between turns; a refusal, e.g. a context too
-- large for the new window, is reported with the server's message, which says how to go on). Without an
-- id: a picker (vim.ui.select, so Telescope or fzf-lua when they replace it) of the listed models, the one
-- in use marked, with the reason when the list is the built-in one.
function M.set_model(model)
  if model and model ~= "" then
    conversation.act("phoenix/setModel", function()
      return { model = model }
    end)
    return
  end
  rpc.async(function()
    local result = M.list_models()
    if not result then
      return
    end
    local current = status.state.model
    local items = vim.deepcopy(result.models)
    local known = false
    for _, m in ipairs(items) do
      known = known or m.id == current
    end
    if current and current ~= "" and not known then
      table.insert(items, 1, { id = current, name = current, contextWindow = nil })
    end
    local title = "Phoenix model"
    if result.source == "builtin" and result.reason then
      rpc.report(result.reason, vim.log.levels.INFO)
      title = "Phoenix model (built-in list)"
    end
    for _, listing in ipairs(result.providers or {}) do
      if not listing.listed and listing.reason then
        rpc.report(listing.reason, vim.log.levels.INFO) -- a configured provider whose models are missing
      end
    end
    local grouped, providers = M.group_models(items)
    vim.ui.select(grouped, {
      prompt = title,
      kind = "phoenix_model",
      format_item = function(m)
        return M.model_label(m, current, result.defaultModel, providers > 1)
      end,
    }, function(m)
      if m and m.id ~= current then
        M.set_model(m.id)
      end
    end)
  end)
end

return M
