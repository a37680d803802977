//! The lines `events` prints, as `kubectl events` does: NAMESPACE (with `-A`), LAST SEEN (with,
//! for alike events counted as one, how many and since when: `2m (x4 over 5m)`), TYPE, REASON,
//! OBJECT (`tfjob/mnist`, or `pod/mnist-worker-0` for an event about one replica) and MESSAGE.
//! With `-w` the lines come in batches: the columns keep the widths they had, growing only when a
//! new cell is wider, so that a stream stays aligned with its header.

use jiff::Timestamp;
use trainctl_local::store::queries::JobEventRecord;

use super::jobs::age;

/// The column headers, NAMESPACE first.
const HEADERS: [&str; 6] = [
    "NAMESPACE",
    "LAST SEEN",
    "TYPE",
    "REASON",
    "OBJECT",
    "MESSAGE",
];

/// One event as a line shows it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct EventLine {
    /// The job's namespace.
    pub namespace: String,
    /// When it (last) happened.
    pub time: Timestamp,
    /// When it first happened.
    pub first_time: Timestamp,
    /// How many times it happened.
    pub count: u32,
    /// `Normal` or `Warning`.
    pub type_: String,
    /// The reason, one word.
    pub reason: String,
    /// What it is about: `tfjob/mnist`, `pod/mnist-worker-0`.
    pub object: String,
    /// What happened.
    pub message: String,
}

impl EventLine {
    /// The line of a stored event: about its job, or the replica it names.
    pub fn of(record: &JobEventRecord) -> EventLine {
        let event = &record.event;
        EventLine {
            namespace: record.namespace.clone(),
            time: event.time,
            first_time: event.first_time,
            count: event.count,
            type_: event.type_.clone(),
            reason: event.reason.clone(),
            object: event.object.as_ref().map_or_else(
                || format!("{}/{}", record.kind.singular(), record.name),
                |pod| format!("pod/{pod}"),
            ),
            message: event.message.clone(),
        }
    }

    fn cells(&self, now: Timestamp) -> [String; 6] {
        [
            self.namespace.clone(),
            last_seen(now, self.time, self.first_time, self.count),
            self.type_.clone(),
            self.reason.clone(),
            self.object.clone(),
            self.message.clone(),
        ]
    }
}

/// When an event was last seen, as kubectl's `events` and `describe` say it: its age, and for
/// one that happened more than once how many times, over how long before now: `2m (x4 over 5m)`
/// (last 2 minutes ago, four times, the first 5 minutes ago).
pub fn last_seen(now: Timestamp, time: Timestamp, first_time: Timestamp, count: u32) -> String {
    let last = age(now.duration_since(time));
    if count > 1 {
        format!(
            "{last} (x{count} over {})",
            age(now.duration_since(first_time))
        )
    } else {
        last
    }
}

/// Prints events batch after batch under one header, columns three spaces apart.
#[derive(Debug, Clone)]
pub struct EventPrinter {
    with_namespace: bool,
    widths: [usize; 6],
    header_printed: bool,
}

impl EventPrinter {
    /// A printer whose lines have a NAMESPACE column `with_namespace`.
    pub fn new(with_namespace: bool) -> EventPrinter {
        EventPrinter {
            with_namespace,
            widths: HEADERS.map(|header| header.chars().count()),
            header_printed: false,
        }
    }

    /// The text of `lines`, ages counted up to `now`; the header first, the first time.
    pub fn render(&mut self, lines: &[EventLine], now: Timestamp) -> String {
        let rows: Vec<[String; 6]> = lines.iter().map(|line| line.cells(now)).collect();
        for row in &rows {
            for (width, cell) in self.widths.iter_mut().zip(row) {
                *width = (*width).max(cell.chars().count());
            }
        }
        let mut out = String::new();
        if !self.header_printed {
            self.header_printed = true;
            out.push_str(&self.line(&HEADERS.map(str::to_owned)));
        }
        for row in &rows {
            out.push_str(&self.line(row));
        }
        out
    }

    /// One line: its cells padded to the widths, NAMESPACE left out unless shown.
    fn line(&self, cells: &[String; 6]) -> String {
        let skip = usize::from(!self.with_namespace);
        let mut line = String::new();
        for (cell, width) in cells.iter().zip(self.widths).skip(skip) {
            line.push_str(cell);
            line.extend(std::iter::repeat_n(' ', width - cell.chars().count() + 3));
        }
        let mut line = line.trim_end().to_owned();
        line.push('\n');
        line
    }
}

#[cfg(test)]
mod tests {
    use jiff::SignedDuration;
    use trainctl_api::JobKind;
    use trainctl_local::store::EventRecord;

    use super::*;

    fn record(object: Option<&str>, reason: &str, ago: i64, now: Timestamp) -> JobEventRecord {
        JobEventRecord {
            id: 1,
            job_uid: "uid-1".to_owned(),
            namespace: "default".to_owned(),
            kind: JobKind::TFJob,
            name: "mnist".to_owned(),
            event: EventRecord::once(
                now - SignedDuration::from_secs(ago),
                "Normal",
                reason,
                format!("{reason} said"),
                object.map(str::to_owned),
            ),
        }
    }

    #[test]
    fn lines_are_kubectl_events_and_stay_aligned_batch_after_batch() {
        let now = Timestamp::now();
        let mut printer = EventPrinter::new(false);
        let first = [
            EventLine::of(&record(None, "SuccessfulCreatePod", 65, now)),
            EventLine::of(&record(Some("mnist-worker-0"), "Started", 7, now)),
        ];
        assert_eq!(
            printer.render(&first, now),
            "\
LAST SEEN   TYPE     REASON                OBJECT               MESSAGE
65s         Normal   SuccessfulCreatePod   tfjob/mnist          SuccessfulCreatePod said
7s          Normal   Started               pod/mnist-worker-0   Started said
"
        );
        let next = [EventLine::of(&record(None, "TFJobSucceeded", 0, now))];
        assert_eq!(
            printer.render(&next, now),
            "0s          Normal   TFJobSucceeded        tfjob/mnist          TFJobSucceeded said\n"
        );
    }

    #[test]
    fn alike_events_counted_as_one_say_how_many_and_since_when() {
        let now = Timestamp::now();
        let mut backing_off = record(Some("mnist-worker-0"), "BackOff", 125, now);
        backing_off.event.count = 4;
        backing_off.event.first_time = now - SignedDuration::from_secs(310);
        let mut printer = EventPrinter::new(false);
        assert_eq!(
            printer.render(
                &[
                    EventLine::of(&record(None, "ScriptNotFound", 320, now)),
                    EventLine::of(&backing_off)
                ],
                now
            ),
            "\
LAST SEEN         TYPE     REASON           OBJECT               MESSAGE
5m                Normal   ScriptNotFound   tfjob/mnist          ScriptNotFound said
2m (x4 over 5m)   Normal   BackOff          pod/mnist-worker-0   BackOff said
"
        );
        assert_eq!(last_seen(now, now, now, 1), "0s");
        assert_eq!(
            last_seen(now, now, now - SignedDuration::from_secs(7_300), 2),
            "0s (x2 over 2h)"
        );
    }

    #[test]
    fn every_namespace_adds_the_namespace_column() {
        let now = Timestamp::now();
        let mut printer = EventPrinter::new(true);
        assert_eq!(
            printer.render(&[EventLine::of(&record(None, "Created", 130, now))], now),
            "\
NAMESPACE   LAST SEEN   TYPE     REASON    OBJECT        MESSAGE
default     2m          Normal   Created   tfjob/mnist   Created said
"
        );
    }
}
