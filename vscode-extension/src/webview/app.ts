/**
 * The chat view inside the webview: the parts (header, banner, timeline, status line, dialog, composer) laid
 * out in one root, the host's messages given to the part each is for and drawn as they come (while the page is
 * shown; once a frame while it is hidden), and the keys routed (the open dialog first). DOM only (no `vscode`): `main.ts` wires it to `acquireVsCodeApi()`, the tests
 * to jsdom.
 *
 * Safety: every piece of model or tool text goes in through `textContent`, except markdown, which is
 * rendered with raw HTML disabled and then sanitised (`sanitize`) before `innerHTML`.
 */

import type { HostMessage, ViewMessage } from "../core/messages";
import { apply, type ConversationView } from "../core/reducer";
import { isBusy } from "../core/status";
import { Banner } from "./banner";
import { Composer } from "./composer";
import { Dialog } from "./dialog";
import { Dom, type PartContext } from "./dom";
import { Header } from "./header";
import { StatusLine } from "./statusLine";
import { Timeline } from "./timeline";

export { droppedUris } from "./composer";

export interface AppOptions {
  /** HTML sanitiser for rendered markdown (DOMPurify in the webview) */
  sanitize: (html: string) => string;
  /**
   * The page's next frame (requestAnimationFrame in the webview; tests run it at once or hold it): what needs
   * the layout (keeping the timeline's end in view) waits for it, and so does drawing while the page is hidden.
   */
  schedule?: (run: () => void) => void;
  /** whether the page is shown (default: its document's `visibilityState`); a shown page draws each message
   *  as it comes (issue 35: a delta waited for the next frame, and behind that frame's other work) */
  visible?: () => boolean;
  /** a timer: `run` every `ms` until the returned function is called (setInterval in the webview; default: none,
   *  the busy icon stands still) */
  every?: (ms: number, run: () => void) => () => void;
  /** whether the chat has the keyboard (default: its document's `hasFocus()`); tests stand in for the workbench */
  hasFocus?: () => boolean;
}

export class ChatApp {
  view: ConversationView | undefined;
  private readonly header: Header;
  private readonly banner: Banner;
  private readonly timeline: Timeline;
  private readonly status: StatusLine;
  private readonly dialog: Dialog;
  private readonly composer: Composer;
  private scheduled = false;
  private readonly doc: Document;

  constructor(
    root: HTMLElement,
    private readonly post: (message: ViewMessage) => void,
    private readonly options: AppOptions,
  ) {
    const doc = (this.doc = root.ownerDocument);
    root.replaceChildren();
    root.classList.add("phoenix");
    const c: PartContext = {
      dom: new Dom(doc, options.sanitize),
      view: () => this.view,
      post: (message) => this.post(message),
      render: () => this.render(),
      frame: (run) => (options.schedule ?? ((fn) => fn()))(run),
      every: (ms, run) => (options.every ? options.every(ms, run) : () => undefined),
    };
    const hasFocus = options.hasFocus ?? (() => doc.hasFocus());
    this.header = new Header(c, root);
    this.banner = new Banner(c, root);
    this.timeline = new Timeline(c, root);
    this.status = new StatusLine(c, root);
    this.dialog = new Dialog(c, root, hasFocus, () => this.composer.input.focus());
    this.composer = new Composer(c, root, () => this.dialog.open);
    doc.addEventListener("keydown", (e) => this.onKey(e), true);
    // the user comes back to the chat (a click in it, or the workbench focusing the view): an open dialog
    // takes the keyboard then, not before (REQ-PERM-025)
    doc.defaultView?.addEventListener("focus", () => this.dialog.chatFocused());
    this.render();
  }

  // ------------------------------------------------------------------------------- host messages

  /**
   * Apply a host message and draw it at once while the page is shown: drawing reads no layout (the timeline's
   * end is kept in view in the next frame, where the layout is made anyway), and a streamed paragraph is an
   * append to its text, so drawing each post costs less than the frame it used to wait for. While the page is
   * hidden, what comes is drawn once, in the next frame.
   */
  receive(message: HostMessage): void {
    this.take(message);
    if (this.visible()) {
      this.render();
    } else {
      this.schedule();
    }
  }

  private visible(): boolean {
    return this.options.visible ? this.options.visible() : this.doc.visibilityState === "visible";
  }

  /** Apply one host message to the state (`receive` draws it). */
  private take(message: HostMessage): void {
    switch (message.type) {
      case "batch":
        for (const m of message.messages) this.take(m);
        break;
      case "reset":
        this.view = message.view;
        this.timeline.reset();
        break;
      case "input":
        if (this.view) apply(this.view, message.input);
        break;
      case "conversations":
        this.header.setConversations(message.conversations, message.titles);
        break;
      case "server":
        this.banner.setServer(message.state, message.message);
        break;
      case "notice":
        this.banner.notice(message.level, message.text);
        break;
      case "focusInput":
        this.composer.input.focus();
        break;
      case "models":
        this.header.setModels(message.models);
        break;
      case "route":
        this.header.setRoute(message.route);
        break;
      case "attach":
        this.composer.addChips(message.chips);
        break;
      case "files":
        this.composer.setFiles(message.files);
        break;
      case "workspace":
        this.banner.setWorkspace(message.folders, message.home);
        break;
      case "sendResult":
        this.composer.sendEnded(message.ok, message.refused);
        break;
    }
  }

  /** One drawing in the next frame for everything that comes while the page is hidden. */
  private schedule(): void {
    if (this.scheduled) return;
    this.scheduled = true;
    (this.options.schedule ?? ((fn) => fn()))(() => {
      if (!this.scheduled) return; // drawn since, when a message came with the page shown
      this.render();
    });
  }

  render(): void {
    this.scheduled = false;
    this.dialog.sync();
    this.header.render();
    this.banner.render();
    this.timeline.render();
    this.status.render();
    this.dialog.render();
    this.composer.render();
  }

  /** Add image files to the next message (base64 in `phoenix/sendMessage.images`). */
  attach(files: File[]): Promise<void> {
    return this.composer.attach(files);
  }

  // ---------------------------------------------------------------------------------------- keys

  private onKey(e: KeyboardEvent): void {
    if (this.dialog.open) {
      this.dialog.key(e); // every key goes to the dialog while it is open (REQ-PERM-014)
      return;
    }
    if (e.key === "Tab" && e.shiftKey && !e.ctrlKey && !e.altKey && !e.metaKey) {
      e.preventDefault();
      e.stopPropagation();
      this.post({ type: "togglePolicy" });
      return;
    }
    if (this.composer.key(e)) return;
    if (e.key === "Escape" && this.header.closeList()) {
      this.render();
    } else if (e.key === "Escape" && this.view && isBusy(this.view.status)) {
      this.post({ type: "cancel" });
    }
  }
}
