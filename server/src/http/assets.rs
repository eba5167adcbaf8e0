//! The site's build output under `/pkg` (the WASM bundle, its JS and the CSS), served like a
//! production site: compressed once with Brotli and gzip when the server starts, chosen by
//! `Accept-Encoding`, with an `ETag` per representation so a repeat visit revalidates
//! (`304`) instead of downloading 1.4 MB again. The file names carry no content hash, so the
//! answers say `Cache-Control: no-cache` (keep, but ask first) rather than `immutable`.
//!
//! Release builds write the compressed variants next to each file (`cargo leptos build
//! --release --precompress`: `tidemark.wasm.br`, `.gz`, at the best settings). The server
//! takes them after checking that each decompresses to the file beside it, so a variant left
//! over from an older build is never served. A file without them (a debug build) is
//! compressed in the background at start-up: about a second for the WASM, and a transient
//! 40 MB of memory that precompressed builds do not pay. Until that is done, or for a file it
//! does not know, the request goes on to the plain file service.

use std::collections::HashMap;
use std::io::Write as _;
use std::sync::{Arc, OnceLock};

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::{header, HeaderMap, HeaderValue, StatusCode};
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};
use sha2::{Digest as _, Sha256};

/// Files smaller than this are not worth compressing.
const MIN_COMPRESS: usize = 1024;
/// Brotli quality: 11 takes seconds on the WASM for about 3 % less than 9.
const BROTLI_QUALITY: u32 = 9;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Encoding {
    Brotli,
    Gzip,
    Identity,
}

impl Encoding {
    fn token(self) -> Option<&'static str> {
        match self {
            Encoding::Brotli => Some("br"),
            Encoding::Gzip => Some("gzip"),
            Encoding::Identity => None,
        }
    }
}

/// The best encoding `accept` (an `Accept-Encoding` value) allows: Brotli, then gzip, then
/// none. A coding given `q=0` is refused; `*` stands for codings not named.
pub fn choose_encoding(accept: &str) -> Encoding {
    let mut named: HashMap<String, f32> = HashMap::new();
    for item in accept.split(',') {
        let mut parts = item.split(';');
        let coding = parts.next().unwrap_or("").trim().to_ascii_lowercase();
        if coding.is_empty() {
            continue;
        }
        let q = parts
            .filter_map(|p| p.trim().strip_prefix("q="))
            .find_map(|q| q.trim().parse::<f32>().ok())
            .unwrap_or(1.0);
        named.insert(coding, q);
    }
    let allowed = |coding: &str| {
        named
            .get(coding)
            .or_else(|| named.get("*"))
            .is_some_and(|q| *q > 0.0)
    };
    if allowed("br") {
        Encoding::Brotli
    } else if allowed("gzip") {
        Encoding::Gzip
    } else {
        Encoding::Identity
    }
}

struct Asset {
    content_type: &'static str,
    /// The content's SHA-256, shortened: every representation's ETag starts with it.
    hash: String,
    identity: bytes::Bytes,
    gzip: Option<bytes::Bytes>,
    brotli: Option<bytes::Bytes>,
}

impl Asset {
    fn representation(&self, encoding: Encoding) -> (Encoding, &bytes::Bytes) {
        match encoding {
            Encoding::Brotli => self
                .brotli
                .as_ref()
                .map(|b| (Encoding::Brotli, b))
                .or_else(|| self.gzip.as_ref().map(|g| (Encoding::Gzip, g)))
                .unwrap_or((Encoding::Identity, &self.identity)),
            Encoding::Gzip => self
                .gzip
                .as_ref()
                .map(|g| (Encoding::Gzip, g))
                .unwrap_or((Encoding::Identity, &self.identity)),
            Encoding::Identity => (Encoding::Identity, &self.identity),
        }
    }

    fn etag(&self, encoding: Encoding) -> String {
        match encoding.token() {
            Some(t) => format!("\"{}-{t}\"", self.hash),
            None => format!("\"{}\"", self.hash),
        }
    }
}

fn content_type(name: &str) -> Option<&'static str> {
    match name.rsplit_once('.')?.1 {
        "wasm" => Some("application/wasm"),
        "js" => Some("text/javascript; charset=utf-8"),
        "css" => Some("text/css; charset=utf-8"),
        _ => None,
    }
}

fn gzip(data: &[u8]) -> Option<Vec<u8>> {
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::best());
    enc.write_all(data).ok()?;
    enc.finish().ok()
}

