//! Why a configuration was refused: each variant names the file, key or
//! flag at fault and what the operator can do about it. Every config section
//! checks itself with this one type.

use std::path::PathBuf;

#[derive(Debug, thiserror::Error)]
pub enum ConfigError {
    #[error("cannot read config file {path}: {source}")]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    #[error("config file {path} is not valid YAML: {source}")]
    Yaml {
        path: PathBuf,
        source: serde_yaml_ng::Error,
    },
    #[error("config file {0} must be a mapping of sections to keys")]
    NotAMapping(PathBuf),
    #[error("unknown config key `{0}`; run `ludus help` for the list of keys")]
    UnknownKey(String),
    #[error("config key `{key}`: {message}")]
    BadValue { key: String, message: String },
    #[error("flag `{0}` needs a value: write `{0} VALUE` or `{0}=VALUE`")]
    MissingValue(String),
    #[error("unexpected argument `{0}`: config flags look like `--section.key value`")]
    BadArgument(String),
}
