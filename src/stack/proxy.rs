//! A TCP proxy rlbench runs in front of its own Redis when a scenario adds
//! latency, or between a primary and its replica, or in front of a primary
//! that may fail over: clients connect to the proxy, the proxy to Redis.
//! While a delay is set, every chunk of bytes in either direction is held
//! until its arrival time plus the delay (plus a random jitter), in order —
//! a delay line, so delays do not pile up under load. `switch` points new
//! connections at another server and cuts the open ones (what is held is
//! dropped), as a floating address does when a failover moves it. It runs
//! as tasks of rlbench itself: no process to leave behind.

use super::error::StackError;
use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::{mpsc, watch};
use tokio::task::JoinHandle;
use tokio::time::Instant;

/// The added delay and jitter, µs, as the fault sets them.
#[derive(Default)]
pub struct Delay {
    pub delay_us: AtomicU64,
    pub jitter_us: AtomicU64,
}

pub struct Proxy {
    /// `127.0.0.1:PORT` to give the replicas.
    pub address: String,
    pub delay: Arc<Delay>,
    upstream: Arc<Mutex<String>>,
    /// Bumped to cut every open connection.
    cut: watch::Sender<u64>,
    accept: JoinHandle<()>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `upstream` (host:port).
    pub async fn start(upstream: String) -> Result<Proxy, StackError> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(StackError::Proxy)?;
        let address = listener
            .local_addr()
            .map_err(StackError::Proxy)?
            .to_string();
        let delay = Arc::new(Delay::default());
        let shared = delay.clone();
        let upstream = Arc::new(Mutex::new(upstream));
        let target = upstream.clone();
        let (cut, cuts) = watch::channel(0u64);
        let accept = tokio::spawn(async move {
            let mut seed = 1u64;
            while let Ok((client, _)) = listener.accept().await {
                seed += 1;
                let delay = shared.clone();
                let to = target.lock().unwrap_or_else(|p| p.into_inner()).clone();
                let mut cuts = cuts.clone();
                cuts.mark_unchanged();
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(&to).await {
                        tokio::select! {
                            () = pipe(client, server, delay, seed) => {}
                            _ = cuts.changed() => {}
                        }
                    }
                });
            }
        });
        Ok(Proxy {
            address,
            delay,
            upstream,
            cut,
            accept,
        })
    }

    pub fn set(&self, delay: Duration, jitter: Duration) {
        self.delay
            .delay_us
            .store(delay.as_micros() as u64, Ordering::Relaxed);
        self.delay
            .jitter_us
            .store(jitter.as_micros() as u64, Ordering::Relaxed);
    }
}

impl Proxy {
    /// New connections go to `upstream` (host:port); open ones are cut,
    /// with whatever they held.
    pub fn switch(&self, upstream: String) {
        *self.upstream.lock().unwrap_or_else(|p| p.into_inner()) = upstream;
        self.cut.send_modify(|n| *n += 1);
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        // Connections already open end when either side closes.
        self.accept.abort();
    }
}

async fn pipe(client: TcpStream, server: TcpStream, delay: Arc<Delay>, seed: u64) {
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    let (cr, cw) = client.into_split();
    let (sr, sw) = server.into_split();
    let up = direction(cr, sw, delay.clone(), seed);
    let down = direction(sr, cw, delay, seed.wrapping_mul(31));
    tokio::join!(up, down);
}

