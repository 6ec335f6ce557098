import { test } from "node:test";
import assert from "node:assert/strict";
import { cleanNote, lifecycleWords, modelChoices, modelGroups, modelLabel, modelListNote, modelName, providerNotes, windowText } from "../src/core/models";
import { errorMessage, errorReason } from "../src/protocol/client";
import type { ListModelsResult } from "../src/protocol/wire";

const API: ListModelsResult = {
  models: [
    { id: "claude-opus-4-7", name: "Claude Opus 4.7", contextWindow: 1_000_000 },
    { id: "claude-sonnet-4-6", name: "Claude Sonnet 4.6", contextWindow: 1_000_000 },
    { id: "claude-haiku-4-5", name: "Claude Haiku 4.5", contextWindow: 200_000 },
  ],
  defaultModel: "claude-sonnet-4-6",
  source: "api",
};

test("model choices list name and window, mark the model in use and the default (REQ-VSC-010)", () => {
  const choices = modelChoices(API, "claude-haiku-4-5");
  assert.deepEqual(choices.map((c) => c.label), ["Claude Opus 4.7", "Claude Sonnet 4.6", "Claude Haiku 4.5"]);
  assert.equal(choices[2].description, "claude-haiku-4-5 · 200K tokens");
  assert.equal(choices[0].description, "claude-opus-4-7 · 1M tokens");
  assert.deepEqual(choices.map((c) => c.current), [false, false, true]);
  assert.deepEqual(choices.map((c) => c.isDefault), [false, true, false]);
  // a model in use that the list does not know (an id chosen by hand) is still shown, first, as in use
  const byHand = modelChoices(API, "my-proxy-model");
  assert.equal(byHand[0].id, "my-proxy-model");
  assert.equal(byHand[0].current, true);
  assert.equal(byHand.filter((c) => c.current).length, 1);
});

test("a deprecated model says when it retires; an active one or one of unknown lifecycle says nothing (REQ-MODEL-014)", () => {
  const listed: ListModelsResult = {
    ...API,
    models: [
      { id: "claude-sonnet-9-0", name: "Claude Sonnet 9.0", contextWindow: 1_000_000, lifecycle: "active" },
      { id: "claude-sonnet-4-5", name: "Claude Sonnet 4.5", contextWindow: 200_000, lifecycle: "deprecated",
        retiresAt: "2026-11-30" },
      { id: "claude-old", name: "Claude Old", contextWindow: 200_000, lifecycle: "deprecated" },
      { id: "openai/gpt-4.1", name: "gpt-4.1", contextWindow: 1_047_576, provider: "openai" },
    ],
  };
  const choices = modelChoices(listed, undefined);
  assert.equal(choices[1].description, "claude-sonnet-4-5 · 200K tokens · deprecated, retires 2026-11-30");
  assert.equal(choices[0].description, "claude-sonnet-9-0 · 1M tokens");
  assert.equal(lifecycleWords(listed.models[2]), "deprecated");
  assert.equal(lifecycleWords(listed.models[3]), "");
});

test("the built-in list says why; the API's list needs no note (REQ-VSC-010)", () => {
  assert.equal(modelListNote(API), undefined);
  const reason = "The built-in list is shown because no API key is set; any model id can still be chosen.";
  assert.equal(modelListNote({ ...API, source: "builtin", reason }), reason);
  assert.match(modelListNote({ ...API, source: "builtin" })!, /built-in/);
});

test("the model in use is named by the list when it knows it, else by its id (REQ-VSC-010)", () => {
  assert.equal(modelName("claude-haiku-4-5", API.models), "Claude Haiku 4.5");
  assert.equal(modelName("other", API.models), "other");
  assert.equal(modelName("other", undefined), "other");
  const label = modelLabel("claude-haiku-4-5", API.models);
  assert.equal(label.text, "$(sparkle) Claude Haiku 4.5");
  assert.match(label.tooltip, /claude-haiku-4-5.*200K/);
  assert.equal(windowText(200_000), "200K");
  assert.equal(windowText(1_000_000), "1M");
  assert.equal(windowText(1_500_000), "1.5M");
});

