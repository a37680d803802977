//! The stderr of a shim being started, read by the server that starts it: held back until the
//! shim listens, so that a shim that exits first is reported with what it said; then passed on
//! to the server's stderr.

use std::io::{self, PipeReader, Read as _, Write as _};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::thread;

/// How much of what the shim says before it listens is kept.
const HELD: usize = 16 * 1024;

/// The shim's stderr, read by a thread of its own until the shim ends.
pub(super) struct ShimStderr(Arc<Mutex<State>>);

#[derive(Default)]
struct State {
    /// What the shim said before it listened.
    held: Vec<u8>,
    /// Whether what the shim says goes to this process's stderr.
    passing: bool,
    /// Whether the shim has closed its stderr: it has exited.
    ended: bool,
}

impl ShimStderr {
    /// Reads `reader`, the read end of the shim's stderr.
    pub(super) fn read(reader: PipeReader) -> io::Result<ShimStderr> {
        let shared: Arc<Mutex<State>> = Arc::default();
        let state = Arc::clone(&shared);
        thread::Builder::new()
            .name("shim-stderr".to_owned())
            .spawn(move || relay(reader, &state))?;
        Ok(ShimStderr(shared))
    }

    /// The shim listens: what it said, and what it says from now on, goes to this process's
    /// stderr.
    pub(super) fn pass_on(&self) {
        let mut state = self.state();
        state.passing = true;
        let _ = io::stderr().write_all(&state.held);
        state.held = Vec::new();
    }

    /// What the shim said, once it has exited; `None` while it runs.
    pub(super) fn ended(&self) -> Option<String> {
        let state = self.state();
        state
            .ended
            .then(|| String::from_utf8_lossy(&state.held).trim().to_owned())
    }

    fn state(&self) -> MutexGuard<'_, State> {
        self.0.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

/// Reads the shim's stderr into `shared` until the shim closes it.
fn relay(mut reader: PipeReader, shared: &Mutex<State>) {
    let mut chunk = [0; 4096];
    loop {
        let read = match reader.read(&mut chunk) {
            Ok(0) => break,
            Ok(read) => read,
            Err(error) if error.kind() == io::ErrorKind::Interrupted => continue,
            Err(_) => break,
        };
        let mut state = shared.lock().unwrap_or_else(PoisonError::into_inner);
        if state.passing {
            let _ = io::stderr().write_all(&chunk[..read]);
        } else {
            let kept = read.min(HELD.saturating_sub(state.held.len()));
            state.held.extend_from_slice(&chunk[..kept]);
        }
    }
    shared.lock().unwrap_or_else(PoisonError::into_inner).ended = true;
}
