//! `trainctl events [JOB]`: the events of the jobs in the state directory, oldest last
//! occurrence first, alike ones counted as one, as `kubectl events` lists a cluster's; with `-w`,
//! then each new one as it is recorded (one alike an earlier one: that line again, counted).

use std::io::{self, Write};
use std::path::Path;
use std::process::ExitCode;
use std::time::Duration;

use jiff::Timestamp;
use trainctl_local::store::Store;
use trainctl_local::store::queries::{EventScope, JobEventRecord};

use super::replicas::named_jobs;
use crate::cli::EventsArgs;
use crate::state::state_dir;
use crate::target::DEFAULT_NAMESPACE;
use crate::view::events::{EventLine, EventPrinter};

/// How often `-w` looks for new events.
const WATCH_POLL: Duration = Duration::from_millis(250);

/// Prints the events; an error when the job named does not exist. No event is no error (exit 0),
/// as kubectl says of an empty list. With `-w` it returns only on an error (Ctrl-C ends it).
pub fn run(args: &EventsArgs, state: Option<&Path>) -> anyhow::Result<ExitCode> {
    let store = Store::open(&state_dir(state)?)?;
    let namespace = args.namespace.as_deref().unwrap_or(DEFAULT_NAMESPACE);
    let scope = (!args.all_namespaces).then_some(namespace);
    let mut events = EventScope {
        namespace: scope,
        ..EventScope::default()
    };
    if let Some(job) = args.named_job() {
        let found = named_jobs(&store, job, scope, "events")?;
        events.name = Some(&job.name);
        // The kind of the job found, when it is one: a job of another kind and the same name
        // is not it.
        events.kind = match found.as_slice() {
            [one] => Some(one.kind),
            _ => job.kind,
        };
    }
    let mut printer = EventPrinter::new(args.all_namespaces);
    let mut out = io::stdout().lock();
    let mut seen = 0;
    let mut first = store.events_after(events, seen)?;
    if let Some(last) = first.last() {
        seen = last.id;
    }
    // Oldest first; the sort is stable, so events of the same time keep their order.
    first.sort_by_key(|record| record.event.time);
    let shown = print(&mut printer, &first, args, &mut out)?;
    if !args.watch {
        if !shown {
            match scope {
                Some(namespace) => eprintln!("No events found in {namespace} namespace."),
                None => eprintln!("No events found."),
            }
        }
        return Ok(ExitCode::SUCCESS);
    }
    loop {
        std::thread::sleep(WATCH_POLL);
        let new = store.events_after(events, seen)?;
        if let Some(last) = new.last() {
            seen = last.id;
            print(&mut printer, &new, args, &mut out)?;
        }
    }
}

/// Prints the events of `records` whose type is asked for; whether any was.
fn print(
    printer: &mut EventPrinter,
    records: &[JobEventRecord],
    args: &EventsArgs,
    out: &mut impl Write,
) -> io::Result<bool> {
    let lines: Vec<EventLine> = records
        .iter()
        .filter(|record| {
            args.types.is_empty()
                || args
                    .types
                    .iter()
                    .any(|type_| type_.as_str() == record.event.type_)
        })
        .map(EventLine::of)
        .collect();
    if lines.is_empty() {
        return Ok(false);
    }
    out.write_all(printer.render(&lines, Timestamp::now()).as_bytes())?;
    out.flush()?;
    Ok(true)
}
