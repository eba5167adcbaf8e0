//! Accepting connections, with the timeouts `axum::serve` does not offer.
//!
//! hyper bounds how long a client may take to send its request headers only when it is given
//! a timer, which `axum::serve` does not do: a client that sends half its headers and waits
//! was kept open indefinitely. Here every connection gets one, and the same bound covers a
//! kept-alive connection's idle wait for its next request (hyper starts the header timer as
//! soon as it waits for a request head). HTTP/1.1 only: TLS and HTTP/2 end at the proxy.

use std::future::Future;
use std::net::SocketAddr;
use std::time::Duration;

use axum::extract::ConnectInfo;
use axum::Router;
use hyper::body::Incoming;
use hyper_util::rt::{TokioIo, TokioTimer};
use hyper_util::server::graceful::GracefulShutdown;
use hyper_util::service::TowerToHyperService;
use tokio::net::TcpListener;
use tower::ServiceExt as _;

/// How long shutdown waits for requests in flight before it closes their connections.
const DRAIN_FOR: Duration = Duration::from_secs(30);

/// Serves `router` on `listener` until `shutdown` completes, then lets requests in flight
/// finish (for at most [`DRAIN_FOR`]).
pub async fn serve(
    listener: TcpListener,
    router: Router,
    header_timeout: Duration,
    shutdown: impl Future<Output = ()>,
) {
    let graceful = GracefulShutdown::new();
    let mut shutdown = std::pin::pin!(shutdown);
    loop {
        let (stream, peer) = tokio::select! {
            accepted = listener.accept() => match accepted {
                Ok(accepted) => accepted,
                Err(err) => {
                    // Out of file descriptors and the like: back off instead of spinning.
                    tracing::warn!(%err, "could not accept a connection");
                    tokio::time::sleep(Duration::from_millis(50)).await;
                    continue;
                }
            },
            () = &mut shutdown => break,
        };
        let _ = stream.set_nodelay(true);
        let router = router.clone();
        let service = tower::service_fn(move |mut req: hyper::Request<Incoming>| {
            req.extensions_mut().insert(ConnectInfo::<SocketAddr>(peer));
            router.clone().oneshot(req)
        });
        let connection = hyper::server::conn::http1::Builder::new()
            .timer(TokioTimer::new())
            .header_read_timeout(header_timeout)
            .serve_connection(TokioIo::new(stream), TowerToHyperService::new(service));
        let connection = graceful.watch(connection);
        tokio::spawn(async move {
            if let Err(err) = connection.await {
                // Timeouts and clients that go away: routine, not worth more than debug.
                tracing::debug!(%err, %peer, "connection ended with an error");
            }
        });
    }
    drop(listener);
    if tokio::time::timeout(DRAIN_FOR, graceful.shutdown())
        .await
        .is_err()
    {
        tracing::warn!("requests still in flight after {DRAIN_FOR:?}; closing them");
    }
}
