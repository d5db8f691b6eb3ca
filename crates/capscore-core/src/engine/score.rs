//! [`score`]: one plain run. The batch is joined with its references through a
//! [`ReferenceSource`], every caption is tokenized once, and the requested metrics run as steps
//! in [`Step`] order (`ngram.rs`, `meteor.rs`, `spice.rs`, then SPIDEr), each adding its keys,
//! signature part and warnings; [`finish`] assembles the [`Report`].

use std::collections::BTreeMap;

use serde_json::Value;

use super::bootstrap::intervals;
use super::metric::Metric;
use super::options::{cancelled, DfChoice, Options, Tokenizer};
use super::report::{PoolStats, Report, RunStats, Scores, TokenizedItem, Warning, WarningCode};
use super::source::{PrepareRequest, PreparedRefs, ReferenceSource};
use super::step::{Ctx, DfUse, Out, Step, Tokenized};
use super::{meteor, ngram, spice};
use crate::input::{Batch, Candidate, ErrorCode, InputError};
use crate::text::{ptb, Texts};

/// Tokenizes captions as one stream, as pycocoevalcap does (or takes them as given); `None`
/// once `stop()` is true.
fn tokenize_candidates(
    batch: &Batch,
    tokenizer: Tokenizer,
    stop: &(dyn Fn() -> bool + Sync),
) -> Option<Texts> {
    let _span = tracing::debug_span!("tokenize").entered();
    let cands: Vec<&str> = batch.items.iter().map(|i| i.candidate.as_str()).collect();
    match tokenizer {
        Tokenizer::Ptb => ptb::tokenize_stream_texts_until(&cands, stop),
        Tokenizer::Pretokenized => Some(cands.into_iter().collect()),
    }
}

/// The number of tokens the default tokenizer makes of `caption` on its own (in a stream the
/// last token can depend on the next caption: the count may differ by one). Cheap for short
/// captions: a caption of at most `bound` bytes has at most `bound` tokens and is not
/// tokenized (the count returned is then its byte length). Servers bound per-caption work with
/// it before scoring.
pub fn caption_tokens_at_most(caption: &str, bound: usize) -> usize {
    if caption.len() <= bound {
        return caption.len();
    }
    ptb::tokenize_stream(&[caption])
        .first()
        .map_or(0, |t| t.split_whitespace().count())
}

/// Scores `candidates` against the references of `refs`: THE entry point of the library (the
/// CLI, the server and the Python package all call it).
pub fn score(
    candidates: Vec<Candidate>,
    refs: &dyn ReferenceSource,
    opts: &Options<'_>,
) -> Result<Report, InputError> {
    let mut batch = refs.assemble(candidates)?;
    // Each stage's freed memory goes back before the next allocates (issue 27: the
    // stages' peaks added up): here the candidates' list (and, when the batch took the
    // references over, their index).
    opts.release_memory();
    let partial = coverage(&batch, opts.require_complete)?;
    let req = PrepareRequest {
        tokenize: opts.tokenizer == Tokenizer::Ptb,
        spice: opts.spice.filter(|_| opts.metrics.contains(&Metric::Spice)),
        cancel: opts.stop(),
    };
    let (prepared, cand_tok) = rayon::join(
        || {
            let _span = tracing::debug_span!("prepare_references").entered();
            refs.prepare(&batch, &req)
        },
        || tokenize_candidates(&batch, opts.tokenizer, opts.stop()),
    );
    let mut prepared = prepared?;
    let cand_tok = cand_tok.ok_or_else(super::cancelled)?;
    let mut tok = Tokenized {
        candidates: cand_tok,
        references: std::mem::take(&mut prepared.tokenized),
    };
    // Every step works on the tokenized text from here on: the raw captions' memory goes back
    // before the statistics are built (issue 27: about a tenth of the peak at 500,000 images).
    for item in &mut batch.items {
        item.candidate = String::new();
        item.references = Vec::new();
    }
    opts.release_memory();
    let df_label = format!("batch(N={})", batch.items.len());
    let df = match opts.df {
        DfChoice::Batch => match prepared.batch_table {
            // The source's table IS the batch's (same references, same tokenization): it
            // serves under the batch label (the signature stays the inline one).
            Some(t) => DfUse::Table(t, &df_label),
            None => DfUse::Batch,
        },
        DfChoice::Source => {
            let t = refs.df_table().ok_or_else(|| {
                InputError::new(
                    ErrorCode::InvalidFormat,
                    "cider_df \"dataset\" needs a \"dataset\"",
                )
            })?;
            DfUse::Table(t, t.label)
        }
        DfChoice::Table(t) => {
            // References interned by the source use the source's ids: only the source's own
            // table shares them; any other table needs the words interned with its interner.
            let same_ids = refs
                .df_table()
                .is_some_and(|own| std::ptr::eq(own.interner, t.interner));
            if !same_ids {
                prepared.interned = None;
            }
            DfUse::Table(t, t.label)
        }
    };
    // The context of a step, over the text as it is then.
    macro_rules! ctx {
        () => {
            Ctx {
                batch: &batch,
                tok: &tok,
                refs: &prepared,
                opts,
                df,
            }
        };
    }
    let n = batch.items.len();
    let mut out = Out {
        aggregate: Scores::default(),
        images: n,
        per_image: Vec::new(),
        bleu_totals: None,
        spice: None,
        signature: BTreeMap::new(),
        warnings: partial.into_iter().collect(),
        late_warnings: Vec::new(),
        bleu_stats: None,
        meteor_stats: None,
    };
    let mut steps: Vec<Step> = opts.metrics.iter().map(|m| m.step()).collect();
    steps.sort_unstable();
    steps.dedup();
    // What the report says of empty captions, before the text may be freed.
    let empty = Empty::of(&tok);
    // The text is freed once the n-gram step has interned its words, unless a later step
    // (SPICE) or the report (the tokenized captions) reads it (issue 27: a quarter of the
    // peak at 500,000 images).
    let text_after_ngram = opts.include_tokenized || steps.contains(&Step::Spice);
    for step in steps {
        if opts.cancelled() {
            return Err(cancelled());
        }
        match step {
            Step::Meteor => meteor::run(&ctx!(), &mut out)?,
            Step::Ngram => {
                if let Some(words) = ngram::words(&ctx!())? {
                    if !text_after_ngram {
                        tok = Tokenized::default();
                        opts.release_memory();
                    }
                    ngram::run(&ctx!(), words, &mut out)?;
                }
            }
            Step::Spice => spice::run(&ctx!(), &mut out)?,
            Step::Spider => spider(&mut out),
        }
    }
    if opts.cancelled() {
        return Err(cancelled());
    }
    finish(&batch, &tok, empty, &prepared, opts, out)
}

