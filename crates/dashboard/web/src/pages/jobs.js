// The Jobs page (`#/`): every job in a sortable, filterable table, live from
// /api/v1/watch/job-summaries; ages and durations tick every second.
import { useEffect, useMemo, useState } from "preact/hooks";
import { jobHref } from "../api.js";
import { useNow } from "../clock.js";
import { StateCell } from "../components/state.js";
import { EmptyRow, Loading, StreamError } from "../components/status.js";
import { age, fullTime, humanDuration, parseTime } from "../format.js";
import { html } from "../html.js";
import { markOnce } from "../marks.js";
import { useEventStream } from "../sse.js";

/** Milliseconds the job ran: from started (or created) to finished (or now). */
function runMs(job, now) {
  const start = parseTime(job.started ?? job.created);
  const end = job.finishedAt ? parseTime(job.finishedAt) : now;
  return Number.isNaN(start) ? NaN : end - start;
}

/** `#2 in queue: reason` for a waiting job, the reason alone when not queued; for a job that runs
 *  without getting on, why (`CrashLoopBackOff`, as `trainctl get -o wide`'s REASON). */
function waitingText(job) {
  if (job.queuePosition != null) return `#${job.queuePosition} in queue${job.waiting ? `: ${job.waiting}` : ""}`;
  return job.waiting ?? job.reason ?? "";
}

/** Why the job is where it is: what it waits for, or why it failed. */
function reasonText(job) {
  if (job.finishedAt) return job.failure ?? "";
  return waitingText(job);
}

/** How many jobs a page of the table shows: two screens or so. Each row costs the browser most
 *  of a millisecond to build, style and paint on a small machine. */
const PAGE_SIZE = 50;

/** The table's columns; `sort` gives the value sorted on (ascending; `age` ascending is newest first). */
const COLUMNS = [
  { key: "name", label: "Name", sort: (job) => job.name },
  { key: "kind", label: "Kind", sort: (job) => job.kind },
  { key: "namespace", label: "Namespace", sort: (job) => job.namespace },
  { key: "state", label: "State", sort: (job) => job.state },
  { key: "replicas", label: "Ready", sort: (job) => job.replicasReady * 1e6 + job.replicasTotal, numeric: true },
  { key: "restarts", label: "Restarts", sort: (job) => job.restarts, numeric: true },
  { key: "age", label: "Age", sort: (job) => -parseTime(job.created), numeric: true },
  { key: "duration", label: "Duration", sort: (job, now) => runMs(job, now), numeric: true },
  { key: "gpus", label: "GPUs", sort: (job) => job.gpus, numeric: true },
  {
    key: "reason",
    label: "Reason",
    sort: (job) => job.queuePosition ?? (job.waiting || job.reason ? 1e9 : job.failure ? 2e9 : Infinity),
  },
];

// One collator for every comparison: `localeCompare` with options makes one per call, which
// costs most of a sort of 1,000 jobs.
const collator = new Intl.Collator(undefined, { numeric: true });

function compare(a, b) {
  if (typeof a === "number" && typeof b === "number") {
    // NaN (no time) sorts last.
    if (Number.isNaN(a) || Number.isNaN(b)) return Number.isNaN(a) - Number.isNaN(b);
    return a - b;
  }
  return collator.compare(String(a ?? ""), String(b ?? ""));
}

/** A filter `<select>`: "all" and each value found in the jobs. */
function Filter({ id, label, values, value, onChange }) {
  // Keep the chosen value listed even when no job has it any more.
  const options = [...new Set([...values, ...(value ? [value] : [])])].sort();
  return html`<label>${label}
    <select id=${id} value=${value} onChange=${(event) => onChange(event.currentTarget.value)}>
      <option value="">all</option>
      ${options.map((option) => html`<option value=${option}>${option}</option>`)}
    </select>
  </label>`;
}

function JobRow({ job, now }) {
  const id = `${job.namespace}/${job.plural}/${job.name}`;
  const ms = runMs(job, now);
  return html`<tr data-job=${id}>
    <td class="name"><a href=${jobHref(job.namespace, job.plural, job.name)}>${job.name}</a></td>
    <td>${job.kind}</td>
    <td>${job.namespace}</td>
    <${StateCell} state=${job.state} />
    <td class="num">${job.replicasReady}/${job.replicasTotal}</td>
    <td class=${`num${job.restarts > 0 ? " warn" : ""}`}>${job.restarts}</td>
    <td class="num" title=${fullTime(job.created)}>${age(job.created, now)}</td>
    <td class="num">${Number.isNaN(ms) ? "" : humanDuration(ms)}</td>
    <td class=${`num${job.gpus ? "" : " muted"}`}>${job.gpus ?? 0}</td>
    <td class=${`reason ${job.finishedAt ? "failure" : "waiting"}${job.reason && !job.finishedAt ? " warn" : ""}`}>
      ${reasonText(job)}
    </td>
  </tr>`;
}

