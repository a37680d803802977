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

/**
 * When the address ends in `#token=XYZ` (as `trainctl dashboard` prints it), saves the token and
 * replaces the hash with `#/`, so that the token stays neither in the address bar nor in history.
 * A route may follow the token (`#token=XYZ/jobs/default/tfjobs/mnist`, tokens have no `/`): the
 * hash becomes that route.
 */
export function takeTokenFromAddress() {
  if (!location.hash.startsWith("#token=")) return;
  const rest = location.hash.slice("#token=".length);
  const slash = rest.indexOf("/");
  let token = slash < 0 ? rest : rest.slice(0, slash);
  const route = slash < 0 ? "/" : rest.slice(slash);
  try {
    token = decodeURIComponent(token);
  } catch {
    // Not percent-encoded after all: use it as it is.
  }
  if (token) storeToken(token);
  history.replaceState(history.state, "", `${location.pathname}${location.search}#${route}`);
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
