use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::sync::mpsc;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use serde_json::{Value, json};
use trainctl_api::{ConditionStatus, JobCondition, JobStatus};

use super::*;
use crate::store::fixtures::example_tfjob;

/// The example TFJob `mnist`, failed with `message`.
fn failed_job(message: &str) -> TrainingJob {
    let mut job = example_tfjob();
    job.metadata_mut().name = Some("mnist".to_owned());
    job.metadata_mut().namespace = Some("team-a".to_owned());
    let mut status = JobStatus::default();
    status.conditions.push(JobCondition {
        type_: JobConditionType::Failed,
        status: ConditionStatus::True,
        reason: "TFJobFailed".to_owned(),
        message: message.to_owned(),
        last_update_time: Some(Time(jiff::Timestamp::UNIX_EPOCH)),
        last_transition_time: Some(Time(jiff::Timestamp::UNIX_EPOCH)),
    });
    *job.status_mut() = Some(status);
    job
}

/// One request to a webhook, as received.
#[derive(Debug)]
struct Received {
    request_line: String,
    content_type: String,
    body: Vec<u8>,
}

/// A webhook on a free loopback port answering `status` to each request.
fn webhook(status: u16) -> (String, mpsc::Receiver<Received>) {
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("address"));
    let (sender, received) = mpsc::channel();
    thread::spawn(move || {
        for stream in listener.incoming() {
            let Ok(stream) = stream else { return };
            let mut reader = BufReader::new(stream);
            let mut request_line = String::new();
            reader.read_line(&mut request_line).expect("request line");
            let (mut length, mut content_type) = (0, String::new());
            loop {
                let mut line = String::new();
                reader.read_line(&mut line).expect("a header");
                if line.trim().is_empty() {
                    break;
                }
                let (name, value) = line.split_once(':').expect("name: value");
                match name.to_ascii_lowercase().as_str() {
                    "content-length" => length = value.trim().parse().expect("a length"),
                    "content-type" => value.trim().clone_into(&mut content_type),
                    _ => {}
                }
            }
            let mut body = vec![0; length];
            reader.read_exact(&mut body).expect("the body");
            let answer =
                format!("HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n");
            let _ = reader.get_mut().write_all(answer.as_bytes());
            let _ = sender.send(Received {
                request_line: request_line.trim().to_owned(),
                content_type,
                body,
            });
        }
    });
    (url, received)
}

#[test]
fn the_payload_is_the_job_its_state_its_final_condition_and_the_log_tails() {
    let mut notification = Notification::new(
        failed_job("1 Worker replica(s) failed."),
        FinalState::Failed,
    );
    notification
        .log_tail
        .insert("worker-1".to_owned(), vec!["boom".to_owned()]);
    let payload = serde_json::to_value(&notification).expect("serializes");
    let keys: Vec<&str> = payload
        .as_object()
        .expect("an object")
        .keys()
        .map(String::as_str)
        .collect();
    assert_eq!(keys, ["job", "state", "reason", "message", "logTail"]);
    assert_eq!(
        payload["job"],
        serde_json::to_value(&notification.job).expect("job")
    );
    assert_eq!(payload["job"]["kind"], "TFJob");
    assert_eq!(payload["job"]["metadata"]["name"], "mnist");
    assert_eq!(payload["state"], "Failed");
    assert_eq!(payload["reason"], "TFJobFailed");
    assert_eq!(payload["message"], "1 Worker replica(s) failed.");
    assert_eq!(payload["logTail"], json!({"worker-1": ["boom"]}));
    assert_eq!(
        notification.env(),
        [
            ("TRAINCTL_JOB_NAME", "mnist"),
            ("TRAINCTL_JOB_NAMESPACE", "team-a"),
            ("TRAINCTL_JOB_KIND", "TFJob"),
            ("TRAINCTL_JOB_STATE", "Failed"),
        ]
    );
}

