// The page header: the name, the navigation (Jobs, Machine) and the live indicator `#live`.
import { html } from "../html.js";
import { liveStatus } from "../sse.js";
import { useStore } from "../store.js";

const LIVE_TEXT = { live: "live", reconnecting: "reconnecting…", offline: "offline" };

function LiveIndicator() {
  const status = useStore(liveStatus);
  return html`<span id="live" class=${`live live-${status}`} role="status"
    title=${status === "live" ? "Updates arrive as they happen" : "Waiting for the server's updates"}>${LIVE_TEXT[status]}</span>`;
}

export function Header({ route, info }) {
  const section = route.page === "machine" ? "machine" : route.page === "missing" ? "" : "jobs";
  const link = (href, name, label) =>
    html`<a href=${href} class=${section === name ? "active" : ""} aria-current=${section === name ? "page" : undefined}>${label}</a>`;
  return html`<header class="top">
    <a class="brand" href="#/">trainctl</a>
    <nav>${link("#/", "jobs", "Jobs")}${info?.machine === false ? null : link("#/machine", "machine", "Machine")}</nav>
    <span class="spacer"></span>
    ${info?.source === "kube"
      ? html`<span class="source" title="Jobs read from a Kubernetes cluster">cluster ${info.context ?? ""}</span>`
      : null}
    ${info?.version ? html`<span class="version">v${info.version}</span>` : null}
    <${LiveIndicator} />
  </header>`;
}
