/**
 * When the approval (or upgrade) dialog takes the keyboard. A webview that calls `focus()` pulls the
 * workbench's focus into itself, so the rule is narrow:
 *
 * - when a dialog opens while the chat has the focus (the user just sent a message), it takes it at once;
 * - when a dialog opens while the focus is elsewhere (the editor, the palette, a freshly reloaded window),
 *   it waits: it takes the focus when the user comes back to the chat;
 * - a redraw never moves the focus (events stream in while the dialog is open: the user may be typing in
 *   the editor, or about to press Escape to close a notification).
 *
 * Pure: the caller says what happened and whether the chat has the focus; the answer is whether to focus
 * the dialog now.
 */

export class DialogFocus {
  /** the dialog the rule last saw open (undefined: none) */
  private open: string | undefined;

  /**
   * The dialog shown now (`id`, or undefined when none is open), after a redraw. True when it just opened
   * and the chat has the focus: then it takes it.
   */
  shown(id: string | undefined, chatHasFocus: boolean): boolean {
    const opened = id !== undefined && id !== this.open;
    this.open = id;
    return opened && chatHasFocus;
  }

  /** The user came back to the chat (its window got the focus): true when a dialog is open to take it. */
  returned(): boolean {
    return this.open !== undefined;
  }
}
