//! A page loads WASM only for the islands it holds.
//!
//! The dashboard's islands are lazy: `cargo leptos build --split` puts each island's code in
//! chunks of its own (listed in `pkg/__wasm_split_manifest.json`), and the main module only
//! starts hydration. Leptos's `HydrationScripts` would load the main module on every page, and
//! an island's chunk only once hydration reached it, one round trip later. So the shell writes
//! no script, and this layer reads each rendered page: when it holds islands
//! (`<leptos-island data-component="…">`), its head gets the main module, its WASM, the split
//! loader and every chunk those islands need, all preloaded at once, and the script that
//! hydrates them. A page without islands gets no script and no WASM at all.
//!
//! Reading the page after it is rendered, rather than having each island announce itself,
//! keeps one rule for every island, present and future: what the page holds is what it loads.
//! The islands' markers cannot be forged by content: Leptos escapes every text and attribute
//! it writes, so `<leptos-island` only appears where an island was rendered.

use std::collections::{BTreeSet, HashMap};
use std::sync::Arc;

use axum::body::Body;
use axum::extract::{Request, State};
use axum::http::header;
use axum::middleware::Next;
use axum::response::{IntoResponse, Response};

/// Where the build writes the split's manifest, under the site's package directory.
const MANIFEST: &str = "__wasm_split_manifest.json";
/// The split loader's file name (cargo-leptos writes it unhashed when file hashing is off).
const SPLIT_LOADER: &str = "__wasm_split.______________________.js";
/// The most of a page this layer reads (no page comes near it; one larger is answered 500,
/// its body having been read).
const MAX_PAGE: usize = 16 * 1024 * 1024;

/// What a page with islands loads: the package's address and each island's chunks.
#[derive(Clone, Debug)]
pub struct PageScripts(Arc<Loaded>);

#[derive(Debug)]
struct Loaded {
    /// `/pkg`
    pkg: String,
    /// The main module's name (`tidemark`: `tidemark.js`, `tidemark.wasm`).
    output: String,
    /// The split loader, when the build was split.
    split_loader: Option<String>,
    /// Each island's chunks, by [`island_key`].
    chunks: HashMap<String, Vec<String>>,
}

impl PageScripts {
    /// Reads the split manifest of the build under `site_root` (none for a build without
    /// `--split`: then every island is in the main module).
    pub fn load(site_root: &str, pkg_dir: &str, output_name: &str) -> Self {
        let dir = std::path::Path::new(site_root).join(pkg_dir);
        let manifest = std::fs::read_to_string(dir.join(MANIFEST)).ok();
        let chunks = match manifest.as_deref().map(parse_manifest) {
            Some(Ok(chunks)) => chunks,
            Some(Err(err)) => {
                tracing::warn!(error = %err, "the WASM split manifest is unreadable; islands load their chunks when they hydrate");
                HashMap::new()
            }
            None => HashMap::new(),
        };
        let split_loader = dir
            .join(SPLIT_LOADER)
            .exists()
            .then(|| SPLIT_LOADER.to_owned());
        PageScripts(Arc::new(Loaded {
            pkg: format!("/{}", pkg_dir.trim_matches('/')),
            output: output_name.to_owned(),
            split_loader,
            chunks,
        }))
    }

