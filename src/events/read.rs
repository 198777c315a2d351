//! Reading a trace back, whichever form it is in: the binary trace
//! (`events/<arm>.trace`), or the CSV of a run folder written before it
//! (`events/<arm>.csv`), told by the file's name. Either is held to a
//! [`Check`]: a damaged trace is an error, never a smaller verdict.

pub use super::binary::Record;
use super::integrity::{Check, Checker};
use super::{Event, EventsError, Place};
use std::collections::HashMap;
use std::path::Path;

/// The CSV of a folder written before the binary trace.
fn is_csv(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "csv")
}

/// Streams the events of a trace file, binary or CSV.
pub fn read(
    path: &Path,
    check: Check,
) -> Result<Box<dyn Iterator<Item = Result<Event, EventsError>>>, EventsError> {
    if is_csv(path) {
        Ok(Box::new(checked_csv(path)?))
    } else {
        Ok(Box::new(super::binary::read(path, check)?))
    }
}

/// A CSV trace's events, each held to the same rules as a binary one's
/// (CSV traces were never sealed), located by their place in it.
fn checked_csv(
    path: &Path,
) -> Result<impl Iterator<Item = Result<Event, EventsError>>, EventsError> {
    let path_buf = path.to_path_buf();
    let mut checker = Checker::default();
    let mut n = 0u64;
    let mut failed = false;
    Ok(super::csv::read(path)?.map_while(move |e| {
        if failed {
            return None;
        }
        n += 1;
        let checked = e.and_then(|e| {
            checker
                .event(&e)
                .map(|()| e)
                .map_err(|flaw| EventsError::Damaged {
                    path: path_buf.clone(),
                    place: Place::Event(n),
                    flaw,
                })
        });
        failed = checked.is_err();
        Some(checked)
    }))
}

/// Streams a trace as key names and numbered events (`binary::Record`):
/// a binary trace as it is stored, a CSV one with its keys numbered as
/// they come. Each distinct name is defined once.
pub fn records(
    path: &Path,
    check: Check,
) -> Result<impl Iterator<Item = Result<Record, EventsError>>, EventsError> {
    let decoded = decode(path, check)?;
    // Decoded on a thread of its own, a batch at a time: the caller works
    // on one batch while the next is read.
    let (tx, rx) = std::sync::mpsc::sync_channel::<Vec<Result<Record, EventsError>>>(8);
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

type Decoded = Box<dyn Iterator<Item = Result<Record, EventsError>> + Send>;

fn decode(path: &Path, check: Check) -> Result<Decoded, EventsError> {
    // File numbers → distinct keys: a file naming a key twice maps both
    // numbers to one.
    let mut ids: HashMap<String, u32> = HashMap::new();
    if !is_csv(path) {
        let mut alias: Vec<u32> = Vec::new();
        Ok(Box::new(super::binary::records(path, check)?.filter_map(
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
        let mut events = checked_csv(path)?;
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
