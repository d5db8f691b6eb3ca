//! The METEOR step: one segment per image (the candidate against its references) on the
//! rayon pool, pooled over the corpus as the jar's `EVAL` line does.
//!
//! Must not: read files (the loaded [`Meteor`](crate::metrics::meteor::Meteor) comes in the
//! options).

use rayon::prelude::*;

use super::metric::Metric;
use super::options::{cancelled, Stage, Tally};
use super::step::{Ctx, Out};
use crate::input::{ErrorCode, InputError};
use crate::metrics::meteor::{self, MeteorError, SegmentStats};

/// Runs METEOR (the engine calls it only when the metric is asked for).
pub(super) fn run(ctx: &Ctx<'_>, out: &mut Out) -> Result<(), InputError> {
    let m = ctx.loaded(Metric::Meteor, ctx.opts.meteor)?;
    let _span = tracing::debug_span!("meteor").entered();
    let (batch, tok) = (ctx.batch, ctx.tok);
    let tally = Tally::start(ctx.opts, Stage::Meteor, batch.items.len());
    let stats: Vec<Option<Result<SegmentStats, MeteorError>>> = (0..batch.items.len())
        .into_par_iter()
        .map(|i| {
            if ctx.opts.cancelled() {
                return None;
            }
            let refs: Vec<&str> = tok.references.image(i).collect();
            let st = m.segment(tok.candidates.get(i), &refs);
            tally.add(1);
            Some(st)
        })
        .collect();
    let Some(stats) = stats.into_iter().collect::<Option<Vec<_>>>() else {
        return Err(cancelled());
    };
    let mut ok = Vec::with_capacity(stats.len());
    for (i, st) in stats.into_iter().enumerate() {
        match st {
            Ok(st) => ok.push(st),
            Err(e) => {
                return Err(InputError::new(
                    ErrorCode::LimitExceeded,
                    format!("image_id {}: {e}", batch.items[i].image_id),
                ))
            }
        }
    }
    out.aggregate.meteor = Some(meteor::pooled_score(&ok));
    for (row, st) in out.rows().zip(&ok) {
        row.meteor = Some(st.score());
    }
    if ctx.opts.bootstrap.is_some() || ctx.opts.keep_pool {
        out.meteor_stats = Some(ok);
    }
    out.signature(
        Metric::Meteor,
        "meteor:1.5-pycocoevalcap,en,norm,pooled".into(),
    );
    Ok(())
}
