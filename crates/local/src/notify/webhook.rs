//! A webhook: the notification `POST`ed as JSON to a URL, tried again on what may pass (a
//! connection that failed, a timeout, a `5xx`, `408` or `429` answer) after 1 s, then 2 s, at
//! most [`ATTEMPTS`] times, each try within [`TRY_TIMEOUT`], all of them within the
//! notification's timeout. Any other answer but a `2xx` is final: a redirect is not followed
//! (it would turn the `POST` into a `GET`).

use std::thread;
use std::time::{Duration, Instant};

use ureq::Agent;
use ureq::http::StatusCode;

use super::text::duration_text;

/// How many times a webhook is tried at most.
pub const ATTEMPTS: u32 = 3;

/// The wait after the first failed try; it doubles after each.
pub const FIRST_BACKOFF: Duration = Duration::from_secs(1);

/// The longest one try may take, connecting and the answer included.
pub const TRY_TIMEOUT: Duration = Duration::from_secs(10);

/// Why a webhook was not delivered: the last try's problem, and how many tries were made.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Undelivered {
    /// What went wrong on the last try: `500 Internal Server Error`, `connection refused`...
    pub problem: String,
    /// How many tries were made.
    pub attempts: u32,
    /// Whether tries stopped because the notification's timeout was reached.
    pub out_of_time: bool,
}

/// What one try came to.
#[derive(Debug, Clone, PartialEq, Eq)]
enum Attempt {
    /// A `2xx` answer.
    Delivered,
    /// A problem that another try may not have (a connection refused, a `503`).
    Passing(String),
    /// A problem that another try would have too (a `404`, a malformed URL).
    Final(String),
}

/// `POST`s `body` to `url` as `application/json` until a try succeeds, the problem is final,
/// [`ATTEMPTS`] tries were made, or `timeout` (from now) leaves no room for another; how many
/// tries it took.
pub fn post(url: &str, body: &[u8], timeout: Duration) -> Result<u32, Undelivered> {
    post_with(url, body, timeout, FIRST_BACKOFF)
}

/// [`post`] with the first back-off given.
fn post_with(
    url: &str,
    body: &[u8],
    timeout: Duration,
    first_backoff: Duration,
) -> Result<u32, Undelivered> {
    let deadline = Instant::now() + timeout;
    let mut backoff = first_backoff;
    let mut attempts = 0;
    loop {
        attempts += 1;
        let left = deadline.saturating_duration_since(Instant::now());
        let problem = match try_once(url, body, left.min(TRY_TIMEOUT)) {
            Attempt::Delivered => return Ok(attempts),
            Attempt::Final(problem) => {
                return Err(Undelivered {
                    problem,
                    attempts,
                    out_of_time: false,
                });
            }
            Attempt::Passing(problem) => problem,
        };
        let out_of_time = Instant::now() + backoff >= deadline;
        if attempts == ATTEMPTS || out_of_time {
            return Err(Undelivered {
                problem,
                attempts,
                out_of_time: out_of_time && attempts < ATTEMPTS,
            });
        }
        thread::sleep(backoff);
        backoff *= 2;
    }
}

/// One `POST` of `body` to `url`, within `limit`.
fn try_once(url: &str, body: &[u8], limit: Duration) -> Attempt {
    let agent: Agent = Agent::config_builder()
        .http_status_as_error(false)
        .max_redirects(0)
        .timeout_global(Some(limit))
        .build()
        .into();
    let response = agent
        .post(url)
        .header("Content-Type", "application/json")
        .send(body);
    match response {
        Ok(response) => judge(response.status()),
        Err(error @ (ureq::Error::BadUri(_) | ureq::Error::Http(_))) => {
            Attempt::Final(error.to_string())
        }
        Err(ureq::Error::Io(error)) => Attempt::Passing(error.to_string()),
        Err(ureq::Error::Timeout(_)) => {
            Attempt::Passing(format!("no answer within {}", duration_text(limit)))
        }
        Err(error) => Attempt::Passing(error.to_string()),
    }
}

/// What an answer with `status` comes to.
fn judge(status: StatusCode) -> Attempt {
    let words = status_words(status);
    if status.is_success() {
        Attempt::Delivered
    } else if status.is_server_error()
        || status == StatusCode::TOO_MANY_REQUESTS
        || status == StatusCode::REQUEST_TIMEOUT
    {
        Attempt::Passing(words)
    } else {
        Attempt::Final(words)
    }
}

