// The Curves tab of a job: its TensorBoard scalars, one uPlot chart per tag and a line per run,
// live from the job's scalars watch stream; smoothed, on a log axis, and beside the runs of other
// jobs of its namespace when asked (each compared job has a scalars stream of its own).
import { useEffect, useMemo, useState } from "preact/hooks";
import { apiJSON, jobWatchPath } from "../api.js";
import { Chart, PALETTE, useColorScheme } from "../components/chart.js";
import { Loading, StreamError } from "../components/status.js";
import { html } from "../html.js";
import { useEventStream } from "../sse.js";

const POINTS = 2000;

/** At most this many other jobs are compared: each holds one of the browser's 6 connections. */
const MAX_COMPARED = 3;

/** Where the smoothing and the y axis are kept between pages and visits. */
const SETTINGS_KEY = "trainctl.curves";

/** The smoothing (0 to 0.99) and the log axis as last chosen, else none. */
function storedSettings() {
  try {
    const stored = JSON.parse(localStorage.getItem(SETTINGS_KEY) ?? "{}");
    const smoothing = Number(stored.smoothing);
    return {
      smoothing: Number.isFinite(smoothing) ? Math.min(0.99, Math.max(0, smoothing)) : 0,
      log: stored.log === true,
    };
  } catch {
    return { smoothing: 0, log: false };
  }
}

/** `[settings, change(partial)]`: the chart settings, kept in localStorage as they change. */
function useCurveSettings() {
  const [settings, setSettings] = useState(storedSettings);
  const change = (partial) =>
    setSettings((current) => {
      const next = { ...current, ...partial };
      try {
        localStorage.setItem(SETTINGS_KEY, JSON.stringify(next));
      } catch {
        // Kept for this page only.
      }
      return next;
    });
  return [settings, change];
}

/** `#no-curves`: why there is nothing to draw, and how to write event files. */
function NoCurves({ scalars }) {
  const env = scalars.env || "TRAINCTL_TENSORBOARD_DIR";
  const roots = scalars.roots ?? [];
  return html`<div id="no-curves" class="notice">
    <p><strong>This job has written no TensorBoard event files (yet).</strong></p>
    ${roots.length
      ? html`<p>trainctl looks for them in:</p>
          <ul class="roots">${roots.map((root) => html`<li><code>${root}</code></li>`)}</ul>`
      : null}
    <p>To write them, log scalars with TensorBoard into the directory named by <code>${env}</code>; with Keras:</p>
    <pre class="code"><code>${`tb = tf.keras.callbacks.TensorBoard(log_dir=os.environ["${env}"])\nmodel.fit(..., callbacks=[tb])`}</code></pre>
    <p class="muted">The curves appear here as soon as the first events are written.</p>
  </div>`;
}

/** Follows the scalars of a compared job; gives them to `onScalars(key, scalars)`. Draws nothing. */
function ComparedJob({ ns, plural, name, onScalars }) {
  const key = `${plural}/${name}`;
  useEventStream(`${jobWatchPath(ns, plural, name)}/scalars?points=${POINTS}`, {
    scalars: (scalars) => onScalars(key, scalars),
    deleted: () => false,
  });
  return null;
}

/**
 * `details#compare`: the other jobs of the namespace (read when it is opened), each a checkbox
 * `input[data-compare="PLURAL/NAME"]`; at most MAX_COMPARED may be chosen.
 */
function ComparePicker({ ns, plural, name, chosen, onChange }) {
  const [jobs, setJobs] = useState(null);
  const [error, setError] = useState(null);
  const load = async () => {
    try {
      const { items } = await apiJSON("/api/v1/job-summaries");
      setJobs(items.filter((job) => job.namespace === ns && !(job.plural === plural && job.name === name)));
      setError(null);
    } catch (failure) {
      setError(failure);
    }
  };
  const toggle = (key, on) => onChange(on ? [...chosen, key] : chosen.filter((other) => other !== key));
  const full = chosen.length >= MAX_COMPARED;
  return html`<details id="compare" onToggle=${(event) => event.currentTarget.open && load()}>
    <summary>Compare with other jobs${chosen.length ? ` (${chosen.length})` : ""}</summary>
    <div class="compare-list">
      ${error ? html`<p class="error">${error.message}</p>` : null}
      ${jobs === null && !error ? html`<p class="muted">Loading the jobs…</p>` : null}
      ${jobs?.length === 0 ? html`<p class="muted">No other job in namespace ${ns}.</p>` : null}
      ${(jobs ?? []).map((job) => {
        const key = `${job.plural}/${job.name}`;
        const on = chosen.includes(key);
        return html`<label key=${key}>
          <input type="checkbox" data-compare=${key} checked=${on} disabled=${!on && full}
            onChange=${(event) => toggle(key, event.currentTarget.checked)} />
          ${job.name} <span class="muted">${job.kind}, ${job.state}</span>
        </label>`;
      })}
      ${full ? html`<p class="muted">At most ${MAX_COMPARED} jobs at once.</p>` : null}
    </div>
  </details>`;
}

/**
 * The charts' series by tag, each `{label, total, points}`, and a colour for each label. Alone,
 * a line is its run (Keras' `train`, `validation`); beside other jobs, `JOB/RUN` (`JOB` for a
 * job's root run), and every job's runs get colours of their own.
 */
