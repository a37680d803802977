//! Client-side rate limiting of the Kubernetes API (`--kube-api-qps`, `--kube-api-burst`): a
//! token bucket in front of kube's client, as client-go's `QPS` and `Burst` do.
//!
//! Neither kube 5 nor tower has one: kube's `Config` has no rate setting, and tower's
//! `RateLimit` allows `n` requests per fixed window (no burst above the average rate, and twice
//! the rate across a window's edge). The bucket holds up to `burst` tokens, starts full, and
//! refills at `qps` tokens a second; each request takes one, and a request finding the bucket
//! empty waits (in `poll_ready`) until a token has grown back. A watch counts as one request,
//! when it starts.

use std::future::Future;
use std::pin::Pin;
use std::task::{Context, Poll};
use std::time::Duration;

use tokio::time::{Instant, Sleep};
use tower::{Layer, Service};

/// The client's limits: an average of `qps` requests a second, with bursts of up to `burst`
/// requests (what `RateLimitLayer` applies), and at most `max_in_flight` requests waiting for
/// their response (applied by [`crate::runtime::connect::client`] with tower's `ConcurrencyLimit`).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct RateLimits {
    /// Requests a second, on average; positive and finite.
    pub qps: f64,
    /// The most requests sent at once after a quiet period; at least 1.
    pub burst: u32,
    /// The most requests waiting for their response at once; at least 1. kube's client speaks
    /// HTTP/1.1, so each of them holds a connection of its own (a TLS session, on a cluster).
    pub max_in_flight: usize,
}

impl RateLimits {
    /// How many of the requests in flight may create or delete a job's children: all but an
    /// eighth (at least one) of `max_in_flight`, kept for the rest (the jobs' status writes, the
    /// events, the lists), so that a job's status is not written behind the creations of every
    /// job created before it (`Running` seconds late, BENCHMARKS.md).
    #[must_use]
    pub fn children_in_flight(&self) -> usize {
        let kept = (self.max_in_flight / 8).max(1);
        self.max_in_flight.saturating_sub(kept).max(1)
    }
}

impl Default for RateLimits {
    /// The operator's defaults (`--kube-api-qps 500`, `--kube-api-burst 2000`,
    /// `--kube-api-max-in-flight 64`).
    fn default() -> Self {
        RateLimits {
            qps: 500.0,
            burst: 2000,
            max_in_flight: 64,
        }
    }
}

/// A [`Layer`] that rate-limits a service by [`RateLimits`]' `qps` and `burst`.
#[derive(Debug, Clone, Copy)]
pub(crate) struct RateLimitLayer {
    limits: RateLimits,
}

impl RateLimitLayer {
    /// A layer applying `limits`.
    #[must_use]
    pub(crate) fn new(limits: RateLimits) -> RateLimitLayer {
        RateLimitLayer { limits }
    }
}

impl<S> Layer<S> for RateLimitLayer {
    type Service = RateLimit<S>;

    fn layer(&self, inner: S) -> RateLimit<S> {
        RateLimit {
            inner,
            bucket: TokenBucket::full(self.limits, Instant::now()),
            sleep: None,
        }
    }
}

/// The token bucket, refilled lazily from the time that passed.
#[derive(Debug)]
struct TokenBucket {
    qps: f64,
    burst: f64,
    tokens: f64,
    refilled_at: Instant,
}

impl TokenBucket {
    fn full(limits: RateLimits, now: Instant) -> TokenBucket {
        let burst = f64::from(limits.burst.max(1));
        TokenBucket {
            qps: limits.qps,
            burst,
            tokens: burst,
            refilled_at: now,
        }
    }

    /// Adds the tokens grown since the last refill; `None` when one is available, else how
    /// long until one is.
    fn wait(&mut self, now: Instant) -> Option<Duration> {
        let grown = now.duration_since(self.refilled_at).as_secs_f64() * self.qps;
        self.tokens = (self.tokens + grown).min(self.burst);
        self.refilled_at = now;
        (self.tokens < 1.0).then(|| Duration::from_secs_f64((1.0 - self.tokens) / self.qps))
    }

    fn take(&mut self) {
        self.tokens -= 1.0;
    }
}

/// A service whose requests are rate-limited; see [`RateLimitLayer`].
#[derive(Debug)]
pub(crate) struct RateLimit<S> {
    inner: S,
    bucket: TokenBucket,
    sleep: Option<Pin<Box<Sleep>>>,
}

