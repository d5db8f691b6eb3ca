//! Times SPICE scoring (not parsing): 5,000 images, one candidate and 5 references each, as
//! tuple lists recombined from the committed oracle fixture (Visual Genome phrase tuples of
//! the official parser). Needs the METEOR synonym data in the resource cache (`capscore fetch`).
//!
//! `cargo run --release --example spice_bench [THREADS]` (default 2).

use std::io::Read;
use std::path::PathBuf;
use std::time::Instant;

use capscore::metrics::spice::{image_score, mean_all_f, SceneGraph, SynsetMemo, Tuple};
use rayon::prelude::*;

/// CPU time of the whole process (user + system), from /proc/self/stat (Linux; 10 ms ticks).
fn cpu_seconds() -> f64 {
    let stat = std::fs::read_to_string("/proc/self/stat").unwrap_or_default();
    let after = stat.rsplit_once(')').map_or("", |(_, r)| r);
    let f: Vec<f64> = after
        .split_whitespace()
        .filter_map(|x| x.parse().ok())
        .collect();
    // Fields after the command: state is not numeric, so utime/stime are at 10 and 11 here.
    f.get(10).copied().unwrap_or(0.0) / 100.0 + f.get(11).copied().unwrap_or(0.0) / 100.0
}

fn main() {
    let threads: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(2);
    let dir = capscore::resources::default_cache_dir();
    let t = Instant::now();
    let syn =
        capscore::resources::load::synonyms(&dir).expect("synonym data (run `capscore fetch`)");
    eprintln!("synonym data loaded in {:.3} s", t.elapsed().as_secs_f64());

    let path =
        PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/spice/oracle_items.json.gz");
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).expect("fixture"))
        .read_to_string(&mut text)
        .expect("fixture");
    let fx: serde_json::Value = serde_json::from_str(&text).expect("fixture json");
    // Pool of caption-sized tuple lists: every reference list of the "vg" cases.
    let mut pool: Vec<Vec<Tuple>> = Vec::new();
    for c in fx["cases"].as_array().expect("cases") {
        if c["image_id"].as_str().is_some_and(|s| s.starts_with("vg-")) {
            for r in c["refs"].as_array().expect("refs") {
                pool.push(serde_json::from_value(r.clone()).expect("tuples"));
            }
        }
    }
    // Deterministic recombination: image i takes 6 lists from the pool.
    let mut state: u64 = 0x9E37_79B9_7F4A_7C15;
    let mut next = || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % pool.len() as u64) as usize
    };
    let images: Vec<(usize, [usize; 5])> = (0..5000)
        .map(|_| (next(), [next(), next(), next(), next(), next()]))
        .collect();
    let ref_tuples: usize = images
        .iter()
        .map(|(_, r)| r.iter().map(|&k| pool[k].len()).sum::<usize>())
        .sum();
    eprintln!(
        "5000 images, {} reference tuple strings lists, {ref_tuples} reference tuples",
        images.len() * 5
    );

    let t = Instant::now();
    let memo = SynsetMemo::new(
        &syn,
        pool.iter()
            .flatten()
            .flat_map(|t| t.0.iter().map(String::as_str)),
    );
    eprintln!(
        "{} distinct strings memoised in {:.3} s",
        memo.len(),
        t.elapsed().as_secs_f64()
    );
    let pool_ref = &pool;
    let syn_ref = &memo;
    let rayon_pool = rayon::ThreadPoolBuilder::new()
        .num_threads(threads)
        .build()
        .expect("pool");
    rayon_pool.install(|| {
        for round in 0..5 {
            let cpu0 = cpu_seconds();
            let t = Instant::now();
            let results: Vec<_> = images
                .par_iter()
                .map(|(c, refs)| {
                    let cg = SceneGraph::from_tuples([pool_ref[*c].as_slice()], syn_ref, true);
                    let rg = SceneGraph::from_tuples(
                        refs.iter().map(|&k| pool_ref[k].as_slice()),
                        syn_ref,
                        true,
                    );
                    image_score(&cg, &rg, false)
                })
                .collect();
            let full = t.elapsed().as_secs_f64();
            let full_cpu = cpu_seconds() - cpu0;
            let ties = results.iter().filter(|r| r.ties > 0).count();
            // With reference graphs cached (built once per dataset).
            let ref_graphs: Vec<SceneGraph> = images
                .par_iter()
                .map(|(_, refs)| {
                    SceneGraph::from_tuples(
                        refs.iter().map(|&k| pool_ref[k].as_slice()),
                        syn_ref,
                        true,
                    )
                })
                .collect();
            let cpu1 = cpu_seconds();
            let t = Instant::now();
            let cached: Vec<_> = images
                .par_iter()
                .zip(&ref_graphs)
                .map(|((c, _), rg)| {
                    let cg = SceneGraph::from_tuples([pool_ref[*c].as_slice()], syn_ref, true);
                    image_score(&cg, rg, false)
                })
                .collect();
            let warm = t.elapsed().as_secs_f64();
            let warm_cpu = cpu_seconds() - cpu1;
            println!(
                "round {round}: {threads} threads: wall {full:.3} s, CPU {full_cpu:.2} s (graphs \
                 built); wall {warm:.3} s, CPU {warm_cpu:.2} s (reference graphs cached); \
                 mean F {:.6}; images with merge ties: {ties}",
                mean_all_f(&results)
            );
            assert_eq!(mean_all_f(&results), mean_all_f(&cached));
        }
    });
}