/// `500 Internal Server Error`.
fn status_words(status: StatusCode) -> String {
    match status.canonical_reason() {
        Some(reason) => format!("{} {reason}", status.as_u16()),
        None => status.as_u16().to_string(),
    }
}

#[cfg(test)]
mod tests {
    use std::io::{BufRead, BufReader, Read, Write};
    use std::net::TcpListener;
    use std::sync::mpsc;

    use super::*;

    /// A server on a free loopback port that answers each request with the next of `statuses`
    /// and reports each request's body.
    fn serve(statuses: &'static [u16]) -> (String, mpsc::Receiver<Vec<u8>>) {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind");
        let url = format!("http://{}/hook", listener.local_addr().expect("address"));
        let (bodies, received) = mpsc::channel();
        thread::spawn(move || {
            for &status in statuses {
                let Ok((stream, _)) = listener.accept() else {
                    return;
                };
                let mut reader = BufReader::new(stream);
                let mut length = 0;
                loop {
                    let mut line = String::new();
                    reader.read_line(&mut line).expect("a header line");
                    if line.trim().is_empty() {
                        break;
                    }
                    if let Some((name, value)) = line.split_once(':')
                        && name.eq_ignore_ascii_case("content-length")
                    {
                        length = value.trim().parse().expect("a length");
                    }
                }
                let mut body = vec![0; length];
                reader.read_exact(&mut body).expect("the body");
                let _ = bodies.send(body);
                let answer = format!(
                    "HTTP/1.1 {status} X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n"
                );
                let _ = reader.get_mut().write_all(answer.as_bytes());
            }
        });
        (url, received)
    }

    #[test]
    fn a_5xx_is_tried_again_after_a_back_off_until_it_passes() {
        let (url, bodies) = serve(&[503, 500, 204]);
        let started = Instant::now();
        let attempts = post_with(
            &url,
            b"{}",
            Duration::from_secs(10),
            Duration::from_millis(50),
        );
        assert_eq!(attempts, Ok(3));
        assert!(
            started.elapsed() >= Duration::from_millis(150),
            "50 ms, then 100 ms"
        );
        assert_eq!(bodies.try_iter().count(), 3);
    }

    #[test]
    fn three_failures_give_up_with_the_last_answer() {
        let (url, _bodies) = serve(&[500, 502, 500, 200]);
        let failed = post_with(
            &url,
            b"{}",
            Duration::from_secs(10),
            Duration::from_millis(10),
        );
        assert_eq!(
            failed,
            Err(Undelivered {
                problem: "500 Internal Server Error".to_owned(),
                attempts: 3,
                out_of_time: false,
            })
        );
    }

    #[test]
    fn a_4xx_or_a_redirect_is_final() {
        for (status, words) in [(404, "404 Not Found"), (302, "302 Found")] {
            let statuses: &'static [u16] = if status == 404 {
                &[404, 200]
            } else {
                &[302, 200]
            };
            let (url, _bodies) = serve(statuses);
            let failed = post_with(
                &url,
                b"{}",
                Duration::from_secs(10),
                Duration::from_millis(10),
            );
            assert_eq!(
                failed,
                Err(Undelivered {
                    problem: words.to_owned(),
                    attempts: 1,
                    out_of_time: false,
                })
            );
        }
    }

    #[test]
    fn a_refused_connection_is_tried_again_within_the_timeout_only() {
        let port = TcpListener::bind("127.0.0.1:0")
            .expect("bind")
            .local_addr()
            .expect("address")
            .port();
        let url = format!("http://127.0.0.1:{port}/hook");
        let failed = post_with(
            &url,
            b"{}",
            Duration::from_millis(300),
            Duration::from_millis(200),
        )
        .expect_err("nothing listens");
        assert_eq!(failed.attempts, 2, "{failed:?}");
        assert!(failed.out_of_time);
        assert!(failed.problem.contains("refused"), "{}", failed.problem);
    }

    #[test]
    fn the_statuses_read_as_http_says_them() {
        assert_eq!(judge(StatusCode::OK), Attempt::Delivered);
        assert_eq!(
            judge(StatusCode::TOO_MANY_REQUESTS),
            Attempt::Passing("429 Too Many Requests".to_owned())
        );
        assert_eq!(
            judge(StatusCode::UNAUTHORIZED),
            Attempt::Final("401 Unauthorized".to_owned())
        );
    }
}
