/**
 * The words of the model picker (the chat header's list and the palette's quick pick) and of the model
 * shown in the header and the status bar (issue 17, REQ-VSC-010). Pure, so the texts are unit-tested.
 */

import type { ListModelsResult, ModelView } from "../protocol/wire";

/** A context window in words: 200000 -> "200K", 1000000 -> "1M". */
export function windowText(tokens: number): string {
  if (tokens >= 1_000_000 && tokens % 100_000 === 0) return `${tokens / 1_000_000}M`;
  if (tokens >= 1_000) return `${Math.round(tokens / 1_000)}K`;
  return String(tokens);
}

/** The name of model `id` when the list knows it, else the id itself (any id can be in use). */
export function modelName(id: string, models: readonly ModelView[] | undefined): string {
  return models?.find((m) => m.id === id)?.name || id;
}

/** The status bar's model item: the model's name, the id and the window in the tooltip. */
export function modelLabel(id: string, models: readonly ModelView[] | undefined): { text: string; tooltip: string } {
  const known = models?.find((m) => m.id === id);
  const window = known ? `, a ${windowText(known.contextWindow)}-token context window` : "";
  return { text: `$(sparkle) ${modelName(id, models)}`, tooltip: `Model: ${id}${window}. Click to choose another.` };
}

export interface ModelChoice {
  id: string;
  /** the model's name */
  label: string;
  /** id, window and a deprecated model's retirement: "claude-sonnet-4-6 · 1M tokens" */
  description: string;
  /** the model the conversation uses now */
  current: boolean;
  /** what a new conversation uses unless it names one */
  isDefault: boolean;
  /** who answers: the id's prefix, "anthropic" for a bare id (issue 27) */
  provider: string;
}

/** The provider of a model id: the prefix before the first slash, "anthropic" for a bare id (issue 27). */
export function providerOf(id: string): string {
  const slash = id.indexOf("/");
  return slash < 0 ? "anthropic" : id.slice(0, slash);
}

/** The window in words, or that nobody reported it (the server assumes a small one until it is set). */
function windowWords(m: ModelView): string {
  const known = m.contextWindowKnown ?? true;
  return known ? `${windowText(m.contextWindow)} tokens` : "window unknown (set it in the providers file)";
}

/**
 * A model's lifecycle in words (REQ-MODEL-014): "deprecated, retires 2026-11-30" for a deprecated model,
 * nothing for an active one or one whose provider does not say (the server lists no retired model).
 */
export function lifecycleWords(m: ModelView): string {
  if (m.lifecycle !== "deprecated") return "";
  return m.retiresAt ? `deprecated, retires ${m.retiresAt}` : "deprecated";
}

/** id, window and, for a deprecated model, when it retires: "claude-sonnet-4-5 · 200K tokens · deprecated, …". */
function describe(m: ModelView): string {
  const stage = lifecycleWords(m);
  return `${m.id} · ${windowWords(m)}${stage ? ` · ${stage}` : ""}`;
}

/**
 * The picker's entries, in the server's order. The model in use is marked; when it is not in the list
 * (an id chosen by hand, or a model the API no longer lists) it comes first, so it is still shown.
 */
export function modelChoices(result: ListModelsResult, current: string | undefined): ModelChoice[] {
  const choices = result.models.map((m) => ({
    id: m.id,
    label: m.name || m.id,
    description: describe(m),
    current: m.id === current,
    isDefault: m.id === result.defaultModel,
    provider: m.provider ?? providerOf(m.id),
  }));
  if (current && !choices.some((c) => c.current)) {
    choices.unshift({
      id: current, label: current, description: `${current} · in use`, current: true, isDefault: false,
      provider: providerOf(current),
    });
  }
  return choices;
}

export interface ModelGroup {
  provider: string;
  choices: ModelChoice[];
}

/**
 * The picker's entries grouped by provider (issue 27): the groups in the order their first model comes (the
 * server lists Anthropic's first), each group's models in the server's order.
 */
export function modelGroups(result: ListModelsResult, current: string | undefined): ModelGroup[] {
  const groups = new Map<string, ModelChoice[]>();
  for (const choice of modelChoices(result, current)) {
    const group = groups.get(choice.provider) ?? [];
    group.push(choice);
    groups.set(choice.provider, group);
  }
  return [...groups].map(([provider, choices]) => ({ provider, choices }));
}

/** Why a configured provider's models are missing from the list (the server's sentences, cleaned). */
export function providerNotes(result: ListModelsResult): string[] {
  return (result.providers ?? []).filter((p) => !p.listed && p.reason).map((p) => cleanNote(p.reason as string, p.provider));
}

/** Why the list is the built-in one (the server's sentence, cleaned), or undefined when it is the API's. */
export function modelListNote(result: ListModelsResult): string | undefined {
  if (result.source !== "builtin") return undefined;
  return cleanNote(result.reason || "The built-in model list is shown (the API's list could not be read).");
}

/** Markup of a web page (a proxy's or a gateway's error page), not the words of an API error. */
const MARKUP = /<!doctype\s|<\/?(?:html|head|body|title|h[1-6]|center|hr|div|p|pre|span|a|br|meta|style|script)\b[^>]*>/i;

/**
 * A note as the user reads it. The server quotes what the API answered when its list could not be read;
 * a proxy or gateway in between may have answered with a web page (`<html>…502 Bad Gateway…`), whose markup
 * would be shown raw. Such a quote becomes one sentence: what happened (a web page, not a model list, and its
 * title), why it matters (the built-in list is shown) and what to do next.
 */
export function cleanNote(note: string, provider = "anthropic"): string {
  const at = note.search(MARKUP);
  if (at < 0) return note;
  const page = note.slice(at);
  const title = /<title[^>]*>([^<]*)<\/title>|<h1[^>]*>([^<]*)<\/h1>/i.exec(page);
  const said = (title?.[1] ?? title?.[2] ?? "").replace(/\s+/g, " ").trim().slice(0, 80);
  const status = /\b(?:HTTP|status)[^0-9]{0,8}([1-5]\d\d)\b/i.exec(note.slice(0, at))?.[1];
  const what = `the address the server asks for the model list answered with a web page instead of a model list${
    said ? ` (“${said}”)` : status ? ` (HTTP ${status})` : ""
  }`;
  const where = provider === "anthropic"
    ? "ANTHROPIC_BASE_URL (in your shell or phoenix.server.env)"
    : `the ${provider} provider's base URL in the providers file`;
  const shown = provider === "anthropic" ? "The built-in model list is shown" : `The ${provider} provider's models are not listed`;
  return (
    `${shown} because ${what}: a proxy or a wrong base URL is in the way. ` +
    `Check ${where} and the proxy settings; any model id can still be chosen, and the server's log has the full answer.`
  );
}
