//! The server's connections: HTTP/1 on each accepted socket, and the bounds that keep slow or
//! silent peers from holding the server. A peer has [`HEADER_READ_TIMEOUT`] to send a request's
//! head, counted from when it connects or when the previous answer was sent (so a connection
//! that says nothing, or idles between requests, is closed); a peer that takes nothing of an
//! answer for [`WRITE_STALL_TIMEOUT`] is dropped; and at most [`max_connections`] connections
//! are served at once, so that the descriptors the jobs need stay free. Past that, a new
//! connection takes the place of the oldest one that has sent nothing yet, if any (so a flood of
//! silent connections does not keep requests waiting behind it), else waits until one closes.

use std::collections::BTreeMap;
use std::future::Future;
use std::io;
use std::pin::{Pin, pin};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::Duration;

use axum::Router;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore, watch};
use tokio::time::Sleep;

/// How long a peer may take to send a request's head (from when it connects, or from the
/// previous answer on a kept-alive connection) before the connection is closed.
pub const HEADER_READ_TIMEOUT: Duration = Duration::from_secs(10);

/// How long an answer may wait for a peer that takes none of it before the connection is
/// dropped (a followed log that has nothing new writes nothing, and is not cut).
pub const WRITE_STALL_TIMEOUT: Duration = Duration::from_secs(30);

/// How long the server waits, when it stops, for the answers in progress (a followed log
/// would go on until its job ends).
const DRAIN_TIMEOUT: Duration = Duration::from_secs(5);

/// How long the server waits before accepting again after accepting failed (out of
/// descriptors: a connection or a job's run will give some back).
const ACCEPT_RETRY: Duration = Duration::from_millis(100);

/// How many connections are served at once, for a process that may have `open_files`
/// descriptors: a quarter of them, between 16 and 1024, so that the jobs' database connections
/// and log files always find descriptors.
#[must_use]
pub fn max_connections(open_files: u64) -> usize {
    usize::try_from(open_files / 4)
        .unwrap_or(usize::MAX)
        .clamp(16, 1024)
}

/// Serves `app` on `listener` until `stop` completes; then the connections are asked to close
/// after their answer in progress, and given [`DRAIN_TIMEOUT`] to.
pub async fn serve(
    listener: TcpListener,
    app: Router,
    max_connections: usize,
    stop: impl Future<Output = ()>,
) {
    let slots = Arc::new(Semaphore::new(max_connections));
    let peers = Arc::new(Peers::default());
    let (closing, closed) = watch::channel(false);
    let mut stop = pin!(stop);
    for id in 0_u64.. {
        let stream = tokio::select! {
            () = &mut stop => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    tracing::warn!("cannot accept a connection: {error}");
                    tokio::time::sleep(ACCEPT_RETRY).await;
                    continue;
                }
            },
        };
        let slot = if let Ok(slot) = Arc::clone(&slots).try_acquire_owned() {
            slot
        } else {
            peers.evict_oldest_silent();
            tokio::select! {
                () = &mut stop => break,
                slot = Arc::clone(&slots).acquire_owned() => match slot {
                    Ok(slot) => slot,
                    Err(_) => break,
                },
            }
        };
        let peer = peers.join(id);
        tokio::spawn(connection(
            stream,
            app.clone(),
            Held {
                id,
                peers: Arc::clone(&peers),
                _slot: slot,
            },
            peer,
            closed.clone(),
        ));
    }
    let _ = closing.send(true);
    let every = u32::try_from(max_connections).unwrap_or(u32::MAX);
    if tokio::time::timeout(DRAIN_TIMEOUT, slots.acquire_many(every))
        .await
        .is_err()
    {
        tracing::warn!(
            "stopping with answers still in progress after {} s",
            DRAIN_TIMEOUT.as_secs()
        );
    }
}

/// The connections served, by age, with whether each has sent anything yet and how to close
/// it to make room.
#[derive(Default)]
struct Peers {
    serving: Mutex<BTreeMap<u64, Peer>>,
}

/// What [`Peers`] keeps of a connection.
#[derive(Clone, Default)]
struct Peer {
    /// Whether a byte has come from it.
    heard: Arc<AtomicBool>,
    /// Closes it.
    evict: Arc<Notify>,
}

impl Peers {
    fn join(&self, id: u64) -> Peer {
        let peer = Peer::default();
        self.lock().insert(id, peer.clone());
        peer
    }

