// Server-sent events read with fetch (EventSource cannot send the Authorization header): the SSE
// parser, a reconnecting stream, the `useEventStream` hook, and the page's live status (#live).
import { useLayoutEffect, useRef, useState } from "preact/hooks";
import { ApiError, apiFetch } from "./api.js";
import { closeOnLeave } from "./lifetime.js";
import { createStore, useStore } from "./store.js";

/** Reconnect after 1 to 2 s (random, so that many tabs do not come back at once). */
const retryDelay = () => 1000 + Math.random() * 1000;

/** The server sends `: keep-alive` every 15 s: a stream silent for longer than this is dead. */
const SILENCE_MS = 45_000;

/**
 * Reads SSE framing from a response body; calls `onEvent(name, data)` per event and `onChunk()`
 * per chunk received (comments included). Resolves when the body ends.
 */
async function readEvents(body, onEvent, onChunk) {
  const reader = body.getReader();
  const decoder = new TextDecoder();
  let buffer = "";
  let name = "";
  let data = [];
  for (;;) {
    const { value, done } = await reader.read();
    if (done) return;
    onChunk();
    buffer += decoder.decode(value, { stream: true });
    let end;
    while ((end = buffer.indexOf("\n")) >= 0) {
      let line = buffer.slice(0, end);
      buffer = buffer.slice(end + 1);
      if (line.endsWith("\r")) line = line.slice(0, -1);
      if (line === "") {
        // A blank line ends an event.
        if (data.length > 0) onEvent(name || "message", data.join("\n"));
        name = "";
        data = [];
        continue;
      }
      if (line.startsWith(":")) continue; // a comment (keep-alive)
      const colon = line.indexOf(":");
      const field = colon < 0 ? line : line.slice(0, colon);
      let text = colon < 0 ? "" : line.slice(colon + 1);
      if (text.startsWith(" ")) text = text.slice(1);
      if (field === "event") name = text;
      else if (field === "data") data.push(text);
    }
  }
}

/** Errors not worth retrying: the request itself is wrong (404, 400, 403...), or the token (401). */
const isFinal = (error) =>
  error instanceof ApiError && error.status >= 400 && error.status < 500 && ![408, 429].includes(error.status);

/**
 * Opens the event stream at `path` and keeps it open, reconnecting after 1-2 s when it drops.
 *   onEvent(name, data): data is the parsed JSON; returning `false` closes the stream for good.
 *   onStatus(status): "connecting" | "open" | "reconnecting" | "closed".
 *   onError(error | null): an ApiError when the server refused or could not be reached, null when
 *     the stream is open again.
 * Returns `close()`.
 */
export function openEventStream(path, { onEvent, onStatus, onError }) {
  let closed = false;
  let controller = null;
  let retryTimer = null;
  let silenceTimer = null;

  let forget = () => {};
  const close = () => {
    closed = true;
    forget();
    clearTimeout(retryTimer);
    clearTimeout(silenceTimer);
    controller?.abort();
    onStatus("closed");
  };
  forget = closeOnLeave(close);

  const connect = async () => {
    controller = new AbortController();
    const current = controller;
    const alive = () => {
      clearTimeout(silenceTimer);
      silenceTimer = setTimeout(() => current.abort(), SILENCE_MS);
    };
    try {
      alive();
      const response = await apiFetch(path, {
        signal: current.signal,
        headers: { Accept: "text/event-stream" },
      });
      onStatus("open");
      onError(null);
      await readEvents(
        response.body,
        (name, text) => {
          if (closed) return;
          let data;
          try {
            data = JSON.parse(text);
          } catch {
            onError(new ApiError(0, `the server sent an unreadable ${name} event`));
            return;
          }
          if (onEvent(name, data) === false) close();
        },
        alive,
      );
    } catch (error) {
      if (closed) return;
      if (error.name !== "AbortError") onError(error);
      if (isFinal(error)) {
        close();
        return;
      }
    } finally {
      clearTimeout(silenceTimer);
    }
    if (closed) return;
    onStatus("reconnecting");
    retryTimer = setTimeout(connect, retryDelay());
  };

  onStatus("connecting");
  connect();
  return close;
}

// The live status of the page: every open useEventStream registers here; #live shows
// "live" when all are open, "reconnecting…" while one is (re)connecting, "offline" when none runs.
const streams = new Map();
let nextStreamId = 1;

/** "live" | "reconnecting" | "offline". */
export const liveStatus = createStore("offline");

function updateLive() {
  const states = [...streams.values()].filter((state) => state !== "closed");
  if (states.length === 0) liveStatus.set("offline");
  else if (states.every((state) => state === "open")) liveStatus.set("live");
  else liveStatus.set("reconnecting");
}

/**
 * Whether the page is shown. A hidden tab's streams close, and open again afresh when it is shown:
 * a browser allows a server 6 connections, shared by all its tabs, and streams hold theirs.
 */
const pageShown = createStore(!document.hidden);
document.addEventListener("visibilitychange", () => pageShown.set(!document.hidden));

/**
 * Keeps the event stream at `path` open while the component is mounted and the page shown (none
 * when `path` is null); `handlers` maps event names to functions of the parsed data (returning false closes the
 * stream). Returns `{status, error}`: the stream's status and its last error (null while fine).
 */
export function useEventStream(wanted, handlers) {
  const shown = useStore(pageShown);
  const path = shown ? wanted : null;
  const [status, setStatus] = useState(path ? "connecting" : "closed");
  const [error, setError] = useState(null);
  // The handlers may be new closures on every render: the stream calls the latest ones.
  const latest = useRef(handlers);
  latest.current = handlers;

  // Opened as soon as the page is rendered rather than after it is painted: the data is on its
  // way while the browser paints the empty frame.
  useLayoutEffect(() => {
    if (!path) {
      setStatus("closed");
      return undefined;
    }
    const id = nextStreamId++;
    const close = openEventStream(path, {
      onEvent: (name, data) => {
        // `error`: the server could not read the data this time (the stream goes on); shown
        // until the next data arrives.
        if (name === "error") {
          setError(new ApiError(0, data?.error ?? "the server could not read the data"));
          return undefined;
        }
        setError(null);
        return latest.current[name]?.(data);
      },
      onStatus: (next) => {
        streams.set(id, next);
        updateLive();
        setStatus(next);
      },
      onError: setError,
    });
    return () => {
      close();
      streams.delete(id);
      updateLive();
    };
  }, [path]);

  return { status, error };
}
