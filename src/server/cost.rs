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
use crate::engine::Metric;
use crate::input::{Candidate, ErrorCode, InputError, References};

/// Memory reserved per byte of request body while it is parsed (the body itself, the JSON
/// tree and the captions' strings).
pub const PARSE_BYTES_PER_BODY_BYTE: u64 = 4;

/// What a request's captions amount to.
#[derive(Debug, Clone, Copy, Default, PartialEq)]
pub struct Size {
    /// Captions (candidates and references).
    pub captions: u64,
    /// Tokens of all captions.
    pub tokens: u64,
    /// Sum over captions of tokens squared.
    pub tokens_sq: u64,
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

impl Size {
    fn add_caption(&mut self, t: u64) {
        self.captions += 1;
        self.tokens += t;
        self.tokens_sq += t * t;
    }

    /// The size of a job: candidates, and either their inline references or (taken from a
    /// dataset, tokenized and parsed already) `dataset_refs` references per candidate assumed
    /// as long as the candidate.
    pub fn of<'a>(
        candidates: impl IntoIterator<Item = &'a Candidate>,
        inline: Option<&References>,
        dataset_refs: u64,
    ) -> Size {
        let mut s = Size::default();
        let ref_tokens: Option<Vec<u64>> = inline.map(|r| {
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
                .collect()
        });
        for c in candidates {
            let t = approx_tokens(&c.caption);
            s.add_caption(t);
            match (&ref_tokens, inline) {
                (Some(rt), Some(r)) => {
                    if let Some(i) = r.position(&c.image_id.key) {
                        s.cross += t * rt[i];
                    }
                }
                _ => s.cross += dataset_refs * t * t,
            }
        }
        s
    }
}

/// The estimate for `metrics` over a request of `body` bytes whose captions are `size`.
pub fn estimate(metrics: &[Metric], body: u64, size: &Size) -> Estimate {
    let (tok, caps, sq, cross) = (
        size.tokens as f64,
        size.captions as f64,
        size.tokens_sq as f64,
        size.cross as f64,
    );
    // Microseconds and bytes; parse and tokenization are paid whatever the metrics.
    let mut us = 0.3 * tok + 2.0 * caps;
    let mut mem = PARSE_BYTES_PER_BODY_BYTE as f64 * body as f64 + 1000.0 * caps + 50.0 * tok;
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
        us += 40.0 * tok + 0.15 * sq + 0.02 * cross;
        mem += 16.0 * 1024.0 * 1024.0 + 600.0 * tok;
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
}

/// Memory reserved by a request, returned to the budget when dropped.
#[derive(Debug, Default)]
pub struct Reservation(Vec<OwnedSemaphorePermit>);

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
        }
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
        let have: u32 = r.0.iter().map(|p| p.num_permits() as u32).sum();
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

/// Admits a parsed score job: SPICE's per-caption token limit, then the estimate against the
/// per-request limits and the budget (raising `r`). `candidates`: every candidate of the job
/// (a comparison gives both systems' lists). `runs` > 1: the job scores its images that many
/// times (several candidates per image, a comparison), its inline references again in every
/// run.
pub fn admit_job(
    (budget, max_spice_caption_tokens): (&Budget, usize),
    metrics: &[Metric],
    body: usize,
    (candidates, runs): (&[&[Candidate]], u64),
    inline: Option<&References>,
    r: &mut Reservation,
) -> Result<Estimate, ApiError> {
    if metrics.contains(&Metric::Spice) {
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
        if let Some(refs) = inline {
            for (id, caps) in &refs.images {
                for (j, c) in caps.iter().enumerate() {
                    check(c, &|| format!("reference {j} of image_id {id}"))?;
                }
            }
        }
    }
    let mut size = Size::of(candidates.iter().copied().flatten(), inline, 5);
    if runs > 1 {
        let refs = Size::of([], inline, 0);
        size.captions += (runs - 1) * refs.captions;
        size.tokens += (runs - 1) * refs.tokens;
        size.tokens_sq += (runs - 1) * refs.tokens_sq;
    }
    let e = estimate(metrics, body as u64, &size);
    budget.admit(r, &e)?;
    Ok(e)
}

fn cost_exceeded(msg: String) -> ApiError {
    InputError::new(ErrorCode::CostExceeded, msg).into()
}

#[cfg(test)]
mod tests {
    use super::*;

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