fn brotli(data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    {
        let mut enc = brotli::CompressorWriter::new(&mut out, 64 * 1024, BROTLI_QUALITY, 22);
        enc.write_all(data).ok()?;
        enc.flush().ok()?;
    }
    Some(out)
}

/// The compressed assets, once ready.
#[derive(Clone, Default)]
pub struct Assets {
    ready: Arc<OnceLock<HashMap<String, Asset>>>,
    started: Arc<std::sync::atomic::AtomicBool>,
}

impl Assets {
    /// Starts compressing `site_root/pkg` in the background (once: later calls do nothing).
    /// `serve` calls it, so operator commands never pay for it.
    pub fn start_loading(&self, site_root: &str) {
        if self.started.swap(true, std::sync::atomic::Ordering::SeqCst) {
            return;
        }
        let (slot, dir) = (
            self.ready.clone(),
            std::path::Path::new(site_root).join("pkg"),
        );
        let spawned = std::thread::Builder::new()
            .name("asset-compression".into())
            .spawn(move || {
                let started = std::time::Instant::now();
                let loaded = load(&dir);
                if !loaded.is_empty() {
                    tracing::info!(
                        files = loaded.len(),
                        ms = started.elapsed().as_millis() as u64,
                        "site assets compressed"
                    );
                }
                let _ = slot.set(loaded);
            });
        if let Err(err) = spawned {
            tracing::warn!(error = %err, "could not start compressing the site assets; serving them plain");
        }
    }
}

/// The variant `path` + `suffix` written at build time, if it decodes to exactly `data`.
fn precompressed(
    path: &std::path::Path,
    suffix: &str,
    data: &[u8],
    decode: fn(&[u8]) -> Option<Vec<u8>>,
) -> Option<Vec<u8>> {
    let mut name = path.as_os_str().to_owned();
    name.push(suffix);
    let stored = std::fs::read(name).ok()?;
    let fresh = decode(&stored).is_some_and(|plain| plain == data);
    if !fresh {
        tracing::warn!(file = %path.display(), suffix, "a precompressed variant does not match its file (left from another build?); compressing anew");
    }
    fresh.then_some(stored)
}

fn gunzip(data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut flate2::read::GzDecoder::new(data), &mut out).ok()?;
    Some(out)
}

fn unbrotli(data: &[u8]) -> Option<Vec<u8>> {
    let mut out = Vec::new();
    std::io::Read::read_to_end(&mut brotli::Decompressor::new(data, 64 * 1024), &mut out).ok()?;
    Some(out)
}

fn load(dir: &std::path::Path) -> HashMap<String, Asset> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return HashMap::new();
    };
    let mut assets = HashMap::new();
    for entry in entries.flatten() {
        let name = entry.file_name().to_string_lossy().into_owned();
        let Some(content_type) = content_type(&name) else {
            continue;
        };
        let Ok(data) = std::fs::read(entry.path()) else {
            continue;
        };
        let worth = data.len() >= MIN_COMPRESS;
        let smaller =
            |c: Option<Vec<u8>>| c.filter(|c| c.len() < data.len()).map(bytes::Bytes::from);
        let path = entry.path();
        let variant = |suffix, decode, encode: fn(&[u8]) -> Option<Vec<u8>>| {
            if !worth {
                return None;
            }
            smaller(precompressed(&path, suffix, &data, decode).or_else(|| encode(&data)))
        };
        let gzip = variant(".gz", gunzip, gzip);
        let brotli = variant(".br", unbrotli, brotli);
        let asset = Asset {
            content_type,
            hash: hex::encode(&Sha256::digest(&data)[..12]),
            gzip,
            brotli,
            identity: bytes::Bytes::from(data),
        };
        assets.insert(name, asset);
    }
    assets
}

fn matches_etag(headers: &HeaderMap, etag: &str) -> bool {
    headers
        .get_all(header::IF_NONE_MATCH)
        .iter()
        .filter_map(|v| v.to_str().ok())
        .flat_map(|v| v.split(','))
        .map(|t| t.trim().trim_start_matches("W/"))
        .any(|t| t == etag || t == "*")
}

/// Answers `GET /pkg/<file>` from the compressed assets when they know the file.
/// Whether `path` names a file of the site under `root` (what the plain file service answers):
/// no `..`, no hidden part, an existing regular file.
pub fn is_site_file(root: &std::path::Path, path: &str) -> bool {
    let relative = path.trim_start_matches('/');
    if relative.is_empty()
        || relative
            .split('/')
            .any(|part| part.is_empty() || part.starts_with('.'))
    {
        return false;
    }
    root.join(relative).is_file()
}

