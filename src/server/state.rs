//! Shared state and the compute gate.
//!
//! CPU work never runs on a tokio worker: [`Compute::run`] takes a permit from a bounded
//! semaphore (none free: the request is shed with 503 at once, never queued without bound),
//! runs the closure on the dedicated rayon pool, carries the tracing span along, catches panics
//! (a 500, the server stays up) and sends the result back on a oneshot channel.

use std::panic::AssertUnwindSafe;
use std::sync::atomic::{AtomicU8, Ordering};
use std::sync::Arc;
use std::time::Duration;

use tokio::sync::{oneshot, Semaphore};

use super::auth::Keys;
use super::config::{ConnLimits, Limits};
use super::error::ApiError;
use super::telemetry;
use crate::dataset::Registry;
use crate::engine::Metric;
use crate::input::ErrorCode;
use crate::metrics::meteor::Meteor;
use crate::metrics::spice::Spice;

/// The application state handed to every handler.
#[derive(Clone)]
pub struct AppState(pub Arc<App>);

/// Everything the handlers share.
pub struct App {
    /// Registered datasets.
    pub datasets: Registry,
    /// API keys.
    pub keys: Keys,
    /// Request limits.
    pub limits: Limits,
    /// The compute gate and pool.
    pub compute: Compute,
    /// Resource readiness per metric.
    pub resources: Resources,
    /// Called with every score request's body (fault-injection tests only).
    #[cfg(feature = "test-support")]
    pub hook: Hook,
    /// Whole-request timeout (the computation timeout plus a margin).
    pub request_timeout: Duration,
    /// Requests in flight at once, all routes: a permit is taken once the body has arrived.
    pub requests: Arc<Semaphore>,
    /// Connection and body-transfer limits.
    pub conn: ConnLimits,
    /// The memory budget and per-request cost limits.
    pub budget: super::cost::Budget,
}

impl App {
    /// Frees at least `need` bytes of the budget if it can, by dropping the cached SPICE
    /// graphs of the datasets used least recently first (a later SPICE request rebuilds what it
    /// needs); each dataset's share shrinks to what it still holds. Returns the bytes freed.
    pub fn evict_cold(&self, need: u64) -> u64 {
        let mut cold = self.datasets.list();
        cold.retain(|d| d.graph_bytes() > 0);
        cold.sort_by_key(|d| d.last_used());
        let mut freed = 0;
        for ds in cold {
            if freed >= need {
                break;
            }
            let bytes = ds.evict_graphs();
            if bytes == 0 {
                continue;
            }
            freed += bytes;
            // Shrink the share: return it, then hold what is left (best effort, as at load).
            self.budget.holds.release(&ds.name);
            self.hold_loaded(&ds);
            metrics::counter!("capscore_dataset_evictions_total").increment(1);
            tracing::info!(dataset = %ds.name, freed_bytes = bytes, "cached SPICE graphs evicted");
        }
        freed
    }

    /// The end of a request that scored against `ds` (if any): returns the request's own
    /// `reserved` memory, then takes the dataset's share of the budget (SPICE graphs the
    /// request built, or a version another replica registered; [`App::hold_loaded`]).
    pub fn settle(&self, ds: Option<&crate::dataset::Dataset>, reserved: super::cost::Reservation) {
        drop(reserved);
        if let Some(d) = ds {
            self.hold_loaded(d);
        }
    }

