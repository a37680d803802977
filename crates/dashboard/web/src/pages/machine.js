// The Machine page (`#/machine`): what this machine has and what the jobs hold (CPU, memory,
// GPUs), who holds each GPU, and the queue of waiting jobs; live from /api/v1/watch/machine.
import { useState } from "preact/hooks";
import { jobHref } from "../api.js";
import { EmptyRow, Loading, StreamError } from "../components/status.js";
import { formatBytes, formatCores } from "../format.js";
import { html } from "../html.js";
import { useEventStream } from "../sse.js";

function JobLink({ job }) {
  return html`<a href=${jobHref(job.namespace, job.plural, job.name)}>${job.namespace}/${job.name}</a>`;
}

/** One resource: `held / capacity` and a bar. */
function Usage({ label, held, capacity, text }) {
  const share = capacity > 0 ? Math.min(1, held / capacity) : 0;
  const level = share >= 1 ? "full" : share >= 0.8 ? "high" : "";
  return html`<div class="usage" data-resource=${label.toLowerCase()}>
    <div class="usage-head"><span class="label">${label}</span><span class="value">${text}</span></div>
    <div class=${`bar ${level}`} role="meter" aria-label=${label} aria-valuemin="0" aria-valuemax=${capacity} aria-valuenow=${held}>
      <div class="fill" style=${`width: ${(share * 100).toFixed(1)}%`}></div>
    </div>
  </div>`;
}

function Capacity({ capacity, held }) {
  return html`<section id="capacity" class="panel">
    <h2>Capacity</h2>
    <div class="usages">
      <${Usage} label="CPU" held=${held.cpuMillis} capacity=${capacity.cpuMillis}
        text=${`${formatCores(held.cpuMillis)} / ${formatCores(capacity.cpuMillis)} cores`} />
      <${Usage} label="Memory" held=${held.memoryBytes} capacity=${capacity.memoryBytes}
        text=${`${formatBytes(held.memoryBytes)} / ${formatBytes(capacity.memoryBytes)}`} />
      <${Usage} label="GPUs" held=${held.gpus} capacity=${capacity.gpus} text=${`${held.gpus} / ${capacity.gpus}`} />
    </div>
  </section>`;
}

function Gpus({ gpus }) {
  return html`<section class="panel">
    <h2>GPUs</h2>
    <div class="table-wrap"><table id="gpus" class="grid">
      <thead><tr><th class="num">GPU</th><th>Job</th><th>Replica</th></tr></thead>
      <tbody>
        ${gpus.map(
          (gpu) => html`<tr data-gpu=${gpu.index} key=${gpu.index}>
            <td class="num">${gpu.index}</td>
            ${gpu.holder
              ? html`<td><${JobLink} job=${gpu.holder} /> <span class="muted">${gpu.holder.kind}</span></td><td>${gpu.holder.replica}</td>`
              : html`<td class="free" colspan="2">free</td>`}
          </tr>`,
        )}
        ${gpus.length === 0 ? html`<${EmptyRow} columns=${3}>This machine has no GPUs.</${EmptyRow}>` : null}
      </tbody>
    </table></div>
  </section>`;
}

function Holders({ holders }) {
  return html`<section class="panel">
    <h2>Held by</h2>
    <div class="table-wrap"><table id="holders" class="grid">
      <thead><tr><th>Job</th><th>Kind</th><th class="num">CPU</th><th class="num">Memory</th><th>GPUs held</th></tr></thead>
      <tbody>
        ${holders.map(
          (holder) => html`<tr data-job=${`${holder.namespace}/${holder.plural}/${holder.name}`}>
            <td><${JobLink} job=${holder} /></td>
            <td>${holder.kind}</td>
            <td class="num">${formatCores(holder.cpuMillis)}</td>
            <td class="num">${formatBytes(holder.memoryBytes)}</td>
            <td>${holder.gpus?.length ? holder.gpus.map((index) => `GPU ${index}`).join(", ") : html`<span class="muted">none</span>`}</td>
          </tr>`,
        )}
        ${holders.length === 0 ? html`<${EmptyRow} columns=${5}>No job holds resources now.</${EmptyRow}>` : null}
      </tbody>
    </table></div>
  </section>`;
}

function Queue({ queue }) {
  return html`<section class="panel">
    <h2>Queue</h2>
    <div class="table-wrap"><table id="queue" class="grid">
      <thead><tr><th class="num">#</th><th>Job</th><th>Kind</th><th>Waits for</th></tr></thead>
      <tbody>
        ${queue.map(
          (entry) => html`<tr data-job=${`${entry.namespace}/${entry.plural}/${entry.name}`}>
            <td class="num">${entry.position ?? html`<span class="muted" title="held by its namespace's quota">quota</span>`}</td>
            <td><${JobLink} job=${entry} /></td>
            <td>${entry.kind}</td>
            <td>${entry.reason}</td>
          </tr>`,
        )}
        ${queue.length === 0 ? html`<${EmptyRow} columns=${4}>No job is waiting.</${EmptyRow}>` : null}
      </tbody>
    </table></div>
  </section>`;
}

export function MachinePage() {
  const [machine, setMachine] = useState(null);
  const stream = useEventStream("/api/v1/watch/machine", { machine: setMachine });
  return html`<section class="page">
    <div class="page-head"><h1>Machine</h1></div>
    <${StreamError} error=${stream.error} what="the machine" />
    ${machine === null && !stream.error ? html`<${Loading} what="the machine" />` : null}
    ${machine
      ? html`<${Capacity} capacity=${machine.capacity} held=${machine.held} />
          <div class="columns">
            <${Gpus} gpus=${machine.gpus ?? []} />
            <${Queue} queue=${machine.queue ?? []} />
          </div>
          <${Holders} holders=${machine.holders ?? []} />`
      : null}
  </section>`;
}
