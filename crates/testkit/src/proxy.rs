//! A TCP proxy in front of Neo4j that a benchmark or a test controls: [`Neo4jProxy::cut`]
//! resets every connection and refuses new ones (Neo4j "goes away" for cairn only),
//! [`Neo4jProxy::restore`] lets connections through again, and [`Neo4jProxy::set_delay`] holds
//! each chunk Neo4j sends for a while before forwarding it, so every round trip is at least
//! that slow.

use std::{
    sync::{
        atomic::{AtomicBool, AtomicU64, Ordering},
        Arc,
    },
    time::Duration,
};

use anyhow::Context as _;
use tokio::{
    io::{AsyncReadExt, AsyncWriteExt},
    net::{
        tcp::{OwnedReadHalf, OwnedWriteHalf},
        TcpListener, TcpStream,
    },
    sync::watch,
    task::JoinHandle,
};

/// Bytes read from one side before they are forwarded.
const CHUNK: usize = 64 * 1024;

struct Faults {
    down: AtomicBool,
    delay_ms: AtomicU64,
    /// Bumped on every cut; each connection ends when it changes.
    cuts: watch::Sender<u64>,
}

/// The proxy; it stops accepting when dropped (open connections end with their peers).
pub struct Neo4jProxy {
    uri: String,
    faults: Arc<Faults>,
    accept: JoinHandle<()>,
}

impl Neo4jProxy {
    /// Listens on 127.0.0.1:0 and forwards to the host and port of `neo4j_uri`
    /// (`bolt://host:port`).
    pub async fn start(neo4j_uri: &str) -> anyhow::Result<Self> {
        let target = neo4j_uri
            .split_once("://")
            .map_or(neo4j_uri, |(_, rest)| rest)
            .trim_end_matches('/')
            .to_string();
        let listener = TcpListener::bind("127.0.0.1:0")
            .await
            .context("the proxy could not listen")?;
        let addr = listener.local_addr()?;
        let faults = Arc::new(Faults {
            down: AtomicBool::new(false),
            delay_ms: AtomicU64::new(0),
            cuts: watch::channel(0).0,
        });
        let accept = tokio::spawn(accept_loop(listener, target, faults.clone()));
        Ok(Self {
            uri: format!("bolt://{addr}"),
            faults,
            accept,
        })
    }

    /// The bolt URI to give cairn instead of Neo4j's.
    pub fn uri(&self) -> &str {
        &self.uri
    }

    /// Resets every open connection and refuses new ones until [`Self::restore`].
    pub fn cut(&self) {
        self.faults.down.store(true, Ordering::SeqCst);
        self.faults.cuts.send_modify(|n| *n += 1);
    }

    pub fn restore(&self) {
        self.faults.down.store(false, Ordering::SeqCst);
    }

    /// Holds each chunk Neo4j sends for `delay` (zero: forward at once), on open and new
    /// connections alike.
    pub fn set_delay(&self, delay: Duration) {
        self.faults
            .delay_ms
            .store(delay.as_millis() as u64, Ordering::SeqCst);
    }
}

impl Drop for Neo4jProxy {
    fn drop(&mut self) {
        self.accept.abort();
    }
}

async fn accept_loop(listener: TcpListener, target: String, faults: Arc<Faults>) {
    loop {
        let Ok((inbound, _)) = listener.accept().await else {
            return;
        };
        if faults.down.load(Ordering::SeqCst) {
            drop(inbound);
            continue;
        }
        tokio::spawn(forward(inbound, target.clone(), faults.clone()));
    }
}

async fn forward(inbound: TcpStream, target: String, faults: Arc<Faults>) {
    let mut cut = faults.cuts.subscribe();
    let Ok(outbound) = TcpStream::connect(&target).await else {
        return;
    };
    let _ = (inbound.set_nodelay(true), outbound.set_nodelay(true));
    let (client_read, client_write) = inbound.into_split();
    let (server_read, server_write) = outbound.into_split();
    // Either direction ending (or a cut) drops both sockets.
    tokio::select! {
        _ = pump(client_read, server_write, None) => {}
        _ = pump(server_read, client_write, Some(&faults.delay_ms)) => {}
        _ = cut.changed() => {}
    }
}

async fn pump(
    mut from: OwnedReadHalf,
    mut to: OwnedWriteHalf,
    delay_ms: Option<&AtomicU64>,
) -> std::io::Result<()> {
    let mut buf = vec![0u8; CHUNK];
    loop {
        let n = from.read(&mut buf).await?;
        if n == 0 {
            return to.shutdown().await;
        }
        let ms = delay_ms.map_or(0, |d| d.load(Ordering::SeqCst));
        if ms > 0 {
            tokio::time::sleep(Duration::from_millis(ms)).await;
        }
        to.write_all(&buf[..n]).await?;
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// An echo server standing in for Neo4j.
    async fn echo() -> String {
        let listener = TcpListener::bind("127.0.0.1:0").await.unwrap();
        let addr = listener.local_addr().unwrap();
        tokio::spawn(async move {
            while let Ok((mut s, _)) = listener.accept().await {
                tokio::spawn(async move {
                    let (mut r, mut w) = s.split();
                    let _ = tokio::io::copy(&mut r, &mut w).await;
                });
            }
        });
        format!("bolt://{addr}")
    }

    async fn round_trip(uri: &str) -> std::io::Result<Vec<u8>> {
        let mut s = TcpStream::connect(uri.trim_start_matches("bolt://")).await?;
        s.write_all(b"ping").await?;
        let mut buf = [0u8; 4];
        s.read_exact(&mut buf).await?;
        Ok(buf.to_vec())
    }

    #[tokio::test]
    async fn forwards_cuts_restores_and_delays() {
        let proxy = Neo4jProxy::start(&echo().await).await.unwrap();
        assert_eq!(round_trip(proxy.uri()).await.unwrap(), b"ping");

        let mut open = TcpStream::connect(proxy.uri().trim_start_matches("bolt://"))
            .await
            .unwrap();
        proxy.cut();
        let mut buf = [0u8; 1];
        assert_eq!(
            open.read(&mut buf).await.unwrap_or(0),
            0,
            "open connection reset"
        );
        assert!(
            round_trip(proxy.uri()).await.is_err(),
            "new connections refused"
        );

        proxy.restore();
        proxy.set_delay(Duration::from_millis(300));
        let started = std::time::Instant::now();
        assert_eq!(round_trip(proxy.uri()).await.unwrap(), b"ping");
        assert!(started.elapsed() >= Duration::from_millis(300));
    }
}