    /// Keeps `ds`'s share of the memory budget up to date (a dataset another replica
    /// registered, SPICE graphs built since). Cached SPICE graphs the budget cannot take (after
    /// evicting colder datasets' graphs) are dropped again, so caches never hold memory outside
    /// the budget: a later request rebuilds them (and its estimate counts that). The rest is
    /// best effort, since the dataset is in memory already: a share the budget cannot take is
    /// logged and counted, and shrinks what requests may use only once it fits.
    pub fn hold_loaded(&self, ds: &crate::dataset::Dataset) {
        let mut held = self.budget.hold(&ds.name, &ds.sha256, ds.resident_bytes());
        if held.is_err() {
            let freed = ds.evict_graphs();
            if freed > 0 {
                metrics::counter!("capscore_dataset_evictions_total").increment(1);
                tracing::info!(dataset = %ds.name, freed_bytes = freed, "cached SPICE graphs dropped: the memory budget cannot hold them");
                held = self.budget.hold(&ds.name, &ds.sha256, ds.resident_bytes());
            }
        }
        if let Err(e) = held {
            metrics::counter!("capscore_dataset_holds_failed_total").increment(1);
            tracing::warn!(dataset = %ds.name, error = %e.detail, "dataset memory not reserved");
        }
        metrics::gauge!("capscore_datasets_resident_bytes").set(self.budget.holds.total() as f64);
    }
}

/// Whether each metric's external resources are loaded.
///
/// BLEU, ROUGE-L and CIDEr need none. Metrics that need resources (METEOR's paraphrase
/// tables, SPICE's parser, lemmas and synonyms) add an arm to [`Resources::status`]; the match
/// is exhaustive so a new metric cannot be served without a decision here.
#[derive(Clone, Default)]
pub struct Resources {
    /// Metrics marked unavailable, with the reason (a failed resource load; tests).
    missing: Vec<(Metric, String)>,
    /// METEOR with its data loaded, when available.
    meteor: Option<Arc<Meteor>>,
    /// SPICE with its data loaded, when available (sharing METEOR's synonyms when METEOR is
    /// loaded). Registered datasets cache reference graphs built with it: a server has one.
    spice: Option<Arc<Spice>>,
}

impl std::fmt::Debug for Resources {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Resources")
            .field("missing", &self.missing)
            .field("meteor", &self.meteor.is_some())
            .field("spice", &self.spice.is_some())
            .finish()
    }
}

impl Resources {
    /// Resources with `missing` metrics marked not loaded.
    pub fn with_missing(missing: impl IntoIterator<Item = (Metric, String)>) -> Resources {
        Resources {
            missing: missing.into_iter().collect(),
            ..Resources::default()
        }
    }

    /// Resources with METEOR loaded (or not).
    pub fn with_meteor(meteor: Option<Arc<Meteor>>) -> Resources {
        Resources {
            meteor,
            ..Resources::default()
        }
    }

    /// These resources with SPICE loaded (or not).
    pub fn with_spice(self, spice: Option<Arc<Spice>>) -> Resources {
        Resources { spice, ..self }
    }

    /// These resources with `m` marked unavailable for `why` (a failed load).
    pub fn mark_missing(mut self, m: Metric, why: String) -> Resources {
        self.missing.push((m, why));
        self
    }

    /// The loaded METEOR, if any.
    pub fn meteor(&self) -> Option<&Meteor> {
        self.meteor.as_deref()
    }

    /// The loaded SPICE, if any.
    pub fn spice(&self) -> Option<&Spice> {
        self.spice.as_deref()
    }

    /// The metrics computed when a request names none: pycocoevalcap's set, less the metrics
    /// whose resources are not loaded.
    pub fn default_metrics(&self) -> Vec<Metric> {
        Metric::DEFAULT
            .iter()
            .copied()
            .filter(|m| self.status(*m).is_ok())
            .collect()
    }

    /// `Ok` when `m` can be computed now, otherwise why not.
    pub fn status(&self, m: Metric) -> Result<(), String> {
        if let Some((_, why)) = self.missing.iter().find(|(x, _)| *x == m) {
            return Err(why.clone());
        }
        match m {
            Metric::Bleu | Metric::RougeL | Metric::CiderD | Metric::CiderOriginal => Ok(()),
            Metric::Meteor if self.meteor.is_some() => Ok(()),
            Metric::Meteor => Err(
                "METEOR's data is not loaded (start the server without --offline, or run `capscore fetch`)"
                    .to_owned(),
            ),
            Metric::Spice | Metric::Spider if self.spice.is_some() => Ok(()),
            Metric::Spice | Metric::Spider => Err(
                "SPICE's data (parser model, lemma exceptions, METEOR's synonyms) is not loaded (start the server without --offline, or run `capscore fetch`)"
                    .to_owned(),
            ),
        }
    }

