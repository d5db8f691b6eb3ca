//! The cost model: what a score request will cost in CPU time and memory, estimated from its
//! size before any work starts, and the server's memory budget.
//!
//! A request is refused up front with 422 `cost_exceeded` when its estimate is over
//! `--max-request-cost` (estimated CPU seconds) or `--max-request-memory`, and shed with 503
//! `overloaded` when the memory the requests in flight have reserved leaves too little of
//! `--memory-budget` for it. The reservation is taken in two steps: the body's parse before
//! parsing (proportional to its bytes), the rest once the captions are known; it is released
//! when the computation ends.
//!
//! The estimate is linear in the captions' tokens, with three quadratic terms that the limits
//! bound: ROUGE-L's and METEOR's candidate x reference tables (per caption pair at most
//! `--max-caption-tokens` squared) and SPICE's dependency conversion (per caption at most
//! `--max-spice-caption-tokens` squared). Its constants are upper bounds of what
//! `scripts/attack` measures on the release build (docs/operations.md, limits).
//!
//! Must not: compute or parse anything beyond counting tokens.

use std::sync::Arc;

use tokio::sync::{OwnedSemaphorePermit, Semaphore};

use super::error::ApiError;
use crate::dataset::Dataset;
use crate::engine::Metric;
use crate::input::{Candidate, ErrorCode, InputError, References};

/// Heap bytes a JSON tree (`serde_json::Value`, key order preserved) takes at most per value
/// (its slot in a growing array or object, amortised growth included), per object member
/// (the key's `String`, the hash and index slot) and per container (its own allocation),
/// besides the bytes of its strings. Upper bounds measured with a counting allocator on the
/// shapes a hostile body can take (the test `the_parse_reservation_bounds_the_parse`).
const VALUE_BYTES: u64 = 200;
const MEMBER_BYTES: u64 = 96;
const CONTAINER_BYTES: u64 = 64;
/// The parser's own scratch and a small tree's fixed costs.
const PARSE_BASE_BYTES: u64 = 64 * 1024;

/// The memory to reserve before parsing `body` into a JSON tree: the body itself, its strings
/// copied out, and per value, member and container of the tree. One pass over the bytes
/// counting the structure outside strings (no allocation), so junk that parses into a tree
/// many times its size (`[0,0,0,...]`, `{"a":0,"b":0,...}`) is reserved for (or refused)
/// before it is parsed, not after.
pub fn parse_memory(body: &[u8]) -> u64 {
    let (mut values, mut members, mut containers) = (1u64, 0u64, 0u64);
    let (mut in_string, mut escaped) = (false, false);
    for &b in body {
        if in_string {
            if escaped {
                escaped = false;
            } else if b == b'\\' {
                escaped = true;
            } else if b == b'"' {
                in_string = false;
            }
            continue;
        }
        match b {
            b'"' => in_string = true,
            b',' => values += 1,
            b':' => members += 1,
            b'[' | b'{' => {
                containers += 1;
                values += 1;
            }
            _ => {}
        }
    }
    PARSE_BASE_BYTES
        + 2 * body.len() as u64
        + VALUE_BYTES * values
        + MEMBER_BYTES * members
        + CONTAINER_BYTES * containers
}

/// What a request's captions amount to.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Size {
    /// Captions (candidates and references).
    pub captions: u64,
    /// Tokens of all captions.
    pub tokens: u64,
    /// Sum over the captions SPICE parses of tokens squared.
    pub tokens_sq: u64,
    /// Tokens of the captions SPICE parses (a dataset's built graphs are not parsed again).
    pub spice_tokens: u64,
    /// Sum over (candidate, reference) pairs of the product of their tokens.
    pub cross: u64,
}

/// An estimate of a request's cost.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Estimate {
    /// CPU time in seconds (all threads).
    pub cpu_seconds: f64,
    /// Peak memory in bytes, the body's parse included.
    pub memory: u64,
}

