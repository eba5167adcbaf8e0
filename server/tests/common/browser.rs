//! Just enough of a browser for the sign-in tests: a cookie jar keyed by name (honouring
//! `Max-Age=0` removals) and the `Origin`/`Sec-Fetch-Site` headers a browser sends.
//! Redirects are not followed, so each hop can be inspected.

use std::collections::BTreeMap;

use reqwest::header::{HeaderMap, COOKIE, LOCATION, SET_COOKIE};

/// The longest any single request may take (the slowest answer by design is a few seconds;
/// a frozen database is answered within 10 s). The bench tool includes this file too.
pub const REQUEST_LIMIT: std::time::Duration = std::time::Duration::from_secs(120);

/// How long a client keeps an idle connection for reuse: under the server's own idle bound
/// (`TIDEMARK_HEADER_TIMEOUT_SECONDS`, 30 s), as the nginx site file's `keepalive_timeout`
/// is, so no request is sent on a connection the server is closing at that moment.
pub const POOL_IDLE: std::time::Duration = std::time::Duration::from_secs(20);

/// Sends `req`, or fails the test saying what was asked, how long it waited and why it got
/// no answer (a time-out and a dropped connection read alike in `expect`).
pub async fn send(req: reqwest::RequestBuilder, what: &str) -> reqwest::Response {
    let started = std::time::Instant::now();
    match req.send().await {
        Ok(res) => res,
        Err(err) => {
            let mut why = format!("{err}");
            let mut source = std::error::Error::source(&err);
            while let Some(cause) = source {
                why.push_str(&format!(": {cause}"));
                source = cause.source();
            }
            panic!(
                "{what}: no answer after {:.1} s (timed out: {}): {why}",
                started.elapsed().as_secs_f64(),
                err.is_timeout()
            )
        }
    }
}

pub struct Browser {
    client: reqwest::Client,
    /// Cookies for the app's origin only (the provider needs none here).
    pub jar: BTreeMap<String, String>,
    pub origin: String,
}

impl Browser {
    pub fn new(app_origin: &str) -> Self {
        Browser {
            client: reqwest::Client::builder()
                .redirect(reqwest::redirect::Policy::none())
                // A request the server never answers fails its test, naming it, instead of
                // holding the whole run until CI's limit.
                .timeout(REQUEST_LIMIT)
                .pool_idle_timeout(POOL_IDLE)
                .build()
                .expect("client"),
            jar: BTreeMap::new(),
            origin: app_origin.to_owned(),
        }
    }

    pub fn cookie_header(&self) -> String {
        self.jar
            .iter()
            .map(|(k, v)| format!("{k}={v}"))
            .collect::<Vec<_>>()
            .join("; ")
    }

    fn absorb(&mut self, headers: &HeaderMap) {
        for value in headers.get_all(SET_COOKIE) {
            let text = value.to_str().expect("cookie text");
            let (pair, attrs) = text.split_once(';').unwrap_or((text, ""));
            let (name, value) = pair.split_once('=').expect("name=value");
            let removed = attrs.to_ascii_lowercase().contains("max-age=0");
            if removed || value.is_empty() {
                self.jar.remove(name.trim());
            } else {
                self.jar
                    .insert(name.trim().to_owned(), value.trim().to_owned());
            }
        }
    }

    /// GET with this browser's cookies when the URL is the app's.
    pub async fn get(&mut self, url: &str) -> reqwest::Response {
        let mut req = self.client.get(url);
        if url.starts_with(&self.origin) && !self.jar.is_empty() {
            req = req.header(COOKIE, self.cookie_header());
        }
        let res = send(req, &format!("GET {url}")).await;
        if url.starts_with(&self.origin) {
            self.absorb(res.headers());
        }
        res
    }

    /// A form POST from one of the app's own pages.
    pub async fn post_form(&mut self, path: &str, form: &[(&str, &str)]) -> reqwest::Response {
        self.post_form_from(path, form, Some(&self.origin.clone()))
            .await
    }

    /// What a browser sends when a page's plain form is submitted with no script on the
    /// page: it asks for HTML and names the page it came from.
    pub async fn submit_page_form(
        &mut self,
        path: &str,
        page: &str,
        form: &[(&str, &str)],
    ) -> reqwest::Response {
        let page = if page.starts_with("http") {
            page.to_owned()
        } else {
            format!("{}{page}", self.origin)
        };
        let req = self
            .client
            .post(format!("{}{path}", self.origin))
            .form(form)
            .header("Origin", &self.origin)
            .header("Sec-Fetch-Site", "same-origin")
            .header("Accept", "text/html,application/xhtml+xml")
            .header("Referer", page)
            .header(COOKIE, self.cookie_header());
        let res = send(req, &format!("POST {path}")).await;
        self.absorb(res.headers());
        res
    }

    /// A form POST as sent by a page at `origin` (`None`: no Origin header at all).
    pub async fn post_form_from(
        &mut self,
        path: &str,
        form: &[(&str, &str)],
        origin: Option<&str>,
    ) -> reqwest::Response {
        let mut req = self
            .client
            .post(format!("{}{path}", self.origin))
            .form(form);
        if let Some(origin) = origin {
            req = req.header("Origin", origin);
            let site = if origin == self.origin {
                "same-origin"
            } else {
                "cross-site"
            };
            req = req.header("Sec-Fetch-Site", site);
        }
        if !self.jar.is_empty() {
            req = req.header(COOKIE, self.cookie_header());
        }
        let res = send(req, &format!("POST {path}")).await;
        self.absorb(res.headers());
        res
    }
}

impl Browser {
    /// The whole OpenID Connect round trip for `email` (the provider must already answer
    /// for that address); returns the callback's response.
    pub async fn sign_in_with_oidc(&mut self, email: &str) -> reqwest::Response {
        let start = self.post_form("/auth/signin", &[("email", email)]).await;
        let callback = location(&self.get(&location(&start)).await);
        self.get(&callback).await
    }
}

pub fn location(res: &reqwest::Response) -> String {
    res.headers()
        .get(LOCATION)
        .and_then(|v| v.to_str().ok())
        .unwrap_or_default()
        .to_owned()
}

/// The error code a refused sign-in sends the browser back with (`/signin?error=<code>`).
pub fn refusal(res: &reqwest::Response) -> String {
    assert_eq!(
        res.status(),
        reqwest::StatusCode::SEE_OTHER,
        "expected a refusal"
    );
    let to = location(res);
    assert!(to.starts_with("/signin?error="), "{to}");
    to["/signin?error=".len()..]
        .split('&')
        .next()
        .unwrap_or_default()
        .to_owned()
}
