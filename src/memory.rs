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
/// (a run that owns the pool: the CLI's).
pub fn collect_pool(pool: &rayon::ThreadPool) {
    pool.broadcast(|_| collect_here());
    collect_here();
}

/// [`collect_pool`] without waiting: each worker collects once it is done with the jobs it
/// has (a server's pool, shared by requests).
pub fn queue_collect(pool: &rayon::ThreadPool) {
    pool.spawn_broadcast(|_| collect_here());
    collect_here();
}
