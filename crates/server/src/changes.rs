//! Changes to the state database, for the API's event streams: a task asks SQLite's
//! `PRAGMA data_version` on a connection of its own every [`CHECK_EVERY`]; the number changes
//! whenever any other connection commits (the supervisor's, a run's, another process's), and
//! each change bumps a counter that the streams wait on. A stream then reads again what it
//! shows and sends it when it differs. Nothing is read while nothing changes.

use std::path::Path;
use std::time::Duration;

use tokio::sync::watch;
use tokio::task::JoinHandle;
use trainctl_local::store::{Store, StoreError};

/// How often the database is asked whether it changed.
pub const CHECK_EVERY: Duration = Duration::from_millis(200);

/// The watcher of the state database.
#[derive(Debug)]
pub struct Changes {
    seen: watch::Receiver<u64>,
    task: JoinHandle<()>,
}

impl Changes {
    /// Starts watching the database of `state_dir` (on the current tokio runtime).
    pub fn watch(state_dir: &Path) -> Result<Changes, StoreError> {
        let store = Store::open(state_dir)?;
        let mut version = store.data_version()?;
        let (sender, seen) = watch::channel(0_u64);
        let task = tokio::spawn(async move {
            let mut ticks = tokio::time::interval(CHECK_EVERY);
            ticks.set_missed_tick_behavior(tokio::time::MissedTickBehavior::Delay);
            loop {
                ticks.tick().await;
                match store.data_version() {
                    Ok(now) if now != version => {
                        version = now;
                        sender.send_modify(|count| *count += 1);
                    }
                    Ok(_) => {}
                    Err(error) => tracing::warn!("cannot tell whether the jobs changed: {error}"),
                }
            }
        });
        Ok(Changes { seen, task })
    }

    /// A receiver that sees each change (changes close together are seen as one); its
    /// `changed()` fails once the watcher stopped.
    #[must_use]
    pub fn subscribe(&self) -> watch::Receiver<u64> {
        self.seen.clone()
    }

    /// Stops watching: every stream waiting on a change ends.
    pub fn stop(&self) {
        self.task.abort();
    }
}

impl Drop for Changes {
    fn drop(&mut self) {
        self.task.abort();
    }
}