test("a refused switch keeps the server's message and its reason (REQ-VSC-010)", () => {
  const refusal = {
    code: -32006,
    message: "The context in use does not fit claude-haiku-4-5's window; claude-sonnet-4-6 still answers. Continue in a new conversation.",
    data: { kind: "notAllowed", reason: "context_too_large" },
  };
  assert.equal(errorReason(refusal), "context_too_large");
  assert.equal(errorMessage(refusal), refusal.message);
  assert.equal(errorReason({ code: -32002, message: "busy", data: { kind: "agentBusy" } }), undefined);
  assert.equal(errorReason(new Error("x")), undefined);
});

test("the picker groups the models by provider, Anthropic's first, and says which windows are unknown (issue 27)", () => {
  const result: ListModelsResult = {
    ...API,
    models: [
      ...API.models,
      { id: "openai/gpt-4.1", name: "gpt-4.1 (openai)", contextWindow: 1_047_576, provider: "openai", contextWindowKnown: true },
      { id: "ollama/llama3.2", name: "llama3.2 (ollama)", contextWindow: 131_072, provider: "ollama", contextWindowKnown: true },
      { id: "openai/meta-llama/x", name: "meta-llama/x (openai)", contextWindow: 32_768, provider: "openai", contextWindowKnown: false },
    ],
    providers: [
      { provider: "openai", listed: true },
      { provider: "azure", listed: false, reason: "the azure provider's model list could not be read (401)" },
    ],
  };
  const groups = modelGroups(result, "ollama/llama3.2");
  assert.deepEqual(groups.map((g) => g.provider), ["anthropic", "openai", "ollama"]);
  assert.deepEqual(groups[1].choices.map((c) => c.id), ["openai/gpt-4.1", "openai/meta-llama/x"]);
  assert.equal(groups[2].choices[0].current, true);
  assert.match(groups[1].choices[1].description, /window unknown.*providers file/);
  assert.deepEqual(providerNotes(result), ["the azure provider's model list could not be read (401)"]);
  // a model in use that the list does not know goes under its own provider, first
  const byHand = modelGroups(result, "azure/gpt-4o");
  assert.equal(byHand[0].provider, "azure");
  assert.equal(byHand[0].choices[0].current, true);
});

const GATEWAY_PAGE =
  '<html>\r\n<head><title>502 Bad Gateway</title></head>\r\n<body>\r\n<center><h1>502 Bad Gateway</h1></center>\r\n<hr><center>nginx</center>\r\n</body>\r\n</html>';

test("a model-list note never quotes a web page raw: it says what happened, why and what next (REQ-VSC-016)", () => {
  const builtin: ListModelsResult = {
    ...API,
    source: "builtin",
    reason: `The built-in list is shown because the API's model list could not be read (HTTP 502: ${GATEWAY_PAGE}); any model id can still be chosen.`,
  };
  const note = modelListNote(builtin)!;
  assert.doesNotMatch(note, /<|>/, note);
  assert.match(note, /^The built-in model list is shown because .*web page instead of a model list \(“502 Bad Gateway”\)/);
  assert.match(note, /Check ANTHROPIC_BASE_URL .*any model id can still be chosen/);
  const listing: ListModelsResult = {
    ...API,
    providers: [{ provider: "openai", listed: false, reason: `the openai provider's model list could not be read: <!DOCTYPE html><html><body><p>Forbidden</p></body></html>` }],
  };
  const [provider] = providerNotes(listing);
  assert.doesNotMatch(provider, /<|>/, provider);
  assert.match(provider, /^The openai provider's models are not listed because .*Check the openai provider's base URL in the providers file/);
  // an API's own words stay as the server wrote them
  const plain = "The built-in list is shown because no API key is set; any model id can still be chosen.";
  assert.equal(cleanNote(plain), plain);
  assert.equal(cleanNote("a < b and c > d"), "a < b and c > d");
});
