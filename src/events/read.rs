//! Reading a trace back, whichever form it is in: the binary trace
//! (`events/<arm>.trace`), or the CSV of a run folder written before it
//! (`events/<arm>.csv`), told by the file's name. Either is held to a
//! [`Check`]: a damaged trace is an error, never a smaller verdict.

pub(crate) use super::binary::Record;
use super::integrity::{Check, Checker};
use super::{Event, EventsError, Place};
use std::collections::HashMap;
use std::path::Path;

/// The CSV of a folder written before the binary trace.
fn is_csv(path: &Path) -> bool {
    path.extension().is_some_and(|e| e == "csv")
}

/// Streams the events of a trace file, binary or CSV.
pub(crate) fn read(
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
pub(crate) fn records(
    path: &Path,
    check: Check,
) -> Result<impl Iterator<Item = Result<Record, EventsError>>, EventsError> {
    Ok(batches(path, check)?.flat_map(|batch| match batch {
        Ok(records) => Box::new(records.into_iter().map(Ok)) as Box<dyn Iterator<Item = _>>,
        Err(e) => Box::new(std::iter::once(Err(e))),
    }))
}

/// Records a batch holds.
const BATCH: usize = 8_192;

/// [`records`] a batch at a time, decoded on a thread of its own: the
/// caller works on one batch while the next is read, and reads each
/// record where the decoder put it. An error ends the stream.
pub(crate) fn batches(
    path: &Path,
    check: Check,
) -> Result<impl Iterator<Item = Result<Vec<Record>, EventsError>>, EventsError> {
    let mut decoded = decode(path, check)?;
    let (tx, rx) = std::sync::mpsc::sync_channel::<Result<Vec<Record>, EventsError>>(2);
    std::thread::spawn(move || loop {
        let mut batch = Vec::with_capacity(BATCH);
        let (more, failed) = match decoded.fill(&mut batch) {
            Ok(more) => (more, None),
            Err(e) => (false, Some(e)),
        };
        if !batch.is_empty() && tx.send(Ok(batch)).is_err() {
            break;
        }
        if let Some(e) = failed {
            let _ = tx.send(Err(e));
        }
        if !more {
            break;
        }
    });
    Ok(rx.into_iter())
}

/// A trace's records with each distinct key name defined once.
enum Decoded {
    Binary {
        decoder: Box<super::binary::Decoder>,
        /// File numbers → distinct keys: a file naming a key twice maps
        /// both numbers to one.
        ids: HashMap<String, u32>,
        alias: Vec<u32>,
        /// Some file number maps to another key's (a name given twice):
        /// from then on events are renumbered.
        renumbered: bool,
    },
    Csv(Box<dyn Iterator<Item = Result<Record, EventsError>> + Send>),
}

impl Decoded {
    /// Puts up to a batch of records into `out`; false once the trace ended.
    fn fill(&mut self, out: &mut Vec<Record>) -> Result<bool, EventsError> {
        match self {
            Decoded::Binary {
                decoder,
                ids,
                alias,
                renumbered,
            } => {
                let mut named = Vec::new();
                let more = decoder.fill(out, BATCH, &mut named)?;
                if named.is_empty() && !*renumbered {
                    return Ok(more);
                }
                // Renumbered where they lie; a name given twice is dropped.
                let mut twice: Vec<usize> = Vec::new();
                for &i in &named {
                    if let Record::Key(name) = &out[i] {
                        let next = ids.len() as u32;
                        let id = *ids.entry(name.clone()).or_insert(next);
                        alias.push(id);
                        if id != next {
                            twice.push(i);
                            *renumbered = true;
                        }
                    }
                }
                if *renumbered {
                    // Events before a key's record only name earlier keys,
                    // whose aliases are set: all can be renumbered now.
                    for record in out.iter_mut() {
                        if let Record::Event(key, _) = record {
                            *key = alias[*key as usize];
                        }
                    }
                }
                if !twice.is_empty() {
                    let mut i = 0;
                    let mut twice = twice.into_iter().peekable();
                    out.retain(|_| {
                        let drop = twice.next_if_eq(&i).is_some();
                        i += 1;
                        !drop
                    });
                }
                Ok(more)
            }
            Decoded::Csv(records) => {
                for _ in 0..BATCH {
                    match records.next() {
                        Some(record) => out.push(record?),
                        None => return Ok(false),
                    }
                }
                Ok(true)
            }
        }
    }
}

fn decode(path: &Path, check: Check) -> Result<Decoded, EventsError> {
    if !is_csv(path) {
        return Ok(Decoded::Binary {
            decoder: Box::new(super::binary::Decoder::open(path, check)?),
            ids: HashMap::new(),
            alias: Vec::new(),
            renumbered: false,
        });
    }
    let mut ids: HashMap<String, u32> = HashMap::new();
    let mut pending: Option<Record> = None;
    let mut events = checked_csv(path)?;
    Ok(Decoded::Csv(Box::new(std::iter::from_fn(move || {
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
    }))))
}
