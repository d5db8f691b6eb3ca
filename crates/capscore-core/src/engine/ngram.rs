//! The n-gram step: BLEU, ROUGE-L, CIDEr-D and the original CIDEr. They share one pass over
//! interned words (n-gram counts and reference matches serve BLEU's clipping and both CIDEr
//! variants), so they are one step: per image in parallel over chunks of images, pooled in
//! evaluation order afterwards.
//!
//! Must not: read files or know where the references came from (the context says).

use super::metric::Metric;
use super::options::{cancelled, Stage, Tally};
use super::report::{Warning, WarningCode};
use super::step::{Ctx, DfUse, Out};
use crate::input::{ErrorCode, InputError};
use crate::metrics::bleu::{self, BleuStats};
use crate::metrics::cider::{self, Variant};
use crate::metrics::{numpy_mean, rouge};
use crate::stats::{Caption, IdfSource, Interner, Words};

/// Per-image results of the n-gram and ROUGE-L metrics.
#[derive(Default)]
struct ImageStats {
    bleu: BleuStats,
    rouge: f64,
    cider: [f64; 2],
}

/// Reusable storage of one worker.
#[derive(Default)]
struct Scratch {
    max_ref: Vec<u32>,
    cider: cider::ImageScratch,
    rouge: rouge::Scratch,
}

/// The metrics of the step the context asks for.
struct Wants {
    bleu: bool,
    rouge: bool,
    variants: Vec<(Metric, Variant)>,
}

impl Wants {
    fn of(ctx: &Ctx<'_>) -> Wants {
        Wants {
            bleu: ctx.wants(Metric::Bleu),
            rouge: ctx.wants(Metric::RougeL),
            variants: [
                (Metric::CiderD, Variant::CiderD),
                (Metric::CiderOriginal, Variant::Original),
            ]
            .into_iter()
            .filter(|(m, _)| ctx.wants(*m))
            .collect(),
        }
    }

    /// BLEU or a CIDEr variant: the n-grams are needed.
    fn ngrams(&self) -> bool {
        self.bleu || !self.variants.is_empty()
    }
}

/// The step's first half, the only one that reads the tokenized text: the words of every
/// caption, interned (split on Unicode whitespace, spec §3.4, for BLEU, CIDEr and ROUGE-L).
/// The caller may free the text once it has them. `None` when the context asks for none of
/// the step's metrics.
pub(super) fn words(ctx: &Ctx<'_>) -> Result<Option<Words>, InputError> {
    let wants = Wants::of(ctx);
    if !wants.ngrams() && !wants.rouge {
        return Ok(None);
    }
    let (tok, n) = (ctx.tok, ctx.batch.items.len());
    let _span = tracing::debug_span!("words").entered();
    let fresh = Interner::new();
    let interner = match (&ctx.refs.interned, ctx.df) {
        (Some(p), _) => &p.interner,
        (None, DfUse::Table(t, _)) => t.interner,
        (None, DfUse::Batch) => &fresh,
    };
    let total = n + tok.references.all().len();
    let mut captions = Vec::with_capacity(total);
    let mut img_start = Vec::with_capacity(n + 1);
    for i in 0..n {
        img_start.push(captions.len());
        captions.push(Caption {
            text: tok.candidates.get(i),
            ids: None,
        });
        let ids = ctx.refs.interned.as_ref().and_then(|p| p.ids.get(i));
        for (j, r) in tok.references.image(i).enumerate() {
            captions.push(Caption {
                text: r,
                ids: ids.and_then(|v| v.get(j)).map(|w| &**w),
            });
        }
    }
    img_start.push(captions.len());
    Words::intern_until(
        interner,
        &captions,
        &img_start,
        wants.rouge,
        ctx.opts.stop(),
    )
    .map(Some)
    .ok_or_else(cancelled)
}

