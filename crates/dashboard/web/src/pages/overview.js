// The Overview tab of a job: its spec in short, its replicas, its conditions as a timeline and
// its events.
import { useNow } from "../clock.js";
import { StateCell } from "../components/state.js";
import { EmptyRow } from "../components/status.js";
import { age, commandLine, formatTime, fullTime, humanDuration, parseTime } from "../format.js";
import { html } from "../html.js";

const RUN_POLICY_FIELDS = [
  "cleanPodPolicy",
  "backoffLimit",
  "activeDeadlineSeconds",
  "ttlSecondsAfterFinished",
  "suspend",
  "schedulingPolicy",
];

/** A spec value in one line: objects as `key=value, ...`. */
function brief(value) {
  if (value === null || value === undefined) return "";
  if (Array.isArray(value)) return value.map(brief).join(", ");
  if (typeof value === "object") {
    return Object.entries(value)
      .map(([key, inner]) => `${key}=${typeof inner === "object" && inner !== null ? `{${brief(inner)}}` : inner}`)
      .join(", ");
  }
  return String(value);
}

/** `<dt>`/`<dd>` pairs of the entries whose value is set. */
function Fields({ entries }) {
  const set = entries.filter(([, value]) => value !== undefined && value !== null && value !== "");
  if (set.length === 0) return null;
  return html`<dl class="fields">
    ${set.map(([label, value]) => html`<dt>${label}</dt><dd>${value}</dd>`)}
  </dl>`;
}

function Container({ container, many }) {
  const words = [...(container.command ?? []), ...(container.args ?? [])];
  const { requests, limits } = container.resources ?? {};
  return html`<div class="container">
    ${many ? html`<h4>${container.name}</h4>` : null}
    <${Fields}
      entries=${[
        ["image", container.image ? html`<code>${container.image}</code>` : null],
        ["command", words.length ? html`<code class="command">${commandLine(words)}</code>` : html`<span class="muted">the image's</span>`],
        ["requests", requests && Object.keys(requests).length ? brief(requests) : null],
        ["limits", limits && Object.keys(limits).length ? brief(limits) : null],
      ]}
    />
  </div>`;
}

/** `section#spec`: per replica type its replicas, restart policy and containers; the run policy. */
function Spec({ job }) {
  const spec = job?.spec ?? {};
  const replicaSpecs = Object.entries(spec).filter(
    ([key, value]) => key.endsWith("ReplicaSpecs") && value && typeof value === "object",
  );
  const runPolicy = spec.runPolicy ?? {};
  const policy = RUN_POLICY_FIELDS.map((field) => [field, runPolicy[field] === undefined ? undefined : brief(runPolicy[field])]);
  // Other settings of the kind (nprocPerNode, slotsPerWorker, elasticPolicy...).
  const others = Object.entries(spec)
    .filter(([key]) => key !== "runPolicy" && !key.endsWith("ReplicaSpecs"))
    .map(([key, value]) => [key, brief(value)])
    .filter(([, text]) => text !== "");
  return html`<section id="spec" class="panel">
    <h2>Spec</h2>
    <div class="replica-specs">
      ${replicaSpecs.flatMap(([, types]) =>
        Object.entries(types).map(([type, replicaSpec]) => {
          const containers = replicaSpec?.template?.spec?.containers ?? [];
          return html`<div class="replica-spec" data-replica-type=${type}>
            <h3>${type}</h3>
            <${Fields}
              entries=${[
                ["replicas", replicaSpec?.replicas ?? 1],
                ["restartPolicy", replicaSpec?.restartPolicy],
              ]}
            />
            ${containers.map((container) => html`<${Container} container=${container} many=${containers.length > 1} />`)}
          </div>`;
        }),
      )}
    </div>
    ${policy.some(([, value]) => value !== undefined)
      ? html`<div class="run-policy"><h3>runPolicy</h3><${Fields} entries=${policy} /></div>`
      : null}
    ${others.length ? html`<div class="run-policy"><h3>Other settings</h3><${Fields} entries=${others} /></div>` : null}
  </section>`;
}

function Time({ time }) {
  return time ? html`<time datetime=${time} title=${fullTime(time)}>${formatTime(time)}</time>` : null;
}

/** The states whose exit code is the replica's own failure (not trainctl's stop). */
const FAILED_STATES = new Set(["Failed", "CrashLoopBackOff"]);

/** A replica's last exit code: marked bad only when it failed by itself; a replica trainctl
 *  stopped (`SIGTERM`, 143) or one that ended well shows it plainly. */
function ExitCell({ replica }) {
  const code = replica.exitCode;
  const failed = code != null && code !== 0 && FAILED_STATES.has(replica.state);
  const title = replica.state === "Stopped" && code != null ? "stopped by trainctl when the job ended" : undefined;
  return html`<td class=${`num exit${failed ? " bad" : code != null && code !== 0 ? " muted" : ""}`} title=${title}>
    ${code ?? ""}
  </td>`;
}

