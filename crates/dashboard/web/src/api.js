// The trainctl server's API: the token (taken from the address, kept in localStorage), fetch with
// `Authorization: Bearer`, errors as ApiError, and the paths of the API.
import { createStore } from "./store.js";

const TOKEN_KEY = "trainctl.token";

/** True once the server refused the token (401) or there is none: the page then shows #auth-error. */
export const authFailed = createStore(false);

/** What `GET /api/v1/dashboard` said (`{source, curves, actions, version}`), null until it answers. */
export const dashboardInfo = createStore(null);

// Where localStorage is unavailable (some private modes), the token lives in memory only.
let memoryToken = null;

function storedToken() {
  try {
    return localStorage.getItem(TOKEN_KEY);
  } catch {
    return memoryToken;
  }
}

function storeToken(token) {
  memoryToken = token;
  try {
    localStorage.setItem(TOKEN_KEY, token);
  } catch {
    // memoryToken holds it for this page.
  }
}

/** Why the page has no access, when it is more than a missing token (a used login link). */
export const authProblem = createStore(null);

/**
 * Takes what the address gives, then replaces the hash with the route that follows it, so that
 * nothing of it stays in the address bar:
 * - `#code=CODE` (what `trainctl dashboard` and the server's start print): a one-time login code,
 *   exchanged for the token (`POST /api/v1/dashboard/login`);
 * - `#token=TOKEN`: the token itself (the state directory's `server.token`).
 * A route may follow (`#code=CODE/jobs/default/tfjobs/mnist`: codes and tokens have no `/`).
 */
export async function takeCredentialsFromAddress() {
  const found = /^#(code|token)=([^/]*)(.*)$/.exec(location.hash);
  if (!found) return;
  const [, what, value, rest] = found;
  history.replaceState(history.state, "", `${location.pathname}${location.search}#${rest || "/"}`);
  let given = value;
  try {
    given = decodeURIComponent(value);
  } catch {
    // Not percent-encoded after all: use it as it is.
  }
  if (what === "token" && given) storeToken(given);
  if (what === "code" && given) {
    try {
      const response = await fetch("/api/v1/dashboard/login", {
        method: "POST",
        headers: { "Content-Type": "application/json" },
        body: JSON.stringify({ code: given }),
      });
      if (response.ok) {
        storeToken((await response.json()).token);
        authProblem.set(null);
      } else if (!storedToken()) {
        authProblem.set("This login link was used already or has expired.");
      }
    } catch {
      authProblem.set("The server did not answer the login link.");
    }
  }
  authFailed.set(!storedToken());
}

/** Whether a token is stored: without one the page shows #auth-error at once. */
export function hasToken() {
  return Boolean(storedToken());
}

/** An error answer of the API (`{"error", "details"}`), or status 0 when the server is unreachable. */
export class ApiError extends Error {
  constructor(status, message, details = []) {
    super(message);
    this.name = "ApiError";
    this.status = status;
    this.details = details;
  }
}

/**
 * `fetch` of an API path with the token. Resolves to the Response when its status is 2xx; else
 * rejects with an ApiError (a 401 also sets `authFailed`). An abort rejects with the AbortError.
 */
export async function apiFetch(path, { method = "GET", headers = {}, signal } = {}) {
  const token = storedToken();
  if (!token) {
    authFailed.set(true);
    throw new ApiError(401, "no token");
  }
  let response;
  try {
    response = await fetch(path, {
      method,
      signal,
      cache: "no-store",
      headers: { ...headers, Authorization: `Bearer ${token}` },
    });
  } catch (error) {
    if (error.name === "AbortError") throw error;
    throw new ApiError(0, "cannot reach the trainctl server: is `trainctl server` running?");
  }
  if (response.ok) return response;
  let body = null;
  try {
    body = await response.json();
  } catch {
    // Not JSON: the status line says enough.
  }
  if (response.status === 401) authFailed.set(true);
  throw new ApiError(
    response.status,
    body?.error || `${response.status} ${response.statusText || "error"}`,
    Array.isArray(body?.details) ? body.details : [],
  );
}

/** `apiFetch`, then the JSON body. */
export async function apiJSON(path, options) {
  const response = await apiFetch(path, options);
  return response.json();
}

/** Loads `dashboardInfo` once; a server without that route counts as local with everything on. */
export async function loadDashboardInfo() {
  if (dashboardInfo.get()) return;
  try {
    dashboardInfo.set(await apiJSON("/api/v1/dashboard"));
  } catch (error) {
    if (error.status === 401) return;
    dashboardInfo.set({ source: "local", curves: true, actions: true });
  }
}

const part = encodeURIComponent;

/** `/api/v1/namespaces/{ns}/{plural}/{name}`: the job's path, under which are its actions and logs. */
export function jobPath(ns, plural, name) {
  return `/api/v1/namespaces/${part(ns)}/${part(plural)}/${part(name)}`;
}

/** The job's path under `/api/v1/watch/`, for its event streams. */
export function jobWatchPath(ns, plural, name) {
  return `/api/v1/watch/namespaces/${part(ns)}/${part(plural)}/${part(name)}`;
}

/** The hash route of a job's page (`tab`: "", "logs" or "curves"). */
export function jobHref(ns, plural, name, tab = "") {
  return `#/jobs/${part(ns)}/${part(plural)}/${part(name)}${tab ? `/${tab}` : ""}`;
}

// A login link opened in another tab stored a new token: this tab may use it at once.
addEventListener("storage", (event) => {
  if (event.key === TOKEN_KEY && event.newValue) {
    authProblem.set(null);
    authFailed.set(false);
  }
});
