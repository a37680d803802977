// A uPlot chart of one TensorBoard tag: one line per run, with the x axis chosen on the page
// (step, wall time, or seconds since the run's first point), smoothed as TensorBoard smooths (the
// raw line kept faint behind), on a linear or a log y axis. Updated in place (setData) when new
// points come or the smoothing changes, resized with its container, re-created only when its
// lines, axes or theme change.
import uPlot from "uplot";
import { useEffect, useMemo, useRef, useState } from "preact/hooks";
import { html } from "../html.js";
import { markOnce } from "../marks.js";

const HEIGHT = 240;

/** Line colours, given to runs in order (the same run has the same colour on every chart). */
export const PALETTE = ["#3b82f6", "#ef4444", "#10b981", "#f59e0b", "#8b5cf6", "#ec4899", "#14b8a6", "#84cc16"];

const X_LABELS = { step: "step", wall: "time", relative: "seconds" };

/** "light" or "dark", following prefers-color-scheme as it changes. */
export function useColorScheme() {
  const query = useMemo(() => matchMedia("(prefers-color-scheme: dark)"), []);
  const [dark, setDark] = useState(query.matches);
  useEffect(() => {
    const follow = () => setDark(query.matches);
    query.addEventListener("change", follow);
    return () => query.removeEventListener("change", follow);
  }, [query]);
  return dark ? "dark" : "light";
}

/** A value for the legend: 5 significant digits, exponent notation when very large or small. */
function formatValue(value) {
  if (value == null || !Number.isFinite(value)) return "–";
  const size = Math.abs(value);
  if (size !== 0 && (size >= 1e6 || size < 1e-3)) return value.toExponential(3);
  return String(Number(value.toPrecision(5)));
}

/** A tick of the y axis: plain, or `8e-4` when very large or small. */
function formatTick(value) {
  if (value == null) return "";
  const size = Math.abs(value);
  if (size !== 0 && (size >= 1e6 || size < 1e-3)) return value.toExponential(1).replace(".0e", "e");
  return String(Number(value.toPrecision(6)));
}

/** The width of the y axis: its longest tick label, measured (as in uPlot's examples). */
function axisSize(plot, values, axisIndex, cycle) {
  const axis = plot.axes[axisIndex];
  if (cycle > 1) return axis._size;
  let size = axis.ticks.size + axis.gap;
  const longest = (values ?? []).reduce((found, value) => (value.length > found.length ? value : found), "");
  if (longest) {
    plot.ctx.font = axis.font[0];
    size += plot.ctx.measureText(longest).width / devicePixelRatio;
  }
  return Math.ceil(size) + 4;
}

/**
 * TensorBoard's smoothing: an exponential moving average of the finite values, `weight` (0 to
 * below 1) being how much of the average each new value keeps, divided by `1 - weight^n` after n
 * values so that the first ones are not pulled towards 0. Values that are not finite stay as
 * they are; so do all values when they are all equal.
 */
export function smooth(values, weight) {
  if (weight <= 0 || values.length === 0) return values;
  const constant = values.every((value) => value === values[0]);
  let average = 0;
  let count = 0;
  return values.map((value) => {
    if (constant || !Number.isFinite(value)) return value;
    average = average * weight + (1 - weight) * value;
    count += 1;
    return average / (1 - weight ** count);
  });
}

/**
 * The chart's lines from the runs' `[step, wall, value]` points: for each run its xs (sorted), its
 * raw values and what is drawn of them (smoothed when `smoothing` > 0). On a log axis a value
 * at or below 0 has no place: it is left out (null, a gap), and counted.
 */
function linesOf(series, xMode, smoothing, log) {
  const column = xMode === "step" ? 0 : 1;
  let hidden = 0;
  const onAxis = (value) => (!log || value == null || value > 0 ? value : null);
  const lines = series.map(({ label, points }) => {
    const rows = points.filter((point) => Number.isFinite(point[column]));
    rows.sort((a, b) => a[column] - b[column]);
    // Relative: seconds since this run's first point.
    const origin = xMode === "relative" && rows.length > 0 ? rows[0][1] : 0;
    const raw = rows.map((point) => (typeof point[2] === "number" ? point[2] : null));
    if (log) hidden += raw.filter((value) => value != null && value <= 0).length;
    return {
      label,
      xs: rows.map((point) => point[column] - origin),
      raw: smoothing > 0 ? raw.map(onAxis) : null,
      drawn: smooth(raw, smoothing).map(onAxis),
    };
  });
  return { lines, hidden };
}

/**
 * uPlot's aligned data `[xs, ys...]` from the lines: a line without a point at some x has
 * `undefined` there (the line spans it); a missing value (null) is a gap. Each run gives its raw
 * values (when smoothed) then what is drawn of them.
 */
function alignedData(lines) {
  return uPlot.join(lines.map(({ xs, raw, drawn }) => (raw ? [xs, raw, drawn] : [xs, drawn])));
}

/** Whether any value of `series` can be drawn on a log axis. */
function hasPositive(series) {
  return series.some(({ points }) => points.some((point) => typeof point[2] === "number" && point[2] > 0));
}

/** A palette colour (`#3b82f6`) at 30% opacity, for the faint raw lines. */
function faint(color) {
  return `${color}4d`;
}

