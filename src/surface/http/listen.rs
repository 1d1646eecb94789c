//! The accept loop of `tmws serve`: each connection is served by hyper's HTTP/1 with
//! [`HEADER_TIMEOUT`] to send a request's headers, and a stop lets the requests in flight
//! finish.
//!
//! `axum::serve` has no header timeout: a client that sends one header byte every few
//! seconds holds its connection (and a file descriptor) for as long as it likes, and enough
//! of them starve the server. Here such a connection is closed once the timeout passes
//! without a whole request head; the timer runs again while a kept-alive connection waits
//! for its next request, but not while a response (an MCP event stream) is being written.

use std::future::Future;
use std::time::Duration;

use crate::error::Chain;
use axum::Router;
use axum::serve::Listener;
use hyper::server::conn::http1;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// How long a client has to send a request's headers.
pub const HEADER_TIMEOUT: Duration = Duration::from_secs(10);

/// Serves `router` on `listener` until `stop` resolves, then stops accepting, lets open
/// connections finish what they are doing, and returns once they are all closed.
pub(super) async fn serve(mut listener: TcpListener, router: Router, stop: impl Future<Output = ()>) {
    let mut http = http1::Builder::new();
    http.timer(TokioTimer::new()).header_read_timeout(HEADER_TIMEOUT);
    // `stopping` tells connections to finish; each holds a `closed` receiver until it ends.
    let (stopping, stop_rx) = watch::channel(());
    let (all_closed, closed) = watch::channel(());
    let mut stop = std::pin::pin!(stop);
    loop {
        let stream = tokio::select! {
            // axum's `Listener` retries failed accepts (and waits a little when out of
            // file descriptors) instead of giving up.
            (stream, _) = Listener::accept(&mut listener) => stream,
            () = &mut stop => break,
        };
        let connection = http.serve_connection(TokioIo::new(stream), TowerToHyperService::new(router.clone()));
        let mut stop_rx = stop_rx.clone();
        let closed = closed.clone();
        tokio::spawn(async move {
            let mut connection = std::pin::pin!(connection);
            tokio::select! {
                r = connection.as_mut() => {
                    if let Err(e) = r {
                        tracing::debug!("connection closed: {}", Chain(&e));
                    }
                }
                // Every receiver is made before the one send, so it sees it (or the
                // sender gone, when the server stops without waiting).
                _ = stop_rx.changed() => {
                    connection.as_mut().graceful_shutdown();
                    let _ = connection.await;
                }
            }
            drop(closed);
        });
    }
    drop(listener);
    let _ = stopping.send(());
    drop(closed);
    all_closed.closed().await;
}
