// Formatting of times, durations (as kubectl writes them), bytes and CPU.

/** Milliseconds since the epoch of an RFC 3339 time, NaN when absent or unreadable. */
export function parseTime(text) {
  return text ? Date.parse(text) : NaN;
}

/**
 * A duration in its largest whole unit, in kubectl's short style: `45s`, `5m`, `2h`, `3d`, `2y`
 * (days up to two years).
 */
export function humanDuration(ms) {
  if (!Number.isFinite(ms) || ms < 0) return "0s";
  const seconds = Math.floor(ms / 1000);
  if (seconds < 60) return `${seconds}s`;
  const minutes = Math.floor(seconds / 60);
  if (minutes < 60) return `${minutes}m`;
  const hours = Math.floor(minutes / 60);
  if (hours < 24) return `${hours}h`;
  const days = Math.floor(hours / 24);
  if (days < 365 * 2) return `${days}d`;
  return `${Math.floor(days / 365)}y`;
}

/** The age of a time at `now` (`5m`), or "" when there is no time. */
export function age(text, now) {
  const time = parseTime(text);
  return Number.isNaN(time) ? "" : humanDuration(now - time);
}

const pad = (n) => String(n).padStart(2, "0");

/** A time in local time: `16:20:05` today, `2026-11-25 16:20` another day; "" when absent. */
export function formatTime(text, now = Date.now()) {
  const time = parseTime(text);
  if (Number.isNaN(time)) return "";
  const date = new Date(time);
  const clock = `${pad(date.getHours())}:${pad(date.getMinutes())}:${pad(date.getSeconds())}`;
  if (date.toDateString() === new Date(now).toDateString()) return clock;
  return `${date.getFullYear()}-${pad(date.getMonth() + 1)}-${pad(date.getDate())} ${clock.slice(0, 5)}`;
}

/** The full local date and time, for tooltips. */
export function fullTime(text) {
  const time = parseTime(text);
  return Number.isNaN(time) ? "" : new Date(time).toString();
}

/** Bytes in binary units with one decimal: `2.0 GiB`, `512 B`. */
export function formatBytes(bytes) {
  if (!Number.isFinite(bytes)) return "?";
  const units = ["KiB", "MiB", "GiB", "TiB", "PiB"];
  if (Math.abs(bytes) < 1024) return `${bytes} B`;
  let value = bytes;
  let unit = "B";
  for (const next of units) {
    if (Math.abs(value) < 1024) break;
    value /= 1024;
    unit = next;
  }
  return `${value.toFixed(1)} ${unit}`;
}

/** CPU millicores in cores: 1500 -> `1.5`, 2000 -> `2`, 250 -> `0.25`. */
export function formatCores(millis) {
  if (!Number.isFinite(millis)) return "?";
  return String(Number((millis / 1000).toFixed(3)));
}

/** A shell-like line of a command and its arguments, quoting the words that need it. */
export function commandLine(words) {
  return words
    .map((word) => (/^[\w@%+=:,./-]+$/.test(word) ? word : `'${String(word).replace(/'/g, `'\\''`)}'`))
    .join(" ");
}
