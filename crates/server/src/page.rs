//! The web page's files, embedded in the binary: no build step, nothing from the internet.

/// The content type and body of a page file, by path.
pub fn asset(path: &str) -> Option<(&'static str, &'static str)> {
    Some(match path {
        "/" | "/index.html" => ("text/html; charset=utf-8", include_str!("page/index.html")),
        "/app.js" => (
            "text/javascript; charset=utf-8",
            include_str!("page/app.js"),
        ),
        "/app.css" => ("text/css; charset=utf-8", include_str!("page/app.css")),
        "/favicon.svg" => ("image/svg+xml", include_str!("page/favicon.svg")),
        _ => return None,
    })
}
