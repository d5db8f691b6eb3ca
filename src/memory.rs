//! Returning freed memory to the system. mimalloc (the binary's allocator) keeps the pages a
//! thread freed for that thread's next allocations; after a stage that frees much at once
//! (the n-gram step's words and n-grams, a dataset build), the next stage would otherwise
//! allocate fresh pages while those stay resident, and the stages' peaks add up (issue 27).
//!
//! Must not: be called where a worker of the pool may be busy with another caller's long job
//! and the caller cannot wait ([`queue_collect`] is for that).

/// Returns what the calling thread's heap holds unused.
#[allow(unsafe_code)]
pub fn collect_here() {
    // SAFETY: `mi_collect` takes a flag and only frees what the allocator holds unused (a
    // process whose global allocator is not mimalloc has nothing in it to free).
    unsafe { libmimalloc_sys::mi_collect(true) }
}

/// Returns what every thread of `pool` and the calling thread hold unused, and waits for it
/// (a run that owns the pool: the CLI's). Called from one of the pool's workers (inside
/// `install`), the worker takes part in the broadcast while it waits.
pub fn collect_pool(pool: &rayon::ThreadPool) {
    pool.broadcast(|_| collect_here());
    if pool.current_thread_index().is_none() {
        collect_here();
    }
}

/// [`collect_pool`] without waiting: each worker collects once it is done with the jobs it
/// has (a server's pool, shared by requests).
pub fn queue_collect(pool: &rayon::ThreadPool) {
    pool.spawn_broadcast(|_| collect_here());
    collect_here();
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The CLI's hook runs on a worker of the pool it collects (inside `install`), and after
    /// the parse from outside it: both return, with one worker and with several.
    #[test]
    fn a_pool_collects_from_inside_and_outside() {
        for threads in [1, 4] {
            let (done, finished) = std::sync::mpsc::channel();
            std::thread::spawn(move || {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                collect_pool(&pool);
                let inside = pool.install(|| {
                    collect_pool(&pool);
                    pool.current_thread_index()
                });
                queue_collect(&pool);
                done.send(inside).unwrap();
            });
            let inside = finished
                .recv_timeout(std::time::Duration::from_secs(60))
                .expect("the collects return");
            assert!(inside.is_some_and(|i| i < threads), "{inside:?}");
        }
    }
}
