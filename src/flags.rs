//! Flags shared by several commands (and the server's configuration), read from the command
//! line or the environment, and turned into the core's plain settings.

use std::path::PathBuf;

use clap::Args;

use crate::resources::ResourceArgs;

/// Where resources live and whether they may be downloaded (`capscore score`, `parse`, `serve`).
#[derive(Debug, Clone, Args)]
pub struct ResourceFlags {
    /// Cache folder for upstream data (default: the user's cache folder + capscore/).
    #[arg(long, env = "CAPSCORE_CACHE_DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Never download: a metric whose resources are missing is reported, not fetched.
    #[arg(long, env = "CAPSCORE_OFFLINE", value_parser = clap::builder::BoolishValueParser::new())]
    pub offline: bool,
}

impl ResourceFlags {
    /// The core's settings these flags stand for.
    pub fn get(&self) -> ResourceArgs {
        ResourceArgs {
            cache_dir: self.cache_dir.clone(),
            offline: self.offline,
            on_step: None,
        }
    }
}
