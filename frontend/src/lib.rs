//! The WASM entry point: hydrates the server-rendered dashboard in the browser.

// Islands mode: only the interactive parts the app marks `#[island]` are in this bundle.
#[allow(unused_imports)]
use app::*;

#[wasm_bindgen::prelude::wasm_bindgen]
pub fn hydrate() {
    console_error_panic_hook::set_once();
    leptos::mount::hydrate_islands();
}