/// About the tokens pycocoevalcap's tokenizer makes of `s` (runs of letters and digits, and
/// every other character that is not a space; more than the tokenizer's count except for a
/// few contractions such as `cannot`), cheap to count.
pub fn approx_tokens(s: &str) -> u64 {
    let mut n = 0u64;
    let mut in_word = false;
    for c in s.chars() {
        if c.is_alphanumeric() {
            if !in_word {
                n += 1;
            }
            in_word = true;
        } else {
            in_word = false;
            if !c.is_whitespace() {
                n += 1;
            }
        }
    }
    n
}

/// Where a job's references come from, as the cost model sees them.
#[derive(Clone, Copy)]
pub enum RefSize<'a> {
    /// Sent with the request: parsed, tokenized and (with SPICE) parsed again by this request.
    Inline(&'a References),
    /// A registered dataset: tokenized already; its recorded per-image profile gives the
    /// references' counts and tokens, and SPICE parses only the images whose graph is not
    /// built yet.
    Dataset(&'a Dataset),
}

impl Size {
    fn add_caption(&mut self, t: u64) {
        self.captions += 1;
        self.tokens += t;
        self.tokens_sq += t * t;
        self.spice_tokens += t;
    }

    /// The size of a job: candidates and their references. Dataset references count with
    /// their recorded tokens (their clone and n-gram statistics per request), and for SPICE
    /// only where the image's graph is not built yet (`spice`: SPICE is asked for).
    pub fn of<'a>(
        candidates: impl IntoIterator<Item = &'a Candidate>,
        refs: Option<RefSize<'_>>,
        spice: bool,
    ) -> Size {
        let mut s = Size::default();
        let mut graphs_counted = rustc_hash::FxHashSet::default();
        let inline_tokens: Option<Vec<u64>> = match refs {
            Some(RefSize::Inline(r)) => Some(
                r.images
                    .iter()
                    .map(|(_, caps)| {
                        caps.iter()
                            .map(|c| {
                                let t = approx_tokens(c);
                                s.add_caption(t);
                                t
                            })
                            .sum()
                    })
                    .collect(),
            ),
            _ => None,
        };
        for c in candidates {
            let t = approx_tokens(&c.caption);
            s.add_caption(t);
            match refs {
                Some(RefSize::Inline(r)) => {
                    if let (Some(i), Some(rt)) = (r.position(&c.image_id.key), &inline_tokens) {
                        s.cross += t * rt[i];
                    }
                }
                Some(RefSize::Dataset(d)) => {
                    if let Some((p, built)) = d.reference_profile(&c.image_id.key) {
                        s.captions += u64::from(p.captions);
                        s.tokens += p.tokens;
                        s.cross += t * p.tokens;
                        if spice && !built && graphs_counted.insert(&c.image_id.key) {
                            s.tokens_sq += p.tokens_sq;
                            s.spice_tokens += p.tokens;
                        }
                    }
                }
                None => {}
            }
        }
        s
    }
}

/// The estimate for `metrics` over a request whose parse takes `parse` bytes
/// ([`parse_memory`]) and whose captions are `size`.
pub fn estimate(metrics: &[Metric], parse: u64, size: &Size) -> Estimate {
    let (tok, caps, sq, cross) = (
        size.tokens as f64,
        size.captions as f64,
        size.tokens_sq as f64,
        size.cross as f64,
    );
    // Microseconds and bytes; parse and tokenization are paid whatever the metrics.
    let mut us = 0.3 * tok + 2.0 * caps;
    let mut mem = parse as f64 + 1000.0 * caps + 50.0 * tok;
    let has = |m: Metric| metrics.contains(&m);
    if metrics
        .iter()
        .any(|m| m.step() == crate::engine::Step::Ngram)
    {
        us += 0.5 * tok;
        mem += 50.0 * tok;
    }
    if has(Metric::RougeL) {
        us += 0.004 * cross;
    }
    if has(Metric::Meteor) {
        us += 2.0 * tok + 0.02 * cross;
        mem += 200.0 * tok + 4.0 * cross.min(1e8);
    }
    if has(Metric::Spice) {
        let parsed = size.spice_tokens as f64;
        us += 40.0 * parsed + 0.15 * sq + 0.02 * cross;
        mem += 16.0 * 1024.0 * 1024.0 + 600.0 * parsed;
    }
    Estimate {
        cpu_seconds: us / 1e6,
        memory: mem as u64,
    }
}

