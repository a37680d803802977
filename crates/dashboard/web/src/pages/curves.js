// The Curves tab of a job: its TensorBoard scalars, one uPlot chart per tag and a line per run,
// live from the job's scalars watch stream.
import { useMemo, useState } from "preact/hooks";
import { jobWatchPath } from "../api.js";
import { Chart, PALETTE, useColorScheme } from "../components/chart.js";
import { Loading, StreamError } from "../components/status.js";
import { html } from "../html.js";
import { useEventStream } from "../sse.js";

const POINTS = 2000;

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

export function CurvesTab({ ns, plural, name, info }) {
  const off = info?.curves === false;
  const [scalars, setScalars] = useState(null);
  const [xMode, setXMode] = useState("step");
  const theme = useColorScheme();
  // Wait for the dashboard info: on a cluster there are no curves to watch.
  const path = info && !off ? `${jobWatchPath(ns, plural, name)}/scalars?points=${POINTS}` : null;
  const stream = useEventStream(path, {
    scalars: setScalars,
    deleted: () => false, // the job is gone (its page says so): the stream ends
  });

  // Tags in order, each with its runs in order; a run keeps its colour on every chart.
  const { tags, colors } = useMemo(() => {
    const series = scalars?.series ?? [];
    const runs = [...new Set(series.map((one) => one.run))].sort();
    const byTag = new Map();
    for (const one of series) {
      if (!byTag.has(one.tag)) byTag.set(one.tag, []);
      byTag.get(one.tag).push(one);
    }
    for (const list of byTag.values()) list.sort((a, b) => a.run.localeCompare(b.run));
    return {
      tags: [...byTag.entries()].sort(([a], [b]) => a.localeCompare(b)),
      colors: Object.fromEntries(runs.map((run, index) => [run, PALETTE[index % PALETTE.length]])),
    };
  }, [scalars]);

  if (off) {
    return html`<div id="no-curves" class="notice">
      Curves are not read from a cluster: the dashboard shows the TensorBoard curves of the jobs that <code>trainctl</code> runs on this machine.
    </div>`;
  }
  const problems = scalars?.problems ?? [];
  return html`<div class="curves">
    <${StreamError} error=${stream.error} what="the curves" />
    ${scalars === null && !stream.error ? html`<${Loading} what="the curves" />` : null}
    ${problems.length
      ? html`<div class="problems">
          <strong>Some event files could not be read:</strong>
          <ul id="curve-problems">${problems.map((problem) => html`<li>${problem}</li>`)}</ul>
        </div>`
      : null}
    ${scalars && tags.length === 0 ? html`<${NoCurves} scalars=${scalars} />` : null}
    ${tags.length
      ? html`<div class="toolbar">
            <label>X axis
              <select id="x-axis" value=${xMode} onChange=${(event) => setXMode(event.currentTarget.value)}>
                <option value="step">step</option>
                <option value="wall">wall time</option>
                <option value="relative">relative (seconds)</option>
              </select>
            </label>
            <span class="muted">Drag across a chart to zoom in, double-click to zoom out.</span>
          </div>
          <div class="charts">
            ${tags.map(
              ([tag, series]) =>
                html`<${Chart} key=${tag} tag=${tag} series=${series} xMode=${xMode} colors=${colors} theme=${theme} />`,
            )}
          </div>`
      : null}
  </div>`;
}
