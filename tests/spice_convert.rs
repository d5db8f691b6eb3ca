//! SPICE front end: spaCy parse -> UD v1 graph conversion (spec SPICE §3.2, §12.3) on
//! hand-built spaCy trees, and the Morpha-behaviour lemmatiser (§6).
//!
//! The lemmatiser test over the full exception lists reads
//! `$CAPSCORE_CACHE_DIR/nlp/lemma_exc.tsv` and fails when it is missing.

use std::collections::BTreeSet;

use capscore::metrics::spice::convert::{convert, SpacyToken};
use capscore::metrics::spice::{tuples_of, ParsedSentence};
use capscore::nlp::lemma::Lemmatizer;

/// A small exception list: structure tests do not need the cache.
fn lemmas() -> Lemmatizer {
    Lemmatizer::from_tsv(
        "noun\tmen\tman\nverb\tridden\tride\nverb\tsat\tsit\nverb\tcaught\tcatch\n\
         verb\twore\twear\n",
    )
    .unwrap()
}

/// `word/TAG/dep/head` tokens, heads 1-based (a root names itself).
fn parse(spec: &str) -> Vec<SpacyToken> {
    spec.split(' ')
        .map(|t| {
            let p: Vec<&str> = t.split('/').collect();
            assert_eq!(p.len(), 4, "{t}");
            SpacyToken {
                word: p[0].to_string(),
                tag: p[1].to_string(),
                dep: p[2].to_string(),
                head: p[3].parse::<usize>().unwrap() - 1,
            }
        })
        .collect()
}

fn sentences(spec: &str) -> Vec<ParsedSentence> {
    convert(&parse(spec), &lemmas())
}

/// Edges as `rel(gov-i, dep-j)` with words and 1-based positions, plus `root(w-i)`.
fn edges(s: &ParsedSentence) -> BTreeSet<String> {
    let w = |i: usize| format!("{}-{}", s.tokens[i - 1].word, i);
    let mut out: BTreeSet<String> = s
        .edges
        .iter()
        .map(|e| format!("{}({}, {})", e.rel, w(e.gov), w(e.dep)))
        .collect();
    out.extend(s.roots.iter().map(|&r| format!("root({})", w(r))));
    out
}

fn has_edges(s: &ParsedSentence, want: &[&str]) {
    let got = edges(s);
    for e in want {
        assert!(got.contains(*e), "missing {e} in {got:?}");
    }
}

fn lacks_edges(s: &ParsedSentence, unwanted: &[&str]) {
    let got = edges(s);
    for e in unwanted {
        assert!(!got.contains(*e), "unexpected {e} in {got:?}");
    }
}

/// The caption's tuples as a set of comma-joined strings (SPICE's internal order: relation
/// last).
fn tuples(spec: &str) -> BTreeSet<String> {
    tuples_of(&sentences(spec))
        .unwrap()
        .into_iter()
        .map(|t| t.0.join(", "))
        .collect()
}

fn set(v: &[&str]) -> BTreeSet<String> {
    v.iter().map(|s| s.to_string()).collect()
}

#[test]
fn copula_adjective_and_nominal_predicates() {
    let s = sentences("the/DT/det/2 man/NN/nsubj/3 is/VBZ/ROOT/3 tall/JJ/acomp/3");
    assert_eq!(s.len(), 1);
    has_edges(
        &s[0],
        &[
            "nsubj(tall-4, man-2)",
            "cop(tall-4, is-3)",
            "det(man-2, the-1)",
            "root(tall-4)",
        ],
    );
    assert_eq!(
        tuples("the/DT/det/2 man/NN/nsubj/3 is/VBZ/ROOT/3 tall/JJ/acomp/3"),
        set(&["man, tall", "man"])
    );
    let s = sentences("the/DT/det/2 man/NN/nsubj/3 is/VBZ/ROOT/3 a/DT/det/5 rider/NN/attr/3");
    has_edges(
        &s[0],
        &[
            "nsubj(rider-5, man-2)",
            "cop(rider-5, is-3)",
            "root(rider-5)",
        ],
    );
}