function chartOptions(width, lines, colors, xMode, log) {
  const style = getComputedStyle(document.documentElement);
  const text = style.getPropertyValue("--muted").trim() || "#666";
  const grid = style.getPropertyValue("--grid").trim() || "rgba(128,128,128,.2)";
  const axis = {
    stroke: text,
    grid: { stroke: grid, width: 1 },
    ticks: { stroke: grid, width: 1 },
    font: "11px system-ui, sans-serif",
  };
  const value = (u, v) => formatValue(v);
  return {
    width,
    height: HEIGHT,
    scales: { x: { time: xMode === "wall" }, y: log ? { distr: 3, log: 10 } : {} },
    series: [
      xMode === "wall" ? { label: X_LABELS.wall } : { label: X_LABELS[xMode], value },
      ...lines.flatMap(({ label, raw }) => [
        // The raw line, faint, behind the smoothed one (not in the legend: see panes.css).
        ...(raw
          ? [{ label: `${label} (raw)`, class: "raw", stroke: faint(colors[label]), width: 1, value, points: { show: false } }]
          : []),
        { label, stroke: colors[label], width: 1.5, value, points: { size: 4 } },
      ]),
    ],
    axes: [
      axis,
      {
        ...axis,
        size: axisSize,
        // The ticks drawn, kept on the plot for whoever reads the page (the browser tests).
        values: (u, splits) => {
          u.root.dataset.yTicks = JSON.stringify(splits.filter((split) => split != null));
          return splits.map(formatTick);
        },
      },
    ],
    legend: { live: true },
    // Drag across the chart to zoom in on x; double-click to zoom out.
    cursor: { drag: { x: true, y: false, setScale: true } },
  };
}

/** Replaces the plot's data; keeps the user's zoom when they zoomed in, else fits the new data. */
function updateData(plot, data) {
  const xs = plot.data[0];
  const { min, max } = plot.scales.x;
  let zoomed = false;
  if (xs.length > 1 && min != null && max != null) {
    const slack = (xs[xs.length - 1] - xs[0]) * 1e-9;
    zoomed = min > xs[0] + slack || max < xs[xs.length - 1] - slack;
  }
  plot.setData(data, !zoomed);
}

/**
 * `div.chart[data-tag]` with its title, the plot and notes (downsampling, values a log axis cannot
 * show). series: `[{label, total, points}]` of this tag; colors: label -> colour; smoothing: 0 to
 * 0.99; log: a log y axis asked for (a chart with no value above 0 stays linear); theme: redraws on
 * change. `data-points` says how many points each line has, `data-last` each line's last value
 * drawn, `data-y-scale` the y axis.
 */
export function Chart({ tag, series, xMode, colors, smoothing = 0, log = false, theme }) {
  const holder = useRef(null);
  const plot = useRef(null);
  const shape = useRef("");
  const logAxis = log && hasPositive(series);
  const { lines, hidden } = useMemo(
    () => linesOf(series, xMode, smoothing, logAxis),
    [series, xMode, smoothing, logAxis],
  );
  const data = useMemo(() => alignedData(lines), [lines]);
  // What needs a new uPlot rather than new data.
  const key = [xMode, theme, logAxis, smoothing > 0, ...series.map(({ label }) => `${label}:${colors[label]}`)].join(
    "\u0000",
  );

  useEffect(() => {
    if (plot.current && shape.current === key) {
      updateData(plot.current, data);
      return;
    }
    plot.current?.destroy();
    const width = Math.max(240, holder.current.clientWidth);
    plot.current = new uPlot(chartOptions(width, lines, colors, xMode, logAxis), data, holder.current);
    shape.current = key;
    if (series.some(({ points }) => points.length > 0)) markOnce("curves-drawn");
  }, [key, data]);

  useEffect(() => {
    const observer = new ResizeObserver(() => {
      const width = Math.max(240, holder.current.clientWidth);
      if (plot.current && plot.current.width !== width) plot.current.setSize({ width, height: HEIGHT });
    });
    observer.observe(holder.current);
    return () => {
      observer.disconnect();
      plot.current?.destroy();
      plot.current = null;
    };
  }, []);

  const drawn = Object.fromEntries(series.map(({ label, points }) => [label, points.length]));
  const last = Object.fromEntries(
    lines.map(({ label, drawn: values }) => [label, values.findLast((v) => v != null) ?? null]),
  );
  const downsampled = series.filter(({ total, points }) => total > points.length);
  const notes = [
    ...downsampled.map(
      ({ label, total, points }) =>
        `${series.length > 1 ? `${label}: ` : ""}${points.length} points (downsampled from ${total})`,
    ),
    ...(logAxis && hidden > 0 ? [`${hidden} ${hidden === 1 ? "value" : "values"} ≤ 0 not drawn on the log scale`] : []),
    ...(log && !logAxis ? ["No value above 0: a linear scale"] : []),
  ];
  return html`<div
    class="chart"
    data-tag=${tag}
    data-points=${JSON.stringify(drawn)}
    data-last=${JSON.stringify(last)}
    data-y-scale=${logAxis ? "log" : "linear"}
  >
    <h3>${tag}</h3>
    <div class="plot" ref=${holder}></div>
    ${notes.length ? html`<p class="note">${notes.map((note) => html`<span>${note}</span>`)}</p>` : null}
  </div>`;
}
