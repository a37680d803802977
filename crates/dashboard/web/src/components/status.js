// Loading, error and empty states, shown the same way on every page.
import { html } from "../html.js";

/** A quiet "Loading …" line. */
export function Loading({ what }) {
  return html`<p class="loading" aria-busy="true">Loading ${what}…</p>`;
}

/** An API error (ApiError or any Error): its message and details. */
export function ErrorBox({ error, title, id }) {
  if (!error) return null;
  return html`<div class="error" role="alert" id=${id}>
    ${title ? html`<strong>${title}: </strong>` : null}${error.message || String(error)}
    ${error.details?.length ? html`<ul>${error.details.map((detail) => html`<li>${detail}</li>`)}</ul>` : null}
  </div>`;
}

/** The stream of a page failed: says so above the (possibly stale) data it still shows. */
export function StreamError({ error, what }) {
  if (!error) return null;
  return html`<${ErrorBox} error=${error} title=${`Live updates of ${what} failed`} />`;
}

/** A table row spanning all columns, for "nothing here". */
export function EmptyRow({ columns, children }) {
  return html`<tr class="empty"><td colspan=${columns}>${children}</td></tr>`;
}
