// The dashboard's frame: the header, then the page of the route, or #auth-error when the server
// has not been given its token.
import { useEffect } from "preact/hooks";
import { authFailed, authProblem, dashboardInfo, loadDashboardInfo } from "./api.js";
import { Header } from "./components/header.js";
import { html } from "./html.js";
import { JobPage } from "./pages/job.js";
import { JobsPage } from "./pages/jobs.js";
import { MachinePage } from "./pages/machine.js";
import { useRoute } from "./router.js";
import { useStore } from "./store.js";

function AuthError() {
  const problem = useStore(authProblem);
  return html`<div id="auth-error" class="error auth" role="alert">
    <strong>No access. </strong>${problem ? `${problem} ` : ""}This page needs a login link: open the address <code>trainctl dashboard</code> prints (it ends in <code>#code=...</code>, and works once)
  </div>`;
}

function Missing() {
  return html`<section class="page">
    <h1>No such page</h1>
    <p><a href="#/">Go to the jobs</a></p>
  </section>`;
}

function pageTitle(route) {
  if (route.page === "machine") return "Machine";
  if (route.page === "job") return `${route.name}${route.tab === "overview" ? "" : ` ${route.tab}`}`;
  if (route.page === "jobs") return "Jobs";
  return "Not found";
}

export function App() {
  const failed = useStore(authFailed);
  const info = useStore(dashboardInfo);
  const route = useRoute();

  useEffect(() => {
    if (!failed) loadDashboardInfo();
  }, [failed]);
  useEffect(() => {
    document.title = `${pageTitle(route)} · trainctl`;
  }, [route]);

  let page;
  if (failed) page = html`<${AuthError} />`;
  else if (route.page === "jobs") page = html`<${JobsPage} />`;
  else if (route.page === "machine") page = html`<${MachinePage} />`;
  else if (route.page === "job") {
    // Keyed by the job: another job starts afresh, another tab of the same job keeps its stream.
    page = html`<${JobPage} key=${`${route.ns}/${route.plural}/${route.name}`} ...${route} info=${info} />`;
  } else page = html`<${Missing} />`;

  return html`<${Header} route=${route} info=${failed ? null : info} />
    <main>${page}</main>`;
}
