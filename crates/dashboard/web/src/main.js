// The dashboard's entry point: takes the token from the address (`#token=...`), then renders the
// app into #app.
import { render } from "preact";
import { authFailed, hasToken, takeTokenFromAddress } from "./api.js";
import { App } from "./app.js";
import { html } from "./html.js";
import "./style.css";

takeTokenFromAddress();
if (!hasToken()) authFailed.set(true);
// A new `#token=...` address opened in this tab: take it (before the router sees the hash).
addEventListener("hashchange", takeTokenFromAddress);

render(html`<${App} />`, document.getElementById("app"));