#[test]
fn copula_with_pp_predicate_keeps_the_preposition_as_case() {
    let spec = "the/DT/det/2 cat/NN/nsubj/3 is/VBZ/ROOT/3 on/IN/prep/3 the/DT/det/6 bed/NN/pobj/4";
    let s = sentences(spec);
    has_edges(
        &s[0],
        &[
            "nsubj(bed-6, cat-2)",
            "cop(bed-6, is-3)",
            "case(bed-6, on-4)",
            "root(bed-6)",
        ],
    );
    lacks_edges(&s[0], &["nmod:on(is-3, bed-6)"]);
    assert_eq!(tuples(spec), set(&["cat, bed, on", "cat", "bed"]));
}

#[test]
fn existential_keeps_be_and_attr_becomes_subject() {
    let spec = "there/EX/expl/2 is/VBZ/ROOT/2 a/DT/det/4 dog/NN/attr/2 on/IN/prep/4 \
                the/DT/det/7 couch/NN/pobj/5";
    let s = sentences(spec);
    has_edges(
        &s[0],
        &[
            "expl(is-2, there-1)",
            "nsubj(is-2, dog-4)",
            "nmod:on(dog-4, couch-7)",
            "root(is-2)",
        ],
    );
    assert!(tuples(spec).contains("dog, couch, on"));
}

#[test]
fn three_word_preposition_in_a_verb_phrase() {
    // a young girl standing in front of a fountain .
    let spec = "a/DT/det/3 young/JJ/amod/3 girl/NN/ROOT/3 standing/VBG/acl/3 in/IN/prep/4 \
                front/NN/pobj/5 of/IN/prep/6 a/DT/det/9 fountain/NN/pobj/7 ././punct/3";
    let s = sentences(spec);
    has_edges(
        &s[0],
        &[
            "nmod:in_front_of(standing-4, fountain-9)",
            "case(fountain-9, in-5)",
            "mwe(in-5, front-6)",
            "mwe(in-5, of-7)",
        ],
    );
    assert_eq!(
        tuples(spec),
        set(&[
            "girl, fountain, stand in front of",
            "girl, young",
            "girl",
            "front",
            "fountain"
        ])
    );
}

#[test]
fn three_word_preposition_as_copular_predicate() {
    // the giraffe is on top of dirt: the object becomes the root and takes nsubj and cop.
    let spec = "the/DT/det/2 giraffe/NN/nsubj/3 is/VBZ/ROOT/3 on/IN/prep/3 top/NN/pobj/4 \
                of/IN/prep/5 dirt/NN/pobj/6";
    let s = sentences(spec);
    has_edges(
        &s[0],
        &[
            "nsubj(dirt-7, giraffe-2)",
            "cop(dirt-7, is-3)",
            "case(dirt-7, on-4)",
            "mwe(on-4, top-5)",
            "mwe(on-4, of-6)",
            "root(dirt-7)",
        ],
    );
    assert!(tuples(spec).contains("giraffe, dirt, on top of"));
}

#[test]
fn of_phrase_after_a_bare_noun_inside_a_noun_phrase_is_flat() {
    // foam on top of the water: the official parse attaches `of the water` to "foam".
    let spec = "foam/NN/ROOT/1 on/IN/prep/1 top/NN/pobj/2 of/IN/prep/3 the/DT/det/6 \
                water/NN/pobj/4";
    let s = sentences(spec);
    has_edges(
        &s[0],
        &["nmod:on(foam-1, top-3)", "nmod:of(foam-1, water-6)"],
    );
    // with a determiner on the middle noun the phrase stays nested
    let s = sentences(
        "buildings/NNS/ROOT/1 on/IN/prep/1 the/DT/det/4 side/NN/pobj/2 of/IN/prep/4 \
         the/DT/det/7 road/NN/pobj/5",
    );
    has_edges(
        &s[0],
        &["nmod:on(buildings-1, side-4)", "nmod:of(side-4, road-7)"],
    );
}