impl<S, Request> Service<Request> for RateLimit<S>
where
    S: Service<Request>,
{
    type Response = S::Response;
    type Error = S::Error;
    type Future = S::Future;

    fn poll_ready(&mut self, cx: &mut Context<'_>) -> Poll<Result<(), Self::Error>> {
        loop {
            if let Some(sleep) = self.sleep.as_mut() {
                if sleep.as_mut().poll(cx).is_pending() {
                    return Poll::Pending;
                }
                self.sleep = None;
            }
            match self.bucket.wait(Instant::now()) {
                None => return self.inner.poll_ready(cx),
                Some(wait) => self.sleep = Some(Box::pin(tokio::time::sleep(wait))),
            }
        }
    }

    fn call(&mut self, request: Request) -> Self::Future {
        // `poll_ready` saw a token; a `call` without it (a contract breach) runs into debt that
        // the next `poll_ready` waits out.
        self.bucket.take();
        self.inner.call(request)
    }
}

#[cfg(test)]
mod tests {
    use std::task::Poll;

    use tokio::time::advance;
    use tower_test::assert_request_eq;
    use tower_test::mock::{self, Spawn};

    use super::*;

    type Limited = Spawn<RateLimit<mock::Mock<&'static str, &'static str>>>;
    type Handle = mock::Handle<&'static str, &'static str>;

    fn limited(qps: f64, burst: u32) -> (Limited, Handle) {
        mock::spawn_layer(RateLimitLayer::new(RateLimits {
            qps,
            burst,
            ..RateLimits::default()
        }))
    }

    /// Sends one request through, answering it.
    async fn send(service: &mut Limited, handle: &mut Handle) {
        assert!(matches!(service.poll_ready(), Poll::Ready(Ok(()))));
        let response = service.call("get");
        assert_request_eq!(handle, "get").send_response("ok");
        assert_eq!(response.await.expect("answered"), "ok");
    }

    #[test]
    fn an_eighth_of_the_requests_in_flight_is_kept_from_the_childrens_writes() {
        let with = |max_in_flight| RateLimits {
            max_in_flight,
            ..RateLimits::default()
        };
        assert_eq!(RateLimits::default().children_in_flight(), 56);
        assert_eq!(with(8).children_in_flight(), 7);
        assert_eq!(with(2).children_in_flight(), 1);
        assert_eq!(with(1).children_in_flight(), 1);
    }

    #[tokio::test(start_paused = true)]
    async fn a_full_bucket_lets_a_burst_through_then_paces_at_qps() {
        let (mut service, mut handle) = limited(10.0, 3);
        for _ in 0..3 {
            send(&mut service, &mut handle).await;
        }
        assert!(service.poll_ready().is_pending(), "the burst is spent");
        advance(Duration::from_millis(99)).await;
        assert!(
            service.poll_ready().is_pending(),
            "a token takes 100 ms to grow"
        );
        advance(Duration::from_millis(1)).await;
        assert!(service.is_woken(), "the wait wakes the caller");
        send(&mut service, &mut handle).await;
        assert!(service.poll_ready().is_pending());
        advance(Duration::from_millis(100)).await;
        send(&mut service, &mut handle).await;
    }

    #[tokio::test(start_paused = true)]
    async fn a_quiet_period_refills_the_bucket_up_to_the_burst_only() {
        let (mut service, mut handle) = limited(10.0, 3);
        for _ in 0..3 {
            send(&mut service, &mut handle).await;
        }
        advance(Duration::from_secs(60)).await;
        for _ in 0..3 {
            send(&mut service, &mut handle).await;
        }
        assert!(
            service.poll_ready().is_pending(),
            "a minute of quiet is worth 3 tokens, not 600"
        );
    }

    #[tokio::test(start_paused = true)]
    async fn the_inner_service_is_asked_for_readiness_once_a_token_is_there() {
        let (mut service, mut handle) = limited(1.0, 1);
        handle.allow(0);
        assert!(
            service.poll_ready().is_pending(),
            "the inner service is not ready"
        );
        handle.allow(1);
        assert!(matches!(service.poll_ready(), Poll::Ready(Ok(()))));
    }

    #[test]
    fn the_defaults_are_the_flags_defaults() {
        assert_eq!(
            RateLimits::default(),
            RateLimits {
                qps: 500.0,
                burst: 2000,
                max_in_flight: 64,
            }
        );
    }
}