/// The images whose candidate, or one of whose references, is empty after tokenization.
struct Empty {
    candidate: Vec<usize>,
    reference: Vec<usize>,
}

impl Empty {
    fn of(tok: &Tokenized) -> Empty {
        let which =
            |f: &dyn Fn(usize) -> bool| (0..tok.candidates.len()).filter(|&i| f(i)).collect();
        Empty {
            candidate: which(&|i| tok.candidates.get(i).is_empty()),
            reference: which(&|i| tok.references.image(i).any(str::is_empty)),
        }
    }
}

/// SPIDEr (aac-metrics): the mean of CIDEr-D and SPICE, per image and for the corpus (both
/// corpus scores are means over the images, so the corpus SPIDEr is the mean of the per-image
/// values up to rounding).
fn spider(out: &mut Out) {
    let mean = |s: &Scores| match (s.cider, s.spice) {
        (Some(c), Some(p)) => Some((c + p) / 2.0),
        _ => None,
    };
    out.aggregate.spider = mean(&out.aggregate);
    for row in out.rows() {
        row.spider = mean(row);
    }
    out.signature(Metric::Spider, "spider:(cider_d+spice)/2".into());
}

/// Strict mode's check: an error when images of the source have no candidate; otherwise the
/// `partial_results` warning, if any is missing.
fn coverage(batch: &Batch, strict: bool) -> Result<Option<Warning>, InputError> {
    let m = &batch.missing;
    if m.count == 0 {
        return Ok(None);
    }
    let first: Vec<String> = m.first.iter().map(ToString::to_string).collect();
    let more = if m.count > first.len() { ", ..." } else { "" };
    let counts = format!(
        "{} of the {} images of the references have no result ({} scored); first missing: {}{more}",
        m.count,
        m.of,
        batch.items.len(),
        first.join(", ")
    );
    if strict {
        return Err(InputError::new(
            ErrorCode::IncompleteResults,
            format!("incomplete submission: {counts}"),
        ));
    }
    Ok(Some(Warning {
        code: WarningCode::PartialResults,
        message: format!("partial submission: {counts}"),
        image_ids: m.first.iter().map(|i| i.raw.clone()).collect(),
    }))
}

