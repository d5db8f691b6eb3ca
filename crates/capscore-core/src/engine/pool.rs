//! Worker threads: the pool a front end runs a job on, with the one cap on how many threads a
//! caller may ask for (a request for a million threads is refused, not started).

use crate::input::{ErrorCode, InputError};

/// Threads per core a caller may ask for at most.
pub const THREADS_PER_CORE: usize = 4;

/// The most worker threads a caller may ask for on this machine: [`THREADS_PER_CORE`] times its
/// cores.
pub fn max_threads() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, usize::from);
    THREADS_PER_CORE * cores
}

/// Checks a requested thread count: `None` is the default (one per core); `Some(n)` must be 1
/// to [`max_threads`], else `limit_exceeded` naming the cap.
pub fn check_threads(threads: Option<usize>) -> Result<(), InputError> {
    let max = max_threads();
    match threads {
        None => Ok(()),
        Some(n) if (1..=max).contains(&n) => Ok(()),
        Some(n) => Err(InputError::new(
            ErrorCode::LimitExceeded,
            format!(
                "threads: {n} asked; give 1 to {max} ({THREADS_PER_CORE} x the {} cores here), or leave it unset for one per core",
                max / THREADS_PER_CORE
            ),
        )),
    }
}

/// A pool of `threads` workers (default: one per core) after [`check_threads`].
pub fn thread_pool(threads: Option<usize>) -> Result<rayon::ThreadPool, InputError> {
    check_threads(threads)?;
    rayon::ThreadPoolBuilder::new()
        .num_threads(threads.unwrap_or(0))
        .build()
        .map_err(|e| {
            InputError::new(
                ErrorCode::Internal,
                format!("cannot start worker threads: {e}"),
            )
        })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn thread_counts_beyond_the_cap_are_refused_before_any_thread_starts() {
        let max = max_threads();
        assert!(check_threads(None).is_ok());
        assert!(check_threads(Some(1)).is_ok());
        assert!(check_threads(Some(max)).is_ok());
        for bad in [0, max + 1, 1_000_000] {
            let e = check_threads(Some(bad)).expect_err("refused");
            assert_eq!(e.code, ErrorCode::LimitExceeded);
            assert!(e.message.contains(&max.to_string()), "{}", e.message);
        }
        let pool = thread_pool(Some(2)).expect("pool");
        assert_eq!(pool.current_num_threads(), 2);
    }
}
