//! The site's `/pkg` files served like a production site: compressed with Brotli or gzip as
//! the browser accepts, the same bytes once decoded, revalidated by ETag (`304`), never
//! stored by a shared cache without asking.
#![allow(clippy::unwrap_used)]

use std::io::Read as _;

use reqwest::StatusCode;
use tidemark_store::Backend;

use crate::common::{wait_for_async, TestApp};

#[tokio::test]
async fn site_assets_are_compressed_and_revalidated() {
    let site = tempfile::tempdir().unwrap();
    std::fs::create_dir(site.path().join("pkg")).unwrap();
    // Compressible, like a real bundle, but not trivially so.
    let wasm: Vec<u8> = (0..200_000u32)
        .flat_map(|i| ((i * 7919) % 251).to_le_bytes().into_iter().take(2))
        .collect();
    std::fs::write(site.path().join("pkg/tidemark.wasm"), &wasm).unwrap();
    std::fs::write(
        site.path().join("pkg/tidemark.css"),
        "body { margin: 0 }\n".repeat(200),
    )
    .unwrap();
    let root = site.path().display().to_string();
    let app = TestApp::spawn_with(Backend::Sqlite, &[("LEPTOS_SITE_ROOT", root.as_str())]).await;
    // reqwest without its own decompression: the test reads what travels.
    let raw = reqwest::Client::builder()
        .no_gzip()
        .no_brotli()
        .build()
        .unwrap();
    let get = |encoding: &'static str, etag: Option<String>| {
        let (raw, url) = (raw.clone(), app.url("/pkg/tidemark.wasm"));
        async move {
            let mut req = raw.get(url).header("accept-encoding", encoding);
            if let Some(tag) = etag {
                req = req.header("if-none-match", tag);
            }
            req.send().await.unwrap()
        }
    };
    // Until the files' variants are ready the pages' compression layer answers them on the
    // fly (with no tag); the tag says the asset server itself answered.
    wait_for_async(std::time::Duration::from_secs(20), || async {
        get("br", None).await.headers().get("etag").map(|_| ())
    })
    .await
    .expect("the assets were compressed");

    let res = get("gzip, deflate, br", None).await;
    assert_eq!(res.status(), StatusCode::OK);
    assert_eq!(res.headers()["content-encoding"], "br");
    assert_eq!(res.headers()["content-type"], "application/wasm");
    assert_eq!(res.headers()["cache-control"], "no-cache");
    assert_eq!(res.headers()["vary"], "Accept-Encoding");
    let etag = res.headers()["etag"].to_str().unwrap().to_owned();
    let body = res.bytes().await.unwrap();
    assert!(
        body.len() < wasm.len() / 2,
        "{} of {}",
        body.len(),
        wasm.len()
    );
    let mut decoded = Vec::new();
    brotli::Decompressor::new(&body[..], 4096)
        .read_to_end(&mut decoded)
        .unwrap();
    assert_eq!(decoded, wasm);

    let res = get("gzip", None).await;
    assert_eq!(res.headers()["content-encoding"], "gzip");
    let gz_etag = res.headers()["etag"].to_str().unwrap().to_owned();
    assert_ne!(gz_etag, etag, "each representation has its own tag");
    let mut decoded = Vec::new();
    flate2::read::GzDecoder::new(&res.bytes().await.unwrap()[..])
        .read_to_end(&mut decoded)
        .unwrap();
    assert_eq!(decoded, wasm);

    let res = get("identity", None).await;
    assert!(res.headers().get("content-encoding").is_none());
    assert_eq!(res.bytes().await.unwrap(), wasm);

    // A repeat visit asks with the tag it holds and gets no body.
    let res = get("br", Some(etag.clone())).await;
    assert_eq!(res.status(), StatusCode::NOT_MODIFIED);
    assert!(res.bytes().await.unwrap().is_empty());
    // A tag of another representation is not a match.
    assert_eq!(get("br", Some(gz_etag)).await.status(), StatusCode::OK);

    // The security headers still apply, and unknown files are still not found.
    let css = raw
        .get(app.url("/pkg/tidemark.css"))
        .header("accept-encoding", "gzip")
        .send()
        .await
        .unwrap();
    assert_eq!(css.headers()["content-encoding"], "gzip");
    assert_eq!(css.headers()["x-content-type-options"], "nosniff");
    let missing = raw.get(app.url("/pkg/nothing.wasm")).send().await.unwrap();
    assert_eq!(missing.status(), StatusCode::NOT_FOUND);
}
