// The dashboard's entry point: takes the login code or the token from the address (`#code=...`,
// `#token=...`), then renders the app into #app.
import { render } from "preact";
import { authFailed, hasToken, takeCredentialsFromAddress } from "./api.js";
import { App } from "./app.js";
import { html } from "./html.js";
import "./styles/base.css";
import "./styles/controls.css";
import "./styles/job.css";
import "./styles/panes.css";

await takeCredentialsFromAddress();
if (!hasToken()) authFailed.set(true);
// A new `#code=...` address opened in this tab: take it (before the router sees the hash).
addEventListener("hashchange", takeCredentialsFromAddress);

render(html`<${App} />`, document.getElementById("app"));