    /// Every metric with its readiness.
    pub fn all(&self) -> Vec<(Metric, Result<(), String>)> {
        Metric::ALL.iter().map(|&m| (m, self.status(m))).collect()
    }

    /// Checks the requested metrics; the first one not ready gives a 503 naming it.
    pub fn check(&self, metrics: &[Metric]) -> Result<(), ApiError> {
        for &m in metrics {
            if let Err(why) = self.status(m) {
                return Err(ApiError {
                    metric: Some(m.name().to_owned()),
                    retry_after: Some(30),
                    ..ApiError::new(
                        ErrorCode::ResourcesNotLoaded,
                        format!("metric {} is not available: {why}", m.name()),
                    )
                });
            }
        }
        Ok(())
    }
}

/// The fate of one computation, decided once: committed by the work (a dataset registration
/// about to be written) or abandoned by its request (timed out, or the client went away). A
/// computation that commits is answered even past the timeout (the commit is short), and one
/// whose request was abandoned never commits; long loops read [`Fate::is_abandoned`] to stop
/// early.
#[derive(Clone, Debug, Default)]
pub struct Fate(Arc<AtomicU8>);

const RUNNING: u8 = 0;
const COMMITTED: u8 = 1;
const ABANDONED: u8 = 2;

impl Fate {
    /// Marks the work committed; false when its request was abandoned first.
    pub fn commit(&self) -> bool {
        match self
            .0
            .compare_exchange(RUNNING, COMMITTED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(now) => now == COMMITTED,
        }
    }

    /// Marks the request abandoned; false when the work committed first.
    pub fn abandon(&self) -> bool {
        match self
            .0
            .compare_exchange(RUNNING, ABANDONED, Ordering::AcqRel, Ordering::Acquire)
        {
            Ok(_) => true,
            Err(now) => now == ABANDONED,
        }
    }

    /// True once the request was abandoned.
    pub fn is_abandoned(&self) -> bool {
        self.0.load(Ordering::Acquire) == ABANDONED
    }
}

/// Abandons a computation when its request's future is dropped (the client went away) before
/// an answer.
struct AbandonOnDrop(Fate);

impl Drop for AbandonOnDrop {
    fn drop(&mut self) {
        self.0.abandon();
    }
}

/// Request bodies up to this size run on the light lane: one image with a few references costs
/// milliseconds (the most SPICE can cost in 4 KiB, two captions at the 512-token limit, is about 0.1 s), and must not wait behind
/// heavy requests that hold every thread of the main pool.
pub const LIGHT_BODY_BYTES: usize = 4096;

/// The bounded gate in front of the rayon pools.
pub struct Compute {
    pool: rayon::ThreadPool,
    /// One thread for light requests ([`LIGHT_BODY_BYTES`]), beside the main pool.
    light: rayon::ThreadPool,
    permits: Arc<Semaphore>,
    capacity: usize,
    timeout: Duration,
}

