//! The HTTP server: routing, the bearer token, security headers, server-sent events.

use crate::live::Map;
use crate::{api, metrics, page, query};
use futures::stream;
use http::{HeaderMap, HeaderValue, Method, Request, Response, StatusCode, header};
use http_body_util::{BodyExt, Full, StreamBody};
use hyper::body::{Bytes, Frame};
use hyper_util::rt::TokioIo;
use std::convert::Infallible;
use std::sync::Arc;
use std::time::Duration;
use tokio::net::TcpListener;
use tokio::sync::watch;

/// A response body: a whole buffer, or the endless stream of `/api/events`.
pub type Body = http_body_util::combinators::BoxBody<Bytes, Infallible>;

/// At most one event per stream in this time: a busy cluster changes many times a second, and
/// the page refetches on each event.
const EVENT_EVERY: Duration = Duration::from_millis(500);

/// A comment line this often keeps proxies from closing an idle event stream.
const KEEPALIVE: Duration = Duration::from_secs(20);

/// The cookie that carries the token for a browser (which cannot set `Authorization` on a
/// page load or an `EventSource`).
const COOKIE: &str = "wlmap_token";

/// How the server answers.
#[derive(Debug, Clone, Default)]
pub struct Options {
    /// When set, every path but `/healthz` and `/readyz` needs `Authorization: Bearer TOKEN`
    /// or the cookie that `/?token=TOKEN` sets.
    pub token: Option<String>,
}

/// Serve `map` on `listener` until `stop` turns true.
pub async fn serve(
    listener: TcpListener,
    map: Arc<dyn Map>,
    opts: Arc<Options>,
    mut stop: watch::Receiver<bool>,
) {
    while let Some(tcp) = next_connection(&listener, &mut stop).await {
        let (map, opts) = (map.clone(), opts.clone());
        tokio::spawn(async move {
            let svc = hyper::service::service_fn(move |req: Request<hyper::body::Incoming>| {
                let r = respond(&map, &opts, &req);
                async move { Ok::<_, Infallible>(r) }
            });
            let _ = hyper::server::conn::http1::Builder::new()
                .serve_connection(TokioIo::new(tcp), svc)
                .await;
        });
    }
}

/// The next connection `listener` accepts (a failed accept is skipped), or `None` once `stop`
/// changes.
pub async fn next_connection(
    listener: &TcpListener,
    stop: &mut watch::Receiver<bool>,
) -> Option<tokio::net::TcpStream> {
    loop {
        tokio::select! {
            a = listener.accept() => if let Ok((tcp, _)) = a { return Some(tcp) },
            _ = stop.changed() => return None,
        }
    }
}

/// The answer to one request (the controller calls this for the paths it does not serve
/// itself).
pub fn respond<B>(map: &Arc<dyn Map>, opts: &Options, req: &Request<B>) -> Response<Body> {
    let path = req.uri().path();
    let q = req.uri().query().unwrap_or("");
    secure(
        if req.method() != Method::GET && req.method() != Method::HEAD {
            let mut r = text(StatusCode::METHOD_NOT_ALLOWED, "read-only: GET only\n");
            r.headers_mut()
                .insert(header::ALLOW, HeaderValue::from_static("GET, HEAD"));
            r
        } else if path == "/healthz" {
            text(StatusCode::OK, "ok\n")
        } else if path == "/readyz" {
            match map.synced() {
                true => text(StatusCode::OK, "ok\n"),
                false => text(
                    StatusCode::SERVICE_UNAVAILABLE,
                    "not ready: still listing\n",
                ),
            }
        } else if let Some(denied) = authorize(opts, path, q, req.headers()) {
            denied
        } else {
            route(map, path, q)
        },
    )
}

