//! A reader of the server's event streams (`text/event-stream`), for the tests of the
//! `/api/v1/watch/...` endpoints: a thread reads the stream and hands each event over.

use std::io::{BufRead, BufReader};
use std::sync::mpsc;
use std::time::{Duration, Instant};

use serde_json::Value;

/// One event: its name and its data, as JSON.
#[derive(Debug, Clone)]
pub struct StreamEvent {
    /// `event:`.
    pub name: String,
    /// `data:`, read as JSON.
    pub data: Value,
}

/// An open event stream.
pub struct EventStream {
    events: mpsc::Receiver<Option<StreamEvent>>,
    /// The response's `Content-Type`.
    pub content_type: String,
}

impl EventStream {
    /// Opens `url` with `token`; panics unless it answers 200.
    pub fn open(url: &str, token: &str) -> EventStream {
        let agent: ureq::Agent = ureq::Agent::config_builder()
            .http_status_as_error(false)
            .build()
            .into();
        let response = agent
            .get(url)
            .header("Authorization", &format!("Bearer {token}"))
            .call()
            .expect("the server answers");
        assert_eq!(response.status().as_u16(), 200, "{url}");
        let content_type = response
            .headers()
            .get("content-type")
            .and_then(|value| value.to_str().ok())
            .unwrap_or("")
            .to_owned();
        let (sender, events) = mpsc::channel();
        let reader = BufReader::new(response.into_body().into_reader());
        std::thread::spawn(move || {
            let mut name = String::new();
            let mut data = String::new();
            for line in reader.lines() {
                let Ok(line) = line else { break };
                if let Some(value) = line.strip_prefix("event: ") {
                    value.clone_into(&mut name);
                } else if let Some(value) = line.strip_prefix("data: ") {
                    data.push_str(value);
                } else if line.is_empty() && !data.is_empty() {
                    let event = StreamEvent {
                        name: std::mem::take(&mut name),
                        data: serde_json::from_str(&std::mem::take(&mut data))
                            .expect("the data is JSON"),
                    };
                    if sender.send(Some(event)).is_err() {
                        return;
                    }
                }
            }
            let _ = sender.send(None);
        });
        EventStream {
            events,
            content_type,
        }
    }

    /// The next event; `None` when the stream ended. Panics after `within`.
    pub fn next(&self, within: Duration) -> Option<StreamEvent> {
        self.events
            .recv_timeout(within)
            .expect("an event or the end of the stream in time")
    }

    /// Reads events until one satisfies `wanted`, and returns it; panics when the stream ends or
    /// after `within`.
    pub fn until(
        &self,
        what: &str,
        within: Duration,
        wanted: impl Fn(&StreamEvent) -> bool,
    ) -> StreamEvent {
        let deadline = Instant::now() + within;
        loop {
            let left = deadline.saturating_duration_since(Instant::now());
            let event = match self.events.recv_timeout(left) {
                Ok(Some(event)) => event,
                Ok(None) => panic!("the stream ended before {what}"),
                Err(mpsc::RecvTimeoutError::Timeout) => {
                    panic!("no event {what} within {within:?}")
                }
                Err(mpsc::RecvTimeoutError::Disconnected) => {
                    panic!("the stream's reader stopped before {what}")
                }
            };
            if wanted(&event) {
                return event;
            }
        }
    }
}