/// The server's memory budget: reservations in MiB against `--memory-budget`.
#[derive(Debug, Clone)]
pub struct Budget {
    mib: Arc<Semaphore>,
    total_mib: u32,
    /// The most one request may reserve (`--max-request-memory`), in bytes.
    pub max_request: u64,
    /// The most estimated CPU seconds one request may cost (`--max-request-cost`).
    pub max_cpu_seconds: f64,
    /// What the registered datasets hold of it.
    pub holds: Arc<Holds>,
    /// Frees cold caches of the registered datasets when the budget is full (set once by the
    /// server): given the bytes wanted, returns the bytes freed.
    pub evictor: Arc<std::sync::OnceLock<Evictor>>,
}

/// What [`Budget::beside_datasets`] found.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Room {
    /// The bytes fit beside the datasets' shares.
    Fits,
    /// They did not, and the evictor freed cold caches: try once more.
    Freed,
}

/// See [`Budget::evictor`].
pub struct Evictor(pub Box<dyn Fn(u64) -> u64 + Send + Sync>);

impl std::fmt::Debug for Evictor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("Evictor")
    }
}

thread_local! {
    /// Set while this thread evicts: the evictor's own reservations do not evict again.
    static EVICTING: std::cell::Cell<bool> = const { std::cell::Cell::new(false) };
}

/// The memory registered datasets hold against the budget, per dataset name: the content's
/// sha256, the reservation and its bytes. A dataset holds its share for as long as it is
/// registered; requests share what is left.
#[derive(Debug, Default)]
pub struct Holds(std::sync::Mutex<std::collections::BTreeMap<String, (String, Reservation, u64)>>);

impl Holds {
    /// Bytes held by every registered dataset.
    pub fn total(&self) -> u64 {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .values()
            .map(|(_, _, b)| b)
            .sum()
    }

    /// Records `r` (of `bytes`) as `name`'s share at version `sha`, returning what an earlier
    /// version held to the budget.
    pub fn set(&self, name: &str, sha: &str, mut r: Reservation, bytes: u64) {
        let mut m = self.0.lock().unwrap_or_else(|e| e.into_inner());
        if let Some((_, old, _)) = m.remove(name) {
            r.0.extend(old.0);
        }
        m.insert(name.to_owned(), (sha.to_owned(), r, bytes));
    }

    /// Returns `name`'s share to the budget (deleted).
    pub fn release(&self, name: &str) {
        self.0
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .remove(name);
    }
}

/// Memory reserved by a request, returned to the budget when dropped.
#[derive(Debug, Default)]
pub struct Reservation(Vec<OwnedSemaphorePermit>);

impl Reservation {
    /// MiB reserved.
    fn mib(&self) -> u32 {
        self.0.iter().map(|p| p.num_permits() as u32).sum()
    }
}

fn mib_of(bytes: u64) -> u32 {
    u32::try_from(bytes.div_ceil(1 << 20)).unwrap_or(u32::MAX)
}

impl Budget {
    /// A budget of `total` bytes; one request reserves at most `max_request` bytes and costs
    /// at most `max_cpu_seconds`.
    pub fn new(total: u64, max_request: u64, max_cpu_seconds: f64) -> Budget {
        let total_mib = mib_of(total).max(1);
        Budget {
            mib: Arc::new(Semaphore::new(total_mib as usize)),
            total_mib,
            max_request,
            max_cpu_seconds,
            holds: Arc::default(),
            evictor: Arc::default(),
        }
    }

    /// Whether `bytes` fit in the budget beside `held` bytes of dataset shares: they fit, or
    /// (with `evict`) the evictor freed cold caches and the caller tries once more, or 507
    /// `memory_budget_full`, its message `what()` followed by the figures.
    fn beside_datasets(
        &self,
        held: u64,
        bytes: u64,
        evict: bool,
        what: impl FnOnce() -> String,
    ) -> Result<Room, ApiError> {
        let total = u64::from(self.total_mib) << 20;
        if held + bytes <= total {
            return Ok(Room::Fits);
        }
        if evict && self.evict(held + bytes - total) {
            return Ok(Room::Freed);
        }
        Err(ApiError::new(
            ErrorCode::MemoryBudgetFull,
            format!(
                "{} {} MiB of the {} MiB budget (--memory-budget): delete a dataset or raise the budget",
                what(),
                held.div_ceil(1 << 20),
                self.total_mib
            ),
        ))
    }