#[test]
fn two_word_preposition_headed_by_its_first_word() {
    // a man stands next to a bus
    let spec = "a/DT/det/2 man/NN/nsubj/3 stands/VBZ/ROOT/3 next/RB/advmod/3 to/IN/prep/4 \
                a/DT/det/7 bus/NN/pobj/5";
    let s = sentences(spec);
    has_edges(
        &s[0],
        &[
            "nmod:next_to(stands-3, bus-7)",
            "case(bus-7, next-4)",
            "mwe(next-4, to-5)",
        ],
    );
    lacks_edges(&s[0], &["advmod(stands-3, next-4)"]);
    assert_eq!(
        tuples(spec),
        set(&["man, bus, stand next to", "man", "bus"])
    );
    // copular: the cat is next to a dog -> the object becomes the root
    let s = sentences(
        "a/DT/det/2 cat/NN/nsubj/3 is/VBZ/ROOT/3 next/JJ/acomp/3 to/IN/prep/4 a/DT/det/7 \
         dog/NN/pobj/5",
    );
    has_edges(
        &s[0],
        &[
            "nsubj(dog-7, cat-2)",
            "cop(dog-7, is-3)",
            "case(dog-7, next-4)",
            "mwe(next-4, to-5)",
            "root(dog-7)",
        ],
    );
    // out of: spaCy hangs "of" off "out"
    let s = sentences(
        "a/DT/det/2 boy/NN/nsubj/3 jumping/VBG/ROOT/3 out/IN/prep/3 of/IN/prep/4 \
         the/DT/det/7 water/NN/pobj/5 ././punct/3",
    );
    has_edges(&s[0], &["case(water-7, out-4)", "mwe(out-4, of-5)"]);
    assert!(edges(&s[0])
        .iter()
        .any(|e| e.starts_with("nmod:out_of(") && e.ends_with("water-7)")));
}

#[test]
fn conjunct_subjects_and_governors_are_shared() {
    // a dog jumps and catches a frisbee
    let spec = "a/DT/det/2 dog/NN/nsubj/3 jumps/VBZ/ROOT/3 and/CC/cc/3 catches/VBZ/conj/3 \
                a/DT/det/7 frisbee/NN/dobj/5";
    let s = sentences(spec);
    has_edges(
        &s[0],
        &[
            "conj:and(jumps-3, catches-5)",
            "nsubj(jumps-3, dog-2)",
            "nsubj(catches-5, dog-2)",
        ],
    );
    assert!(tuples(spec).contains("dog, frisbee, catch"));
    // a man and a woman sit on a bench: the governor's edge is copied to the conjunct
    let spec = "a/DT/det/2 man/NN/nsubj/6 and/CC/cc/2 a/DT/det/5 woman/NN/conj/2 sit/VBP/ROOT/6 \
                on/IN/prep/6 a/DT/det/9 bench/NN/pobj/7";
    let s = sentences(spec);
    has_edges(&s[0], &["nsubj(sit-6, man-2)", "nsubj(sit-6, woman-5)"]);
    let t = tuples(spec);
    assert!(t.contains("man, bench, sit on") && t.contains("woman, bench, sit on"));
    // objects are not propagated: a man washes and dries a car
    let s = sentences(
        "a/DT/det/2 man/NN/nsubj/3 washes/VBZ/ROOT/3 and/CC/cc/3 dries/VBZ/conj/3 \
         a/DT/det/7 car/NN/dobj/5",
    );
    lacks_edges(&s[0], &["dobj(washes-3, car-7)"]);
    // spaCy's conjunct chains are flattened: apples , oranges and bananas
    let s = sentences(
        "apples/NNS/ROOT/1 ,/,/punct/1 oranges/NNS/conj/1 and/CC/cc/3 bananas/NNS/conj/3",
    );
    has_edges(
        &s[0],
        &[
            "conj:and(apples-1, oranges-3)",
            "conj:and(apples-1, bananas-5)",
        ],
    );
}

