// Performance marks (the User Timing API) for the benchmarks (scripts/bench-dashboard): the first
// time in a page load that the jobs table shows the server's jobs (`jobs-rendered`) and that a
// chart has drawn a job's curves (`curves-drawn`). Each name is marked once per load.
const marked = new Set();

/** Marks `name`, once per page load, after the browser has painted what was just rendered. */
export function markOnce(name) {
  if (marked.has(name)) return;
  marked.add(name);
  requestAnimationFrame(() => setTimeout(() => performance.mark(name), 0));
}
