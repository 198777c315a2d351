//! A TCP proxy rlbench runs in front of its own Redis when a scenario adds
//! latency: replicas connect to the proxy, the proxy to Redis. While a delay
//! is set, every chunk of bytes in either direction is held until its
//! arrival time plus the delay (plus a random jitter), in order — a delay
//! line, so delays do not pile up under load. It runs as tasks of rlbench
//! itself: no process to leave behind.

use rand::{Rng, SeedableRng};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::Arc;
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::sync::mpsc;
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
    accept: JoinHandle<()>,
}

impl Proxy {
    /// Listens on a free loopback port and forwards to `upstream` (host:port).
    pub async fn start(upstream: String) -> Result<Proxy, String> {
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .map_err(|e| format!("cannot start the Redis latency proxy: {e}"))?;
        let address = listener
            .local_addr()
            .map_err(|e| format!("cannot start the Redis latency proxy: {e}"))?
            .to_string();
        let delay = Arc::new(Delay::default());
        let shared = delay.clone();
        let accept = tokio::spawn(async move {
            let mut seed = 1u64;
            while let Ok((client, _)) = listener.accept().await {
                seed += 1;
                let (upstream, delay) = (upstream.clone(), shared.clone());
                tokio::spawn(async move {
                    if let Ok(server) = TcpStream::connect(&upstream).await {
                        pipe(client, server, delay, seed).await;
                    }
                });
            }
        });
        Ok(Proxy {
            address,
            delay,
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
            tokio::time::sleep_until(due).await;
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