#[test]
fn passive_agent_needs_an_auxiliary() {
    let spec = "a/DT/det/2 horse/NN/nsubjpass/4 is/VBZ/auxpass/4 ridden/VBN/ROOT/4 by/IN/agent/4 \
                a/DT/det/7 man/NN/pobj/5";
    let s = sentences(spec);
    has_edges(
        &s[0],
        &[
            "nsubjpass(ridden-4, horse-2)",
            "auxpass(ridden-4, is-3)",
            "nmod:agent(ridden-4, man-7)",
            "case(man-7, by-5)",
        ],
    );
    assert!(tuples(spec).contains("man, horse, ride"));
    // without the auxiliary: nmod:by, and R2 reads it
    let spec = "a/DT/det/2 horse/NN/ROOT/2 ridden/VBN/acl/2 by/IN/agent/3 a/DT/det/6 \
                man/NN/pobj/4 ././punct/2";
    let s = sentences(spec);
    has_edges(
        &s[0],
        &["nmod:by(ridden-3, man-6)", "acl(horse-2, ridden-3)"],
    );
    assert!(tuples(spec).contains("horse, man, ride by"));
}

#[test]
fn possessives_particles_datives_and_relative_clauses() {
    // the man 's dog
    let spec = "the/DT/det/2 man/NN/poss/4 's/POS/case/2 dog/NN/ROOT/4";
    let s = sentences(spec);
    has_edges(&s[0], &["nmod:poss(dog-4, man-2)", "case(man-2, 's-3)"]);
    assert!(tuples(spec).contains("man, dog, have"));
    // a man picks up a ball
    let spec = "a/DT/det/2 man/NN/nsubj/3 picks/VBZ/ROOT/3 up/RP/prt/3 a/DT/det/6 ball/NN/dobj/3";
    has_edges(&sentences(spec)[0], &["compound:prt(picks-3, up-4)"]);
    assert!(tuples(spec).contains("man, ball, pick up"));
    // a man gives a dog a bone
    let spec = "a/DT/det/2 man/NN/nsubj/3 gives/VBZ/ROOT/3 a/DT/det/5 dog/NN/dative/3 \
                a/DT/det/7 bone/NN/dobj/3";
    has_edges(&sentences(spec)[0], &["iobj(gives-3, dog-5)"]);
    let t = tuples(spec);
    assert!(t.contains("man, dog, give") && t.contains("man, bone, give"));
    // a man who rides a horse: acl:relcl, no tuple from R1/R2 for "man"
    let spec = "a/DT/det/2 man/NN/ROOT/2 who/WP/nsubj/4 rides/VBZ/relcl/2 a/DT/det/6 \
                horse/NN/dobj/4";
    has_edges(
        &sentences(spec)[0],
        &["acl:relcl(man-2, rides-4)", "nsubj(rides-4, who-3)"],
    );
    assert!(!tuples(spec).contains("man, horse, ride"));
}

#[test]
fn punctuation_is_outside_the_graph_and_keeps_positions() {
    let s = sentences("a/DT/det/2 dog/NN/nsubj/3 runs/VBZ/ROOT/3 ././punct/3");
    assert_eq!(s[0].tokens.len(), 4);
    assert!(s[0].edges.iter().all(|e| e.dep != 4 && e.gov != 4));
    has_edges(&s[0], &["nsubj(runs-3, dog-2)", "root(runs-3)"]);
}

#[test]
fn every_tree_is_a_sentence() {
    let s = sentences(
        "a/DT/det/2 dog/NN/nsubj/3 runs/VBZ/ROOT/3 ././punct/3 a/DT/det/6 cat/NN/nsubj/7 \
         sleeps/VBZ/ROOT/7 ././punct/7",
    );
    assert_eq!(s.len(), 2);
    assert_eq!(s[1].tokens[1].word, "cat");
    has_edges(&s[1], &["nsubj(sleeps-3, cat-2)", "root(sleeps-3)"]);
}