    /// Asks the evictor to free `need` bytes of cold caches; true when it freed some.
    fn evict(&self, need: u64) -> bool {
        let Some(evict) = self.evictor.get() else {
            return false;
        };
        if EVICTING.with(|e| e.replace(true)) {
            return false;
        }
        let freed = (evict.0)(need);
        EVICTING.with(|e| e.set(false));
        freed > 0
    }

    /// MiB reserved now (telemetry, tests).
    pub fn reserved_mib(&self) -> u32 {
        self.total_mib - self.mib.available_permits() as u32
    }

    /// Raises `r` to `bytes` in all: 422 `cost_exceeded` over the per-request maximum, 503
    /// `overloaded` when the budget has not that much left now.
    pub fn reserve(&self, r: &mut Reservation, bytes: u64, what: &str) -> Result<(), ApiError> {
        if bytes > self.max_request {
            return Err(cost_exceeded(format!(
                "{what}: about {} MiB of memory; at most {} MiB per request (--max-request-memory): split the request",
                bytes.div_ceil(1 << 20),
                self.max_request >> 20
            )));
        }
        self.take(r, bytes)
    }

    /// [`Budget::reserve`] for an admin's dataset registration: bounded by the whole budget
    /// rather than `--max-request-memory` (a reference set as large as COCO train fits; a
    /// body whose parse could never fit is 422 `cost_exceeded` before it is parsed).
    pub fn reserve_admin(
        &self,
        r: &mut Reservation,
        bytes: u64,
        what: &str,
    ) -> Result<(), ApiError> {
        let total = u64::from(self.total_mib) << 20;
        if bytes > total {
            return Err(cost_exceeded(format!(
                "{what}: about {} MiB of memory; the whole budget is {} MiB (--memory-budget)",
                bytes.div_ceil(1 << 20),
                self.total_mib
            )));
        }
        self.take(r, bytes)
    }

    fn take(&self, r: &mut Reservation, bytes: u64) -> Result<(), ApiError> {
        self.take_or_evict(r, bytes, true)
    }

    /// [`Budget::take`]; with `evict`, a budget the datasets fill asks the evictor once.
    fn take_or_evict(&self, r: &mut Reservation, bytes: u64, evict: bool) -> Result<(), ApiError> {
        let have = r.mib();
        let want = mib_of(bytes).min(self.total_mib);
        if want <= have {
            return Ok(());
        }
        match self.mib.clone().try_acquire_many_owned(want - have) {
            Ok(p) => {
                r.0.push(p);
                Ok(())
            }
            Err(_) => {
                // Not a passing peak when the datasets leave too little for it.
                let held = self.holds.total();
                let room = self.beside_datasets(held, bytes, evict, || {
                    format!("this needs about {want} MiB; the registered datasets hold")
                })?;
                if room == Room::Freed {
                    // Cold caches made room: once more, without evicting again.
                    return self.take_or_evict(r, bytes, false);
                }
                metrics::counter!("capscore_shed_total").increment(1);
                Err(ApiError {
                    retry_after: Some(1),
                    ..ApiError::new(
                        ErrorCode::Overloaded,
                        format!(
                            "the requests in flight hold the memory budget (--memory-budget {} MiB); this one needs about {want} MiB: retry later",
                            self.total_mib
                        ),
                    )
                })
            }
        }
    }

    /// Holds `bytes` for dataset `name` at version `sha` for as long as it stays registered
    /// (replacing what an earlier version held; no per-request maximum): 507
    /// `memory_budget_full` when the budget less what the other datasets hold cannot take it,
    /// 503 `overloaded` when requests in flight hold the rest now.
    pub fn hold(&self, name: &str, sha: &str, bytes: u64) -> Result<(), ApiError> {
        if let Some(r) = self.prepare_hold(name, sha, bytes)? {
            self.holds.set(name, sha, r, bytes);
        }
        Ok(())
    }