    /// Closes the oldest connection that has sent nothing yet, if any.
    fn evict_oldest_silent(&self) {
        let mut serving = self.lock();
        let silent = serving
            .iter()
            .find(|(_, peer)| !peer.heard.load(Ordering::Relaxed))
            .map(|(&id, _)| id);
        if let Some(peer) = silent.and_then(|id| serving.remove(&id)) {
            peer.evict.notify_one();
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, BTreeMap<u64, Peer>> {
        self.serving.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// A connection's place: its slot, and its entry in [`Peers`], both given back when dropped.
struct Held {
    id: u64,
    peers: Arc<Peers>,
    _slot: OwnedSemaphorePermit,
}

impl Drop for Held {
    fn drop(&mut self) {
        self.peers.lock().remove(&self.id);
    }
}

/// Serves one connection, holding its place until it closes (or is evicted).
async fn connection(
    stream: TcpStream,
    app: Router,
    held: Held,
    peer: Peer,
    mut closed: watch::Receiver<bool>,
) {
    let _ = stream.set_nodelay(true);
    let io = TokioIo::new(Watched::new(stream, Arc::clone(&peer.heard)));
    let served = http1::Builder::new()
        .timer(TokioTimer::new())
        .header_read_timeout(HEADER_READ_TIMEOUT)
        .serve_connection(io, TowerToHyperService::new(app));
    let mut served = pin!(served);
    let closing = tokio::select! {
        _ = served.as_mut() => false,
        () = peer.evict.notified() => false,
        closing = closed.wait_for(|closed| *closed) => closing.is_ok(),
    };
    if closing {
        served.as_mut().graceful_shutdown();
        let _ = served.await;
    }
    drop(held);
}

/// A socket that tells when a byte first comes from the peer, and whose writes fail once one
/// has waited [`WRITE_STALL_TIMEOUT`] for the peer.
struct Watched {
    stream: TcpStream,
    heard: Arc<AtomicBool>,
    stalled: Option<Pin<Box<Sleep>>>,
}

impl Watched {
    fn new(stream: TcpStream, heard: Arc<AtomicBool>) -> Watched {
        Watched {
            stream,
            heard,
            stalled: None,
        }
    }

    /// `Pending` from a write: pending still, or the stall's error once it has lasted too long.
    fn pending<T>(&mut self, cx: &mut Context<'_>) -> Poll<io::Result<T>> {
        let stalled = self
            .stalled
            .get_or_insert_with(|| Box::pin(tokio::time::sleep(WRITE_STALL_TIMEOUT)));
        match stalled.as_mut().poll(cx) {
            Poll::Ready(()) => Poll::Ready(Err(io::Error::new(
                io::ErrorKind::TimedOut,
                format!(
                    "the peer took nothing for {} s",
                    WRITE_STALL_TIMEOUT.as_secs()
                ),
            ))),
            Poll::Pending => Poll::Pending,
        }
    }

    /// What a write gave: progress ends a stall.
    fn written<T>(
        &mut self,
        cx: &mut Context<'_>,
        poll: Poll<io::Result<T>>,
    ) -> Poll<io::Result<T>> {
        match poll {
            Poll::Ready(result) => {
                self.stalled = None;
                Poll::Ready(result)
            }
            Poll::Pending => self.pending(cx),
        }
    }
}

impl AsyncRead for Watched {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        let before = buf.filled().len();
        let poll = Pin::new(&mut self.stream).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.heard.store(true, Ordering::Relaxed);
        }
        poll
    }
}

impl AsyncWrite for Watched {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.stream).poll_write(cx, buf);
        self.written(cx, poll)
    }

    fn poll_write_vectored(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        bufs: &[io::IoSlice<'_>],
    ) -> Poll<io::Result<usize>> {
        let poll = Pin::new(&mut self.stream).poll_write_vectored(cx, bufs);
        self.written(cx, poll)
    }

    fn is_write_vectored(&self) -> bool {
        self.stream.is_write_vectored()
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.stream).poll_flush(cx);
        self.written(cx, poll)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        let poll = Pin::new(&mut self.stream).poll_shutdown(cx);
        self.written(cx, poll)
    }
}

#[cfg(test)]
mod tests {
    use super::max_connections;

    #[test]
    fn connections_take_a_quarter_of_the_descriptors_within_bounds() {
        assert_eq!(
            [0, 64, 256, 1024, 4096, 1 << 20].map(max_connections),
            [16, 16, 64, 256, 1024, 1024]
        );
    }
}