/** `table#replicas`: one row per replica. */
function Replicas({ replicas }) {
  const columns = 10;
  return html`<section class="panel">
    <h2>Replicas</h2>
    <div class="table-wrap"><table id="replicas" class="grid">
      <thead><tr>
        <th>Name</th><th>Type</th><th>State</th><th class="num">Exit code</th><th class="num">Restarts</th>
        <th class="num">PID</th><th class="num">Port</th><th>GPUs</th><th>Started</th><th>Finished</th>
      </tr></thead>
      <tbody>
        ${replicas.map(
          (replica) => html`<tr data-replica=${replica.name} key=${replica.name}>
            <td class="name">${replica.name}</td>
            <td>${replica.type}</td>
            <${StateCell} state=${replica.state} reason=${replica.reason} />
            <${ExitCell} replica=${replica} />
            <td class=${`num${replica.restarts > 0 ? " warn" : ""}`}>${replica.restarts}</td>
            <td class="num">${replica.pid ?? ""}</td>
            <td class="num">${replica.port ?? ""}</td>
            <td>${replica.gpus?.length ? replica.gpus.join(", ") : ""}</td>
            <td><${Time} time=${replica.started} /></td>
            <td><${Time} time=${replica.finished} /></td>
          </tr>`,
        )}
        ${replicas.length === 0 ? html`<${EmptyRow} columns=${columns}>No replicas yet.</${EmptyRow}>` : null}
      </tbody>
    </table></div>
  </section>`;
}

/** `ol#timeline`: the conditions, oldest first, each with the time since the one before. */
function Timeline({ conditions, now }) {
  const sorted = [...conditions].sort(
    (a, b) => (parseTime(a.lastTransitionTime) || 0) - (parseTime(b.lastTransitionTime) || 0),
  );
  return html`<section class="panel">
    <h2>Conditions</h2>
    ${sorted.length === 0 ? html`<p class="muted">No conditions yet.</p>` : null}
    <ol id="timeline" class="timeline">
      ${sorted.map((condition, index) => {
        const time = parseTime(condition.lastTransitionTime);
        const before = index > 0 ? parseTime(sorted[index - 1].lastTransitionTime) : NaN;
        const last = index === sorted.length - 1;
        return html`<li data-condition=${condition.type} class=${`${last ? "current" : ""} status-${String(condition.status).toLowerCase()}`}>
          <div class="what">
            <strong>${condition.type}</strong>
            <span class="condition-status">${condition.status}</span>
            ${condition.reason ? html`<span class="reason">${condition.reason}</span>` : null}
          </div>
          ${condition.message ? html`<div class="message">${condition.message}</div>` : null}
          <div class="when muted">
            <${Time} time=${condition.lastTransitionTime} />
            ${Number.isNaN(time) ? null : html` (${age(condition.lastTransitionTime, now)} ago)`}
            ${Number.isNaN(time) || Number.isNaN(before) ? null : html`<span class="delta">, ${humanDuration(time - before)} after ${sorted[index - 1].type}</span>`}
          </div>
        </li>`;
      })}
    </ol>
  </section>`;
}

/** `(x4 over 5m)` for an event that happened 4 times, the first 5 minutes ago (kubectl's words);
 *  nothing for one that happened once. */
function Count({ event, now }) {
  if (!(event.count > 1)) return null;
  return html` <span class="count muted" title=${`first at ${fullTime(event.firstTimestamp)}`}
    >(x${event.count} over ${age(event.firstTimestamp, now)})</span>`;
}

/** `table#events`: the job's events, warnings highlighted; alike events are one row, counted. */
function Events({ events, now }) {
  return html`<section class="panel">
    <h2>Events</h2>
    <div class="table-wrap"><table id="events" class="grid">
      <thead><tr><th>Last seen</th><th>Type</th><th>Reason</th><th>Message</th></tr></thead>
      <tbody>
        ${events.map(
          (event) => html`<tr class=${event.type === "Warning" ? "warning" : ""} data-reason=${event.reason}>
            <td class="nowrap"><${Time} time=${event.time} /><${Count} event=${event} now=${now} /></td>
            <td>${event.type}</td>
            <td>${event.reason}</td>
            <td class="message">${event.message}</td>
          </tr>`,
        )}
        ${events.length === 0 ? html`<${EmptyRow} columns=${4}>No events.</${EmptyRow}>` : null}
      </tbody>
    </table></div>
  </section>`;
}

export function OverviewTab({ view }) {
  const now = useNow();
  return html`<div class="overview">
    <${Spec} job=${view.job} />
    <${Replicas} replicas=${view.replicas ?? []} />
    <${Timeline} conditions=${view.job?.status?.conditions ?? []} now=${now} />
    <${Events} events=${view.events ?? []} now=${now} />
  </div>`;
}