    /// The reservation [`Budget::hold`] would take, without registering it (a registration
    /// takes it before it commits and hands it to [`Holds::set`] once committed); `None` when
    /// `name` holds enough for `sha` already.
    pub fn prepare_hold(
        &self,
        name: &str,
        sha: &str,
        bytes: u64,
    ) -> Result<Option<Reservation>, ApiError> {
        self.prepare_hold_or_evict(name, sha, bytes, true)
    }

    fn prepare_hold_or_evict(
        &self,
        name: &str,
        sha: &str,
        bytes: u64,
        evict: bool,
    ) -> Result<Option<Reservation>, ApiError> {
        let m = self.holds.0.lock().unwrap_or_else(|e| e.into_inner());
        if m.get(name).is_some_and(|e| e.0 == sha && e.2 >= bytes) {
            return Ok(None);
        }
        // A new version takes over the old one's share and adds what it needs beyond it (the
        // old version leaves memory as the new one is registered).
        let have = m.get(name).map_or(0, |e| e.1.mib());
        let others: u64 = m
            .iter()
            .filter(|(n, _)| n.as_str() != name)
            .map(|(_, (_, _, b))| b)
            .sum();
        drop(m);
        let room = self.beside_datasets(others, bytes, evict, || {
            format!(
                "dataset {name:?} takes about {} MiB in memory; the other registered datasets hold",
                bytes.div_ceil(1 << 20)
            )
        })?;
        if room == Room::Freed {
            return self.prepare_hold_or_evict(name, sha, bytes, false);
        }
        let mut r = Reservation::default();
        let more = mib_of(bytes).saturating_sub(have);
        self.take(&mut r, u64::from(more) << 20)?;
        Ok(Some(r))
    }

    /// Checks an estimate against the per-request limits and reserves its memory.
    pub fn admit(&self, r: &mut Reservation, e: &Estimate) -> Result<(), ApiError> {
        if e.cpu_seconds > self.max_cpu_seconds {
            return Err(cost_exceeded(format!(
                "the request would take about {:.1} CPU seconds; at most {} per request (--max-request-cost): split it, or register its references as a dataset",
                e.cpu_seconds, self.max_cpu_seconds
            )));
        }
        self.reserve(r, e.memory, "the request")
    }
}

/// Admits a parsed score job: SPICE's per-caption token limit (on inline references and on a
/// dataset's), then the estimate against the per-request limits and the budget (raising `r`).
/// `candidates`: every candidate of the job (a comparison gives both systems' lists). `runs` >
/// 1: the job scores its images that many times (several candidates per image, a comparison),
/// its references again in every run.
pub fn admit_job(
    (budget, max_spice_caption_tokens): (&Budget, usize),
    metrics: &[Metric],
    parse: u64,
    (candidates, runs): (&[&[Candidate]], u64),
    refs: RefSize<'_>,
    r: &mut Reservation,
) -> Result<Estimate, ApiError> {
    let spice = metrics.contains(&Metric::Spice);
    if spice {
        let max = max_spice_caption_tokens;
        let check = |c: &str, at: &dyn Fn() -> String| -> Result<(), ApiError> {
            if approx_tokens(c) as usize <= max {
                return Ok(());
            }
            let n = crate::engine::caption_tokens_at_most(c, max);
            if n > max {
                return Err(super::error::limit(format!(
                    "{}: caption of {n} tokens; at most {max} per caption with spice (--max-spice-caption-tokens)",
                    at()
                )));
            }
            Ok(())
        };
        for c in candidates.iter().copied().flatten() {
            check(&c.caption, &|| {
                format!("candidate of image_id {}", c.image_id)
            })?;
        }
        match refs {
            RefSize::Inline(refs) => {
                for (id, caps) in &refs.images {
                    for (j, c) in caps.iter().enumerate() {
                        check(c, &|| format!("reference {j} of image_id {id}"))?;
                    }
                }
            }
            RefSize::Dataset(d) => {
                for c in candidates.iter().copied().flatten() {
                    let Some((p, _)) = d.reference_profile(&c.image_id.key) else {
                        continue;
                    };
                    if p.max_tokens as usize > max {
                        return Err(super::error::limit(format!(
                            "dataset {:?}, image_id {}: a reference of {} tokens; at most {max} per caption with spice (--max-spice-caption-tokens): score this image without spice",
                            d.name, c.image_id, p.max_tokens
                        )));
                    }
                }
            }
        }
    }
    let mut size = Size::of(candidates.iter().copied().flatten(), Some(refs), spice);
    if let (true, RefSize::Inline(_)) = (runs > 1, refs) {
        // Inline references again in every further run (a dataset's are counted per candidate
        // already, its SPICE graphs once per image).
        let again = Size::of([], Some(refs), spice);
        size.captions += (runs - 1) * again.captions;
        size.tokens += (runs - 1) * again.tokens;
        size.tokens_sq += (runs - 1) * again.tokens_sq;
        size.spice_tokens += (runs - 1) * again.spice_tokens;
    }
    let e = estimate(metrics, parse, &size);
    budget.admit(r, &e)?;
    Ok(e)
}

