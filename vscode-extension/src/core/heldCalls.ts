/**
 * Calls held for a receiver that does not exist yet (issue 35): the language client starts when VS Code
 * loads the extension, before `activate` makes the controller that hears the server's news; what the server
 * says meanwhile is kept here in its order and given to the controller when it is attached, then calls go
 * straight through. The server is outside: the calls it can cause in any number (its events) are bounded,
 * the later ones counted and dropped; the client's own state changes (starting, ready, failed) are always kept.
 */

export class HeldCalls<T> {
  private held: ((receiver: T) => void)[] = [];
  private receiver: T | undefined;
  private droppableHeld = 0;
  private dropped = 0;

  /** `limit`: how many droppable calls are held at most */
  constructor(private readonly limit: number) {}

  /** A call that must reach the receiver. */
  keep(call: (receiver: T) => void): void {
    if (this.receiver !== undefined) call(this.receiver);
    else this.held.push(call);
  }

  /** A call that may be dropped (beyond `limit` held ones) while there is no receiver. */
  droppable(call: (receiver: T) => void): void {
    if (this.receiver !== undefined) {
      call(this.receiver);
    } else if (this.droppableHeld < this.limit) {
      this.droppableHeld++;
      this.held.push(call);
    } else {
      this.dropped++;
    }
  }

  /** Gives the held calls to `receiver` in their order, then every later call; returns how many were dropped. */
  attach(receiver: T): number {
    if (this.receiver !== undefined) throw new Error("a receiver is already attached: the held calls went to it");
    const held = this.held;
    this.held = [];
    this.droppableHeld = 0;
    for (const call of held) call(receiver);
    this.receiver = receiver;
    return this.dropped;
  }
}
