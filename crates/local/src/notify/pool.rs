//! The threads that deliver notifications: a few, shared by every job, however many jobs end
//! at once. A delivery can take the notification's whole timeout (a webhook that does not
//! answer is tried three times); a thread for each would let a burst of finished jobs and a
//! slow webhook pile up thousands of threads. Deliveries beyond [`WORKERS`] wait their turn in
//! order.

use std::sync::mpsc::{self, Receiver, Sender};
use std::sync::{Arc, Mutex, OnceLock, PoisonError};
use std::thread;

/// How many notifications are delivered at once.
pub const WORKERS: usize = 4;

/// A delivery to make.
type Work = Box<dyn FnOnce() + Send>;

/// The queue of the deliveries, once its threads are started.
static QUEUE: OnceLock<Result<Sender<Work>, String>> = OnceLock::new();

/// Hands `work` to the delivery threads (started at the first); why not, when they could not be
/// started.
pub fn submit(work: impl FnOnce() + Send + 'static) -> Result<(), String> {
    let queue = QUEUE.get_or_init(start).as_ref()?;
    queue
        .send(Box::new(work))
        .map_err(|_| "the notification threads have stopped".to_owned())
}

/// Starts the delivery threads.
fn start() -> Result<Sender<Work>, String> {
    let (sender, receiver) = mpsc::channel::<Work>();
    let receiver = Arc::new(Mutex::new(receiver));
    for worker in 0..WORKERS {
        let receiver = Arc::clone(&receiver);
        thread::Builder::new()
            .name(format!("notify-{worker}"))
            .spawn(move || work(&receiver))
            .map_err(|error| format!("cannot start a notification thread: {error}"))?;
    }
    Ok(sender)
}

/// Delivers what the queue hands over, one at a time, for as long as the process lives.
fn work(receiver: &Mutex<Receiver<Work>>) {
    loop {
        let next = receiver
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .recv();
        match next {
            Ok(work) => work(),
            Err(_) => return,
        }
    }
}
