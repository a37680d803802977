// The Job page (`#/jobs/{ns}/{plural}/{name}[/logs|/curves]`): title with the state badge, tabs,
// actions (suspend, resume, delete) and the tab's content; the job is live from its watch stream.
import { useEffect, useState } from "preact/hooks";
import { apiJSON, jobHref, jobPath, jobWatchPath } from "../api.js";
import { ConfirmDialog } from "../components/confirm.js";
import { StateBadge } from "../components/state.js";
import { ErrorBox, Loading, StreamError } from "../components/status.js";
import { html } from "../html.js";
import { useEventStream } from "../sse.js";
import { LogsTab } from "./logs.js";
import { OverviewTab } from "./overview.js";

const QUESTIONS = {
  suspend: (name) => ({
    title: `Suspend ${name}?`,
    text: "Its replicas are stopped until it is resumed.",
    yes: "Suspend",
  }),
  delete: (name) => ({
    title: `Delete ${name}?`,
    text: "Its replicas are stopped and the job is removed. This cannot be undone.",
    yes: "Delete",
  }),
};

/**
 * The action buttons that apply to the job now, and the confirmation dialog; onView(JobView)
 * after suspend or resume, onError(ApiError | null) when one fails (or is tried again).
 */
function Actions({ view, path, onView, onError }) {
  const [busy, setBusy] = useState(null);
  const [question, setQuestion] = useState(null);

  const run = async (action) => {
    setBusy(action);
    onError(null);
    try {
      if (action === "delete") {
        await apiJSON(path, { method: "DELETE" });
        location.hash = "#/";
        return;
      }
      onView(await apiJSON(`${path}/${action}`, { method: "POST" }));
    } catch (failure) {
      if (failure.status !== 401) onError(failure);
    } finally {
      setBusy(null);
    }
  };
  const ask = (action) => setQuestion({ action, ...QUESTIONS[action](view.name) });
  const answer = (yes) => {
    const action = question?.action;
    setQuestion(null);
    if (yes && action) run(action);
  };

  const suspended = view.state === "Suspended";
  return html`<div class="actions">
    ${!view.finished && !suspended
      ? html`<button type="button" id="action-suspend" disabled=${busy !== null} onClick=${() => ask("suspend")}>
          ${busy === "suspend" ? "Suspending…" : "Suspend"}</button>`
      : null}
    ${suspended
      ? html`<button type="button" id="action-resume" disabled=${busy !== null} onClick=${() => run("resume")}>
          ${busy === "resume" ? "Resuming…" : "Resume"}</button>`
      : null}
    <button type="button" id="action-delete" class="danger" disabled=${busy !== null} onClick=${() => ask("delete")}>
      ${busy === "delete" ? "Deleting…" : "Delete"}</button>
    <${ConfirmDialog} question=${question} onAnswer=${answer} />
  </div>`;
}

/** `#action-error`: the server's `error` (and details) of a failed action, dismissable. */
function ActionError({ error, onDismiss }) {
  if (!error) return null;
  return html`<div id="action-error" class="error" role="alert">
    ${error.message}
    ${error.details?.length ? html`<ul>${error.details.map((detail) => html`<li>${detail}</li>`)}</ul>` : null}
    <button type="button" class="link dismiss" onClick=${onDismiss} aria-label="Dismiss">×</button>
  </div>`;
}

export function JobPage({ ns, plural, name, tab, info }) {
  const [view, setView] = useState(null);
  const [deleted, setDeleted] = useState(false);
  const [actionError, setActionError] = useState(null);
  const path = jobPath(ns, plural, name);
  const stream = useEventStream(deleted ? null : jobWatchPath(ns, plural, name), {
    job: setView,
    deleted: () => {
      setDeleted(true);
      return false; // the stream ends: do not reconnect
    },
  });
  const missing = stream.error?.status === 404;

  const tabs = [
    ["overview", "Overview", ""],
    ["logs", "Logs", "logs"],
    ["curves", "Curves", "curves"],
  ];
  let content;
  if (deleted) {
    content = html`<div class="notice" id="job-deleted">This job was deleted. <a href="#/">Back to the jobs</a></div>`;
  } else if (missing) {
    content = html`<${ErrorBox} error=${stream.error} title="No such job" />
      <p><a href="#/">Back to the jobs</a></p>`;
  } else if (!view) {
    content = stream.error ? null : html`<${Loading} what="the job" />`;
  } else if (tab === "logs") {
    content = html`<${LogsTab} ns=${ns} plural=${plural} name=${name} view=${view} />`;
  } else if (tab === "curves") {
    content = html`<${LazyCurvesTab} ns=${ns} plural=${plural} name=${name} info=${info} />`;
  } else {
    content = html`<${OverviewTab} view=${view} />`;
  }

  return html`<section class="page job">
    <div class="page-head">
      <h1>
        <span class="kind">${view?.kind ?? plural}</span>
        <span class="job-name">${ns}/${name}</span>
        ${view ? html`<${StateBadge} state=${view.state} />` : null}
      </h1>
      <span class="spacer"></span>
      ${view && !deleted && info && info.actions !== false
        ? html`<${Actions} view=${view} path=${path} onView=${setView} onError=${setActionError} />`
        : null}
    </div>
    <${ActionError} error=${deleted ? null : actionError} onDismiss=${() => setActionError(null)} />
    ${view?.waiting && !view.finished ? html`<p class="waiting-note">Waiting: ${view.waiting}</p>` : null}
    ${view?.failure && view.finished ? html`<p class="failure-note" role="alert">Failed: ${view.failure}</p>` : null}
    ${view?.reason && !view.finished
      ? html`<p class="waiting-note" id="reason-note">Waiting: ${view.reason}${view.reason === "CrashLoopBackOff"
          ? " (each replica waits out a restart back-off: see why in its log)"
          : ""}</p>`
      : null}
    ${missing || deleted
      ? null
      : html`<nav class="tabs">
          ${tabs.map(
            ([key, label, suffix]) => html`<a href=${jobHref(ns, plural, name, suffix)}
              class=${tab === key ? "active" : ""} aria-current=${tab === key ? "page" : undefined}>${label}</a>`,
          )}
        </nav>`}
    ${!missing && !deleted ? html`<${StreamError} error=${stream.error} what="the job" />` : null}
    ${content}
  </section>`;
}

/**
 * The Curves tab, fetched when it is first shown: it alone needs uPlot, which the other pages
 * (the Jobs page first) load faster without.
 */
function LazyCurvesTab(props) {
  const [tab, setTab] = useState(null);
  const [error, setError] = useState(null);
  useEffect(() => {
    let live = true;
    import("./curves.js").then(
      (module) => live && setTab(() => module.CurvesTab),
      (failure) => live && setError(failure),
    );
    return () => {
      live = false;
    };
  }, []);
  if (error) return html`<${ErrorBox} error=${error} title="The Curves tab could not be loaded" />`;
  return tab ? html`<${tab} ...${props} />` : html`<${Loading} what="the curves" />`;
}