/// Reads chunks, stamps each with its due time, writes each when due.
async fn direction(
    mut from: tokio::net::tcp::OwnedReadHalf,
    mut to: tokio::net::tcp::OwnedWriteHalf,
    delay: Arc<Delay>,
    seed: u64,
) {
    let (tx, mut rx) = mpsc::unbounded_channel::<(Instant, Vec<u8>)>();
    let reader = async move {
        let mut rng = rand::rngs::SmallRng::seed_from_u64(seed);
        let mut buf = vec![0u8; 16 * 1024];
        let mut last_due = Instant::now();
        loop {
            let n = match from.read(&mut buf).await {
                Ok(0) | Err(_) => break,
                Ok(n) => n,
            };
            let base = delay.delay_us.load(Ordering::Relaxed);
            let jitter = delay.jitter_us.load(Ordering::Relaxed);
            let extra = if jitter > 0 {
                rng.random_range(0..=jitter)
            } else {
                0
            };
            // Never before an earlier chunk: the byte stream keeps its order.
            let due = (Instant::now() + Duration::from_micros(base + extra)).max(last_due);
            last_due = due;
            if tx.send((due, buf[..n].to_vec())).is_err() {
                break;
            }
        }
    };
    let writer = async move {
        while let Some((due, bytes)) = rx.recv().await {
            // Only a chunk still due waits: the timer rounds up to the next
            // millisecond, which undelayed traffic must not pay per hop.
            if due > Instant::now() {
                tokio::time::sleep_until(due).await;
            }
            if to.write_all(&bytes).await.is_err() {
                break;
            }
        }
        let _ = to.shutdown().await;
    };
    tokio::join!(reader, writer);
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo server on loopback; its address.
    async fn echo() -> String {
        let l = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = l.local_addr().unwrap().to_string();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = l.accept().await {
                tokio::spawn(async move {
                    let mut buf = [0u8; 1024];
                    while let Ok(n) = s.read(&mut buf).await {
                        if n == 0 || s.write_all(&buf[..n]).await.is_err() {
                            break;
                        }
                    }
                });
            }
        });
        addr
    }

    async fn round_trip(address: &str) -> Duration {
        let mut s = TcpStream::connect(address).await.unwrap();
        s.set_nodelay(true).unwrap();
        let started = std::time::Instant::now();
        s.write_all(b"PING").await.unwrap();
        let mut back = [0u8; 4];
        s.read_exact(&mut back).await.unwrap();
        assert_eq!(&back, b"PING");
        started.elapsed()
    }

    #[tokio::test]
    async fn the_proxy_adds_the_delay_it_is_set_to_each_way() {
        let proxy = Proxy::start(echo().await).await.unwrap();
        let plain = round_trip(&proxy.address).await;
        proxy.set(Duration::from_millis(40), Duration::ZERO);
        let slowed = round_trip(&proxy.address).await;
        // 40 ms each way: at least 80 ms (never less: timers do not fire early).
        assert!(slowed >= Duration::from_millis(80), "{slowed:?}");
        assert!(
            slowed < Duration::from_millis(80) + plain + Duration::from_secs(2),
            "{slowed:?}"
        );
        proxy.set(Duration::ZERO, Duration::ZERO);
        let after = round_trip(&proxy.address).await;
        assert!(after < Duration::from_millis(80), "{after:?}");
    }

    #[tokio::test]
    async fn a_switch_cuts_open_connections_and_sends_new_ones_on() {
        let (first, second) = (echo().await, echo().await);
        let proxy = Proxy::start(first).await.unwrap();
        let mut open = TcpStream::connect(&proxy.address).await.unwrap();
        round_trip(&proxy.address).await;
        // Held bytes are dropped with the connection: never delivered.
        proxy.set(Duration::from_secs(3600), Duration::ZERO);
        open.write_all(b"held").await.unwrap();
        proxy.switch(second.clone());
        let mut back = [0u8; 4];
        let read = tokio::time::timeout(Duration::from_secs(5), open.read(&mut back)).await;
        assert!(
            matches!(read, Ok(Ok(0)) | Ok(Err(_))),
            "the open connection is cut: {read:?}"
        );
        proxy.set(Duration::ZERO, Duration::ZERO);
        assert_eq!(*proxy.upstream.lock().unwrap(), second);
        round_trip(&proxy.address).await;
    }

    #[tokio::test]
    async fn jitter_delays_but_keeps_the_order_of_bytes() {
        let proxy = Proxy::start(echo().await).await.unwrap();
        proxy.set(Duration::from_millis(5), Duration::from_millis(20));
        let mut s = TcpStream::connect(&proxy.address).await.unwrap();
        let sent: Vec<u8> = (0..200u8).collect();
        for chunk in sent.chunks(10) {
            s.write_all(chunk).await.unwrap();
            tokio::time::sleep(Duration::from_millis(1)).await;
        }
        let mut back = vec![0u8; sent.len()];
        s.read_exact(&mut back).await.unwrap();
        assert_eq!(back, sent);
    }
}