/// The report: input warnings, per-image rows in output order, the signature.
fn finish(
    batch: &Batch,
    tok: &Tokenized,
    empty: Empty,
    prepared: &PreparedRefs<'_>,
    opts: &Options<'_>,
    mut out: Out,
) -> Result<Report, InputError> {
    let _span = tracing::debug_span!("report").entered();
    let n = batch.items.len();
    out.rows().for_each(drop);
    // The per-image statistics, only when the bootstrap or the caller reads them (a copy of
    // every row: 80 MB at 500,000 images).
    let pool = (opts.bootstrap.is_some() || opts.keep_pool).then(|| PoolStats {
        bleu: out.bleu_stats,
        meteor: out.meteor_stats,
        per_image: out.per_image.iter().map(|r| r.scores).collect(),
        keys: out.aggregate.entries().map(|(k, _)| k).collect(),
        ids: batch.items.iter().map(|i| i.image_id.key.clone()).collect(),
    });
    let bootstrap = match (opts.bootstrap, &pool) {
        (Some(spec), Some(pool)) => {
            Some(intervals(&spec, pool, opts.stop()).ok_or_else(cancelled)?)
        }
        _ => None,
    };
    let mut warnings = out.warnings;
    let ids = |images: Vec<usize>| -> Vec<Value> {
        images
            .into_iter()
            .map(|i| batch.items[i].image_id.raw.clone())
            .collect()
    };
    for (images, code) in [
        (empty.candidate, WarningCode::EmptyCandidate),
        (empty.reference, WarningCode::EmptyReference),
    ] {
        if !images.is_empty() {
            warnings.push(Warning::new(code, ids(images)));
        }
    }
    warnings.extend(out.late_warnings);
    let tokenizer = match opts.tokenizer {
        Tokenizer::Ptb => "tok:ptb-corenlp3.4.1-pycocoevalcap1.2",
        Tokenizer::Pretokenized => "tok:none(pre-tokenized)",
    };
    let mut sig = vec![
        format!("capscore:{}", env!("CARGO_PKG_VERSION")),
        tokenizer.to_owned(),
    ];
    sig.extend(out.signature.into_values());
    // The rows the steps wrote become the report's, in place (a second set of rows was 104 MB
    // at 500,000 images, on fresh pages: the peak of the run; issue 27).
    let mut per_image = out.per_image;
    for (row, item) in per_image.iter_mut().zip(&batch.items) {
        row.image_id = item.image_id.raw.clone();
    }
    let per_image = reorder(per_image, &batch.output_order);
    let tokenized = opts.include_tokenized.then(|| {
        batch
            .items
            .iter()
            .enumerate()
            .map(|(i, item)| TokenizedItem {
                image_id: item.image_id.raw.clone(),
                candidate: tok.candidates.get(i).to_owned(),
                references: tok.references.image(i).map(str::to_owned).collect(),
            })
            .collect()
    });
    Ok(Report {
        aggregate: out.aggregate,
        per_image,
        bleu_totals: out.bleu_totals,
        spice: out.spice,
        signature: sig.join("|"),
        warnings,
        bootstrap,
        splits: None,
        multi_candidate: None,
        tokenized,
        pool: pool.filter(|_| opts.keep_pool),
        stats: RunStats {
            spice_cached_graphs: prepared.spice.as_ref().map_or(0, |c| c.cached),
            images: n,
        },
    })
}

/// `rows` reordered so that row `k` is the old row `order[k]`: in place, cycle by cycle, when
/// `order` is a permutation of the rows (always, for a batch's output order), else copied.
fn reorder<T: Clone>(mut rows: Vec<T>, order: &[usize]) -> Vec<T> {
    let n = rows.len();
    let mut open = vec![false; n];
    let permutation = order.len() == n
        && order
            .iter()
            .all(|&i| i < n && !std::mem::replace(&mut open[i], true));
    if !permutation {
        return order.iter().map(|&i| rows[i].clone()).collect();
    }
    // Every position is open; following a cycle from `start` swaps each row into place.
    for start in 0..n {
        let mut k = start;
        while open[k] {
            open[k] = false;
            let j = order[k];
            if j == start {
                break;
            }
            rows.swap(k, j);
            k = j;
        }
    }
    rows
}

#[cfg(test)]
mod tests {
    use super::reorder;

    #[test]
    fn reorder_puts_row_k_at_order_k() {
        // (rows, order): permutations of every shape (identity, one cycle, fixed points and
        // swaps, random) and orders that are no permutation (copied), against the plain copy.
        let mut state = 0x2545_F491_4F6C_DD1Du64;
        let mut next = move |m: usize| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            (state % m as u64) as usize
        };
        let mut cases: Vec<(usize, Vec<usize>)> = vec![
            (0, vec![]),
            (1, vec![0]),
            (9, (0..9).collect()),
            (9, (1..9).chain([0]).collect()),
            (6, vec![1, 0, 2, 4, 3, 5]),
            (3, vec![0, 0, 1]),
            (3, vec![2, 1]),
        ];
        for n in 1..40 {
            let mut p: Vec<usize> = (0..n).collect();
            for i in (1..n).rev() {
                p.swap(i, next(i + 1));
            }
            cases.push((n, p));
        }
        for (n, order) in cases {
            let rows: Vec<String> = (0..n).map(|i| format!("r{i}")).collect();
            let want: Vec<String> = order.iter().map(|&i| rows[i].clone()).collect();
            assert_eq!(reorder(rows, &order), want, "{order:?}");
        }
    }
}