#[test]
fn participles_modifying_a_root_noun_keep_their_relation_without_final_punctuation() {
    // Issue 17: the participle of an unpunctuated fragment was turned into `dep`, which
    // dropped its relation (2-4% of the Flickr8k-Expert tuples; COCO demo SPICE 0.146 instead
    // of the official 0.133). Spec §5.2: `a cat sitting in a chair` -> `(cat, chair, sit in)`.
    let base = "a/DT/det/2 cat/NN/ROOT/2 sitting/VBG/acl/2 in/IN/prep/3 a/DT/det/6 \
                chair/NN/pobj/4";
    assert_eq!(tuples(base), set(&["cat", "chair", "cat, chair, sit in"]));
    let with_period = format!("{base} ././punct/2");
    assert_eq!(tuples(&with_period), tuples(base));
    // a participle with a subject and no auxiliary is a noun modifier: two lizards fighting .
    let s = sentences("two/CD/nummod/2 lizards/NNS/nsubj/3 fighting/VBG/ROOT/3 ././punct/3");
    has_edges(&s[0], &["acl(lizards-2, fighting-3)", "root(lizards-2)"]);
}

#[test]
fn a_root_ing_noun_after_its_compound_modifier_is_a_participle() {
    // A rottweiler running . / A blonde baby playing in the sand . (spaCy: `running/NN` the
    // root with `rottweiler` its compound modifier; the official counts have no such object)
    let spec = "A/DT/det/3 rottweiler/NN/compound/3 running/NN/ROOT/3 ././punct/3";
    let s = sentences(spec);
    has_edges(
        &s[0],
        &[
            "det(rottweiler-2, A-1)",
            "acl(rottweiler-2, running-3)",
            "root(rottweiler-2)",
        ],
    );
    assert_eq!(s[0].tokens[2].tag, "VBG");
    assert_eq!(tuples(spec), set(&["rottweiler"]));
    let spec = "A/DT/det/4 blonde/JJ/amod/4 baby/NN/compound/4 playing/NN/ROOT/4 in/IN/prep/4 \
                the/DT/det/7 sand/NN/pobj/5 ././punct/4";
    assert_eq!(
        tuples(spec),
        set(&["baby", "baby, blonde", "sand", "baby, sand, play in"])
    );
    // not a root, or no compound right before it: unchanged (a swimming pool; the building)
    let s = sentences("a/DT/det/3 swimming/NN/compound/3 pool/NN/ROOT/3");
    has_edges(&s[0], &["compound(pool-3, swimming-2)", "root(pool-3)"]);
    let s = sentences("the/DT/det/2 building/NN/ROOT/2");
    assert_eq!(s[0].tokens[1].tag, "NN");
}

#[test]
fn while_and_a_participle_with_an_object_is_a_prepositional_phrase() {
    // A woman sings into a microphone while playing guitar .
    let spec = "A/DT/det/2 woman/NN/nsubj/3 sings/VBZ/ROOT/3 into/IN/prep/3 a/DT/det/6 \
                microphone/NN/pobj/4 while/IN/mark/8 playing/VBG/advcl/3 guitar/NN/dobj/8 \
                ././punct/3";
    let s = sentences(spec);
    has_edges(
        &s[0],
        &[
            "nmod:while(sings-3, guitar-9)",
            "case(guitar-9, while-7)",
            "amod(guitar-9, playing-8)",
        ],
    );
    assert!(tuples(spec).contains("woman, guitar, sing while"));
    assert!(tuples(spec).contains("guitar, play"));
    // a participle with more than its object (a PP) stays a clause: while sitting on a patio
    let s = sentences(
        "boys/NNS/nsubj/2 eat/VBP/ROOT/2 while/IN/mark/4 sitting/VBG/advcl/2 on/IN/prep/4 \
         a/DT/det/7 patio/NN/pobj/5",
    );
    has_edges(
        &s[0],
        &["advcl(eat-2, sitting-4)", "mark(sitting-4, while-3)"],
    );
}