fn cost_exceeded(msg: String) -> ApiError {
    InputError::new(ErrorCode::CostExceeded, msg).into()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn dataset_and_candidates() -> (crate::dataset::Dataset, References, Vec<Candidate>) {
        let long = vec!["w"; 600].join(" ");
        let refs = crate::input::parse_references(&serde_json::json!({
            "1": ["a dog runs on the grass", "a brown dog"],
            "2": [long, "a cat"],
        }))
        .unwrap();
        let ds = crate::dataset::Dataset::build("d", refs.clone(), 0).unwrap();
        let cands =
            crate::input::parse_candidates(&serde_json::json!({"1": "a dog", "2": "a cat sits"}))
                .unwrap();
        (ds, refs, cands)
    }

    /// Issue 29: a dataset-backed request is sized from the dataset's recorded references
    /// (not a default of 5 per candidate), like the same request with its references inline;
    /// SPICE counts an image's references once even when several runs score it.
    #[test]
    fn dataset_requests_are_sized_from_their_references() {
        let (ds, refs, cands) = dataset_and_candidates();
        let inline = Size::of(&cands, Some(RefSize::Inline(&refs)), true);
        let from_ds = Size::of(&cands, Some(RefSize::Dataset(&ds)), true);
        assert_eq!(from_ds.captions, inline.captions);
        // The dataset's counts are the tokenizer's exact ones; the inline ones are the cheap
        // upper bound.
        assert!(
            from_ds.tokens >= 600 && from_ds.tokens <= inline.tokens,
            "{from_ds:?} {inline:?}"
        );
        assert!(from_ds.cross >= 600 * 2, "{from_ds:?}");
        assert_eq!(from_ds.spice_tokens, from_ds.tokens);
        // Two systems over the same images: the references twice, their SPICE parse once.
        let both: Vec<&Candidate> = cands.iter().chain(&cands).collect();
        let twice = Size::of(both, Some(RefSize::Dataset(&ds)), true);
        assert_eq!(twice.captions, 2 * from_ds.captions);
        let cand_tokens: u64 = cands.iter().map(|c| approx_tokens(&c.caption)).sum();
        assert_eq!(twice.spice_tokens, from_ds.spice_tokens + cand_tokens);
        // Without SPICE nothing is counted for its parse of the references.
        let plain = Size::of(&cands, Some(RefSize::Dataset(&ds)), false);
        assert_eq!(plain.spice_tokens, cand_tokens);
    }

    /// Issue 29: `--max-spice-caption-tokens` applies to a dataset's references: a SPICE
    /// request on an image with a longer reference is refused naming the dataset, the image
    /// and the cap; other images and other metrics are not.
    #[test]
    fn the_spice_token_cap_applies_to_dataset_references() {
        let (ds, _, cands) = dataset_and_candidates();
        let b = Budget::new(1 << 30, 1 << 30, 100.0);
        let admit = |metrics: &[Metric], cands: &[Candidate]| {
            admit_job(
                (&b, 512),
                metrics,
                0,
                (&[cands], 1),
                RefSize::Dataset(&ds),
                &mut Reservation::default(),
            )
        };
        let e = admit(&[Metric::Spice], &cands).unwrap_err();
        assert_eq!(e.code, ErrorCode::LimitExceeded);
        assert!(
            e.detail.contains("dataset \"d\"")
                && e.detail.contains("image_id \"2\"")
                && e.detail.contains("--max-spice-caption-tokens"),
            "{}",
            e.detail
        );
        assert!(admit(&[Metric::Spice], &cands[..1]).is_ok());
        assert!(admit(&[Metric::CiderD, Metric::RougeL], &cands).is_ok());
    }

    /// Issue 29: a full budget asks the evictor for the missing bytes once and retries; without
    /// an evictor, or when it frees nothing, it is 507 `memory_budget_full`; the evictor's own
    /// reservations do not evict again.
    #[test]
    fn a_full_budget_evicts_cold_caches_first() {
        let b = Budget::new(10 << 20, 10 << 20, 1.0);
        let mut held = Reservation::default();
        b.reserve(&mut held, 6 << 20, "x").unwrap();
        b.holds.set("a", "sha", held, 6 << 20);
        let e = b
            .reserve(&mut Reservation::default(), 6 << 20, "x")
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::MemoryBudgetFull);
        let calls = Arc::new(std::sync::atomic::AtomicU32::new(0));
        let (c, holds, budget) = (calls.clone(), b.holds.clone(), b.clone());
        b.evictor
            .set(Evictor(Box::new(move |need| {
                c.fetch_add(1, std::sync::atomic::Ordering::SeqCst);
                assert!(need >= 2 << 20, "{need}");
                // A reservation made while evicting does not evict again (it fails instead).
                let inner = budget.reserve(&mut Reservation::default(), 9 << 20, "y");
                assert!(inner.is_err());
                if holds.total() == 0 {
                    return 0;
                }
                holds.release("a");
                6 << 20
            })))
            .unwrap();
        let mut r = Reservation::default();
        b.reserve(&mut r, 6 << 20, "x").unwrap();
        assert_eq!(
            (
                calls.load(std::sync::atomic::Ordering::SeqCst),
                b.holds.total()
            ),
            (1, 0)
        );
        // A request in flight holds the rest: a passing peak, 503, nothing evicted.
        let e = b
            .reserve(&mut Reservation::default(), 6 << 20, "x")
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Overloaded, "{}", e.detail);
        drop(r);
        // An evictor that frees less than needed (here: claims to and frees nothing) is asked
        // once, then 507.
        let mut hb = Reservation::default();
        b.reserve(&mut hb, 8 << 20, "x").unwrap();
        b.holds.set("b", "sha", hb, 8 << 20);
        let e = b
            .reserve(&mut Reservation::default(), 6 << 20, "x")
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::MemoryBudgetFull);
        assert_eq!(calls.load(std::sync::atomic::Ordering::SeqCst), 2);
    }

    #[test]
    fn approx_tokens_bounds_the_tokenizer() {
        for s in [
            "A man riding a bike.",
            "a & b & c",
            "don't stop-believing,,x-ray",
            "",
            "   ",
            "日本語 テキスト",
        ] {
            let exact = crate::engine::caption_tokens_at_most(s, 0) as u64;
            assert!(
                approx_tokens(s) >= exact,
                "{s:?}: {} < {exact}",
                approx_tokens(s)
            );
        }
    }

    #[test]
    fn the_budget_sheds_and_returns_memory() {
        let b = Budget::new(10 << 20, 6 << 20, 1.0);
        let mut r1 = Reservation::default();
        b.reserve(&mut r1, 3 << 20, "x").unwrap();
        b.reserve(&mut r1, 6 << 20, "x").unwrap();
        assert_eq!(b.reserved_mib(), 6);
        let e = b
            .reserve(&mut Reservation::default(), 7 << 20, "x")
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::CostExceeded);
        let e = b
            .reserve(&mut Reservation::default(), 5 << 20, "x")
            .unwrap_err();
        assert_eq!(e.code, ErrorCode::Overloaded);
        drop(r1);
        assert_eq!(b.reserved_mib(), 0);
        let big = Estimate {
            cpu_seconds: 2.0,
            memory: 1,
        };
        let e = b.admit(&mut Reservation::default(), &big).unwrap_err();
        assert_eq!(e.code, ErrorCode::CostExceeded);
    }
}