impl Compute {
    /// A pool of `threads` workers (0: one per core) admitting `max_in_flight` computations.
    pub fn new(threads: usize, max_in_flight: usize, timeout: Duration) -> std::io::Result<Self> {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("capscore-compute-{i}"))
            .build()
            .map_err(std::io::Error::other)?;
        let light = rayon::ThreadPoolBuilder::new()
            .num_threads(1)
            .thread_name(|_| "capscore-light".to_owned())
            .build()
            .map_err(std::io::Error::other)?;
        let capacity = max_in_flight.max(1);
        Ok(Compute {
            pool,
            light,
            permits: Arc::new(Semaphore::new(capacity)),
            capacity,
            timeout,
        })
    }

    /// Runs `f` on the pool, blocking the caller (start-up work only).
    pub fn install<T: Send>(&self, f: impl FnOnce() -> T + Send) -> T {
        self.pool.install(f)
    }

    /// Gives the system back the memory the allocator (mimalloc, the binary's) keeps of what
    /// the pool's threads and the calling thread freed, after work that frees much at once
    /// (a dataset build: at 500,000 images the server otherwise held about twice what the
    /// dataset does). Each worker collects once it is done with the jobs it has; nobody
    /// waits for them (a worker busy with another request's long job would hold the caller).
    pub fn return_freed_memory(&self) {
        crate::memory::queue_collect(&self.pool);
    }

    /// Computations in flight (running or waiting for a worker).
    pub fn in_flight(&self) -> usize {
        self.capacity - self.permits.available_permits()
    }

    /// Runs `f` on the pool. Errors: 503 `overloaded` when every permit is taken, 504
    /// `timeout` after the configured time (the work finishes in the background and keeps its
    /// permit until then, so the load stays bounded), 500 when `f` panics.
    pub async fn run<T, F>(&self, f: F) -> Result<T, ApiError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.run_with(Fate::default(), f).await
    }

    /// [`Compute::run`] with the computation's [`Fate`]: abandoned on timeout (504) or when
    /// the request is dropped, unless `f` committed first (then its result is awaited and
    /// answered, even past the timeout).
    pub async fn run_with<T, F>(&self, fate: Fate, f: F) -> Result<T, ApiError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        self.run_on(fate, false, f).await
    }

    /// [`Compute::run_with`] on the light lane when `light` (a request known to be small), so
    /// that it never queues behind heavy work.
    pub async fn run_on<T, F>(&self, fate: Fate, light: bool, f: F) -> Result<T, ApiError>
    where
        F: FnOnce() -> T + Send + 'static,
        T: Send + 'static,
    {
        let permit = self.permits.clone().try_acquire_owned().map_err(|_| {
            metrics::counter!("capscore_shed_total").increment(1);
            ApiError::overloaded()
        })?;
        telemetry::queue_depth(self.in_flight());
        let (tx, rx) = oneshot::channel();
        let span = tracing::Span::current();
        let permits = self.permits.clone();
        let capacity = self.capacity;
        let pool = if light { &self.light } else { &self.pool };
        pool.spawn(move || {
            let _enter = span.enter();
            let r = std::panic::catch_unwind(AssertUnwindSafe(f));
            drop(permit);
            telemetry::queue_depth(capacity - permits.available_permits());
            let _ = tx.send(r);
        });
        let _abandon = AbandonOnDrop(fate.clone());
        let mut rx = rx;
        let answer = match tokio::time::timeout(self.timeout, &mut rx).await {
            Err(_) if !fate.abandon() => Ok(rx.await),
            other => other,
        };
        match answer {
            Ok(Ok(Ok(v))) => Ok(v),
            Ok(Ok(Err(panic))) => {
                let msg = panic
                    .downcast_ref::<&str>()
                    .map(|s| (*s).to_owned())
                    .or_else(|| panic.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "non-string panic".into());
                metrics::counter!("capscore_panics_total").increment(1);
                Err(ApiError::internal(format!("panic in computation: {msg}")))
            }
            Ok(Err(_)) => Err(ApiError::internal("computation dropped its result")),
            Err(_) => Err(ApiError::new(
                ErrorCode::Timeout,
                format!(
                    "the computation took longer than {} s (--request-timeout); split the request",
                    self.timeout.as_secs_f64()
                ),
            )),
        }
    }
}

/// A fault-injection hook called with every score request's body before it is parsed
/// (tests only: slow or panicking computations).
#[cfg(feature = "test-support")]
pub type Hook = std::sync::Arc<dyn Fn(&[u8]) + Send + Sync>;

impl AsRef<Keys> for AppState {
    fn as_ref(&self) -> &Keys {
        &self.0.keys
    }
}
