//! Traces larger than memory: the analysis keeps every request of the keys
//! it judges until they are judged (about 24 bytes each), so a trace whose
//! requests would not fit is split, in one read, into per-shard spill
//! traces on disk (the same binary form, each holding the keys of one
//! CRC-32 shard, as `rlbench report --shard` takes them); each is judged
//! on its own, one at a time, and their judgments added (`judgments`) —
//! exactly what judging every key at once gives.

use crate::analyze::judgments::Shard;
use crate::events::binary::{Encoder, Record, Renumbering};
use crate::events::integrity::Check;
use crate::events::{EventsError, Place};
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// Bytes the analysis holds per request of the keys it judges (the
/// 20-byte request with its seq and advertised spare capacity, and the
/// room its trace's blocks keep to grow: a fifth on average, at most
/// half), against which the memory is weighed.
pub(crate) const BYTES_PER_REQUEST: u64 = 24;

/// The most spill shards: beyond, each judge's part is small anyway.
const MOST: u32 = 256;

/// How many shards a trace of `events` requests needs to be judged in
/// `budget` bytes (1: in memory, no spill).
pub(crate) fn shards_for(events: u64, budget: u64) -> u32 {
    let need = events.saturating_mul(BYTES_PER_REQUEST);
    need.div_ceil(budget.max(1)).clamp(1, u64::from(MOST)) as u32
}

/// The memory the analysis may take: `RLBENCH_JUDGE_MEMORY` (bytes, e.g.
/// for tests), else half of what the machine has available.
pub(crate) fn budget() -> u64 {
    if let Some(bytes) = std::env::var("RLBENCH_JUDGE_MEMORY")
        .ok()
        .and_then(|v| v.parse().ok())
    {
        return bytes;
    }
    let available_kb = std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|m| {
            m.lines()
                .find(|l| l.starts_with("MemAvailable:"))
                .and_then(|l| l.split_whitespace().nth(1))
                .and_then(|v| v.parse::<u64>().ok())
        })
        .unwrap_or(4 << 20);
    available_kb * 1024 / 2
}

/// A trace split: the spill traces (in a folder removed when dropped)
/// and, per shard, each key's number in the whole trace by its number in
/// the spill trace.
pub(crate) struct Spilled {
    _dir: tempfile::TempDir,
    pub files: Vec<PathBuf>,
    pub numbers: Vec<Vec<u32>>,
    /// Events read.
    pub events: u64,
}

/// Splits the trace at `path` into `of` spill traces, by key, in a
/// temporary folder beside it (`events/`, where there is room for the
/// trace already).
pub(crate) fn split(path: &Path, check: Check, of: u32) -> Result<Spilled, EventsError> {
    let beside = path.parent().unwrap_or(Path::new("."));
    let failed = |e: std::io::Error| EventsError::Write {
        path: beside.to_path_buf(),
        source: e,
    };
    let dir = tempfile::Builder::new()
        .prefix(".rlbench-spill-")
        .tempdir_in(beside)
        .map_err(failed)?;
    let files: Vec<PathBuf> = (0..of)
        .map(|i| dir.path().join(format!("{i}.trace")))
        .collect();
    let mut outs = Vec::with_capacity(of as usize);
    for f in &files {
        let mut out = BufWriter::with_capacity(1 << 20, std::fs::File::create(f).map_err(failed)?);
        Encoder::start(&mut out).map_err(failed)?;
        outs.push(out);
    }
    let mut writers: Vec<Renumbering> = (0..of).map(|_| Renumbering::default()).collect();
    let mut numbers: Vec<Vec<u32>> = vec![Vec::new(); of as usize];
    // Each key of the whole trace: its name, its shard, and whether the
    // shard has named it yet.
    let mut keys: Vec<(String, u32, bool)> = Vec::new();
    let mut events = 0u64;
    for record in crate::events::binary::records(path, check)? {
        match record? {
            Record::Key(name) => {
                let shard = (0..of)
                    .find(|&index| Shard { index, of }.holds(&name))
                    .unwrap_or(0);
                keys.push((name, shard, false));
            }
            Record::Event(key, e) => {
                let Some((name, shard, named)) = keys.get_mut(key as usize) else {
                    return Err(EventsError::Damaged {
                        path: path.to_path_buf(),
                        place: Place::Whole,
                        flaw: crate::events::Flaw::UndefinedKey,
                    });
                };
                let s = *shard as usize;
                if !*named {
                    *named = true;
                    numbers[s].push(key);
                }
                writers[s]
                    .write(&mut outs[s], key, name, &e)
                    .map_err(failed)?;
                events += 1;
            }
        }
    }
    for mut out in outs {
        out.flush().map_err(failed)?;
    }
    Ok(Spilled {
        _dir: dir,
        files,
        numbers,
        events,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_shards_needed_follow_the_memory() {
        // 100 M requests at 24 bytes: 2.4 GB.
        assert_eq!(shards_for(100_000_000, 4_000_000_000), 1);
        assert_eq!(shards_for(100_000_000, 2_400_000_000), 1);
        assert_eq!(shards_for(100_000_000, 2_399_999_999), 2);
        assert_eq!(shards_for(100_000_000, 1_000_000_000), 3);
        assert_eq!(shards_for(0, 1), 1);
        assert_eq!(shards_for(100_000_000, 1), MOST);
        // No budget at all: a byte each, 240 for 10 requests.
        assert_eq!(shards_for(10, 0), 240);
    }
}
