//! The vendor's console, drawn on the server: whole HTML documents with no script and no
//! WASM (a console page is a table, a form or a chart, none of which needs the browser to
//! run code). The server's console handlers gather the data and call these; everything
//! shown goes through the view macro, which escapes it.

use leptos::prelude::*;

pub mod actions;
pub mod activity;
pub mod business;
pub mod charts;
pub mod license;
pub mod search;

/// The signed-in staff member, as the header shows them.
#[derive(Debug, Clone)]
pub struct StaffBar {
    pub email: String,
    /// "sales, support"
    pub roles: String,
}

/// A whole console page: the header (who is signed in, and signing out), then `body`.
pub fn document(title: &str, staff: Option<&StaffBar>, body: AnyView) -> String {
    let title = format!("{title} · Tidemark console");
    let staff = staff.cloned();
    let html = Owner::new().with(move || {
        view! {
            <html lang="en">
                <head>
                    <meta charset="utf-8"/>
                    <meta name="viewport" content="width=device-width, initial-scale=1"/>
                    <meta name="color-scheme" content="light dark"/>
                    <link rel="icon" href="/favicon.ico"/>
                    <link rel="stylesheet" href="/pkg/tidemark.css"/>
                    <title>{title}</title>
                </head>
                <body class="console">
                    <a class="skip-link" href="#main">"Skip to content"</a>
                    <header class="topbar">
                        <a class="brand" href="/console">
                            <span class="brand-mark" aria-hidden="true">"≋"</span>
                            " Tidemark console"
                        </a>
                        {staff.map(|s| view! {
                            <nav class="console-nav" aria-label="Console">
                                <a href="/console">"Customers"</a>
                                <a href="/console/business">"Business"</a>
                            </nav>
                            <div class="account">
                                <span class="muted small">{s.email}" · "{s.roles}</span>
                                <form method="post" action="/console/sign-out">
                                    <button type="submit">"Sign out"</button>
                                </form>
                            </div>
                        })}
                    </header>
                    <main id="main" tabindex="-1">{body}</main>
                </body>
            </html>
        }
        .to_html()
    });
    format!("<!DOCTYPE html>{html}")
}

/// A data table with a hidden caption, its column heads and its rows (cards, figures).
pub fn data_table(caption: &'static str, heads: &[&'static str], rows: AnyView) -> AnyView {
    let heads = heads.to_vec();
    view! {
        <div class="table-wrap">
            <table class="data">
                <caption class="visually-hidden">{caption}</caption>
                <thead>
                    <tr>{heads.into_iter().map(|h| view! { <th scope="col">{h}</th> }).collect_view()}</tr>
                </thead>
                <tbody>{rows}</tbody>
            </table>
        </div>
    }
    .into_any()
}

/// A card with a heading and a sentence: refusals, errors, and what to do next.
pub fn message(heading: &str, text: &str, link: Option<(&str, &str)>) -> AnyView {
    let (heading, text) = (heading.to_owned(), text.to_owned());
    let link = link.map(|(href, label)| (href.to_owned(), label.to_owned()));
    view! {
        <section class="card narrow" role="alert">
            <h1>{heading}</h1>
            <p>{text}</p>
            {link.map(|(href, label)| view! { <p><a href=href>{label}</a></p> })}
        </section>
    }
    .into_any()
}

/// The sign-in card: one button to the vendor's own identity provider.
pub fn sign_in(next: &str, problem: Option<&str>) -> AnyView {
    let (next, problem) = (next.to_owned(), problem.map(str::to_owned));
    view! {
        <section class="card narrow">
            <h1>"Vendor console"</h1>
            <p class="lede">
                "For the vendor's staff: licences, seats and activity of every customer. "
                "Customers sign in to the dashboard instead."
            </p>
            {problem.map(|p| view! { <p class="notice" role="alert">{p}</p> })}
            <form method="post" action="/console/sign-in">
                <input type="hidden" name="next" value=next/>
                <button type="submit">"Sign in with the staff identity provider"</button>
            </form>
        </section>
    }
    .into_any()
}
