// Hash routes: `#/`, `#/machine`, `#/jobs/{ns}/{plural}/{name}[/logs|/curves]`, and the hook that
// follows them.
import { useEffect, useState } from "preact/hooks";

/**
 * The route of a hash: `{page: "jobs"}`, `{page: "machine"}`,
 * `{page: "job", ns, plural, name, tab: "overview" | "logs" | "curves"}` or `{page: "missing"}`.
 */
export function parseRoute(hash) {
  const path = hash.replace(/^#/, "").replace(/^\/*/, "/").replace(/\/+$/, "");
  let parts;
  try {
    parts = path.split("/").slice(1).map(decodeURIComponent);
  } catch {
    return { page: "missing" };
  }
  if (parts.length === 0 || (parts.length === 1 && parts[0] === "")) return { page: "jobs" };
  if (parts.length === 1 && parts[0] === "machine") return { page: "machine" };
  if (parts[0] === "jobs" && (parts.length === 4 || parts.length === 5)) {
    const [, ns, plural, name, tab = "overview"] = parts;
    if (["overview", "logs", "curves"].includes(tab) && ns && plural && name) {
      return { page: "job", ns, plural, name, tab };
    }
  }
  return { page: "missing" };
}

/** The current route; re-renders on every hash change. */
export function useRoute() {
  const [route, setRoute] = useState(() => parseRoute(location.hash));
  useEffect(() => {
    const follow = () => setRoute(parseRoute(location.hash));
    addEventListener("hashchange", follow);
    follow();
    return () => removeEventListener("hashchange", follow);
  }, []);
  return route;
}