/// Runs BLEU, ROUGE-L and the CIDEr variants the context asks for, on the batch's `words`
/// (from [`words`]).
pub(super) fn run(ctx: &Ctx<'_>, words: Words, out: &mut Out) -> Result<(), InputError> {
    let batch = ctx.batch;
    let n = batch.items.len();
    let Wants {
        bleu: want_bleu,
        rouge: want_rouge,
        variants,
    } = Wants::of(ctx);
    let ngram_metrics = want_bleu || !variants.is_empty();
    // CIDEr's document frequencies: the batch's references, or a table.
    let (idf_source, df_label, df_docs) = match ctx.df {
        DfUse::Batch => (IdfSource::Batch, format!("batch(N={n})"), n),
        DfUse::Table(t, label) => (
            IdfSource::Table(t.table),
            label.to_owned(),
            t.table.doc_count(),
        ),
    };
    let words = {
        let _span = tracing::debug_span!("ngrams").entered();
        let grams = ngram_metrics.then_some(idf_source);
        words
            .build_until(grams, ctx.opts.stop())
            .ok_or_else(cancelled)?
    };

    // The build's tables of distinct n-grams are gone: their pages go back before the
    // per-image statistics are made.
    ctx.opts.release_memory();
    if ctx.opts.cancelled() {
        return Err(cancelled());
    }
    if !variants.is_empty() {
        let empty = match ctx.df {
            DfUse::Batch => !words.any_reference_word(),
            DfUse::Table(t, _) => t.table.is_empty(),
        };
        if empty {
            return Err(InputError::new(
                ErrorCode::NoReferenceNgrams,
                "every reference caption of the evaluated images is empty after tokenization: CIDEr has no document frequencies",
            ));
        }
    }

    // Image by image (in parallel over chunks of images); CIDEr vectors are built and used per
    // image, never all held at once.
    let _span = tracing::debug_span!("score").entered();
    let variants_ref = variants.as_slice();
    let stop = || ctx.opts.cancelled();
    let tally = Tally::start(ctx.opts, Stage::Ngrams, n);
    let stats = words.map_images(&stop, |s: &mut Scratch, image| {
        let mut out = ImageStats::default();
        if let Some((grams, matches)) = image.grams {
            let (cand, refs) = grams.split_first().expect("a candidate");
            if want_bleu {
                out.bleu = BleuStats::of_image_matched(cand, refs, matches, &mut s.max_ref);
            }
            if !variants_ref.is_empty() {
                s.cider.fill(grams);
                for (k, &(_, variant)) in variants_ref.iter().enumerate() {
                    out.cider[k] = s.cider.score(variant, matches);
                }
            }
        }
        if want_rouge {
            let mut it = words.rouge_words(image.chunk, image.index);
            let cand = it.next().expect("a candidate");
            let refs: Vec<&[u32]> = it.collect();
            out.rouge = rouge::score_ids(cand, &refs, &mut s.rouge);
        }
        tally.add(1);
        out
    });
    // The words and n-grams go back before the per-image rows are made (issue 27: the rows
    // of 500,000 images take 104 MB; they become the report's).
    drop(words);
    let Some(stats) = stats else {
        return Err(cancelled());
    };
    ctx.opts.release_memory();
    if stats.len() != n {
        return Err(InputError::new(
            ErrorCode::Internal,
            "n-gram statistics lost an image",
        ));
    }

    if want_bleu {
        let total = bleu::pool(stats.iter().map(|s| &s.bleu));
        out.aggregate.set_bleu(total.scores());
        for (row, s) in out.rows().zip(&stats) {
            row.set_bleu(s.bleu.scores());
        }
        out.bleu_totals = Some((&total).into());
        if ctx.opts.bootstrap.is_some() || ctx.opts.keep_pool {
            out.bleu_stats = Some(stats.iter().map(|s| s.bleu).collect());
        }
        out.signature(Metric::Bleu, "bleu:n4,ref=closest,smooth=1e-15/1e-9".into());
    }
    if want_rouge {
        let column: Vec<f64> = stats.iter().map(|s| s.rouge).collect();
        out.aggregate.rouge_l = Some(numpy_mean(&column));
        for (row, v) in out.rows().zip(&column) {
            row.rouge_l = Some(*v);
        }
        out.signature(Metric::RougeL, "rouge_l:beta=1.2".into());
    }
    for (k, (metric, variant)) in variants.iter().enumerate() {
        let column: Vec<f64> = stats.iter().map(|s| s.cider[k]).collect();
        let mean = Some(numpy_mean(&column));
        match variant {
            Variant::CiderD => out.aggregate.cider = mean,
            Variant::Original => out.aggregate.cider_original = mean,
        }
        for (row, v) in out.rows().zip(&column) {
            match variant {
                Variant::CiderD => row.cider = Some(*v),
                Variant::Original => row.cider_original = Some(*v),
            }
        }
        out.signature(
            *metric,
            match variant {
                Variant::CiderD => format!("cider_d:n4,sigma=6,clip,df={df_label}"),
                Variant::Original => format!("cider_original:n4,df={df_label}"),
            },
        );
    }
    if !variants.is_empty() && df_docs == 1 {
        out.warnings.push(Warning::new(
            WarningCode::SingleImageCorpus,
            batch.items.iter().map(|i| i.image_id.raw.clone()).collect(),
        ));
    }
    Ok(())
}
