// The lines of a log in a <pre>, written straight into the DOM (a log can be long and fast; a
// virtual DOM diff per line would not keep up): at most `max` lines, batched per animation frame,
// paused lines kept aside until resumed, and a case-insensitive filter that highlights matches.

/** `worker-0 | text`: the replica prefix of a line of the "all replicas" log. */
const PREFIX = /^([A-Za-z0-9][A-Za-z0-9._-]*) \| /;
/** `----- worker-0 restarted -----`: the separator where a replica restarted. */
const SEPARATOR = /^-{3,} .* -{3,}$/;

const escapeRegExp = (text) => text.replace(/[.*+?^${}()|[\]\\]/g, "\\$&");

export class LogView {
  /** pre: the element to fill; onChange(): called when the counts (shown, waiting) change. */
  constructor(pre, { max = 20000, onChange = () => {} } = {}) {
    this.pre = pre;
    this.max = max;
    this.onChange = onChange;
    this.entries = []; // the kept lines, oldest first: {text, node} (node null when filtered out)
    this.waiting = []; // lines read but not shown yet (paused, or until the next frame)
    this.following = true;
    this.pattern = null; // the filter as a RegExp, null when none
    this.dropped = 0; // lines no longer kept because of `max`
    this.frame = 0;
    this.colors = new Map(); // replica name -> colour number, in the order first seen
  }

  /** The colour (0-5) of a replica's prefix: replicas seen in turn get the next one. */
  color(replica) {
    if (!this.colors.has(replica)) this.colors.set(replica, this.colors.size % 6);
    return this.colors.get(replica);
  }

  /** Adds lines read from the stream. */
  push(lines) {
    if (lines.length === 0) return;
    for (const line of lines) this.waiting.push(line);
    if (this.waiting.length > this.max) {
      // Only the last `max` could be shown anyway.
      const excess = this.waiting.length - this.max;
      this.waiting.splice(0, excess);
      this.dropped += excess;
    }
    if (this.following) this.schedule();
    else this.onChange();
  }

  schedule() {
    if (!this.frame) this.frame = requestAnimationFrame(() => this.flush());
  }

  /** Appends the waiting lines to the DOM, drops the oldest beyond `max`, scrolls to the end. */
  flush() {
    this.frame = 0;
    const lines = this.waiting;
    this.waiting = [];
    const fragment = document.createDocumentFragment();
    for (const text of lines) {
      const node = this.matches(text) ? this.render(text) : null;
      if (node) fragment.appendChild(node);
      this.entries.push({ text, node });
    }
    this.pre.appendChild(fragment);
    const excess = this.entries.length - this.max;
    if (excess > 0) {
      for (const entry of this.entries.splice(0, excess)) entry.node?.remove();
      this.dropped += excess;
    }
    if (this.following) this.pre.scrollTop = this.pre.scrollHeight;
    this.onChange();
  }

  /** Follow (append and scroll as lines come) or pause (keep them aside). */
  setFollowing(following) {
    this.following = following;
    if (following && this.waiting.length > 0) this.flush();
    else if (following) this.pre.scrollTop = this.pre.scrollHeight;
    this.onChange();
  }

  /** Shows only the lines containing `text` (any case), highlighted; "" shows all. */
  setFilter(text) {
    this.pattern = text ? new RegExp(escapeRegExp(text), "gi") : null;
    const fragment = document.createDocumentFragment();
    for (const entry of this.entries) {
      entry.node = this.matches(entry.text) ? this.render(entry.text) : null;
      if (entry.node) fragment.appendChild(entry.node);
    }
    this.pre.textContent = "";
    this.pre.appendChild(fragment);
    if (this.following) this.pre.scrollTop = this.pre.scrollHeight;
    this.onChange();
  }

  /** Forgets every line (a new stream starts). */
  clear() {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
    this.entries = [];
    this.waiting = [];
    this.dropped = 0;
    this.pre.textContent = "";
    this.onChange();
  }

  dispose() {
    cancelAnimationFrame(this.frame);
    this.frame = 0;
  }

  /** Counts for the toolbar: lines kept, shown (matching), waiting, dropped. */
  counts() {
    let shown = 0;
    for (const entry of this.entries) if (entry.node) shown += 1;
    return {
      kept: this.entries.length,
      shown,
      waiting: this.following ? 0 : this.waiting.length,
      dropped: this.dropped,
    };
  }

  matches(text) {
    if (!this.pattern) return true;
    this.pattern.lastIndex = 0;
    return this.pattern.test(text);
  }

  /** `<span class="line">` with the replica prefix, the text (matches in <mark>) and "\n". */
  render(text) {
    const line = document.createElement("span");
    line.className = "line";
    let rest = text;
    const prefix = PREFIX.exec(text);
    if (prefix) {
      const label = document.createElement("span");
      label.className = `prefix p${this.color(prefix[1])}`;
      this.appendHighlighted(label, prefix[0]);
      line.appendChild(label);
      rest = text.slice(prefix[0].length);
    }
    if (SEPARATOR.test(rest)) line.classList.add("separator");
    this.appendHighlighted(line, rest);
    line.appendChild(document.createTextNode("\n"));
    return line;
  }

  appendHighlighted(parent, text) {
    if (!this.pattern) {
      parent.appendChild(document.createTextNode(text));
      return;
    }
    let last = 0;
    this.pattern.lastIndex = 0;
    for (const match of text.matchAll(this.pattern)) {
      if (match.index > last) parent.appendChild(document.createTextNode(text.slice(last, match.index)));
      const mark = document.createElement("mark");
      mark.textContent = match[0];
      parent.appendChild(mark);
      last = match.index + match[0].length;
    }
    if (last < text.length) parent.appendChild(document.createTextNode(text.slice(last)));
  }
}
