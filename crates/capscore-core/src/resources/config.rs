//! [`ResourceArgs`]: where the resource cache is and whether it may be filled on first use
//! (the CLI and the server read it from flags and environment), with the
//! fetch-if-needed-then-load helpers every front end calls.
//!
//! Must not: import the CLI or the server (both import this), or map errors to exit codes or
//! HTTP statuses (callers do).

use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::cache::{default_cache_dir, how_to_get, ResourceError};
use super::{fetch, load};
use crate::engine::Metric;
use crate::metrics::meteor::Meteor;
use crate::metrics::spice::{Spice, SynonymSource};
use crate::nlp::lemma::Lemmatizer;
use crate::nlp::Nlp;

/// Where resources live and whether they may be downloaded.
#[derive(Debug, Clone, Default)]
pub struct ResourceArgs {
    /// Cache folder for upstream data (default: the user's cache folder + capscore/).
    pub cache_dir: Option<PathBuf>,
    /// Never download: a metric whose resources are missing is reported, not fetched.
    pub offline: bool,
    /// Told as each step of a first-use fetch starts (a front end's progress); with it, the
    /// front end also says that a fetch starts (else a line on stderr does).
    pub on_step: Option<fetch::OnStep>,
}

/// A run's metrics with the resources they need, loaded by the one policy every front end
/// follows ([`ResourceArgs::load_for`]).
#[derive(Default)]
pub struct Loaded {
    /// The metrics that will run (a default run may have left METEOR out).
    pub metrics: Vec<Metric>,
    /// METEOR's data (loaded for METEOR, and for SPICE, which shares its synonyms).
    pub meteor: Option<Arc<Meteor>>,
    /// SPICE's parser, lemmas and synonyms.
    pub spice: Option<Arc<Spice>>,
    /// Metrics left out of a default run, each with why and how to get its data.
    pub skipped: Vec<(Metric, String)>,
}

impl Loaded {
    /// The engine options of these metrics and resources (everything else at its default).
    pub fn options(&self) -> crate::engine::Options<'_> {
        crate::engine::Options {
            meteor: self.meteor.as_deref(),
            spice: self.spice.as_deref(),
            ..crate::engine::Options::new(&self.metrics)
        }
    }
}

impl ResourceArgs {
    /// Loads what `metrics` need (fetching first unless offline). The policy: a metric the
    /// caller named (`explicit`) must load, or the error says what is missing and how to get
    /// it; in a default run, METEOR whose data is missing and cannot be fetched is left out and
    /// listed in [`Loaded::skipped`] (the rest is scored). SPICE is never in a default run.
    pub fn load_for(&self, metrics: Vec<Metric>, explicit: bool) -> Result<Loaded, ResourceError> {
        let mut metrics = metrics;
        let mut skipped = Vec::new();
        let dir = self.dir();
        let want_spice = metrics.contains(&Metric::Spice);
        let meteor = if metrics.contains(&Metric::Meteor) {
            let why = match self.load_meteor() {
                Ok(Some(m)) => Ok(m),
                Ok(None) => Err(format!(
                    "its data is missing from {} (offline)",
                    dir.display()
                )),
                Err(e) => Err(e.to_string()),
            };
            match why {
                Ok(m) => Some(Arc::new(m)),
                Err(why) if explicit => {
                    return Err(ResourceError::Unavailable {
                        what: "METEOR".into(),
                        why,
                        how: how_to_get(false, &dir),
                    })
                }
                Err(why) => {
                    skipped.push((
                        Metric::Meteor,
                        format!(
                            "METEOR skipped: {why}. To score METEOR: {}",
                            how_to_get(false, &dir)
                        ),
                    ));
                    metrics.retain(|m| *m != Metric::Meteor);
                    None
                }
            }
        } else {
            None
        };
        let spice = if want_spice {
            let s = self
                .load_spice(meteor.clone())
                .map_err(|e| ResourceError::Unavailable {
                    what: "SPICE".into(),
                    why: e.to_string(),
                    how: how_to_get(true, &dir),
                })?;
            Some(Arc::new(s))
        } else {
            None
        };
        Ok(Loaded {
            metrics,
            meteor,
            spice,
            skipped,
        })
    }

    /// The cache folder in use.
    pub fn dir(&self) -> PathBuf {
        self.cache_dir.clone().unwrap_or_else(default_cache_dir)
    }

    /// Loads METEOR, fetching its data first unless offline. `Ok(None)` when offline and the
    /// cache is empty; an error when the data exists but fails to load or verify, or when the
    /// download fails.
    pub fn load_meteor(&self) -> Result<Option<Meteor>, ResourceError> {
        let dir = self.dir();
        let ready = load::meteor_ready(&dir);
        if self.offline && !ready {
            return Ok(None);
        }
        self.ensure(ready, "METEOR resources", fetch::meteor_with)?;
        load::meteor(&dir)
            .map(Some)
            .map_err(ResourceError::loading("METEOR resources"))
    }

    /// True when SPICE's resources (parser model and METEOR's data) are in the cache.
    pub fn spice_ready(&self) -> bool {
        let dir = self.dir();
        load::nlp_ready(&dir) && load::meteor_ready(&dir)
    }

    /// Loads SPICE's resources (parser model, lemma exceptions, synonym data), fetching them
    /// first unless offline; the synonyms of an already loaded METEOR are shared.
    pub fn load_spice(&self, meteor: Option<Arc<Meteor>>) -> Result<Spice, ResourceError> {
        let dir = self.dir();
        self.ensure(self.spice_ready(), "SPICE's resources", |d, o| {
            fetch::meteor_with(d, o)?;
            fetch::nlp_with(d, o)
        })?;
        let loaded = match meteor {
            Some(m) => load::spice(&dir, SynonymSource::Meteor(m)),
            None => load::spice_standalone(&dir),
        };
        loaded.map_err(ResourceError::loading("SPICE's resources"))
    }

    /// Loads the English parser, fetching its model first unless offline.
    pub fn load_nlp(&self) -> Result<Nlp, ResourceError> {
        let dir = self.dir();
        self.ensure(load::nlp_ready(&dir), "the parser model", fetch::nlp_with)?;
        load::nlp(&dir).map_err(ResourceError::loading("the parser model"))
    }

    /// Loads the lemmatizer's exception lists (fetched with the parser model: call
    /// [`ResourceArgs::load_nlp`] first).
    pub fn load_lemmatizer(&self) -> Result<Lemmatizer, ResourceError> {
        load::lemmatizer(&self.dir()).map_err(ResourceError::loading("the lemma exceptions"))
    }

    /// Fetches `what` with `fetch` when it is not `ready`, unless offline (then an error
    /// naming it).
    fn ensure(
        &self,
        ready: bool,
        what: &str,
        fetch: impl FnOnce(&Path, &fetch::FetchOptions) -> Result<fetch::FetchReport, ResourceError>,
    ) -> Result<(), ResourceError> {
        if ready {
            return Ok(());
        }
        let dir = self.dir();
        if self.offline {
            return Err(ResourceError::Offline {
                what: what.into(),
                dir,
            });
        }
        // A front end that draws the steps says it itself (above what it draws).
        if self.on_step.is_none() {
            eprintln!(
                "capscore: fetching {what} into {} (first use)",
                dir.display()
            );
        }
        let opts = fetch::FetchOptions {
            on_step: self.on_step.clone(),
            ..fetch::FetchOptions::from_env()
        };
        fetch(&dir, &opts)
            .map(|_| ())
            .map_err(|e| ResourceError::Fetching {
                what: what.into(),
                source: Box::new(e),
            })
    }
}
