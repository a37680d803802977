// The Logs tab of a job: the log of all replicas or one, followed live (`logs?follow=true`), with
// pause, search and download.
import { useEffect, useRef, useState } from "preact/hooks";
import { apiFetch, jobPath } from "../api.js";
import { closeOnLeave } from "../lifetime.js";
import { LogView } from "../components/logview.js";
import { ErrorBox } from "../components/status.js";
import { html } from "../html.js";

/** Lines kept in the DOM; older ones are dropped as new ones come. */
const MAX_LINES = 20000;
/** Lines asked for when the stream starts. */
const TAIL_LINES = 1000;

function logsUrl(path, replica, follow) {
  const query = new URLSearchParams({ timestamps: "false" });
  if (follow) {
    query.set("follow", "true");
    query.set("tailLines", String(TAIL_LINES));
  }
  if (replica) query.set("replica", replica);
  return `${path}/logs?${query}`;
}

/** Reads a text stream, calling onLines(lines) with each chunk's complete lines; resolves at its end. */
async function readLines(body, onLines) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let rest = "";
  for (;;) {
    const { value, done } = await reader.read();
    if (done) break;
    rest += decoder.decode(value, { stream: true });
    const lines = rest.split("\n");
    rest = lines.pop();
    if (lines.length > 0) onLines(lines.map((line) => (line.endsWith("\r") ? line.slice(0, -1) : line)));
  }
  rest += decoder.decode();
  if (rest) onLines([rest]);
}

/** Saves `blob` as a file named `name` (through a temporary Blob URL). */
function saveBlob(blob, name) {
  const url = URL.createObjectURL(blob);
  const link = document.createElement("a");
  link.href = url;
  link.download = name;
  document.body.appendChild(link);
  link.click();
  link.remove();
  setTimeout(() => URL.revokeObjectURL(url), 60_000);
}

export function LogsTab({ ns, plural, name, view }) {
  const path = jobPath(ns, plural, name);
  const [replica, setReplica] = useState("");
  const [following, setFollowing] = useState(true);
  const [search, setSearch] = useState("");
  // "connecting" | "streaming" | "ended" | "retrying" | "failed"
  const [phase, setPhase] = useState("connecting");
  const [error, setError] = useState(null);
  const [counts, setCounts] = useState({ kept: 0, shown: 0, waiting: 0, dropped: 0 });
  const [download, setDownload] = useState({ busy: false, error: null });
  const pre = useRef(null);
  const log = useRef(null);

  // The LogView owns the <pre>'s content.
  useEffect(() => {
    const view = new LogView(pre.current, { max: MAX_LINES, onChange: () => setCounts(view.counts()) });
    log.current = view;
    return () => view.dispose();
  }, []);

  // The stream of the selected replica(s): restarted when the selection changes, aborted when
  // leaving the page; retried after 2 s when the connection broke (not when the log ended).
  useEffect(() => {
    const controller = new AbortController();
    let retry = null;
    const start = async () => {
      log.current.clear();
      setPhase("connecting");
      try {
        const response = await apiFetch(logsUrl(path, replica, true), {
          signal: controller.signal,
          headers: { Accept: "text/plain" },
        });
        setError(null);
        setPhase("streaming");
        await readLines(response.body, (lines) => log.current.push(lines));
        setPhase("ended");
      } catch (failure) {
        if (controller.signal.aborted) return;
        setError(failure);
        if (failure.status >= 400 && failure.status < 500) {
          setPhase("failed");
        } else {
          setPhase("retrying");
          retry = setTimeout(start, 2000);
        }
      }
    };
    start();
    const forget = closeOnLeave(() => controller.abort());
    return () => {
      forget();
      clearTimeout(retry);
      controller.abort();
    };
  }, [path, replica]);

  useEffect(() => log.current.setFollowing(following), [following]);

  // Filter as the user types, a moment after the last key.
  useEffect(() => {
    const timer = setTimeout(() => log.current.setFilter(search.trim()), 150);
    return () => clearTimeout(timer);
  }, [search]);

  const downloadLog = async () => {
    setDownload({ busy: true, error: null });
    try {
      const response = await apiFetch(logsUrl(path, replica, false));
      const blob = await response.blob();
      saveBlob(new Blob([blob], { type: "text/plain" }), `${ns}-${name}${replica ? `-${replica}` : ""}.log`);
      setDownload({ busy: false, error: null });
    } catch (failure) {
      setDownload({ busy: false, error: failure.status === 401 ? null : failure });
    }
  };

  const replicas = (view.replicas ?? []).map((one) => one.name);
  if (replica && !replicas.includes(replica)) replicas.push(replica);

  const PHASES = {
    connecting: "connecting…",
    streaming: following ? "following" : "paused",
    ended: "end of log",
    retrying: "connection lost, retrying…",
    failed: "failed",
  };
  return html`<div class="logs">
    <div class="toolbar">
      <label>Replica
        <select id="log-replica" value=${replica} onChange=${(event) => setReplica(event.currentTarget.value)}>
          <option value="">all replicas</option>
          ${replicas.map((one) => html`<option value=${one}>${one}</option>`)}
        </select>
      </label>
      <button type="button" id="log-follow" class=${following ? "" : "primary"} aria-pressed=${!following}
        onClick=${() => setFollowing(!following)}>
        ${following ? "Pause" : counts.waiting ? `Follow (${counts.waiting} new)` : "Follow"}
      </button>
      <input id="log-search" type="search" placeholder="Search the log" value=${search}
        onInput=${(event) => setSearch(event.currentTarget.value)} aria-label="Search the log" />
      <button type="button" id="log-download" disabled=${download.busy} onClick=${downloadLog}
        title="Download the whole log of this selection">
        ${download.busy ? "Downloading…" : "Download"}
      </button>
      <span class="spacer"></span>
      <span class=${`log-phase phase-${phase}`}>${PHASES[phase]}</span>
      <span class="muted">
        ${search.trim() ? `${counts.shown} of ${counts.kept} lines match` : `${counts.kept} lines`}
        ${counts.dropped ? `, ${counts.dropped} older dropped` : ""}
      </span>
    </div>
    <${ErrorBox} error=${error} title="The log" />
    <${ErrorBox} error=${download.error} title="Download" />
    <pre id="logs" ref=${pre} tabindex="0" aria-label="Log" aria-live="off"></pre>
    ${phase === "ended" && counts.kept === 0 ? html`<p class="muted">This log is empty.</p>` : null}
  </div>`;
}
