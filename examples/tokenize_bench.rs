//! Single-stream tokenizer benchmark driver (for callgrind):
//! `RAYON_NUM_THREADS=1 valgrind --tool=callgrind target/release/examples/tokenize_bench [N]`.

use std::io::Read;

fn main() {
    let n: usize = std::env::args()
        .nth(1)
        .and_then(|a| a.parse().ok())
        .unwrap_or(25_000);
    let path = concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/tests/fixtures/tokenizer/val2014_captions_ptb.jsonl.gz"
    );
    let mut text = String::new();
    flate2::read::GzDecoder::new(std::fs::File::open(path).expect("fixture"))
        .read_to_string(&mut text)
        .expect("gzip");
    let mut raw: Vec<String> = Vec::with_capacity(n);
    'outer: for line in text.lines() {
        let v: serde_json::Value = serde_json::from_str(line).expect("json");
        for r in v["raw"].as_array().expect("raw") {
            if raw.len() == n {
                break 'outer;
            }
            raw.push(r.as_str().expect("str").to_string());
        }
    }
    let out = run(&raw);
    let total: usize = out.iter().map(String::len).sum();
    println!("{} captions, {} output bytes", out.len(), total);
}

#[inline(never)]
fn run(raw: &[String]) -> Vec<String> {
    capscore::text::ptb::tokenize_stream(raw)
}
