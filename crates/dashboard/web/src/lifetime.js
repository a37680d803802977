// The page's open connections, closed when the page is left. A browser gives a server 6
// connections: a page left with its streams open (kept in the back-forward cache, or not yet torn
// down) would hold them, and the next page would wait for them. A page brought back from that
// cache is loaded again, so that its streams open afresh.
const closers = new Set();

/** Calls `close` when the page is left; the returned function forgets it. */
export function closeOnLeave(close) {
  closers.add(close);
  return () => closers.delete(close);
}

addEventListener("pagehide", () => {
  for (const close of [...closers]) close();
  closers.clear();
});
addEventListener("pageshow", (event) => {
  if (event.persisted) location.reload();
});
