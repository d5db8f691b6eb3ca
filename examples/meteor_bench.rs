//! METEOR benchmark / driver (development tool, not the CLI).
//!
//! ```text
//! meteor_bench fetch [CACHE_DIR]            fetch + build the compact cache
//! meteor_bench score FILE [--stats OUT] [--repeat N]
//!                                           FILE: one item per line, `ref1 ||| … ||| hyp`
//!                                           (tokenized captions; `\t` may replace ` ||| `)
//! ```
//! `score` loads the resources from `$CAPSCORE_CACHE_DIR` (or the default cache dir), scores
//! every line on the rayon pool (N times; `score_s` is the fastest, later rounds run with warm
//! per-thread caches), and prints the pooled score and timings as JSON on stdout.

/// The same allocator as the `capscore` binary.
#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

use std::io::Write;
use std::time::Instant;

use capscore::metrics::meteor::pooled_score;
use capscore::resources;
use rayon::prelude::*;

fn main() -> anyhow::Result<()> {
    tracing_subscriber::fmt()
        .with_env_filter(tracing_subscriber::EnvFilter::from_default_env())
        .with_writer(std::io::stderr)
        .init();
    let args: Vec<String> = std::env::args().collect();
    match args.get(1).map(String::as_str) {
        Some("fetch") => {
            let dir = args
                .get(2)
                .map(std::path::PathBuf::from)
                .unwrap_or_else(resources::default_cache_dir);
            let t = Instant::now();
            let rep = resources::fetch::meteor(&dir)?;
            eprintln!("{rep:#?}");
            eprintln!("fetch took {:.2}s", t.elapsed().as_secs_f64());
        }
        Some("score") => {
            let file = args.get(2).ok_or_else(|| anyhow::anyhow!("score FILE"))?;
            let stats_out = args
                .iter()
                .position(|a| a == "--stats")
                .and_then(|k| args.get(k + 1));
            let t0 = Instant::now();
            let text = std::fs::read_to_string(file)?;
            let items: Vec<(String, Vec<String>)> = text
                .split('\n')
                .filter(|l| !l.is_empty())
                .map(|l| {
                    let mut f: Vec<String> = if l.contains('\t') {
                        l.split('\t').map(str::to_string).collect()
                    } else {
                        l.split("|||").map(|x| x.trim().to_string()).collect()
                    };
                    let hyp = f.pop().unwrap_or_default();
                    (hyp, f)
                })
                .collect();
            let t_read = t0.elapsed();
            let t1 = Instant::now();
            let m = resources::load::meteor(&resources::default_cache_dir())?;
            let t_load = t1.elapsed();
            let repeat: usize = args
                .iter()
                .position(|a| a == "--repeat")
                .and_then(|k| args.get(k + 1))
                .and_then(|v| v.parse().ok())
                .unwrap_or(1)
                .max(1);
            let mut t_score = std::time::Duration::MAX;
            let mut stats = Vec::new();
            let mut pooled = 0.0;
            for _ in 0..repeat {
                let t2 = Instant::now();
                stats = items
                    .par_iter()
                    .map(|(h, r)| {
                        let refs: Vec<&str> = r.iter().map(String::as_str).collect();
                        m.segment(h, &refs)
                    })
                    .collect::<Result<Vec<_>, _>>()?;
                pooled = pooled_score(&stats);
                t_score = t_score.min(t2.elapsed());
            }
            if let Some(out) = stats_out {
                let mut f = std::io::BufWriter::new(std::fs::File::create(out)?);
                for s in &stats {
                    writeln!(f, "{}", s.to_line())?;
                }
            }
            println!(
                "{{\"segments\": {}, \"pooled\": {:?}, \"read_s\": {:.4}, \"load_s\": {:.4}, \"score_s\": {:.4}, \"total_s\": {:.4}}}",
                stats.len(),
                pooled,
                t_read.as_secs_f64(),
                t_load.as_secs_f64(),
                t_score.as_secs_f64(),
                t0.elapsed().as_secs_f64()
            );
        }
        _ => anyhow::bail!("usage: meteor_bench fetch [DIR] | score FILE [--stats OUT]"),
    }
    Ok(())
}
