//! Writing the trace: binary records (`binary`), on a thread of its own so
//! that senders never touch the disk. What is written reaches the file at
//! least every [`FLUSH_EVERY`], so a run that is killed loses at most
//! about that much; a finished trace is sealed (`integrity`).

use super::binary::Encoder;
use super::integrity::{Seal, Sealing};
use super::{Batch, EventsError};
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio::sync::mpsc::error::TryRecvError;

/// How long the writer sleeps when no event is waiting.
const POLL: Duration = Duration::from_millis(1);
/// The longest events wait in the writer's buffer.
pub(crate) const FLUSH_EVERY: Duration = Duration::from_secs(1);

/// Writes events on a thread of its own; senders never touch the disk.
pub(crate) struct EventWriter {
    tx: mpsc::Sender<Batch>,
    thread: JoinHandle<Result<Seal, EventsError>>,
}

impl EventWriter {
    pub(crate) fn create(path: &Path) -> Result<Self, EventsError> {
        let file = File::create(path).map_err(|source| EventsError::Create {
            path: path.to_path_buf(),
            source,
        })?;
        let path = path.to_path_buf();
        let (tx, mut rx) = mpsc::channel::<Batch>(16_384);
        let thread = std::thread::spawn(move || {
            let failed = |source| EventsError::Write {
                path: path.clone(),
                source,
            };
            // Sealed below the buffer: the sum is taken a buffer at a time.
            let mut out = BufWriter::with_capacity(1 << 20, Sealing::new(file));
            Encoder::start(&mut out).map_err(failed)?;
            let mut encoder = Encoder::default();
            let mut written = 0;
            let mut flushed = Instant::now();
            // Polls rather than parks: a parked writer would have to be
            // woken (a futex call) for every batch at high rates.
            loop {
                match rx.try_recv() {
                    Ok(batch) => {
                        for event in &batch {
                            encoder.write(&mut out, event).map_err(failed)?;
                        }
                        written += batch.len() as u64;
                    }
                    Err(TryRecvError::Empty) => std::thread::sleep(POLL),
                    Err(TryRecvError::Disconnected) => break,
                }
                if flushed.elapsed() >= FLUSH_EVERY {
                    out.flush().map_err(failed)?;
                    flushed = Instant::now();
                }
            }
            out.flush().map_err(failed)?;
            Ok(out.get_ref().seal(written))
        });
        Ok(EventWriter { tx, thread })
    }

    pub(crate) fn sender(&self) -> mpsc::Sender<Batch> {
        self.tx.clone()
    }

    /// Waits until every sender is gone and all events are on disk; the
    /// trace's seal.
    pub(crate) fn finish(self) -> Result<Seal, EventsError> {
        drop(self.tx);
        self.thread
            .join()
            .map_err(|_| EventsError::WriterPanicked)?
    }
}