#[test]
fn a_root_plural_noun_after_a_singular_compound_with_a_is_a_verb() {
    // A person skis downhill . (spaCy: `skis/NNS` the root, `person` its compound modifier)
    let spec = "A/DT/det/2 person/NN/compound/3 skis/NNS/ROOT/3 downhill/RB/advmod/3 ././punct/3";
    let s = sentences(spec);
    assert_eq!(s[0].tokens[2].tag, "VBZ");
    has_edges(&s[0], &["nsubj(skis-3, person-2)"]);
    assert_eq!(tuples(spec), set(&["person", "person, ski"]));
    // a plural compound head without `a` stays a noun: the tennis shoes
    let s = sentences("the/DT/det/3 tennis/NN/compound/3 shoes/NNS/ROOT/3");
    assert_eq!(s[0].tokens[2].tag, "NNS");
}

#[test]
fn tagger_repairs() {
    // A dog rolls on the ground: spaCy tags "rolls" NNS with "dog" as its subject
    let spec = "A/DT/det/2 dog/NN/nsubj/3 rolls/NNS/ROOT/3 on/IN/prep/3 the/DT/det/6 \
                ground/NN/pobj/4 ././punct/3";
    let s = sentences(spec);
    assert_eq!(s[0].tokens[2].tag, "VBZ");
    assert_eq!(s[0].tokens[2].lemma, "roll");
    assert!(tuples(spec).contains("dog, ground, roll on"));
    // a golden retriever plays with a toy: the compound modifier is the subject
    let spec = "a/DT/det/3 golden/JJ/amod/3 retriever/NN/compound/4 plays/VBZ/ROOT/4 \
                with/IN/prep/4 a/DT/det/7 toy/NN/pobj/5 ././punct/4";
    let s = sentences(spec);
    has_edges(
        &s[0],
        &["nsubj(plays-4, retriever-3)", "amod(retriever-3, golden-2)"],
    );
    // Brown and white dog runs: the noun takes the first adjective's place
    let spec = "Brown/JJ/nsubj/5 and/CC/cc/1 white/JJ/amod/4 dog/NN/conj/1 runs/VBZ/ROOT/5";
    let s = sentences(spec);
    has_edges(
        &s[0],
        &[
            "nsubj(runs-5, dog-4)",
            "amod(dog-4, Brown-1)",
            "amod(dog-4, white-3)",
        ],
    );
    // flat noun phrases: a red plastic fence
    let s = sentences("a/DT/det/4 red/JJ/amod/3 plastic/NN/compound/4 fence/NN/ROOT/4");
    has_edges(
        &s[0],
        &["amod(fence-4, red-2)", "compound(fence-4, plastic-3)"],
    );
    // prenominal participles are adjectives: a stuffed bear
    let s = sentences("a/DT/det/3 stuffed/VBN/amod/3 bear/NN/ROOT/3");
    assert_eq!(s[0].tokens[1].tag, "JJ");
    assert_eq!(s[0].tokens[1].lemma, "stuffed");
}

#[test]
fn lemmas_come_from_the_lemmatiser() {
    let s = sentences("men/NNS/nsubj/2 sat/VBD/ROOT/2 ././punct/2");
    assert_eq!(s[0].tokens[0].lemma, "man");
    assert_eq!(s[0].tokens[1].lemma, "sit");
}

