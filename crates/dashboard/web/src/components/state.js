// The state of a job or replica as a coloured badge, and as a table cell (`td.state`).
import { html } from "../html.js";

/** A CSS class for a state word: `state-running`, `state-failed`... */
const stateClass = (state) => `state-${String(state || "unknown").toLowerCase()}`;

/** `<span class="badge state-running">Running</span>` */
export function StateBadge({ state }) {
  return html`<span class=${`badge ${stateClass(state)}`}>${state || "Unknown"}</span>`;
}

/** A table cell whose badge is exactly the state word, coloured by it; with the kernel's reason
 *  beside it when there is one (`OOMKilled`). */
export function StateCell({ state, reason }) {
  return html`<td class=${`state ${stateClass(state)}`}>
    <span class="badge">${state || "Unknown"}</span>${reason ? html` <span class="state-reason">${reason}</span>` : null}
  </td>`;
}
