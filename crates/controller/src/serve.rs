//! The controller's listeners: the webhook over TLS (`POST /mutate-pods`), and plain HTTP for
//! probes and metrics (`/healthz`, `/readyz`, `/metrics`), as controller-runtime splits them.
//! The plain listener also serves `wlmap serve`'s read-only platform view (`/`, `/api/...`),
//! and its `/metrics` carries the workload families after the controller's own.

use crate::report::log;
use crate::state::Shared;
use http::{Method, Request, Response, StatusCode};
use http_body_util::{BodyExt, Full, Limited};
use hyper::body::{Bytes, Incoming};
use hyper_util::rt::TokioIo;
use serde_json::json;
use std::sync::Arc;
use tokio::net::TcpListener;
use tokio::sync::watch;
use tokio_rustls::TlsAcceptor;
use tokio_rustls::rustls::ServerConfig;

/// The pod webhook's path.
pub const MUTATE_PODS: &str = "/mutate-pods";

/// The Karta webhook's path.
pub const VALIDATE_KARTAS: &str = "/validate-kartas";

/// Reviews are small (one pod); anything bigger is refused before it is read.
const MAX_BODY: usize = 4 << 20;

type Body = Full<Bytes>;

fn reply(status: StatusCode, content_type: &str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()));
    *r.status_mut() = status;
    if let Ok(v) = content_type.parse() {
        r.headers_mut().insert(http::header::CONTENT_TYPE, v);
    }
    r
}

/// Serve the webhook on `listener` with TLS until `stop` turns true.
pub async fn webhook(
    listener: TcpListener,
    tls: Arc<ServerConfig>,
    shared: Arc<Shared>,
    mut stop: watch::Receiver<bool>,
) {
    let acceptor = TlsAcceptor::from(tls);
    while let Some(tcp) = wlmap_server::next_connection(&listener, &mut stop).await {
        let (acceptor, shared) = (acceptor.clone(), shared.clone());
        tokio::spawn(async move {
            let Ok(stream) = acceptor.accept(tcp).await else {
                return;
            };
            let svc = hyper::service::service_fn(move |req| {
                let shared = shared.clone();
                async move { Ok::<_, std::convert::Infallible>(mutate(&shared, req).await) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(stream), svc)
                .await;
        });
    }
}

async fn mutate(shared: &Arc<Shared>, req: Request<Incoming>) -> Response<Body> {
    let path = req.uri().path().to_string();
    if req.method() != Method::POST || (path != MUTATE_PODS && path != VALIDATE_KARTAS) {
        return reply(StatusCode::NOT_FOUND, "text/plain", "not found\n");
    }
    let body = match Limited::new(req.into_body(), MAX_BODY).collect().await {
        Ok(b) => b.to_bytes(),
        Err(e) => return reply(StatusCode::BAD_REQUEST, "text/plain", format!("{e}\n")),
    };
    let review: serde_json::Value = match serde_json::from_slice(&body) {
        Ok(v) => v,
        Err(e) => {
            log(
                "warning",
                "a review that is not JSON",
                json!({"error": e.to_string()}),
            );
            return reply(
                StatusCode::BAD_REQUEST,
                "text/plain",
                format!("not JSON: {e}\n"),
            );
        }
    };
    let answer = if path == MUTATE_PODS {
        crate::webhook::review(shared, &review).await
    } else {
        crate::webhook::review_karta(shared, &review)
    };
    reply(StatusCode::OK, "application/json", answer.to_string())
}

/// Serve probes and metrics on `listener` (plain HTTP) until `stop` turns true.
pub async fn probes(listener: TcpListener, shared: Arc<Shared>, mut stop: watch::Receiver<bool>) {
    while let Some(tcp) = wlmap_server::next_connection(&listener, &mut stop).await {
        let shared = shared.clone();
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req: Request<Incoming>| {
                let r = probe(&shared, &req);
                async move { Ok::<_, std::convert::Infallible>(r) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tcp), svc)
                .await;
        });
    }
}

fn probe(shared: &Arc<Shared>, req: &Request<Incoming>) -> Response<wlmap_server::Body> {
    let r = match req.uri().path() {
        "/healthz" => reply(StatusCode::OK, "text/plain", "ok\n"),
        "/readyz" if shared.ready() => reply(StatusCode::OK, "text/plain", "ok\n"),
        "/readyz" => reply(
            StatusCode::SERVICE_UNAVAILABLE,
            "text/plain",
            "not ready: the inventory is still being listed\n",
        ),
        "/metrics" => reply(
            StatusCode::OK,
            "application/openmetrics-text; version=1.0.0; charset=utf-8",
            metrics(shared),
        ),
        _ => {
            let map: Arc<dyn wlmap_server::Map> = shared.clone();
            return wlmap_server::respond(&map, &shared.opts.view, req);
        }
    };
    r.map(|b| b.boxed())
}

/// The controller's own families, then the workload families (all gauges, so valid
/// OpenMetrics too), then the one `# EOF` OpenMetrics ends with.
fn metrics(shared: &Shared) -> String {
    let feed = shared.read_feed();
    let inv = &feed.inventory;
    shared.metrics.workloads.set(inv.workloads().count() as i64);
    let mut text = shared.metrics.render();
    if let Some(body) = text.strip_suffix("# EOF\n") {
        text.truncate(body.len());
    }
    wlmap_server::metrics::render(inv, &mut text);
    text.push_str("# EOF\n");
    text
}
