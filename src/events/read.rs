//! Reading a trace back, whichever form it is in: the binary trace
//! (`events/<arm>.trace`), or the CSV of a run folder written before it.

pub use super::binary::Record;
use super::Event;
use std::collections::HashMap;
use std::io::Read;
use std::path::Path;

/// Streams the events of a trace file, binary or CSV (told by its first
/// bytes, not its name).
pub fn read(path: &Path) -> Result<Box<dyn Iterator<Item = Result<Event, String>>>, String> {
    let mut start = [0u8; 8];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut start))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    if start[..n] == super::binary::MAGIC[..] {
        Ok(Box::new(super::binary::read(path)?))
    } else {
        Ok(Box::new(super::csv::read(path)?))
    }
}

/// Streams a trace as key names and numbered events (`binary::Record`):
/// a binary trace as it is stored, a CSV one with its keys numbered as
/// they come. Each distinct name is defined once.
pub fn records(path: &Path) -> Result<impl Iterator<Item = Result<Record, String>>, String> {
    let decoded = decode(path)?;
    // Decoded on a thread of its own, a batch at a time: the caller works
    // on one batch while the next is read.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Result<Record, String>>>(8);
    std::thread::spawn(move || {
        let mut decoded = decoded;
        loop {
            let batch: Vec<_> = decoded.by_ref().take(8_192).collect();
            let last = batch.len() < 8_192;
            if batch.is_empty() || tx.send(batch).is_err() || last {
                break;
            }
        }
    });
    Ok(rx.into_iter().flatten())
}

type Decoded = Box<dyn Iterator<Item = Result<Record, String>> + Send>;

fn decode(path: &Path) -> Result<Decoded, String> {
    let mut start = [0u8; 8];
    let n = std::fs::File::open(path)
        .and_then(|mut f| f.read(&mut start))
        .map_err(|e| format!("cannot read {}: {e}", path.display()))?;
    // File numbers → distinct keys: a file naming a key twice maps both
    // numbers to one.
    let mut ids: HashMap<String, u32> = HashMap::new();
    if start[..n] == super::binary::MAGIC[..] {
        let mut alias: Vec<u32> = Vec::new();
        Ok(Box::new(super::binary::records(path)?.filter_map(
            move |r| match r {
                Ok(Record::Key(name)) => {
                    let next = ids.len() as u32;
                    let id = *ids.entry(name.clone()).or_insert(next);
                    alias.push(id);
                    (id == next).then_some(Ok(Record::Key(name)))
                }
                Ok(Record::Event(key, e)) => Some(Ok(Record::Event(alias[key as usize], e))),
                Err(e) => Some(Err(e)),
            },
        )))
    } else {
        let mut pending: Option<Record> = None;
        let mut events = super::csv::read(path)?;
        Ok(Box::new(std::iter::from_fn(move || {
            if let Some(r) = pending.take() {
                return Some(Ok(r));
            }
            match events.next()? {
                Err(e) => Some(Err(e)),
                Ok(mut e) => {
                    let key = std::mem::take(&mut e.key);
                    match ids.get(&key) {
                        Some(&id) => Some(Ok(Record::Event(id, e))),
                        None => {
                            let id = ids.len() as u32;
                            ids.insert(key.clone(), id);
                            pending = Some(Record::Event(id, e));
                            Some(Ok(Record::Key(key)))
                        }
                    }
                }
            }
        })))
    }
}
