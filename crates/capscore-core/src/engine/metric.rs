//! The metrics capscore computes ([`Metric`]): names, output keys, parsing. Adding a metric
//! is one arm here plus one step file in `engine/`.
//!
//! Must not: compute anything.

use crate::input::{ErrorCode, InputError};

/// A metric capscore can compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Metric {
    /// BLEU-1..4 (`Bleu_1`..`Bleu_4`).
    Bleu,
    /// METEOR 1.5 as pycocoevalcap's jar computes it (`METEOR`; needs fetched resources).
    Meteor,
    /// ROUGE-L (`ROUGE_L`).
    RougeL,
    /// CIDEr-D, pycocoevalcap's `CIDEr`.
    CiderD,
    /// The original CIDEr of Vedantam et al. (`CIDEr_original`), never reported as `CIDEr`.
    CiderOriginal,
    /// SPICE 1.0 with capscore's native parser front end (`SPICE`; needs fetched resources).
    Spice,
    /// SPIDEr: (CIDEr-D + SPICE) / 2, per image and aggregate (aac-metrics' definition);
    /// asking for it computes CIDEr-D and SPICE too.
    Spider,
}

impl Metric {
    /// Every metric, in output order.
    pub const ALL: [Metric; 7] = [
        Metric::Bleu,
        Metric::Meteor,
        Metric::RougeL,
        Metric::CiderD,
        Metric::CiderOriginal,
        Metric::Spice,
        Metric::Spider,
    ];

    /// The metrics computed when none are requested (pycocoevalcap's set, SPICE aside).
    pub const DEFAULT: [Metric; 4] = [Metric::Bleu, Metric::Meteor, Metric::RougeL, Metric::CiderD];

    /// The name used in `--metrics` and in the API's `metrics` list.
    pub fn name(self) -> &'static str {
        match self {
            Metric::Bleu => "bleu",
            Metric::Meteor => "meteor",
            Metric::RougeL => "rouge_l",
            Metric::CiderD => "cider_d",
            Metric::CiderOriginal => "cider_original",
            Metric::Spice => "spice",
            Metric::Spider => "spider",
        }
    }

    /// The output keys this metric adds (pycocoevalcap's names).
    pub fn keys(self) -> &'static [&'static str] {
        match self {
            Metric::Bleu => &["Bleu_1", "Bleu_2", "Bleu_3", "Bleu_4"],
            Metric::Meteor => &["METEOR"],
            Metric::RougeL => &["ROUGE_L"],
            Metric::CiderD => &["CIDEr"],
            Metric::CiderOriginal => &["CIDEr_original"],
            Metric::Spice => &["SPICE"],
            Metric::Spider => &["SPIDEr"],
        }
    }

    /// Parses one metric name (case-insensitive; the output keys are accepted too).
    pub fn parse(s: &str) -> Result<Metric, InputError> {
        let t = s.trim().to_ascii_lowercase();
        let m = match t.as_str() {
            "bleu" | "bleu_1" | "bleu_2" | "bleu_3" | "bleu_4" => Metric::Bleu,
            "meteor" => Metric::Meteor,
            "rouge_l" | "rouge-l" | "rougel" => Metric::RougeL,
            "cider_d" | "cider-d" | "ciderd" => Metric::CiderD,
            "cider_original" => Metric::CiderOriginal,
            "spice" => Metric::Spice,
            "spider" => Metric::Spider,
            "cider" => {
                return Err(InputError::new(
                    ErrorCode::UnknownMetric,
                    "metric \"cider\" is ambiguous: use \"cider_d\" (pycocoevalcap's CIDEr key) or \"cider_original\" (Vedantam et al.)",
                ))
            }
            _ => {
                let known: Vec<&str> = Metric::ALL.iter().map(|m| m.name()).collect();
                return Err(InputError::new(
                    ErrorCode::UnknownMetric,
                    format!("unknown metric {s:?}; known metrics: {}", known.join(", ")),
                ));
            }
        };
        Ok(m)
    }

    /// Parses a comma-separated list; duplicates are merged, order is the canonical one.
    pub fn parse_list(s: &str) -> Result<Vec<Metric>, InputError> {
        Metric::normalize(
            s.split(',')
                .filter(|p| !p.trim().is_empty())
                .map(Metric::parse),
        )
    }

    /// Sorts and deduplicates a list of parsed metrics; an empty list is an error.
    pub fn normalize(
        list: impl IntoIterator<Item = Result<Metric, InputError>>,
    ) -> Result<Vec<Metric>, InputError> {
        let mut v = list.into_iter().collect::<Result<Vec<_>, _>>()?;
        if v.contains(&Metric::Spider) {
            // SPIDEr is computed from CIDEr-D and SPICE, which are reported with it.
            v.extend([Metric::CiderD, Metric::Spice]);
        }
        v.sort_unstable();
        v.dedup();
        if v.is_empty() {
            return Err(InputError::new(
                ErrorCode::UnknownMetric,
                "empty metric list",
            ));
        }
        Ok(v)
    }
}

impl std::str::FromStr for Metric {
    type Err = InputError;
    fn from_str(s: &str) -> Result<Metric, InputError> {
        Metric::parse(s)
    }
}

impl serde::Serialize for Metric {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        s.serialize_str(self.name())
    }
}

/// Marks a deserialization error that carries an [`ErrorCode`] of its own (the serde boundary
/// keeps the code: an unknown metric in a request is `unknown_metric`, not `invalid_format`).
pub const CODED_ERROR_TAG: &str = "\u{1}code=";

/// Recovers the code and message that [`Metric`]'s deserializer put into a serde error.
pub fn coded_error(message: &str) -> Option<InputError> {
    let start = message.find(CODED_ERROR_TAG)? + CODED_ERROR_TAG.len();
    let rest = &message[start..];
    let (code, rest) = rest.split_once('\u{1}')?;
    let (msg, _) = rest.split_once('\u{1}')?;
    let code = ErrorCode::ALL.iter().find(|c| c.as_str() == code)?;
    Some(InputError::new(*code, msg))
}

impl<'de> serde::Deserialize<'de> for Metric {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<Metric, D::Error> {
        let s = <std::borrow::Cow<'de, str>>::deserialize(d)?;
        Metric::parse(&s).map_err(|e| {
            serde::de::Error::custom(format!(
                "{CODED_ERROR_TAG}{}\u{1}{}\u{1}",
                e.code.as_str(),
                e.message
            ))
        })
    }
}

#[cfg(feature = "openapi")]
impl utoipa::PartialSchema for Metric {
    fn schema() -> utoipa::openapi::RefOr<utoipa::openapi::schema::Schema> {
        utoipa::openapi::ObjectBuilder::new()
            .schema_type(utoipa::openapi::schema::Type::String)
            .enum_values(Some(Metric::ALL.iter().map(|m| m.name())))
            .description(Some("A metric name (the output keys, e.g. `Bleu_4`, `ROUGE_L`, are accepted too; `cider` is ambiguous on purpose)"))
            .into()
    }
}

#[cfg(feature = "openapi")]
impl utoipa::ToSchema for Metric {}
