//! What a run collected besides its events, written into the run folder
//! (`run.json`, `events/<arm>.json`) so that every report can be rebuilt
//! from the folder alone (`rlbench report RUN_DIR`).

mod agent;
mod arm;
mod measured;
mod plausible;
mod run;

pub(crate) use agent::{AgentRecord, TakenOver};
pub(crate) use arm::{ArmRecord, Spoofed, DEFAULT_WITNESSES};
pub(crate) use measured::{
    Applied, Fallbacks, MetricsRecord, MetricsSample, NotSent, RedisNodeUse, MAX_METRICS_SAMPLES,
};
pub(crate) use run::{RunRecord, RunState};

use super::StoreError;
use serde::de::DeserializeOwned;
use serde::Serialize;
use std::path::Path;

/// Reads the arm record of the arm listed as `name`, which must name itself
/// so (a record is never taken for another arm's).
pub(crate) fn read_arm(path: &Path, name: &str) -> Result<ArmRecord, StoreError> {
    let record: ArmRecord = read(path)?;
    if let Err(why) = record.plausible() {
        return Err(StoreError::Implausible {
            path: path.to_path_buf(),
            why,
        });
    }
    if record.name != name {
        return Err(StoreError::OtherArm {
            path: path.to_path_buf(),
            found: record.name,
            listed: name.to_string(),
        });
    }
    Ok(record)
}

/// Writes a record whole (`atomic`): a reader sees the old one or the new.
pub(crate) fn write<T: Serialize>(path: &Path, value: &T) -> Result<(), StoreError> {
    let json = serde_json::to_string_pretty(value).map_err(|source| StoreError::Json {
        path: path.to_path_buf(),
        source,
    })?;
    super::atomic::write(path, (json + "\n").as_bytes())
}

pub(crate) fn read<T: DeserializeOwned>(path: &Path) -> Result<T, StoreError> {
    let text =
        crate::files::read_to_string(path, crate::files::RECORD_BYTES).map_err(|source| {
            StoreError::Read {
                path: path.to_path_buf(),
                source,
            }
        })?;
    serde_json::from_str(&text).map_err(|source| StoreError::Json {
        path: path.to_path_buf(),
        source,
    })
}