function chartSeries(name, scalars, compared) {
  const jobs = [[name, scalars?.series ?? []]];
  for (const [key, other] of [...compared.entries()].sort(([a], [b]) => a.localeCompare(b))) {
    jobs.push([key.slice(key.indexOf("/") + 1), other?.series ?? []]);
  }
  const comparing = jobs.length > 1;
  const labelOf = (job, run) => (comparing ? (run ? `${job}/${run}` : job) : run);
  const labels = [];
  const byTag = new Map();
  for (const [job, series] of jobs) {
    const runs = [...new Set(series.map((one) => one.run))].sort();
    labels.push(...runs.map((run) => labelOf(job, run)));
    for (const one of series) {
      if (!byTag.has(one.tag)) byTag.set(one.tag, []);
      byTag.get(one.tag).push({ label: labelOf(job, one.run), total: one.total, points: one.points });
    }
  }
  const order = new Map(labels.map((label, index) => [label, index]));
  for (const list of byTag.values()) list.sort((a, b) => order.get(a.label) - order.get(b.label));
  return {
    tags: [...byTag.entries()].sort(([a], [b]) => a.localeCompare(b)),
    colors: Object.fromEntries(labels.map((label, index) => [label, PALETTE[index % PALETTE.length]])),
  };
}

export function CurvesTab({ ns, plural, name, info }) {
  const off = info?.curves === false;
  const [scalars, setScalars] = useState(null);
  const [xMode, setXMode] = useState("step");
  const [settings, changeSettings] = useCurveSettings();
  const [chosen, setChosen] = useState([]);
  const [compared, setCompared] = useState(() => new Map());
  const theme = useColorScheme();
  // Wait for the dashboard info: on a cluster there are no curves to watch.
  const path = info && !off ? `${jobWatchPath(ns, plural, name)}/scalars?points=${POINTS}` : null;
  const stream = useEventStream(path, {
    scalars: setScalars,
    deleted: () => false, // the job is gone (its page says so): the stream ends
  });
  // Another job's page starts with no comparison.
  useEffect(() => setChosen([]), [ns, plural, name]);
  // A job no longer compared is dropped with its scalars.
  useEffect(() => {
    setCompared((current) => new Map([...current].filter(([key]) => chosen.includes(key))));
  }, [chosen]);
  const onCompared = (key, data) =>
    setCompared((current) => (chosen.includes(key) ? new Map(current).set(key, data) : current));

  const { tags, colors } = useMemo(() => chartSeries(name, scalars, compared), [name, scalars, compared]);

  if (off) {
    return html`<div id="no-curves" class="notice">
      Curves are not read from a cluster: the dashboard shows the TensorBoard curves of the jobs that <code>trainctl</code> runs on this machine.
    </div>`;
  }
  const problems = scalars?.problems ?? [];
  const own = scalars?.series?.length ?? 0;
  return html`<div class="curves">
    <${StreamError} error=${stream.error} what="the curves" />
    ${scalars === null && !stream.error ? html`<${Loading} what="the curves" />` : null}
    ${chosen.map((key) => {
      const [otherPlural, otherName] = [key.slice(0, key.indexOf("/")), key.slice(key.indexOf("/") + 1)];
      return html`<${ComparedJob} key=${key} ns=${ns} plural=${otherPlural} name=${otherName} onScalars=${onCompared} />`;
    })}
    ${problems.length
      ? html`<div class="problems">
          <strong>Some event files could not be read:</strong>
          <ul id="curve-problems">${problems.map((problem) => html`<li>${problem}</li>`)}</ul>
        </div>`
      : null}
    ${scalars && own === 0 ? html`<${NoCurves} scalars=${scalars} />` : null}
    ${own > 0
      ? html`<div class="toolbar">
            <label>X axis
              <select id="x-axis" value=${xMode} onChange=${(event) => setXMode(event.currentTarget.value)}>
                <option value="step">step</option>
                <option value="wall">wall time</option>
                <option value="relative">relative (seconds)</option>
              </select>
            </label>
            <label title="TensorBoard's smoothing: an exponential moving average; the raw line stays, faint">Smoothing
              <input type="range" id="smoothing" min="0" max="0.99" step="0.01" value=${settings.smoothing}
                onInput=${(event) => changeSettings({ smoothing: Number(event.currentTarget.value) })} />
              <output for="smoothing">${settings.smoothing.toFixed(2)}</output>
            </label>
            <label><input type="checkbox" id="log-scale" checked=${settings.log}
              onChange=${(event) => changeSettings({ log: event.currentTarget.checked })} /> Log scale</label>
            <${ComparePicker} ns=${ns} plural=${plural} name=${name} chosen=${chosen} onChange=${setChosen} />
            <span class="muted">Drag across a chart to zoom in, double-click to zoom out.</span>
          </div>
          <div class="charts">
            ${tags.map(
              ([tag, series]) =>
                html`<${Chart} key=${tag} tag=${tag} series=${series} xMode=${xMode} colors=${colors}
                  smoothing=${settings.smoothing} log=${settings.log} theme=${theme} />`,
            )}
          </div>`
      : null}
  </div>`;
}
