/**
 * The approval and upgrade dialog: opened, kept and closed to match the view's open request (the server
 * decides), answered once per request from the keyboard or a click (REQ-PERM-011..014, REQ-PERM-020), and given
 * the keyboard only from the chat (REQ-PERM-025, `./focus`).
 */

import {
  approvalDialog,
  handleKey,
  shortcutHint,
  upgradeDialog,
  wholeArguments,
  type Answer,
  type DialogState,
} from "../core/dialog";
import { stripTerminalEscapes } from "../core/markdown";
import { openRequest, type OpenRequest } from "../core/reducer";
import { reviewHeadline, reviewOf, type Review } from "../core/review";
import { toolWords } from "../core/toolNames";
import { Memo, type PartContext } from "./dom";
import { DialogFocus } from "./focus";

export class Dialog {
  state: DialogState | undefined;
  private request: OpenRequest | undefined;
  private readonly answered = new Set<string>();
  private descriptionOpen = false;
  /** the review's files whose diffs the user unfolded, kept while this dialog is open */
  private readonly filesOpen = new Set<string>();
  /** the open approval's review (undefined: not a multi-file review), read once per approval */
  private review: Review | undefined;
  private readonly focus = new DialogFocus();
  private readonly box: HTMLElement;
  private readonly shown = new Memo();

  constructor(
    private readonly c: PartContext,
    root: HTMLElement,
    /** whether the chat has the keyboard */
    private readonly chatHasFocus: () => boolean,
    /** where the keyboard goes when the dialog that had it closes */
    private readonly focusInput: () => void,
  ) {
    const box = c.dom.add(root, "section", "dialog hidden");
    box.setAttribute("role", "dialog");
    box.setAttribute("aria-modal", "true");
    box.tabIndex = -1;
    box.dataset.testid = "approval-dialog";
    box.dataset.open = "false";
    this.box = box;
  }

  get open(): boolean {
    return this.state !== undefined;
  }

  /** Open, keep or close the dialog to match the view's open request. */
  sync(): void {
    const view = this.c.view();
    const request = view ? openRequest(view) : undefined;
    this.request = request;
    if (request?.approval) {
      if (!this.state || this.state.kind !== "approval" || this.state.id !== request.approval.toolUseId) {
        this.state = approvalDialog(request.approval);
        this.descriptionOpen = false;
        this.filesOpen.clear();
        this.review = reviewOf(request.approval);
      }
    } else if (request?.upgrade) {
      if (!this.state || this.state.kind !== "upgrade" || this.state.id !== request.upgrade.toolUseId) {
        this.state = upgradeDialog(request.upgrade);
      }
    } else {
      this.state = undefined;
    }
  }

  /** A key while the dialog is open: every key goes to it (REQ-PERM-014). */
  key(e: KeyboardEvent): void {
    if (!this.state) return;
    e.preventDefault();
    e.stopPropagation();
    const result = handleKey(this.state, e);
    this.state = result.state;
    if (result.answer) this.answer(result.answer);
    else this.c.render();
  }

  /** The chat got the keyboard back: an open dialog takes it (a click inside the dialog already put it there). */
  chatFocused(): void {
    const doc = this.box.ownerDocument;
    if (this.focus.returned() && !this.box.contains(doc.activeElement)) this.box.focus();
  }

