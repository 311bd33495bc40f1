//! A TCP proxy between the library and the test server that reads the client's half of the
//! PostgreSQL protocol as it passes it on. It counts round trips: each simple `Query` and each
//! `Sync` (the end of an extended-protocol exchange) is a message the client then waits on the
//! server's answer for. And it can cut a connection at the moment its client sends `COMMIT`:
//! before passing it on (the server never commits) or after (the server commits, and the
//! client never hears it).
//!
//! Test code: included by the suites that need it with `#[path]`.
#![allow(dead_code)]

use std::io::{Read, Write};
use std::net::{Shutdown, TcpListener, TcpStream};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicU8, Ordering};
use std::sync::{Arc, Mutex};
use std::thread;

/// What the proxy does with the next `COMMIT` a client sends.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[repr(u8)]
pub enum AtCommit {
    /// Passes it on, as every other message.
    Pass = 0,
    /// Closes the client's connection and the server's without passing it on: the server rolls
    /// the transaction back when it sees its client gone.
    CutBefore = 1,
    /// Passes it on, then closes the client's connection before the server's answer reaches
    /// it: the server commits, and the client cannot know.
    CutAfter = 2,
}

/// A proxy listening on a port of 127.0.0.1 of its own, forwarding to the server at `upstream`.
pub struct Proxy {
    port: u16,
    shared: Arc<Shared>,
}

struct Shared {
    upstream: String,
    round_trips: AtomicU64,
    at_commit: AtomicU8,
    commits_cut: AtomicU64,
    stopped: AtomicBool,
    /// The client side of every connection, to cut them all.
    clients: Mutex<Vec<TcpStream>>,
}

impl Proxy {
    /// A proxy to `upstream` (`host:port`), accepting connections until it is dropped.
    pub fn start(upstream: &str) -> Proxy {
        let listener = TcpListener::bind("127.0.0.1:0").expect("a port for the proxy");
        let port = listener.local_addr().expect("its address").port();
        let shared = Arc::new(Shared {
            upstream: upstream.to_owned(),
            round_trips: AtomicU64::new(0),
            at_commit: AtomicU8::new(AtCommit::Pass as u8),
            commits_cut: AtomicU64::new(0),
            stopped: AtomicBool::new(false),
            clients: Mutex::new(Vec::new()),
        });
        let accepting = Arc::clone(&shared);
        thread::spawn(move || {
            for client in listener.incoming() {
                if accepting.stopped.load(Ordering::SeqCst) {
                    return;
                }
                let Ok(client) = client else { continue };
                let shared = Arc::clone(&accepting);
                thread::spawn(move || relay(client, shared));
            }
        });
        Proxy { port, shared }
    }

    /// The proxy's port.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// `url` (a URL of the upstream server over TCP) pointed at the proxy instead.
    pub fn url(&self, url: &str) -> String {
        url.replacen(
            &self.shared.upstream,
            &format!("127.0.0.1:{}", self.port),
            1,
        )
    }

    /// Round trips counted so far, on every connection.
    pub fn round_trips(&self) -> u64 {
        self.shared.round_trips.load(Ordering::SeqCst)
    }

    /// What to do to the next `COMMIT`; the one after it passes again.
    pub fn at_next_commit(&self, what: AtCommit) {
        self.shared.at_commit.store(what as u8, Ordering::SeqCst);
    }

    /// How many commits it cut.
    pub fn commits_cut(&self) -> u64 {
        self.shared.commits_cut.load(Ordering::SeqCst)
    }
}

impl Drop for Proxy {
    fn drop(&mut self) {
        self.shared.stopped.store(true, Ordering::SeqCst);
        // Wakes the accepting thread, which then sees `stopped`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        for client in self.shared.clients.lock().expect("clients").drain(..) {
            let _ = client.shutdown(Shutdown::Both);
        }
    }
}

