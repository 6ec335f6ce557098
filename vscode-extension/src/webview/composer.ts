/**
 * The composer under the conversation: the message input, Send / Stop, pasted and dropped images (REQ-VSC-005),
 * attachment chips and the `@` file picker (REQ-VSC-011). A draft stays until the server took it.
 */

import { addChips, fileChip, fuzzyFilter, mentionAt, PROBLEMS, type Chip, type WorkspaceFile } from "../core/attachments";
import { policyLabel } from "../core/labels";
import type { ImageAttachment } from "../core/messages";
import { isBusy } from "../core/status";
import { Memo, type PartContext } from "./dom";

const MAX_IMAGES = 20;
const IMAGE_TYPES = ["image/png", "image/jpeg", "image/gif", "image/webp"];
/** what a drag from VS Code's explorer carries: URIs in one of these (the first found wins) */
const URI_LIST_TYPES = ["application/vnd.code.uri-list", "text/uri-list", "resourceurls", "codefiles"];

type PickerEntry = { kind: "problems" } | { kind: "file"; file: WorkspaceFile };

export class Composer {
  readonly input: HTMLTextAreaElement;
  private readonly sendButton: HTMLButtonElement;
  private readonly hint: HTMLElement;
  private readonly attachments: HTMLElement;
  private readonly pickerBox: HTMLElement;
  private images: ImageAttachment[] = [];
  /** the composer's chips: attachments of the next message (issue 17) */
  private chips: Chip[] = [];
  /** the key of the chip the server refused last (shown marked until the draft changes) */
  private refusedChip: string | undefined;
  /** what was sent and not yet answered (`sendResult`): the draft stays until the server accepts it */
  private sending: { text: string; images: ImageAttachment[]; chips: Chip[] } | undefined;
  /** the `@` picker: where its `@` starts in the input, the query after it, the highlighted entry */
  private picker: { start: number; query: string; selected: number } | undefined;
  private files: WorkspaceFile[] | undefined;
  private filesVersion = 0;
  private readonly shown = new Memo();

  constructor(
    private readonly c: PartContext,
    private readonly root: HTMLElement,
    /** true while a dialog is open: the input is disabled and nothing is sent (REQ-PERM-014) */
    private readonly blocked: () => boolean,
  ) {
    const dom = c.dom;
    const composer = dom.add(root, "footer", "composer");
    this.pickerBox = dom.add(composer, "div", "file-picker conv-list hidden");
    this.pickerBox.dataset.testid = "file-picker";
    this.pickerBox.setAttribute("role", "listbox");
    this.pickerBox.setAttribute("aria-label", "Attach a file");
    this.attachments = dom.add(composer, "div", "attachments");
    this.attachments.dataset.testid = "attachments";
    this.input = dom.add(composer, "textarea", "input") as HTMLTextAreaElement;
    this.input.rows = 3;
    this.input.placeholder = "Ask Phoenix… (Enter to send, Shift+Enter for a new line, @ attaches a file, Shift+Tab toggles the approval policy)";
    this.input.setAttribute("aria-label", "Message");
    this.input.dataset.testid = "chat-input";
    const actions = dom.add(composer, "div", "composer-actions");
    this.hint = dom.add(actions, "span", "hint");
    this.sendButton = dom.button(actions, "Send", "send", () => this.sendOrCancel(), "Send (Enter)");
    this.sendButton.dataset.testid = "send-button";
    this.input.addEventListener("paste", (e) => this.onPaste(e));
    this.input.addEventListener("input", () => this.onInput());
    root.addEventListener("dragover", (e) => e.preventDefault());
    root.addEventListener("drop", (e) => this.onDrop(e));
  }

  // ------------------------------------------------------------------------------- host messages

  addChips(chips: Chip[]): void {
    this.chips = addChips(this.chips, chips);
    this.refusedChip = undefined;
  }

  setFiles(files: WorkspaceFile[]): void {
    this.files = files;
    this.filesVersion++;
  }

  /** How a `send` ended: ok clears what was sent; a refused attachment keeps the draft and marks its chip. */
  sendEnded(ok: boolean, refused?: number): void {
    const sent = this.sending;
    this.sending = undefined;
    if (!sent) return;
    if (ok) {
      if (this.input.value.trim() === sent.text) this.input.value = "";
      this.images = this.images.filter((i) => !sent.images.includes(i));
      const keys = new Set(sent.chips.map((c) => c.key));
      this.chips = this.chips.filter((c) => !keys.has(c.key));
    } else if (refused !== undefined) {
      this.refusedChip = sent.chips[refused]?.key;
    }
  }

  // -------------------------------------------------------------------------------------- render

