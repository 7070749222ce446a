//! The metrics endpoint (`quarry serve --metrics-port N`): plain HTTP on its own port,
//! `GET /metrics` answered with the Prometheus text format (`quarry_core::metrics`), any
//! other path 404. One thread answers one request at a time; a scrape is a few
//! kilobytes every few seconds.
//!
//! Owns: the listener and HTTP framing. Must not touch: what the metrics say.

use std::io::{BufRead, BufReader, Write};
use std::net::{SocketAddr, TcpListener, TcpStream};
use std::sync::Arc;
use std::time::Duration;

use quarry_core::Database;

/// Listen on `addr` and answer scrapes until the process ends; the address bound.
pub fn serve(db: Arc<Database>, addr: &str) -> std::io::Result<SocketAddr> {
    let listener = TcpListener::bind(addr)?;
    let local = listener.local_addr()?;
    std::thread::Builder::new()
        .name("metrics".into())
        .spawn(move || {
            for stream in listener.incoming().flatten() {
                let _ = answer(&db, stream);
            }
        })?;
    Ok(local)
}

fn answer(db: &Arc<Database>, mut stream: TcpStream) -> std::io::Result<()> {
    stream.set_read_timeout(Some(Duration::from_secs(5)))?;
    stream.set_write_timeout(Some(Duration::from_secs(5)))?;
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut request = String::new();
    reader.read_line(&mut request)?;
    // The headers, up to the blank line (a scrape has no body).
    let mut line = String::new();
    while reader.read_line(&mut line)? > 2 {
        line.clear();
    }
    let mut parts = request.split_whitespace();
    let (method, path) = (parts.next().unwrap_or(""), parts.next().unwrap_or(""));
    let (status, kind, body) = match (method, path.split('?').next().unwrap_or("")) {
        ("GET", "/metrics") => (
            "200 OK",
            "text/plain; version=0.0.4; charset=utf-8",
            db.local_session().metrics_text(),
        ),
        ("GET", _) => (
            "404 Not Found",
            "text/plain",
            "not found: try /metrics\n".into(),
        ),
        _ => ("405 Method Not Allowed", "text/plain", "GET only\n".into()),
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body.as_bytes())?;
    stream.flush()
}