    /// What goes at the end of the head of a page holding `islands` (component ids as the
    /// page names them), with the page's script `nonce`.
    pub fn head(&self, islands: &BTreeSet<String>, nonce: Option<&str>) -> String {
        let Loaded {
            pkg,
            output,
            split_loader,
            chunks,
        } = &*self.0;
        let wasm_preload = |file: &str| {
            // `crossorigin`: the loaders fetch in CORS mode, and only a matching preload is used.
            format!(
                r#"<link rel="preload" href="{pkg}/{file}.wasm" as="fetch" type="application/wasm" crossorigin="">"#
            )
        };
        let mut head = format!(r#"<link rel="modulepreload" href="{pkg}/{output}.js">"#);
        head.push_str(&wasm_preload(output));
        if let Some(loader) = split_loader {
            head.push_str(&format!(
                r#"<link rel="modulepreload" href="{pkg}/{loader}">"#
            ));
        }
        let needed: BTreeSet<&str> = islands
            .iter()
            .filter_map(|id| chunks.get(&island_key(id)))
            .flatten()
            .map(String::as_str)
            .collect();
        for chunk in needed {
            head.push_str(&wasm_preload(chunk));
        }
        let nonce = nonce
            .map(|n| {
                format!(
                    r#" nonce="{}""#,
                    html_escape::encode_double_quoted_attribute(n)
                )
            })
            .unwrap_or_default();
        // Every island at once: each one's chunks are already on their way.
        head.push_str(&format!(
            r#"<script type="module"{nonce}>import init, * as islands from "{pkg}/{output}.js";
await init({{ module_or_path: "{pkg}/{output}.wasm" }});
islands.hydrate();
await Promise.all([...document.querySelectorAll("leptos-island")].map((el) => {{
  const hydrate = islands[el.dataset.component];
  return hydrate ? hydrate(el) : console.warn(`no WASM for the island ${{el.dataset.component}}`);
}}));
document.documentElement.dataset.islands = "live";</script>"#
        ));
        head
    }
}

/// The manifest maps each split point (an island's loader is `<snake_name>_loader_<hash>`)
/// to the chunk files it needs; shared chunks are listed under every island that uses them.
fn parse_manifest(text: &str) -> Result<HashMap<String, Vec<String>>, serde_json::Error> {
    let points: HashMap<String, Vec<String>> = serde_json::from_str(text)?;
    let mut chunks: HashMap<String, Vec<String>> = HashMap::new();
    for (point, files) in points {
        let Some(name) = point
            .rsplit_once("_loader_")
            .filter(|(_, hash)| hash.bytes().all(|b| b.is_ascii_digit()))
            .map(|(name, _)| name)
        else {
            continue;
        };
        chunks.entry(island_key(name)).or_default().extend(files);
    }
    Ok(chunks)
}

/// One spelling for an island's name whether the page (`HistoryCard_8123…`) or the manifest
/// (`history_card`) gives it: lower case, without underscores or the page's trailing hash.
fn island_key(name: &str) -> String {
    let name = match name.rsplit_once('_') {
        Some((base, hash)) if !hash.is_empty() && hash.bytes().all(|b| b.is_ascii_digit()) => base,
        _ => name,
    };
    name.chars()
        .filter(|c| *c != '_')
        .flat_map(char::to_lowercase)
        .collect()
}

/// The component ids of the islands `html` holds, in the order of their names.
pub fn islands_in(html: &str) -> BTreeSet<String> {
    const MARK: &str = "<leptos-island data-component=\"";
    html.match_indices(MARK)
        .filter_map(|(at, _)| {
            let rest = &html[at + MARK.len()..];
            rest.find('"').map(|end| rest[..end].to_owned())
        })
        .collect()
}

/// The `'nonce-…'` source of a page's policy.
fn nonce_of(policy: &str) -> Option<&str> {
    let start = policy.find("'nonce-")? + "'nonce-".len();
    let len = policy[start..].find('\'')?;
    Some(&policy[start..start + len])
}

/// Adds the island scripts to every HTML page that holds islands (see the module's text).
pub async fn add_island_scripts(
    State(scripts): State<PageScripts>,
    req: Request,
    next: Next,
) -> Response {
    let res = next.run(req).await;
    let is_html = res
        .headers()
        .get(header::CONTENT_TYPE)
        .and_then(|v| v.to_str().ok())
        .is_some_and(|v| v.starts_with("text/html"));
    if !is_html || res.headers().contains_key(header::CONTENT_ENCODING) {
        return res;
    }
    let (mut parts, body) = res.into_parts();
    let Ok(bytes) = axum::body::to_bytes(body, MAX_PAGE).await else {
        tracing::error!("a page could not be read to add its island scripts");
        return axum::http::StatusCode::INTERNAL_SERVER_ERROR.into_response();
    };
    let Ok(html) = std::str::from_utf8(&bytes) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    let islands = islands_in(html);
    let Some(head_end) = html.find("</head>").filter(|_| !islands.is_empty()) else {
        return Response::from_parts(parts, Body::from(bytes));
    };
    let nonce = parts
        .headers
        .get(header::CONTENT_SECURITY_POLICY)
        .and_then(|v| v.to_str().ok())
        .and_then(nonce_of);
    let head = scripts.head(&islands, nonce);
    let mut page = String::with_capacity(html.len() + head.len());
    page.push_str(&html[..head_end]);
    page.push_str(&head);
    page.push_str(&html[head_end..]);
    // The page grew: the server writes its new length from the body.
    parts.headers.remove(header::CONTENT_LENGTH);
    Response::from_parts(parts, Body::from(page))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn scripts(manifest: &str) -> PageScripts {
        PageScripts(Arc::new(Loaded {
            pkg: "/pkg".into(),
            output: "tidemark".into(),
            split_loader: Some(SPLIT_LOADER.into()),
            chunks: parse_manifest(manifest).unwrap(),
        }))
    }

    #[test]
    fn islands_are_found_by_their_markers_only() {
        let html = r#"<head></head><body><leptos-island data-component="HistoryCard_81234" data-props="{}">
            <p>&lt;leptos-island data-component="Forged_1"&gt;</p></leptos-island>
            <leptos-island data-component="GatePanel_99"></leptos-island>
            <leptos-island data-component="GatePanel_99"></leptos-island></body>"#;
        let found: Vec<String> = islands_in(html).into_iter().collect();
        assert_eq!(found, ["GatePanel_99", "HistoryCard_81234"]);
        assert!(islands_in("<p>no islands</p>").is_empty());
    }

    #[test]
    fn a_page_preloads_exactly_the_chunks_of_its_islands() {
        let s = scripts(
            r#"{"history_card_loader_123": ["split_1", "chunk_0"],
                "gate_panel_loader_456": ["split_2", "chunk_0"],
                "settings_panel_loader_789": ["split_3"],
                "not_an_island": ["split_9"]}"#,
        );
        let page: BTreeSet<String> = ["HistoryCard_81234".into(), "GatePanel_99".into()].into();
        let head = s.head(&page, Some("n0nce"));
        for file in ["split_1", "split_2", "chunk_0"] {
            let preload = format!(r#"<link rel="preload" href="/pkg/{file}.wasm""#);
            assert_eq!(head.matches(&preload).count(), 1, "{file} once in {head}");
        }
        assert!(!head.contains("split_3"), "another page's island");
        assert!(head.contains(r#"<link rel="modulepreload" href="/pkg/tidemark.js">"#));
        assert!(head.contains(r#"href="/pkg/tidemark.wasm" as="fetch""#));
        assert!(head.contains(&format!(r#"href="/pkg/{SPLIT_LOADER}""#)));
        assert!(head.contains(r#"<script type="module" nonce="n0nce">"#));
    }

    #[test]
    fn names_match_across_the_page_and_the_manifest() {
        assert_eq!(island_key("HistoryCard_8123456"), "historycard");
        assert_eq!(island_key("history_card"), "historycard");
        assert_eq!(island_key("Landing"), "landing");
        assert_eq!(island_key("SettingsPanel_1"), "settingspanel");
    }

    #[test]
    fn the_nonce_comes_from_the_page_policy() {
        let policy = app::page_policy::for_nonce("AbC123");
        assert_eq!(nonce_of(&policy), Some("AbC123"));
        assert_eq!(nonce_of("default-src 'none'"), None);
    }

    /// The layer itself: a page with an island gets the scripts in its head, one without
    /// gets nothing, and anything that is not HTML passes untouched.
    #[tokio::test]
    async fn only_pages_with_islands_get_scripts() {
        use axum::routing::get;
        use tower::ServiceExt as _;
        let html = |body: &'static str| {
            move || async move {
                (
                    [
                        (header::CONTENT_TYPE, "text/html; charset=utf-8"),
                        (
                            header::CONTENT_SECURITY_POLICY,
                            "script-src 'self' 'nonce-xyz'",
                        ),
                    ],
                    body,
                )
            }
        };
        let app = axum::Router::new()
            .route(
                "/island",
                get(html(r#"<html><head><title>t</title></head><body><leptos-island data-component="GatePanel_1"></leptos-island></body></html>"#)),
            )
            .route("/plain", get(html("<html><head></head><body>plain</body></html>")))
            .route(
                "/json",
                get(|| async { axum::Json(serde_json::json!({"a": "<leptos-island data-component=\"X_1\"></head>"})) }),
            )
            .layer(axum::middleware::from_fn_with_state(
                scripts(r#"{"gate_panel_loader_1": ["split_7"]}"#),
                add_island_scripts,
            ));
        let get_body = |path: &'static str| {
            let app = app.clone();
            async move {
                let res = app
                    .oneshot(Request::get(path).body(Body::empty()).unwrap())
                    .await
                    .unwrap();
                let len = res.headers().get(header::CONTENT_LENGTH).cloned();
                let body = axum::body::to_bytes(res.into_body(), usize::MAX)
                    .await
                    .unwrap();
                if let Some(len) = len {
                    assert_eq!(len.to_str().unwrap(), body.len().to_string());
                }
                String::from_utf8(body.to_vec()).unwrap()
            }
        };
        let page = get_body("/island").await;
        let head = &page[..page.find("</head>").unwrap()];
        assert!(head.contains(r#"href="/pkg/split_7.wasm""#), "{page}");
        assert!(
            head.contains(r#"<script type="module" nonce="xyz">"#),
            "{page}"
        );
        assert!(head.starts_with("<html><head><title>t</title>"));

        let plain = get_body("/plain").await;
        assert_eq!(plain, "<html><head></head><body>plain</body></html>");
        assert!(!get_body("/json").await.contains("<link"));
    }
}