  render(): void {
    const dom = this.c.dom;
    const view = this.c.view();
    const blocked = this.blocked();
    const images = this.images.map((i) => `${i.name}:${i.data.length}`).join(",");
    const chips = this.chips.map((c) => c.key).join(",");
    const picker = this.picker ? `${this.picker.query}:${this.picker.selected}:${this.filesVersion}` : "";
    const key = [blocked, view ? isBusy(view.status) : "", view?.policy, images, chips, this.refusedChip, picker, Boolean(this.sending)].join("|");
    if (this.shown.same(key)) return;
    this.input.disabled = blocked;
    this.root.classList.toggle("dialog-open", blocked);
    const busy = view ? isBusy(view.status) : false;
    this.sendButton.textContent = busy ? "Stop" : "Send";
    this.sendButton.disabled = blocked;
    this.hint.textContent = blocked
      ? "Answer the request above first (Y / N / A, Esc denies)."
      : view
        ? `${policyLabel(view.policy).text} · Shift+Tab toggles`
        : "";
    const att = this.attachments;
    att.replaceChildren();
    this.images.forEach((image, i) => {
      const chip = dom.add(att, "span", "attachment");
      const img = dom.add(chip, "img", "thumb") as HTMLImageElement;
      img.src = `data:${image.mediaType};base64,${image.data}`;
      img.alt = image.name;
      dom.button(chip, "", "icon-button codicon codicon-close", () => {
        this.images.splice(i, 1);
        this.c.render();
      }, `Remove ${image.name}`);
    });
    for (const c of this.chips) {
      const chip = dom.add(att, "span", `attachment chip${c.key === this.refusedChip ? " refused" : ""}`);
      chip.dataset.testid = "attachment-chip";
      chip.dataset.kind = c.attachment.kind ?? "file";
      chip.dataset.key = c.key;
      if (c.key === this.refusedChip) chip.dataset.refused = "true";
      chip.title = c.title;
      dom.icon(chip, c.attachment.kind === "diagnostics" ? "warning" : "file");
      dom.text(chip, "span", "chip-label", ` ${c.label}`);
      const remove = dom.button(chip, "", "icon-button codicon codicon-close", () => {
        this.chips = this.chips.filter((x) => x.key !== c.key);
        if (this.refusedChip === c.key) this.refusedChip = undefined;
        this.c.render();
      }, `Remove ${c.label}`);
      remove.dataset.testid = "remove-attachment";
    }
    this.renderPicker();
  }

  // ------------------------------------------------------------------------------- the @ picker

  private pickerEntries(): PickerEntry[] {
    const p = this.picker;
    if (!p) return [];
    const entries: PickerEntry[] = [];
    if (PROBLEMS.startsWith(p.query.toLowerCase())) entries.push({ kind: "problems" });
    for (const file of fuzzyFilter(this.files ?? [], p.query, 30)) entries.push({ kind: "file", file });
    return entries;
  }

  private renderPicker(): void {
    const dom = this.c.dom;
    const box = this.pickerBox;
    box.replaceChildren();
    box.classList.toggle("hidden", !this.picker);
    if (!this.picker) return;
    const entries = this.pickerEntries();
    const selected = Math.min(this.picker.selected, Math.max(entries.length - 1, 0));
    entries.forEach((entry, i) => {
      const row = dom.add(box, "div", `conv-row picker-row${i === selected ? " active" : ""}`);
      row.dataset.testid = "file-option";
      row.setAttribute("role", "option");
      row.setAttribute("aria-selected", String(i === selected));
      if (entry.kind === "problems") {
        row.dataset.path = "@problems";
        dom.icon(row, "warning");
        dom.add(row, "span", "").textContent = " @problems";
        dom.add(row, "span", "dim").textContent = " · the current file's problems";
      } else {
        row.dataset.path = entry.file.path;
        dom.icon(row, "file");
        const slash = entry.file.path.lastIndexOf("/");
        dom.text(row, "span", "", ` ${entry.file.path.slice(slash + 1)}`);
        if (slash > 0) dom.text(row, "span", "dim", ` · ${entry.file.path.slice(0, slash)}`);
      }
      row.addEventListener("mousedown", (e) => e.preventDefault()); // keep the focus in the input
      row.addEventListener("click", () => this.choose(entry));
    });
    if (!this.files) dom.add(box, "div", "dim").textContent = "Listing the workspace's files…";
    else if (entries.length === 0) dom.add(box, "div", "dim").textContent = "No file matches.";
  }

  /** The input changed: open, follow or close the `@` picker. */
  private onInput(): void {
    if (this.refusedChip) this.refusedChip = undefined;
    const mention = mentionAt(this.input.value, this.input.selectionStart ?? this.input.value.length);
    if (!mention) {
      if (this.picker) {
        this.picker = undefined;
        this.c.render();
      }
      return;
    }
    if (!this.picker) this.c.post({ type: "listFiles" }); // the host answers with `files`
    const moved = this.picker?.query !== mention.query;
    this.picker = { start: mention.start, query: mention.query, selected: moved ? 0 : (this.picker?.selected ?? 0) };
    this.c.render();
  }

