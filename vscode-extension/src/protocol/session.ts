/**
 * The active conversation as the server tells it: loads it with `phoenix/getConversation` (all pages),
 * folds `phoenix/event`s into the view, and closes every seq gap with `getConversation({afterSeq})`
 * (REQ-PROTO-007). Each change is handed to listeners as the reducer input it was, so a second copy of the
 * view (the webview's) stays identical by folding the same inputs. No `vscode` import.
 */

import { apply, emptyView, findView, gaps, type ConversationView, type ReducerInput } from "../core/reducer";
import { catchUpRequest } from "../core/sequence";
import type { PhoenixClient } from "./client";
import type { PhoenixEvent } from "./wire";

export type SessionChange = { type: "reset"; view: ConversationView | undefined } | { type: "input"; input: ReducerInput };

export class ConversationSession {
  view: ConversationView | undefined;
  private loading: PhoenixEvent[] | undefined;
  private listeners: ((change: SessionChange) => void)[] = [];
  private generation = 0;
  /** Failures of background catch-ups, for the log. */
  onError: (error: unknown) => void = () => undefined;

  constructor(private readonly client: PhoenixClient) {}

  onChange(listener: (change: SessionChange) => void): { dispose(): void } {
    this.listeners.push(listener);
    return { dispose: () => (this.listeners = this.listeners.filter((l) => l !== listener)) };
  }

  private emit(change: SessionChange): void {
    for (const listener of this.listeners) listener(change);
  }

  get conversationId(): string | undefined {
    return this.view?.conversationId;
  }

  /** Show `conversationId`, rebuilt from the server (history, status, and any open approval). */
  async open(conversationId: string): Promise<ConversationView> {
    const generation = ++this.generation;
    this.loading = [];
    const view = emptyView(conversationId);
    this.view = view;
    try {
      let page = await this.client.getConversation(catchUpRequest(conversationId));
      apply(view, { type: "snapshot", snapshot: page, merge: false });
      while (page.hasMore && view.gapAfter !== undefined) {
        page = await this.client.getConversation(catchUpRequest(conversationId, view.gapAfter));
        apply(view, { type: "snapshot", snapshot: page, merge: true });
      }
      for (const id of view.subAgentOrder) {
        const sub = await this.client.getConversation(catchUpRequest(id));
        apply(view, { type: "snapshot", snapshot: sub, merge: true });
      }
    } finally {
      if (generation === this.generation) {
        const buffered = this.loading ?? [];
        this.loading = undefined;
        for (const event of buffered) apply(view, { type: "event", event });
      }
    }
    if (generation === this.generation) {
      this.emit({ type: "reset", view });
      void this.closeGaps();
    }
    return view;
  }

  /** Forget the conversation (e.g. the server restarted and it is reopened later). */
  close(): void {
    this.generation++;
    this.view = undefined;
    this.loading = undefined;
    this.emit({ type: "reset", view: undefined });
  }

  /** Feed one `phoenix/event` (events of other conversations are ignored). */
  handleEvent(event: PhoenixEvent): void {
    const view = this.view;
    if (!view) return;
    if (event.conversationId !== view.conversationId && !findView(view, event.conversationId)) return;
    if (this.loading) {
      this.loading.push(event);
      return;
    }
    const input: ReducerInput = { type: "event", event };
    apply(view, input);
    this.emit({ type: "input", input });
    if (gaps(view).length > 0) void this.closeGaps();
  }

  private inflight: Promise<void> | undefined;

  /** Catch up on every open gap; resolves when none is left (or a request failed). */
  closeGaps(): Promise<void> {
    this.inflight ??= this.catchUp().finally(() => {
      this.inflight = undefined;
      // a gap that opened while the last answer was on its way
      if (this.view && gaps(this.view).length > 0 && !this.failed) void this.closeGaps();
    });
    return this.inflight;
  }

  private failed = false;

  private async catchUp(): Promise<void> {
    this.failed = false;
    for (let round = 0; round < 1000; round++) {
      const view = this.view;
      const gap = view ? gaps(view)[0] : undefined;
      if (!view || !gap) return;
      let snapshot;
      try {
        snapshot = await this.client.getConversation(catchUpRequest(gap.conversationId, gap.afterSeq));
      } catch (error) {
        this.failed = true;
        this.onError(error);
        return;
      }
      if (this.view !== view) return;
      const input: ReducerInput = { type: "snapshot", snapshot, merge: true };
      apply(view, input);
      this.emit({ type: "input", input });
    }
  }
}
