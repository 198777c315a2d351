//! The open loop's connections against a real socket server that counts
//! them: a slow target's rate opens more than the floor, and once the rate
//! drops, the ones left idle are closed again (down to the floor per lane).

use crate::common::{rlbench, text, write};
use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

/// Connections open now, and (time, open) at every change.
#[derive(Default)]
struct Count {
    open: AtomicUsize,
    changes: Mutex<Vec<(Instant, usize)>>,
}

impl Count {
    fn changed(&self, by: isize) {
        let open = if by > 0 {
            self.open.fetch_add(1, Ordering::SeqCst) + 1
        } else {
            self.open.fetch_sub(1, Ordering::SeqCst) - 1
        };
        self.changes.lock().unwrap().push((Instant::now(), open));
    }
}

/// A server answering every request after `delay`, on a thread per
/// connection, counting the connections open.
fn counting_server(delay: Duration) -> (u16, Arc<Count>) {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let port = listener.local_addr().unwrap().port();
    let count = Arc::new(Count::default());
    let counted = count.clone();
    std::thread::spawn(move || {
        for stream in listener.incoming().flatten() {
            let count = counted.clone();
            count.changed(1);
            std::thread::spawn(move || {
                answer(stream, delay);
                count.changed(-1);
            });
        }
    });
    (port, count)
}

fn answer(stream: TcpStream, delay: Duration) {
    let mut writer = stream.try_clone().unwrap();
    let mut reader = BufReader::new(stream);
    loop {
        let mut line = String::new();
        loop {
            line.clear();
            match reader.read_line(&mut line) {
                Ok(0) | Err(_) => return,
                Ok(_) if line == "\r\n" => break,
                Ok(_) => {}
            }
        }
        std::thread::sleep(delay);
        let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
        if writer.write_all(ok).is_err() {
            return;
        }
    }
}

#[test]
fn a_slow_targets_extra_connections_close_once_the_rate_drops() {
    // 1,000 requests/s at 50 ms an answer for a second: ~50 in flight, past
    // the two lanes' floors of 16; then 10 requests/s for 2.5 s, which
    // the floors carry easily.
    let (port, count) = counting_server(Duration::from_millis(50));
    let dir = tempfile::tempdir().unwrap();
    let scenario = write(
        dir.path(),
        "drop.toml",
        &format!(
            r#"
name = "drop"
duration = "3.6s"
seed = 1

[target]
kind = "external"
urls = ["http://127.0.0.1:{port}"]
key_header = "X-Customer-Id"

[policy]
algorithm = "sliding_log"
limit = 1000000
window = "1s"

[load]
schedule = "stages"
rate = 1000
keys = 10

[[load.stages]]
target = 1000
duration = "1s"

[[load.stages]]
target = 10
duration = "100ms"

[[arms]]
name = "api"
"#
        ),
    );
    let o = rlbench(
        &[
            "run",
            scenario.to_str().unwrap(),
            "--quiet",
            "--out",
            dir.path().join("out").to_str().unwrap(),
        ],
        dir.path(),
    );
    assert_eq!(o.status.code(), Some(0), "{}", text(&o.stderr));
    let changes = count.changes.lock().unwrap().clone();
    let peak = changes.iter().map(|&(_, n)| n).max().unwrap_or(0);
    assert!(
        peak > 40,
        "the rate needed more than the floors: peak {peak}"
    );
    // Late in the run: idle connections closed after a second idle, down
    // to 16 per lane (a lane per core).
    let lanes = std::thread::available_parallelism().map_or(1, |n| n.get());
    let floors = 16 * lanes;
    let open_at = |t: Instant| {
        changes
            .iter()
            .take_while(|&&(at, _)| at <= t)
            .last()
            .map_or(0, |&(_, n)| n)
    };
    // Time 0: the first connection, opened as the load starts (rlbench's
    // own start-up, slow on a busy machine, is not counted). At 3.3 s the
    // load still runs, 2.2 s into the slow part.
    let first = changes.first().map(|&(at, _)| at).expect("connections");
    let last = changes.last().map(|&(at, _)| at).unwrap();
    assert!(
        last - first >= Duration::from_millis(3_300),
        "{:?}",
        last - first
    );
    let left = open_at(first + Duration::from_millis(3_300));
    assert!(
        left <= floors && left < peak,
        "{left} connections open at 3.3 s (peak {peak}, floors {floors})"
    );
}