fn route(map: &Arc<dyn Map>, path: &str, q: &str) -> Response<Body> {
    match path {
        "/metrics" => {
            let mut s = String::new();
            map.read(&mut |inv| metrics::render(inv, &mut s));
            whole(StatusCode::OK, metrics::CONTENT_TYPE, s)
        }
        "/api/workloads" => {
            // Asked first, not inside `read`: a second read lock taken while a writer waits
            // would deadlock (std's RwLock prefers writers). Synced only ever turns true.
            let synced = map.synced();
            let mut v = serde_json::Value::Null;
            // The version is read under the inventory's lock, where every writer bumps it, so
            // the rows and their version always agree.
            map.read(&mut |inv| v = api::rows(inv, *map.changes().borrow(), synced));
            json(StatusCode::OK, &v)
        }
        "/api/workload" => {
            let Some(key) = api::key_of(q) else {
                let e =
                    serde_json::json!({"error": "name the workload: namespace, group, kind, name"});
                return json(StatusCode::BAD_REQUEST, &e);
            };
            let mut v = None;
            map.read(&mut |inv| v = api::workload(inv, &key));
            match v {
                Some(v) => json(StatusCode::OK, &v),
                None => json(
                    StatusCode::NOT_FOUND,
                    &serde_json::json!({"error": format!("{key} is not a top-level workload")}),
                ),
            }
        }
        "/api/events" => events(map.changes()),
        _ => match page::asset(path) {
            Some((content_type, body)) => whole(StatusCode::OK, content_type, body),
            None => text(StatusCode::NOT_FOUND, "not found\n"),
        },
    }
}

/// None when the request may go on; else the refusal, or for `/?token=` the redirect that
/// sets the cookie.
fn authorize(opts: &Options, path: &str, q: &str, headers: &HeaderMap) -> Option<Response<Body>> {
    let token = opts.token.as_deref()?;
    let bearer = headers
        .get(header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "));
    let cookie = headers
        .get_all(header::COOKIE)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(';'))
        .filter_map(|c| c.trim().strip_prefix(COOKIE)?.strip_prefix('='))
        .next();
    if [bearer, cookie]
        .into_iter()
        .flatten()
        .any(|t| same(t, token))
    {
        return None;
    }
    if path == "/" && query::get(q, "token").is_some_and(|t| same(&t, token)) {
        let mut r = text(StatusCode::SEE_OTHER, "");
        let cookie = format!("{COOKIE}={token}; HttpOnly; SameSite=Strict; Path=/");
        if let Ok(v) = HeaderValue::from_str(&cookie) {
            r.headers_mut().insert(header::SET_COOKIE, v);
        }
        r.headers_mut()
            .insert(header::LOCATION, HeaderValue::from_static("/"));
        return Some(r);
    }
    let mut r = text(
        StatusCode::UNAUTHORIZED,
        "a token is required: Authorization: Bearer TOKEN, or open /?token=TOKEN once\n",
    );
    r.headers_mut()
        .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
    Some(r)
}

/// Compare in time independent of where the strings differ.
fn same(a: &str, b: &str) -> bool {
    a.len() == b.len()
        && a.bytes()
            .zip(b.bytes())
            .fold(0u8, |acc, (x, y)| acc | (x ^ y))
            == 0
}

/// One `changed` event now, then one each time the inventory changes (at most one per
/// [`EVENT_EVERY`]), with a keep-alive comment when nothing changes.
fn events(rx: watch::Receiver<u64>) -> Response<Body> {
    let frames = stream::unfold((rx, true), |(mut rx, first)| async move {
        if !first {
            tokio::time::sleep(EVENT_EVERY).await;
            match tokio::time::timeout(KEEPALIVE, rx.changed()).await {
                Err(_) => return Some((frame(": keepalive\n\n".into()), (rx, false))),
                Ok(Err(_)) => return None,
                Ok(Ok(())) => {}
            }
        }
        let version = *rx.borrow_and_update();
        let data = format!("event: changed\ndata: {{\"version\":{version}}}\n\n");
        Some((frame(data), (rx, false)))
    });
    let mut r = Response::new(StreamBody::new(frames).boxed());
    r.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("text/event-stream"),
    );
    r
}

fn frame(s: String) -> Result<Frame<Bytes>, Infallible> {
    Ok(Frame::data(Bytes::from(s)))
}

fn whole(status: StatusCode, content_type: &'static str, body: impl Into<Bytes>) -> Response<Body> {
    let mut r = Response::new(Full::new(body.into()).boxed());
    *r.status_mut() = status;
    r.headers_mut()
        .insert(header::CONTENT_TYPE, HeaderValue::from_static(content_type));
    r
}

