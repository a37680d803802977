// A uPlot chart of one TensorBoard tag: one line per run, with the x axis chosen on the page
// (step, wall time, or seconds since the run's first point). Updated in place (setData) when new
// points come, resized with its container, re-created only when its runs, axis or theme change.
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
 * uPlot's aligned data `[xs, ys of run 1, ys of run 2...]` from the runs' `[step, wall, value]`
 * points: a run without a point at some x has `undefined` there (the line spans it); a missing
 * value (null) is a gap.
 */
function alignedData(series, xMode) {
  const column = xMode === "step" ? 0 : 1;
  const tables = series.map(({ points }) => {
    const rows = points.filter((point) => Number.isFinite(point[column]));
    rows.sort((a, b) => a[column] - b[column]);
    // Relative: seconds since this run's first point.
    const origin = xMode === "relative" && rows.length > 0 ? rows[0][1] : 0;
    return [
      rows.map((point) => point[column] - origin),
      rows.map((point) => (typeof point[2] === "number" ? point[2] : null)),
    ];
  });
  return uPlot.join(tables);
}

function chartOptions(width, series, colors, xMode) {
  const style = getComputedStyle(document.documentElement);
  const text = style.getPropertyValue("--muted").trim() || "#666";
  const grid = style.getPropertyValue("--grid").trim() || "rgba(128,128,128,.2)";
  const axis = {
    stroke: text,
    grid: { stroke: grid, width: 1 },
    ticks: { stroke: grid, width: 1 },
    font: "11px system-ui, sans-serif",
  };
  return {
    width,
    height: HEIGHT,
    scales: { x: { time: xMode === "wall" } },
    series: [
      xMode === "wall" ? { label: X_LABELS.wall } : { label: X_LABELS[xMode], value: (u, v) => formatValue(v) },
      ...series.map(({ run }) => ({
        label: run,
        stroke: colors[run],
        width: 1.5,
        value: (u, v) => formatValue(v),
        points: { size: 4 },
      })),
    ],
    axes: [axis, { ...axis, size: axisSize, values: (u, splits) => splits.map(formatTick) }],
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
 * `div.chart[data-tag]` with its title, the plot and a note of downsampling.
 * series: `[{run, total, points}]` of this tag; colors: run -> colour; theme: redraws on change.
 */
export function Chart({ tag, series, xMode, colors, theme }) {
  const holder = useRef(null);
  const plot = useRef(null);
  const shape = useRef("");
  const data = useMemo(() => alignedData(series, xMode), [series, xMode]);
  // What needs a new uPlot rather than new data.
  const key = [xMode, theme, ...series.map(({ run }) => `${run}:${colors[run]}`)].join("\u0000");

  useEffect(() => {
    if (plot.current && shape.current === key) {
      updateData(plot.current, data);
      return;
    }
    plot.current?.destroy();
    const width = Math.max(240, holder.current.clientWidth);
    plot.current = new uPlot(chartOptions(width, series, colors, xMode), data, holder.current);
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

  const drawn = Object.fromEntries(series.map(({ run, points }) => [run, points.length]));
  const downsampled = series.filter(({ total, points }) => total > points.length);
  return html`<div class="chart" data-tag=${tag} data-points=${JSON.stringify(drawn)}>
    <h3>${tag}</h3>
    <div class="plot" ref=${holder}></div>
    ${downsampled.length
      ? html`<p class="note">${downsampled.map(
          ({ run, total, points }) =>
            html`<span>${series.length > 1 ? `${run}: ` : ""}${points.length} points (downsampled from ${total})</span>`,
        )}</p>`
      : null}
  </div>`;
}
