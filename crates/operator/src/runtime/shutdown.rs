//! Stop requests: `SIGTERM` (what the kubelet sends) and `SIGINT` (Ctrl-C). The first asks
//! for a graceful stop, a second one forces it.

use tokio::signal::unix::{SignalKind, signal};
use tokio::sync::mpsc;

/// The stream of stop requests.
#[derive(Debug)]
pub struct StopRequests {
    requests: mpsc::UnboundedReceiver<()>,
}

impl StopRequests {
    /// Stop requests from `SIGTERM` and `SIGINT`, from now on (the signals' default action,
    /// ending the process, no longer applies).
    pub fn from_signals() -> std::io::Result<StopRequests> {
        let mut terminate = signal(SignalKind::terminate())?;
        let mut interrupt = signal(SignalKind::interrupt())?;
        let (sender, requests) = StopRequests::channel();
        tokio::spawn(async move {
            loop {
                let name = tokio::select! {
                    _ = terminate.recv() => "SIGTERM",
                    _ = interrupt.recv() => "SIGINT",
                };
                tracing::info!(signal = name, "stop requested");
                if sender.send(()).is_err() {
                    return;
                }
            }
        });
        Ok(requests)
    }

    /// Stop requests sent through the returned sender.
    #[must_use]
    pub(crate) fn channel() -> (mpsc::UnboundedSender<()>, StopRequests) {
        let (sender, requests) = mpsc::unbounded_channel();
        (sender, StopRequests { requests })
    }

    /// Waits for the next request; never resolves once every sender is gone.
    pub(crate) async fn next(&mut self) {
        if self.requests.recv().await.is_none() {
            std::future::pending::<()>().await;
        }
    }
}