/// The full exception lists from the resource cache (spec §6 observed outputs).
#[test]
fn lemmatiser_with_the_full_exception_lists() {
    let dir = capscore::resources::default_cache_dir();
    let path = dir.join("nlp/lemma_exc.tsv");
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| {
        panic!(
            "lemma exception lists missing at {} ({e}); set CAPSCORE_CACHE_DIR to a cache that \
             holds nlp/lemma_exc.tsv",
            path.display()
        )
    });
    let l = Lemmatizer::from_tsv(&text).unwrap();
    assert!(l.len() > 4000, "{} exceptions", l.len());
    for (w, tag, want) in [
        ("kites", "NNS", "kite"),
        ("leaves", "NNS", "leaf"),
        ("geese", "NNS", "goose"),
        ("glasses", "NNS", "glass"),
        ("lots", "NNS", "lot"),
        ("jeans", "NNS", "jeans"),
        ("shorts", "NNS", "shorts"),
        ("pants", "NNS", "pants"),
        ("goggles", "NNS", "goggles"),
        ("people", "NNS", "people"),
        ("bleachers", "NNS", "bleacher"),
        ("men", "NNS", "man"),
        ("women", "NNS", "woman"),
        ("children", "NNS", "child"),
        ("feet", "NNS", "foot"),
        ("teeth", "NNS", "tooth"),
        ("mice", "NNS", "mouse"),
        ("knives", "NNS", "knife"),
        ("graffiti", "NNS", "graffitus"),
        ("3-year-olds", "NNS", "3-year-old"),
        ("ridden", "VBN", "ride"),
        ("sat", "VBD", "sit"),
        ("caught", "VBD", "catch"),
        ("rode", "VBD", "ride"),
        ("lying", "VBG", "lie"),
        ("leaves", "VBZ", "leave"),
        ("running", "VBG", "run"),
        ("riding", "VBG", "ride"),
        ("smiling", "VBG", "smile"),
        ("is", "VBZ", "be"),
        ("has", "VBZ", "have"),
        ("an", "DT", "a"),
        ("him", "PRP", "he"),
        ("n't", "RB", "not"),
        ("Paris", "NNP", "Paris"),
    ] {
        assert_eq!(l.lemma(w, tag), want, "{w}/{tag}");
    }
}

/// Arbitrary label/tag/head combinations (cycles and out-of-range heads included) never
/// panic and always give valid sentences.
#[test]
fn arbitrary_trees_convert_without_panics() {
    const DEPS: &[&str] = &[
        "ROOT",
        "nsubj",
        "nsubjpass",
        "dobj",
        "prep",
        "pobj",
        "pcomp",
        "agent",
        "dative",
        "poss",
        "case",
        "prt",
        "relcl",
        "acl",
        "attr",
        "acomp",
        "oprd",
        "npadvmod",
        "amod",
        "compound",
        "det",
        "cc",
        "conj",
        "aux",
        "auxpass",
        "punct",
        "advmod",
        "nummod",
        "expl",
        "xcomp",
        "nmod",
        "quantmod",
        "predet",
        "preconj",
        "appos",
        "dep",
        "mark",
        "neg",
    ];
    const TAGS: &[&str] = &[
        "NN", "NNS", "NNP", "VBZ", "VBG", "VBN", "VBD", "VB", "VBP", "JJ", "IN", "DT", "CC", "RP",
        "PRP", "PRP$", "CD", ".", "RB", "POS", "EX", "TO",
    ];
    const WORDS: &[&str] = &[
        "a", "man", "is", "on", "top", "of", "in", "front", "next", "to", "out", "and", "dog",
        "by", "the", "off", "'s", "there", "riding", "men", ".",
    ];
    let mut seed: u64 = 0x9e37_79b9_7f4a_7c15;
    let mut next = |m: usize| {
        seed = seed
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        ((seed >> 33) as usize) % m
    };
    let lem = lemmas();
    for _ in 0..3000 {
        let n = 1 + next(12);
        let toks: Vec<SpacyToken> = (0..n)
            .map(|i| {
                let head = match next(10) {
                    0 => i,
                    1 => n + next(3),
                    _ => next(n),
                };
                SpacyToken {
                    word: WORDS[next(WORDS.len())].to_string(),
                    tag: TAGS[next(TAGS.len())].to_string(),
                    head,
                    dep: DEPS[next(DEPS.len())].to_string(),
                }
            })
            .collect();
        let sents = convert(&toks, &lem);
        assert_eq!(sents.iter().map(|s| s.tokens.len()).sum::<usize>(), n);
        for (i, s) in sents.iter().enumerate() {
            s.validate(i).unwrap();
        }
        tuples_of(&sents).unwrap();
    }
}
