//! Invariants of the n-gram metrics over random batches (proptest).

use capscore::engine::{self, Metric, Options};
use capscore::input::{self, Candidate, ImageId, Item, References};
use proptest::prelude::*;
use serde_json::{json, Value};

const METRICS: [Metric; 4] = [
    Metric::Bleu,
    Metric::RougeL,
    Metric::CiderD,
    Metric::CiderOriginal,
];
const WORDS: [&str; 12] = [
    "a", "man", "dog", "riding", "wave", "on", "the", "beach", "red", "two", "sitting", "bench",
];

fn caption() -> impl Strategy<Value = String> {
    prop::collection::vec(0..WORDS.len(), 0..12).prop_map(|ix| {
        ix.into_iter()
            .map(|i| WORDS[i])
            .collect::<Vec<_>>()
            .join(" ")
    })
}

fn nonempty_caption() -> impl Strategy<Value = String> {
    prop::collection::vec(0..WORDS.len(), 1..12).prop_map(|ix| {
        ix.into_iter()
            .map(|i| WORDS[i])
            .collect::<Vec<_>>()
            .join(" ")
    })
}

fn image() -> impl Strategy<Value = (String, Vec<String>)> {
    (caption(), prop::collection::vec(caption(), 1..5))
}

fn batch(images: &[(String, Vec<String>)]) -> (Vec<Candidate>, References) {
    let items = images
        .iter()
        .enumerate()
        .map(|(i, (c, r))| Item {
            image_id: ImageId::from_value(&json!(i)).unwrap(),
            candidate: c.clone(),
            references: r.clone(),
        })
        .collect();
    input::split_items(items).unwrap()
}

fn run(images: &[(String, Vec<String>)]) -> Option<Value> {
    let opts = Options::new(&METRICS);
    let (cands, refs) = batch(images);
    // A corpus whose references are all empty is rejected (no_reference_ngrams): skip it.
    engine::score(cands, &refs, &opts)
        .ok()
        .map(|r| r.to_json().expect("json"))
}

fn per_image(v: &Value, id: usize) -> &Value {
    v["per_image"]
        .as_array()
        .unwrap()
        .iter()
        .find(|p| p["image_id"] == json!(id))
        .unwrap()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn scores_are_in_range(images in prop::collection::vec(image(), 1..8)) {
        if let Some(v) = run(&images) {
            for p in v["per_image"].as_array().unwrap().iter().chain(std::iter::once(&v["aggregate"])) {
                for k in ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "ROUGE_L"] {
                    let x = p[k].as_f64().unwrap();
                    prop_assert!((0.0..=1.0).contains(&x), "{k} = {x}");
                }
                for k in ["CIDEr", "CIDEr_original"] {
                    let x = p[k].as_f64().unwrap();
                    prop_assert!((0.0..=10.0 + 1e-9).contains(&x), "{k} = {x}");
                }
            }
        }
    }

    /// A (non-empty) candidate equal to every reference gets the top score of each metric: no
    /// other candidate for that image scores higher (document frequencies come from references
    /// only). The empty caption is the documented exception: BLEU gives it 0.
    #[test]
    fn identical_candidate_gets_the_top_score(
        s in nonempty_caption(), nrefs in 1usize..4, other in caption(), rest in prop::collection::vec(image(), 1..5)
    ) {
        let mut a = vec![(s.clone(), vec![s.clone(); nrefs])];
        a.extend(rest.iter().cloned());
        let mut b = a.clone();
        b[0].0 = other;
        if let (Some(va), Some(vb)) = (run(&a), run(&b)) {
            let (pa, pb) = (per_image(&va, 0), per_image(&vb, 0));
            prop_assert_eq!(pa["ROUGE_L"].as_f64(), Some(1.0));
            for k in ["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4", "ROUGE_L", "CIDEr"] {
                prop_assert!(pa[k].as_f64().unwrap() >= pb[k].as_f64().unwrap(), "{k}: {} < {}", pa[k], pb[k]);
            }
        }
    }

    /// Per-image scores do not depend on the order of the batch (aggregates may differ in the
    /// last bits through summation order, as in the reference).
    #[test]
    fn shuffling_the_batch_keeps_every_per_image_score(
        images in prop::collection::vec(image(), 2..8), seed in any::<u64>()
    ) {
        let mut order: Vec<usize> = (0..images.len()).collect();
        let mut x = seed | 1;
        for i in (1..order.len()).rev() {
            x ^= x << 13; x ^= x >> 7; x ^= x << 17;
            order.swap(i, (x % (i as u64 + 1)) as usize);
        }
        let items: Vec<Item> = order.iter().map(|&i| Item {
            image_id: ImageId::from_value(&json!(i)).unwrap(),
            candidate: images[i].0.clone(),
            references: images[i].1.clone(),
        }).collect();
        let opts = Options::new(&METRICS);
        let (cands, refs) = input::split_items(items).unwrap();
        let shuffled = engine::score(cands, &refs, &opts).ok().map(|r| r.to_json().expect("json"));
        if let (Some(a), Some(b)) = (run(&images), shuffled) {
            for i in 0..images.len() {
                prop_assert_eq!(per_image(&a, i), per_image(&b, i));
            }
        }
    }
}
