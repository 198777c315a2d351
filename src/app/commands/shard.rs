//! A run's keys judged in shards: `rlbench report RUN_DIR --shard i/n`
//! judges the keys of shard `i` (CRC-32 of the key's name modulo `n`) of
//! every arm and keeps their judgments in the run folder
//! (`events/<arm>.shard-<i>-of-<n>.json`), so that n machines — or a
//! Job's n pods sharing the folder — judge a huge run; `rlbench report
//! RUN_DIR --shards n` then adds the n shards' judgments and finishes the
//! folder exactly as `rlbench report RUN_DIR` would have: the same
//! summary.json, the same gate.

use super::ending::{self, Ending};
use crate::analyze::judgments::{Judgments, Shard};
use crate::analyze::witnesses::Picker;
use crate::app::pipeline::analysis::{self, ArmKeys};
use crate::app::pipeline::finish::Judged;
use crate::error::{Error, Exit};
use crate::events::integrity::Seal;
use crate::store::records::{self, ArmRecord};
use crate::store::summary::Summary;
use serde::{Deserialize, Serialize};
use std::path::{Path, PathBuf};

/// What a shard's file says it is.
const SCHEMA: &str = "rlbench.shard/v1";

/// One shard of one arm's keys, judged.
#[derive(Debug, Serialize, Deserialize)]
struct ShardFile {
    schema: String,
    arm: String,
    /// `i/n`.
    shard: String,
    /// The trace judged (its seal): shards of different traces do not add.
    trace: Option<Seal>,
    judgments: Judgments,
    /// Against the lease bound (`redis_batched` arms with a fixed window).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    lease: Option<Judgments>,
}

/// What judging one shard wrote: per arm, its file and the keys judged.
pub(crate) struct Written {
    pub arm: String,
    pub path: PathBuf,
    pub keys: u64,
}

/// Judges shard `text` (`i/n`) of every arm's keys of the run in `dir`,
/// keeping the judgments in the folder. The gate is not judged here.
pub(crate) fn judge(dir: &Path, text: &str) -> Result<Vec<Written>, Error> {
    let shard = Shard::parse(text)?;
    let (folder, run) = crate::app::pipeline::journal::read_back(dir)?;
    let mut written = Vec::new();
    for name in &run.arms {
        let record: ArmRecord = records::read_arm(&folder.arm_record(name), name)?;
        let figures = analysis::analyze_arm(
            &folder,
            &record,
            Picker::new(record.witnesses),
            ArmKeys::Shard(shard),
        )?;
        let path = folder.shard(name, shard.index, shard.of);
        let file = ShardFile {
            schema: SCHEMA.to_string(),
            arm: name.clone(),
            shard: shard.to_string(),
            trace: record.trace,
            judgments: figures.judgments,
            lease: figures.lease_judgments,
        };
        records::write(&path, &file)?;
        written.push(Written {
            arm: name.clone(),
            path,
            keys: file.judgments.keys,
        });
    }
    Ok(written)
}

/// Finishes the run in `dir` from the judgments of its `n` shards: every
/// shard of every arm must be there, of the same trace.
pub(crate) fn rebuild(dir: &Path, n: u32) -> Result<(Summary, Exit), Error> {
    if n == 0 || n > crate::analyze::judgments::MAX_SHARDS {
        return Err(Error::input(format!(
            "--shards {n}: expected 1 to {}",
            crate::analyze::judgments::MAX_SHARDS
        )));
    }
    let (folder, run) = crate::app::pipeline::journal::read_back(dir)?;
    let mut judged = Judged::new();
    for name in &run.arms {
        let record: ArmRecord = records::read_arm(&folder.arm_record(name), name)?;
        let mut sum = Judgments::default();
        let mut lease: Option<Judgments> = None;
        for index in 0..n {
            let path = folder.shard(name, index, n);
            if !path.exists() {
                return Err(Error::input(format!(
                    "{}: shard {index}/{n} of arm {name} was not judged: run rlbench report {} --shard {index}/{n}",
                    path.display(),
                    dir.display()
                )));
            }
            let file: ShardFile = records::read(&path)?;
            let wanted = format!("{index}/{n}");
            if file.schema != SCHEMA || file.arm != *name || file.shard != wanted {
                return Err(Error::input(format!(
                    "{}: not shard {wanted} of arm {name} ({} of arm {}, {})",
                    path.display(),
                    file.shard,
                    file.arm,
                    file.schema
                )));
            }
            if file.trace != record.trace {
                return Err(Error::input(format!(
                    "{}: judged another trace than the arm's (its seal differs): judge shard {wanted} again",
                    path.display()
                )));
            }
            sum.add(&file.judgments);
            if let Some(l) = &file.lease {
                lease.get_or_insert_with(Judgments::default).add(l);
            }
        }
        judged.insert(name.clone(), (sum, lease));
    }
    crate::app::commands::report::rebuild_judged(dir, &judged)
}

/// `rlbench report RUN_DIR --shard I/N`: this shard's keys judged, each
/// arm's file said.
pub(super) fn execute(
    run_dir: &Path,
    shard: &str,
    out: &mut dyn std::io::Write,
) -> Result<Ending, Error> {
    let written = judge(run_dir, shard)?;
    let lines: String = written
        .iter()
        .map(|w| {
            format!(
                "shard {shard} of {}: {} keys judged: {}\n",
                w.arm,
                w.keys,
                w.path.display()
            )
        })
        .collect();
    ending::write_out(out, &lines)?;
    Ok(Ending::passed())
}