/// The `host:port` of a `postgresql://user:password@host:port/...` URL.
pub fn host_port(url: &str) -> String {
    let rest = url.split_once('@').expect("credentials in the URL").1;
    rest.split(['/', '?']).next().expect("a host").to_owned()
}

/// Relays one connection: the server's bytes to the client as they come, the client's message
/// by message.
fn relay(mut client: TcpStream, shared: Arc<Shared>) {
    let Ok(mut server) = TcpStream::connect(&shared.upstream) else {
        let _ = client.shutdown(Shutdown::Both);
        return;
    };
    let _ = client.set_nodelay(true);
    let _ = server.set_nodelay(true);
    if let Ok(c) = client.try_clone() {
        shared.clients.lock().expect("clients").push(c);
    }
    let (Ok(mut from_server), Ok(mut to_client)) = (server.try_clone(), client.try_clone()) else {
        return;
    };
    thread::spawn(move || {
        let _ = std::io::copy(&mut from_server, &mut to_client);
        let _ = to_client.shutdown(Shutdown::Both);
    });
    let _ = client_messages(&mut client, &mut server, &shared);
    let _ = client.shutdown(Shutdown::Both);
    let _ = server.shutdown(Shutdown::Both);
}

/// Reads exactly `n` bytes.
fn read_exact(from: &mut TcpStream, n: usize) -> std::io::Result<Vec<u8>> {
    let mut buf = vec![0; n];
    from.read_exact(&mut buf)?;
    Ok(buf)
}

/// Passes the client's messages on, counting and cutting as asked. The first messages have no
/// type byte: an SSL or GSS encryption request (answered with one byte), then the startup.
fn client_messages(
    client: &mut TcpStream,
    server: &mut TcpStream,
    shared: &Shared,
) -> std::io::Result<()> {
    loop {
        let len = read_exact(client, 4)?;
        let n = u32::from_be_bytes(len[..4].try_into().expect("4 bytes")) as usize;
        let body = read_exact(client, n.saturating_sub(4))?;
        server.write_all(&len)?;
        server.write_all(&body)?;
        let code = body
            .get(..4)
            .map(|c| u32::from_be_bytes(c.try_into().expect("4 bytes")));
        // 80877103: SSLRequest; 80877104: GSSENCRequest. Anything else is the startup.
        if !matches!(code, Some(80_877_103 | 80_877_104)) {
            break;
        }
    }
    loop {
        let head = read_exact(client, 5)?;
        let n = u32::from_be_bytes(head[1..5].try_into().expect("4 bytes")) as usize;
        let body = read_exact(client, n.saturating_sub(4))?;
        let kind = head[0];
        if kind == b'Q' || kind == b'S' {
            shared.round_trips.fetch_add(1, Ordering::SeqCst);
        }
        if kind == b'Q' && is_commit(&body) {
            let what = shared
                .at_commit
                .swap(AtCommit::Pass as u8, Ordering::SeqCst);
            if what == AtCommit::CutBefore as u8 {
                shared.commits_cut.fetch_add(1, Ordering::SeqCst);
                return Ok(());
            }
            if what == AtCommit::CutAfter as u8 {
                server.write_all(&head)?;
                server.write_all(&body)?;
                server.flush()?;
                shared.commits_cut.fetch_add(1, Ordering::SeqCst);
                // The client hears nothing more; the server reads the COMMIT before it sees
                // its client gone, and commits.
                let _ = client.shutdown(Shutdown::Both);
                let _ = server.shutdown(Shutdown::Write);
                return Ok(());
            }
        }
        server.write_all(&head)?;
        server.write_all(&body)?;
    }
}

/// True for a simple query that is `COMMIT` (or `END`).
fn is_commit(body: &[u8]) -> bool {
    let text = String::from_utf8_lossy(body);
    let text = text.trim_end_matches('\0').trim().to_ascii_uppercase();
    let first = text.trim_end_matches(';').trim();
    first == "COMMIT" || first == "END" || first.starts_with("COMMIT ")
}