#[tokio::test]
async fn the_command_and_every_webhook_get_the_same_payload_with_the_failed_logs() {
    let dir = tempfile::tempdir().expect("tempdir");
    let log_path = dir.path().join("worker-1.log");
    std::fs::write(&log_path, "step 1\nTraceback\nValueError: boom\n").expect("a log");
    let out = dir.path().join("payload.json");
    let (first_url, first) = webhook(200);
    let (second_url, second) = webhook(204);
    let settings = NotifySettings {
        on_finish: Some(format!("cat > '{}'", out.display())),
        webhooks: vec![first_url, second_url],
        timeout: Duration::from_secs(10),
    };
    let failed = vec![FailedReplica {
        name: "worker-1".to_owned(),
        log_path,
    }];
    let mut delivery = deliver(
        &settings,
        Notification::new(failed_job("it failed"), FinalState::Failed),
        failed,
    );
    assert_eq!(delivery.finished().await, []);
    let written = std::fs::read(&out).expect("the command wrote the payload");
    let payload: Value = serde_json::from_slice(&written).expect("JSON");
    assert_eq!(
        payload["logTail"],
        json!({"worker-1": ["step 1", "Traceback", "ValueError: boom"]})
    );
    for received in [&first, &second] {
        let request = received.try_recv().expect("one request");
        assert_eq!(request.request_line, "POST /hook HTTP/1.1");
        assert_eq!(request.content_type, "application/json");
        assert_eq!(request.body, written, "the same bytes as the command's");
        assert!(received.try_recv().is_err(), "delivered once");
    }
}

#[tokio::test]
async fn failures_are_given_back_in_words() {
    let (url, _received) = webhook(404);
    let settings = NotifySettings {
        on_finish: Some("exit 4".to_owned()),
        webhooks: vec![url.clone()],
        timeout: Duration::from_secs(10),
    };
    let job = failed_job("it failed");
    let mut delivery = deliver(
        &settings,
        Notification::new(job, FinalState::Failed),
        Vec::new(),
    );
    let words: Vec<String> = delivery
        .finished()
        .await
        .iter()
        .map(ToString::to_string)
        .collect();
    assert_eq!(
        words,
        [
            "on-finish command: exited with code 4".to_owned(),
            format!("webhook {url}: 404 Not Found after 1 try"),
        ]
    );
}

#[test]
fn undelivered_webhooks_say_how_many_tries_and_why_they_stopped() {
    let failure = |attempts, out_of_time| DeliveryFailure::Webhook {
        url: "http://127.0.0.1:9/hook".to_owned(),
        undelivered: Undelivered {
            problem: "500 Internal Server Error".to_owned(),
            attempts,
            out_of_time,
        },
    };
    assert_eq!(
        failure(3, false).to_string(),
        "webhook http://127.0.0.1:9/hook: 500 Internal Server Error after 3 tries"
    );
    assert_eq!(
        failure(2, true).to_string(),
        "webhook http://127.0.0.1:9/hook: 500 Internal Server Error after 2 tries \
         (--notify-timeout reached)"
    );
}

#[test]
fn webhook_urls_must_be_plain_http_with_a_host() {
    assert_eq!(check_webhook_url("http://127.0.0.1:8080/hook"), Ok(()));
    assert_eq!(check_webhook_url("http://hooks.example/a?b=c"), Ok(()));
    assert!(
        check_webhook_url("https://hooks.example/")
            .expect_err("no TLS")
            .starts_with("https is not supported")
    );
    assert_eq!(
        check_webhook_url("hooks.example/a"),
        Err("expected an http:// URL".to_owned())
    );
    assert_eq!(
        check_webhook_url("http:///a"),
        Err("the URL has no host".to_owned())
    );
    assert!(check_webhook_url("http://a b/").is_err());
}

/// The threads of this process named `notify-*` or `webhook`: the deliveries'.
fn delivery_threads() -> usize {
    std::fs::read_dir("/proc/self/task")
        .expect("the tasks")
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("comm")).ok())
        .filter(|name| name.starts_with("notify-") || name.trim() == "webhook")
        .count()
}

#[tokio::test]
async fn many_deliveries_to_a_silent_webhook_take_a_few_threads_not_one_each() {
    // Accepts, never answers: each try waits for its whole timeout.
    let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
    let url = format!("http://{}/hook", listener.local_addr().expect("address"));
    let held = std::sync::Arc::new(std::sync::Mutex::new(Vec::new()));
    let keep = std::sync::Arc::clone(&held);
    thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            keep.lock().expect("not poisoned").push(stream);
        }
    });
    let settings = NotifySettings {
        on_finish: None,
        webhooks: vec![url],
        timeout: Duration::from_millis(600),
    };
    let mut deliveries: Vec<Delivery> = (0..24)
        .map(|_| {
            deliver(
                &settings,
                Notification::new(failed_job("it failed"), FinalState::Failed),
                Vec::new(),
            )
        })
        .collect();
    tokio::time::sleep(Duration::from_millis(200)).await;
    let busy = delivery_threads();
    // The pool's threads, and one webhook try each.
    assert!(busy <= 2 * pool::WORKERS, "{busy} delivery threads");
    // Each delivery still ends, with the webhook's failure, in turn.
    for delivery in &mut deliveries {
        let failures = delivery.finished().await;
        assert_eq!(failures.len(), 1, "{failures:?}");
    }
}
