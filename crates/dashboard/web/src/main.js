// The dashboard's entry point: takes the login code or the token from the address (`#code=...`,
// `#token=...`), then renders the app into #app. The page links the style sheets (styles/*.css and
// uPlot's) itself.
import { render } from "preact";
import { authFailed, hasToken, takeCredentialsFromAddress } from "./api.js";
import { App } from "./app.js";
import { html } from "./html.js";

await takeCredentialsFromAddress();
if (!hasToken()) authFailed.set(true);
// A new `#code=...` address opened in this tab: take it (before the router sees the hash).
addEventListener("hashchange", takeCredentialsFromAddress);

render(html`<${App} />`, document.getElementById("app"));