export function JobsPage() {
  const [jobs, setJobs] = useState(null);
  const [namespace, setNamespace] = useState("");
  const [kind, setKind] = useState("");
  const [state, setState] = useState("");
  const [sort, setSort] = useState({ key: "age", reverse: false });
  const now = useNow();
  const [page, setPage] = useState(0);
  const stream = useEventStream("/api/v1/watch/job-summaries", { jobs: (data) => setJobs(data.items ?? []) });

  // Only the duration's order changes as time passes: other orders are not recomputed each second.
  const sortNow = sort.key === "duration" ? now : 0;
  const shown = useMemo(() => {
    if (!jobs) return [];
    const column = COLUMNS.find(({ key }) => key === sort.key);
    const filtered = jobs.filter(
      (job) =>
        (!namespace || job.namespace === namespace) && (!kind || job.kind === kind) && (!state || job.state === state),
    );
    return filtered
      .map((job) => [column.sort(job, sortNow), job])
      .sort(([a, jobA], [b, jobB]) => {
        const order = compare(a, b) || compare(`${jobA.namespace}/${jobA.name}`, `${jobB.namespace}/${jobB.name}`);
        return sort.reverse ? -order : order;
      })
      .map(([, job]) => job);
  }, [jobs, namespace, kind, state, sort, sortNow]);

  useEffect(() => {
    if (jobs !== null) markOnce("jobs-rendered");
  }, [jobs]);

  const values = (field) => [...new Set((jobs ?? []).map((job) => job[field]))];
  const sortBy = (key) => {
    setSort((old) => ({ key, reverse: old.key === key ? !old.reverse : false }));
    setPage(0);
  };
  const filterBy = (set) => (value) => {
    set(value);
    setPage(0);
  };
  // A page of the table at a time: a table of every job would take the browser most of a second
  // to draw at 1,000 jobs.
  const pages = Math.max(1, Math.ceil(shown.length / PAGE_SIZE));
  const current = Math.min(page, pages - 1);
  const rows = shown.slice(current * PAGE_SIZE, (current + 1) * PAGE_SIZE);
  const running = (jobs ?? []).filter((job) => job.state === "Running").length;

  return html`<section class="page">
    <div class="page-head">
      <h1>Jobs</h1>
      ${jobs ? html`<span class="muted">${jobs.length} ${jobs.length === 1 ? "job" : "jobs"}, ${running} running</span>` : null}
      <span class="spacer"></span>
      <div class="filters">
        <${Filter} id="filter-namespace" label="Namespace" values=${values("namespace")} value=${namespace} onChange=${filterBy(setNamespace)} />
        <${Filter} id="filter-kind" label="Kind" values=${values("kind")} value=${kind} onChange=${filterBy(setKind)} />
        <${Filter} id="filter-state" label="State" values=${values("state")} value=${state} onChange=${filterBy(setState)} />
      </div>
    </div>
    <${StreamError} error=${stream.error} what="the jobs" />
    ${jobs === null && !stream.error ? html`<${Loading} what="jobs" />` : null}
    ${jobs !== null
      ? html`<div class="table-wrap"><table id="jobs" class="grid">
          <thead><tr>
            ${COLUMNS.map(
              ({ key, label, numeric }) => html`<th class=${numeric ? "num" : ""}
                aria-sort=${sort.key === key ? (sort.reverse ? "descending" : "ascending") : undefined}>
                <button type="button" class="sort" data-sort=${key} onClick=${() => sortBy(key)}>
                  ${label}<span class="arrow">${sort.key === key ? (sort.reverse ? "▼" : "▲") : ""}</span>
                </button>
              </th>`,
            )}
          </tr></thead>
          <tbody>
            ${rows.map((job) => html`<${JobRow} key=${job.uid || `${job.namespace}/${job.plural}/${job.name}`} job=${job} now=${now} />`)}
            ${jobs.length === 0
              ? html`<${EmptyRow} columns=${COLUMNS.length}>No jobs yet: submit one with <code>trainctl submit -f job.yaml</code></${EmptyRow}>`
              : shown.length === 0
                ? html`<${EmptyRow} columns=${COLUMNS.length}>No job matches the filters.</${EmptyRow}>`
                : null}
          </tbody>
        </table></div>
        ${pages > 1
          ? html`<${Pager} page=${current} pages=${pages} shown=${rows.length} total=${shown.length} onPage=${setPage} />`
          : null}`
      : null}
  </section>`;
}

/** `#jobs-pages`: which rows are shown, and the previous and next pages. */
function Pager({ page, pages, shown, total, onPage }) {
  const first = page * PAGE_SIZE + 1;
  return html`<div id="jobs-pages" class="pager">
    <button type="button" id="page-prev" disabled=${page === 0} onClick=${() => onPage(page - 1)}>Previous</button>
    <span class="muted">${first}–${first + shown - 1} of ${total}</span>
    <button type="button" id="page-next" disabled=${page >= pages - 1} onClick=${() => onPage(page + 1)}>Next</button>
  </div>`;
}