  /** Take the picker's choice: the `@query` leaves the input, a chip (or `@problems`) takes its place. */
  private choose(entry: PickerEntry): void {
    const p = this.picker;
    if (!p) return;
    const value = this.input.value;
    const end = p.start + 1 + p.query.length;
    this.input.value = value.slice(0, p.start) + value.slice(end);
    this.input.selectionStart = this.input.selectionEnd = p.start;
    this.picker = undefined;
    if (entry.kind === "problems") this.c.post({ type: "attachProblems" });
    else this.chips = addChips(this.chips, [fileChip(entry.file.uri, entry.file.path)]);
    this.input.focus();
    this.c.render();
  }

  /**
   * A key for the composer (no dialog open): the picker's arrows, Enter / Tab and Escape while it is open,
   * Enter sends. True when the key was taken.
   */
  key(e: KeyboardEvent): boolean {
    if (this.pickerKey(e)) return true;
    if (e.target === this.input && e.key === "Enter" && !e.shiftKey && !e.isComposing) {
      e.preventDefault();
      this.send();
      return true;
    }
    return false;
  }

  private pickerKey(e: KeyboardEvent): boolean {
    const p = this.picker;
    if (!p || e.target !== this.input) return false;
    const entries = this.pickerEntries();
    if (e.key === "ArrowDown" || e.key === "ArrowUp") {
      const n = Math.max(entries.length, 1);
      p.selected = (Math.min(p.selected, n - 1) + (e.key === "ArrowDown" ? 1 : n - 1)) % n;
    } else if ((e.key === "Enter" || e.key === "Tab") && !e.shiftKey && !e.isComposing) {
      const entry = entries[Math.min(p.selected, entries.length - 1)];
      if (!entry) return false;
      e.preventDefault();
      e.stopPropagation();
      this.choose(entry);
      return true;
    } else if (e.key === "Escape") {
      this.picker = undefined;
    } else {
      return false;
    }
    e.preventDefault();
    e.stopPropagation();
    this.c.render();
    return true;
  }

  private sendOrCancel(): void {
    const view = this.c.view();
    if (view && isBusy(view.status)) {
      this.c.post({ type: "cancel" });
      return;
    }
    this.send();
  }

  /**
   * Send the draft. It stays (text, images, chips) until the host says how the send ended (`sendResult`):
   * a refused attachment keeps everything so the user can remove the chip and send again.
   */
  private send(): void {
    if (this.blocked() || this.sending) return;
    const text = this.input.value.trim();
    if (!text && this.images.length === 0 && this.chips.length === 0) return;
    this.picker = undefined;
    this.refusedChip = undefined;
    this.sending = { text, images: [...this.images], chips: [...this.chips] };
    this.c.post({ type: "send", text, images: this.images, attachments: this.chips.map((c) => c.attachment) });
    this.c.render();
  }

  private onPaste(e: ClipboardEvent): void {
    const files = [...(e.clipboardData?.files ?? [])].filter((f) => IMAGE_TYPES.includes(f.type));
    if (files.length === 0) return;
    e.preventDefault();
    void this.attach(files);
  }

  /** A drop: image files are attached as images; files dragged from VS Code's explorer (URIs) as file chips. */
  private onDrop(e: DragEvent): void {
    e.preventDefault();
    const files = [...(e.dataTransfer?.files ?? [])].filter((f) => IMAGE_TYPES.includes(f.type));
    const uris = droppedUris(e.dataTransfer);
    if (uris.length > 0) this.c.post({ type: "attachUris", uris });
    void this.attach(files);
  }

  /** Add image files to the next message (base64 in `phoenix/sendMessage.images`). */
  async attach(files: File[]): Promise<void> {
    for (const file of files) {
      if (this.images.length >= MAX_IMAGES) break;
      const data = await readBase64(file);
      this.images.push({ mediaType: file.type, data, name: file.name || "image" });
    }
    this.c.render();
  }
}

/** The URIs a drag from VS Code's explorer carries (a uri-list, or a JSON list of URIs or paths). */
export function droppedUris(data: DataTransfer | null | undefined): string[] {
  if (!data) return [];
  for (const type of URI_LIST_TYPES) {
    const raw = data.getData(type);
    if (!raw) continue;
    if (raw.trimStart().startsWith("[")) {
      try {
        const list = JSON.parse(raw) as unknown;
        if (Array.isArray(list)) return list.filter((u): u is string => typeof u === "string");
      } catch {
        continue;
      }
    }
    return raw
      .split(/\r?\n/)
      .map((l) => l.trim())
      .filter((l) => l && !l.startsWith("#"));
  }
  return [];
}

function readBase64(file: File): Promise<string> {
  return new Promise((resolve, reject) => {
    const reader = new FileReader();
    reader.onload = () => {
      const url = String(reader.result);
      resolve(url.slice(url.indexOf(",") + 1));
    };
    reader.onerror = () => reject(reader.error ?? new Error(`could not read ${file.name}`));
    reader.readAsDataURL(file);
  });
}
