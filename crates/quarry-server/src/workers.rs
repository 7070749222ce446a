//! Threads that serve connections. Each has a stack as deep as the deepest statement
//! needs (`quarry_core::STATEMENT_STACK`, address space that is used only as deep
//! statements touch it). Creating such a thread is costlier than a small one (the C
//! library does not cache stacks that large), so a thread whose connection ended or
//! parked waits a while for the next one: a few stay, the rest end at once, and waiting
//! ones end after `KEEP`. Owns nothing of a connection; it only runs jobs.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::mpsc::{channel, Receiver, RecvTimeoutError, Sender};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

type Job = Box<dyn FnOnce() + Send>;

/// Idle threads kept at the most (more end as soon as they are idle).
const MAX_IDLE: usize = 4;
/// How long an idle thread waits for work before it ends.
const KEEP: Duration = Duration::from_secs(10);
const STACK: usize = quarry_core::STATEMENT_STACK + (1 << 20);

struct Workers {
    tx: Mutex<Sender<Job>>,
    rx: Arc<Mutex<Receiver<Job>>>,
    /// Threads waiting for a job and not yet claimed by a submitter.
    idle: AtomicUsize,
}

fn workers() -> &'static Workers {
    static W: OnceLock<Workers> = OnceLock::new();
    W.get_or_init(|| {
        let (tx, rx) = channel();
        Workers {
            tx: Mutex::new(tx),
            rx: Arc::new(Mutex::new(rx)),
            idle: AtomicUsize::new(0),
        }
    })
}

/// Run `job` on an idle thread, or on a new one. Err when no thread can be created (the
/// job is dropped: for a connection, that closes it).
pub(crate) fn run(job: impl FnOnce() + Send + 'static) -> std::io::Result<()> {
    let w = workers();
    let claimed = w
        .idle
        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
        .is_ok();
    if claimed {
        // A claimed thread waits in `recv` until this job arrives (it cannot retire).
        let _ = w.tx.lock().unwrap().send(Box::new(job));
        return Ok(());
    }
    let rx = w.rx.clone();
    std::thread::Builder::new()
        .name("quarry-conn".into())
        .stack_size(STACK)
        .spawn(move || {
            job();
            wait_for_work(rx);
        })
        .map(|_| ())
}

fn wait_for_work(rx: Arc<Mutex<Receiver<Job>>>) {
    let w = workers();
    loop {
        // Offer this thread, unless enough are idle already.
        let offered = w
            .idle
            .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| {
                (n < MAX_IDLE).then_some(n + 1)
            })
            .is_ok();
        if !offered {
            return;
        }
        loop {
            let got = rx.lock().unwrap().recv_timeout(KEEP);
            match got {
                Ok(job) => {
                    job();
                    break;
                }
                Err(RecvTimeoutError::Timeout) => {
                    // Withdraw the offer; if a submitter claimed it meanwhile, its job is
                    // on the way.
                    let withdrawn = w
                        .idle
                        .fetch_update(Ordering::AcqRel, Ordering::Acquire, |n| n.checked_sub(1))
                        .is_ok();
                    if withdrawn {
                        return;
                    }
                }
                Err(RecvTimeoutError::Disconnected) => return,
            }
        }
    }
}