pub async fn serve_assets(State(assets): State<Assets>, req: Request, next: Next) -> Response {
    let name = req.uri().path().strip_prefix("/pkg/").map(str::to_owned);
    let found = match (name, assets.ready.get()) {
        (Some(name), Some(all))
            if req.method() == axum::http::Method::GET
                || req.method() == axum::http::Method::HEAD =>
        {
            all.get(&name).map(|a| (a, name))
        }
        _ => None,
    };
    let Some((asset, _)) = found else {
        return next.run(req).await;
    };
    let accept = req
        .headers()
        .get(header::ACCEPT_ENCODING)
        .and_then(|v| v.to_str().ok())
        .unwrap_or("");
    let (encoding, body) = asset.representation(choose_encoding(accept));
    let etag = asset.etag(encoding);
    let mut res = if matches_etag(req.headers(), &etag) {
        StatusCode::NOT_MODIFIED.into_response()
    } else if req.method() == axum::http::Method::HEAD {
        let mut r = StatusCode::OK.into_response();
        if let Ok(v) = HeaderValue::from_str(&body.len().to_string()) {
            r.headers_mut().insert(header::CONTENT_LENGTH, v);
        }
        r
    } else {
        Body::from(body.clone()).into_response()
    };
    let h = res.headers_mut();
    h.insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static(asset.content_type),
    );
    h.insert(header::CACHE_CONTROL, HeaderValue::from_static("no-cache"));
    h.insert(header::VARY, HeaderValue::from_static("Accept-Encoding"));
    if let Ok(v) = HeaderValue::from_str(&etag) {
        h.insert(header::ETAG, v);
    }
    if let Some(token) = encoding.token() {
        h.insert(header::CONTENT_ENCODING, HeaderValue::from_static(token));
    }
    res
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_best_accepted_coding_is_chosen() {
        assert_eq!(choose_encoding("gzip, deflate, br, zstd"), Encoding::Brotli);
        assert_eq!(choose_encoding("gzip, deflate"), Encoding::Gzip);
        assert_eq!(choose_encoding("br;q=0, gzip;q=0.5"), Encoding::Gzip);
        assert_eq!(choose_encoding(""), Encoding::Identity);
        assert_eq!(choose_encoding("identity"), Encoding::Identity);
        assert_eq!(choose_encoding("*"), Encoding::Brotli);
        assert_eq!(choose_encoding("*;q=0, gzip"), Encoding::Gzip);
        assert_eq!(choose_encoding("BR"), Encoding::Brotli);
    }

    #[test]
    fn compression_round_trips() {
        let data = b"tidemark ".repeat(500);
        let gz = gzip(&data).unwrap();
        assert_eq!(gunzip(&gz).unwrap(), data);
        let br = brotli(&data).unwrap();
        assert_eq!(unbrotli(&br).unwrap(), data);
        assert!(br.len() < data.len() / 10 && gz.len() < data.len() / 10);
    }

    /// A variant written at build time is served as it is; one that does not decode to its
    /// file (left from an older build) is replaced by a fresh compression.
    #[test]
    fn build_time_variants_are_used_only_when_they_match() {
        let dir = tempfile::tempdir().unwrap();
        let data = b"(module) ".repeat(400);
        std::fs::write(dir.path().join("app.wasm"), &data).unwrap();
        // Quality 1 output differs from what the server would make, so its use shows.
        let mut built = Vec::new();
        {
            let mut enc = brotli::CompressorWriter::new(&mut built, 4096, 1, 18);
            enc.write_all(&data).unwrap();
        }
        assert_ne!(built, brotli(&data).unwrap());
        std::fs::write(dir.path().join("app.wasm.br"), &built).unwrap();
        let stale = gzip(b"an older bundle").unwrap();
        std::fs::write(dir.path().join("app.wasm.gz"), &stale).unwrap();

        let loaded = load(dir.path());
        assert_eq!(loaded.len(), 1, "variants are not assets of their own");
        let asset = &loaded["app.wasm"];
        assert_eq!(asset.brotli.as_deref(), Some(&built[..]));
        let gz = asset.gzip.as_deref().unwrap();
        assert_ne!(gz, &stale[..]);
        assert_eq!(gunzip(gz).unwrap(), data);
    }
}
