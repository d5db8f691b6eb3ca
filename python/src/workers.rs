//! Where the extension's parallel work runs: rayon's global pool in the process that first
//! used it, a pool of its own in a process forked after that.
//!
//! A process forked after it scored something (a `DataLoader`'s or a `multiprocessing.Pool`'s
//! workers, forked by default on Linux up to Python 3.13) copies the parent's memory but none
//! of its threads. With rayon's global pool, the child's first parallel step queued its work
//! for workers that do not exist in the child and waited forever. Such a child now runs its
//! calls on a pool it starts itself (and so would its own forked children). The process that
//! owns the global pool keeps calling the library on its own thread, as before: a hand-over to
//! a pool's worker costs a small SCST reward call about as much as the call itself.
//!
//! No lock is taken here: a fork may happen at any moment on another thread, and a lock held
//! then would stay held in the child for good.
//!
//! Must not: call the library's parallel code outside [`run`].

use std::ptr;
use std::sync::atomic::{AtomicPtr, AtomicU32, Ordering};

use capscore_core::engine;
use capscore_core::input::InputError;

/// The process whose calls use rayon's global pool (0: none yet; [`FORKED`]: none may). A
/// forked child inherits the value and finds another process's id in it, or [`FORKED`].
static GLOBAL_OWNER: AtomicU32 = AtomicU32::new(0);

/// Set in a forked child when its parent had claimed the global pool (no process id is this
/// large), so that no process in the child's line uses that pool, even one that gets the
/// parent's id again after the parent exited.
const FORKED: u32 = u32::MAX;

/// A forked process's own pool, and that process.
struct Workers {
    pid: u32,
    pool: rayon::ThreadPool,
}

/// The latest pool started by a forked process (null: none). Published once and never freed:
/// a later process's pool replaces it and leaks it (its threads are not in that process, and
/// dropping it would signal them).
static WORKERS: AtomicPtr<Workers> = AtomicPtr::new(ptr::null_mut());

/// This (forked) process's own pool (one thread per core, or `RAYON_NUM_THREADS`), started
/// on first use.
fn own_pool(pid: u32) -> Result<&'static rayon::ThreadPool, InputError> {
    loop {
        let current = WORKERS.load(Ordering::Acquire);
        // SAFETY: a non-null value was published below from `Box::into_raw` and is never freed.
        if let Some(w) = unsafe { current.as_ref() } {
            if w.pid == pid {
                return Ok(&w.pool);
            }
        }
        let fresh = Box::into_raw(Box::new(Workers {
            pid,
            pool: engine::thread_pool(None)?,
        }));
        match WORKERS.compare_exchange(current, fresh, Ordering::AcqRel, Ordering::Acquire) {
            // SAFETY: published just now, never freed.
            Ok(_) => return Ok(unsafe { &(*fresh).pool }),
            // Another thread of this process published its pool first: this one was never
            // seen by anyone, and its threads are here to be stopped.
            // SAFETY: `fresh` came from `Box::into_raw` above and was not published.
            Err(_) => drop(unsafe { Box::from_raw(fresh) }),
        }
    }
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

/// In a forked child (run by the C library right after `fork`, on the forking thread; only
/// atomic operations, which are safe there): a global pool claimed before the fork is not
/// for this process or its descendants.
#[cfg(unix)]
extern "C" fn in_forked_child() {
    if GLOBAL_OWNER.load(Ordering::Relaxed) != 0 {
        GLOBAL_OWNER.store(FORKED, Ordering::Relaxed);
    }
}

#[cfg(unix)]
extern "C" {
    fn pthread_atfork(
        prepare: Option<extern "C" fn()>,
        parent: Option<extern "C" fn()>,
        child: Option<extern "C" fn()>,
    ) -> std::os::raw::c_int;
}

/// Registers [`in_forked_child`] (once, at import). Without it, a child tells itself from
/// its parent by process id alone.
pub fn watch_forks() {
    #[cfg(unix)]
    // SAFETY: registers a function that only touches an atomic; the C library keeps the
    // pointer, and the extension's code is never unloaded by CPython.
    unsafe {
        pthread_atfork(None, None, Some(in_forked_child));
    }
}