fn text(status: StatusCode, body: &'static str) -> Response<Body> {
    whole(status, "text/plain; charset=utf-8", body)
}

fn json(status: StatusCode, v: &serde_json::Value) -> Response<Body> {
    whole(status, "application/json", v.to_string())
}

/// Headers on every answer: nothing but our own scripts and styles run, nothing frames the
/// page, nothing is cached or sniffed, no referrer leaves.
fn secure(mut r: Response<Body>) -> Response<Body> {
    let h = r.headers_mut();
    for (name, value) in [
        (
            header::CONTENT_SECURITY_POLICY,
            "default-src 'none'; script-src 'self'; style-src 'self'; connect-src 'self'; \
             img-src 'self'; base-uri 'none'; form-action 'none'; frame-ancestors 'none'",
        ),
        (header::X_CONTENT_TYPE_OPTIONS, "nosniff"),
        (header::X_FRAME_OPTIONS, "DENY"),
        (header::REFERRER_POLICY, "no-referrer"),
        (header::CACHE_CONTROL, "no-store"),
    ] {
        h.insert(name, HeaderValue::from_static(value));
    }
    r
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::Live;

    fn get(map: &Arc<dyn Map>, opts: &Options, uri: &str, auth: Option<&str>) -> Response<Body> {
        let mut req = Request::get(uri);
        if let Some(a) = auth {
            req = req.header(header::AUTHORIZATION, a);
        }
        respond(map, opts, &req.body(()).expect("request"))
    }

    fn map() -> Arc<dyn Map> {
        Arc::new(Live::fixed(Default::default()))
    }

    #[test]
    fn a_token_guards_everything_but_the_probes() {
        let opts = Options {
            token: Some("s3cret".into()),
        };
        let m = map();
        assert_eq!(
            get(&m, &opts, "/metrics", None).status(),
            StatusCode::UNAUTHORIZED
        );
        let wrong = get(&m, &opts, "/api/workloads", Some("Bearer s3creT"));
        assert_eq!(wrong.status(), StatusCode::UNAUTHORIZED);
        let right = get(&m, &opts, "/api/workloads", Some("Bearer s3cret"));
        assert_eq!(right.status(), StatusCode::OK);
        assert_eq!(get(&m, &opts, "/healthz", None).status(), StatusCode::OK);
        let login = get(&m, &opts, "/?token=s3cret", None);
        assert_eq!(login.status(), StatusCode::SEE_OTHER);
        let cookie = login.headers()[header::SET_COOKIE].to_str().unwrap_or("");
        assert!(cookie.starts_with("wlmap_token=s3cret;") && cookie.contains("HttpOnly"));
        let req = Request::get("/app.js")
            .header(header::COOKIE, "a=b; wlmap_token=s3cret")
            .body(())
            .expect("request");
        assert_eq!(respond(&m, &opts, &req).status(), StatusCode::OK);
    }

    #[test]
    fn every_answer_has_the_security_headers_and_writes_are_refused() {
        let m = map();
        let opts = Options::default();
        for uri in ["/", "/nope", "/api/workloads"] {
            let r = get(&m, &opts, uri, None);
            assert!(
                r.headers()[header::CONTENT_SECURITY_POLICY]
                    .to_str()
                    .is_ok_and(|v| v.contains("script-src 'self'"))
            );
            assert_eq!(r.headers()[header::X_CONTENT_TYPE_OPTIONS], "nosniff");
        }
        let post = Request::post("/api/workloads").body(()).expect("request");
        assert_eq!(
            respond(&m, &opts, &post).status(),
            StatusCode::METHOD_NOT_ALLOWED
        );
    }

    #[test]
    fn an_unknown_workload_is_a_404_and_a_nameless_one_a_400() {
        let m = map();
        let opts = Options::default();
        let r = get(
            &m,
            &opts,
            "/api/workload?namespace=ml&group=batch&kind=Job&name=x",
            None,
        );
        assert_eq!(r.status(), StatusCode::NOT_FOUND);
        assert_eq!(
            get(&m, &opts, "/api/workload?kind=Job", None).status(),
            StatusCode::BAD_REQUEST
        );
    }
}