  render(): void {
    const dom = this.c.dom;
    const box = this.box;
    const doc = box.ownerDocument;
    const d = this.state;
    const r = this.request;
    const wasOpen = box.dataset.open === "true";
    const key = d && r
      ? [d.kind, d.id, d.selected, this.answered.has(d.id), r.conversationId, this.c.view()?.conversationId, r.approval?.diff?.length ?? "", this.descriptionOpen].join("|")
      : "";
    const takeFocus = this.focus.shown(d && r ? d.id : undefined, this.chatHasFocus());
    if (this.shown.same(key)) return; // a redraw never moves the focus
    box.replaceChildren();
    box.classList.toggle("hidden", !d);
    box.dataset.open = String(Boolean(d && r)); // tests and styles read this, not the class
    if (!d || !r) {
      // the keyboard goes back to the input, if the user is still in the chat
      if (wasOpen && doc.activeElement === box && this.chatHasFocus()) this.focusInput();
      return;
    }
    box.dataset.kind = d.kind;
    box.dataset.id = d.id;
    box.dataset.conversationId = r.conversationId;
    if (d.kind === "approval" && r.approval) {
      const a = r.approval;
      if (r.conversationId !== this.c.view()?.conversationId) {
        dom.add(box, "div", "dialog-agent dim").textContent = "A sub-agent asks:";
      }
      const title = dom.text(box, "div", "dialog-title tool-name", toolWords(a.toolName));
      title.dataset.testid = "dialog-title";
      if (a.description) this.renderDescription(box, stripTerminalEscapes(a.description));
      if (this.review) {
        this.renderReview(box, this.review, r.conversationId, a.toolUseId);
      } else {
        // all of them: the user approves only what they saw (REQ-PERM-023); the box wraps and scrolls
        dom.text(box, "pre", "dialog-arguments", wholeArguments(a.arguments));
      }
      if (a.diff && !this.review) {
        dom.diff(box, a.diff);
        const open = dom.button(box, "Open diff", "link open-diff", () =>
          this.c.post({ type: "openDiff", conversationId: r.conversationId, toolUseId: a.toolUseId }),
          "Show the proposed change in VS Code's diff editor",
        );
        open.dataset.testid = "open-diff";
      }
    } else if (d.kind === "upgrade" && r.upgrade) {
      dom.add(box, "div", "dialog-title").textContent = "The agent asks to unrestrict this conversation";
      dom.text(box, "div", "dialog-reason", r.upgrade.reason);
    }
    const list = dom.add(box, "ul", "choices");
    list.setAttribute("role", "listbox");
    d.choices.forEach((choice, i) => {
      const li = dom.add(list, "li", `choice${i === d.selected ? " selected" : " dim"}`);
      li.setAttribute("role", "option");
      li.setAttribute("aria-selected", String(i === d.selected));
      li.dataset.testid = "dialog-choice";
      if (choice.key) li.dataset.key = choice.key;
      if (choice.scope) li.dataset.scope = choice.scope;
      dom.text(li, "span", "choice-label", choice.label);
      if (choice.key) dom.add(li, "kbd", "").textContent = choice.key.toUpperCase();
      li.addEventListener("click", () => this.answer(choice.answer));
    });
    dom.text(box, "div", "dialog-hint dim", shortcutHint(d));
    if (this.answered.has(d.id)) dom.add(box, "div", "dim").textContent = "Sent; waiting for the server…";
    if (takeFocus) box.focus();
  }

  /**
   * The tool's description, dimmed and folded to its first line (a patch's runs to ~25 lines and would push
   * the choices below the fold); a click unfolds it. REQ-PERM-011.
   */
  private renderDescription(box: HTMLElement, text: string): void {
    const dom = this.c.dom;
    const [first, ...rest] = text.trim().split("\n");
    const more = rest.join("\n").trim();
    if (!more) {
      dom.add(box, "div", "dialog-description dim").textContent = first;
      return;
    }
    const details = dom.add(box, "details", "dialog-description dim") as HTMLDetailsElement;
    details.dataset.testid = "dialog-description";
    details.open = this.descriptionOpen;
    dom.add(details, "summary", "dialog-description-first").textContent = first;
    dom.add(details, "div", "dialog-description-rest").textContent = more;
    details.addEventListener("toggle", () => {
      this.descriptionOpen = details.open; // kept while this dialog is open
    });
  }

  /**
   * A multi-file review (REQ-VSC-017): the command whole, the list of files (status, path, +/− counts), each
   * file's diff folded until the user opens it (drawn then, so 200 files open at once) or shown in VS Code's
   * diff editor, the paths without a diff and the summary of what is not an editor edit. Allow and Deny below
   * answer for the whole.
   */
  private renderReview(box: HTMLElement, review: Review, conversationId: string, toolUseId: string): void {
    const dom = this.c.dom;
    const part = dom.add(box, "div", "review");
    part.dataset.testid = "review";
    dom.text(part, "div", "review-headline", reviewHeadline(review)).dataset.testid = "review-headline";
    if (review.command !== undefined) {
      dom.text(part, "pre", "review-command", `$ ${review.command}`).dataset.testid = "review-command";
    }
    const list = dom.files(part, review.files, this.filesOpen, (file) =>
      this.c.post({ type: "openDiff", conversationId, toolUseId, path: file.path }),
    );
    const others = [...review.others.map((p) => `other change: ${p}`), ...(review.more ? [`… and ${review.more} more path(s)`] : [])];
    for (const line of others) dom.text(list, "li", "review-other dim", line).dataset.testid = "review-other";
    if (review.summary.length > 0) {
      dom.text(part, "pre", "review-summary", review.summary.join("\n")).dataset.testid = "review-summary";
    }
  }

  private answer(answer: Answer): void {
    const r = this.request;
    if (!r || !this.state) return;
    const id = answer.toolUseId;
    if (this.answered.has(id)) return; // one answer per request
    this.answered.add(id);
    if (answer.kind === "approval") {
      this.c.post({
        type: "answerApproval",
        conversationId: r.conversationId,
        toolUseId: answer.toolUseId,
        decision: answer.decision,
        ...(answer.rule !== undefined ? { rule: answer.rule } : {}), // the scope chosen (REQ-PERM-020)
      });
    } else {
      this.c.post({ type: "answerUpgrade", conversationId: r.conversationId, toolUseId: answer.toolUseId, approve: answer.approve });
    }
    this.c.render();
  }
}
