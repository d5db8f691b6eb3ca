//! Where the extension's parallel work runs: rayon's global pool in the process that first
//! used it, a pool of its own in a process forked after that.
//!
//! A process forked after it scored something (a `DataLoader`'s or a `multiprocessing.Pool`'s
//! workers, forked by default on Linux) copies the parent's memory but none of its threads.
//! With rayon's global pool, the child's first parallel step queued its work for workers that
//! do not exist in the child and waited forever. Such a child now runs its calls on a pool it
//! starts itself (and so would its own forked children). The process that owns the global pool
//! keeps calling the library on its own thread, as before: a hand-over to a pool's worker costs
//! a small SCST reward call about as much as the call itself.
//!
//! Must not: call the library's parallel code outside [`run`].

use std::sync::atomic::{AtomicU32, Ordering};
use std::sync::{Arc, Mutex};

use capscore_core::engine;
use capscore_core::input::InputError;

/// The process whose calls use rayon's global pool (0: none yet). A forked child inherits the
/// value and finds another process's id in it.
static GLOBAL_OWNER: AtomicU32 = AtomicU32::new(0);

/// A forked process's own pool, and that process.
struct Workers {
    pid: u32,
    pool: Arc<rayon::ThreadPool>,
}

/// Held only to look the pool up or to start one, never while work runs.
static WORKERS: Mutex<Option<Workers>> = Mutex::new(None);

/// This (forked) process's own pool (one thread per core, or `RAYON_NUM_THREADS`), started
/// on first use.
fn own_pool(pid: u32) -> Result<Arc<rayon::ThreadPool>, InputError> {
    let mut slot = WORKERS.lock().unwrap_or_else(|e| e.into_inner());
    match slot.take() {
        Some(w) if w.pid == pid => {
            let pool = w.pool.clone();
            *slot = Some(w);
            return Ok(pool);
        }
        // Started by a process this one was forked from: its threads are not here, and
        // dropping it would signal them. Leaked (a few hundred bytes per fork).
        Some(w) => std::mem::forget(w),
        None => {}
    }
    let pool = Arc::new(engine::thread_pool(None)?);
    *slot = Some(Workers {
        pid,
        pool: pool.clone(),
    });
    Ok(pool)
}

/// Runs `f` (on the calling thread, its parallel steps on rayon's global pool) in the process
/// that owns the global pool; on a pool of its own in a process forked after the owner's
/// first call. An error when that pool's threads cannot be started.
pub fn run<T: Send>(f: impl FnOnce() -> T + Send) -> Result<T, InputError> {
    let pid = std::process::id();
    match GLOBAL_OWNER.compare_exchange(0, pid, Ordering::AcqRel, Ordering::Acquire) {
        Ok(_) => Ok(f()),
        Err(owner) if owner == pid => Ok(f()),
        Err(_) => Ok(own_pool(pid)?.install(f)),
    }
}
