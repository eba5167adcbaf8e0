//! The sign-in page and the signed-in home.

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use crate::auth::{current_viewer, my_accounts, sign_in_error_message, AccountChoice};

#[component]
pub fn SignIn() -> impl IntoView {
    let query = use_query_map();
    let error = move || query.read().get("error");
    let next = move || query.read().get("next").unwrap_or_default();
    let signed_out = move || query.read().get("signed_out").is_some();
    view! {
        <leptos_meta::Title text="Sign in · Tidemark"/>
        <section class="card narrow" aria-labelledby="signin-heading">
            <h1 id="signin-heading">"Sign in to Tidemark"</h1>
            {move || {
                error()
                    .map(|code| {
                        view! {
                            <p class="notice error" role="alert" data-error=code.clone()>
                                {sign_in_error_message(&code)}
                            </p>
                        }
                    })
            }}
            <Show when=signed_out>
                <p class="notice" role="status">"You are signed out."</p>
            </Show>
            <p>
                "Enter your work e-mail address. If your company uses single sign-on you go to "
                "its identity provider; otherwise to Tidemark's OpenID Connect provider."
            </p>
            <form method="post" action="/auth/signin" class="stack">
                <label for="email">"E-mail address"</label>
                <input
                    id="email"
                    name="email"
                    type="email"
                    autocomplete="email"
                    required
                    placeholder="you@company.com"
                />
                <input type="hidden" name="next" prop:value=next/>
                <button type="submit" class="primary">"Continue"</button>
            </form>
        </section>
    }
}

/// Header account menu: who is signed in, the account switcher (for people in several
/// accounts) and a sign-out button, or a sign-in link.
#[component]
pub fn AccountMenu() -> impl IntoView {
    let viewer = Resource::new(|| (), |_| current_viewer());
    let accounts = Resource::new(|| (), |_| my_accounts());
    view! {
        <Transition fallback=|| ()>
            {move || Suspend::new(async move {
                match viewer.await {
                    Ok(Some(viewer)) => {
                        view! {
                            <nav class="account" aria-label="Account">
                                <a href="/projects">"Projects"</a>
                                <a href="/findings">"Findings"</a>
                                <a href="/settings">"Settings"</a>
                                <span class="who" data-testid="signed-in-as">
                                    {viewer.email.clone()} " · " {viewer.role().as_str()}
                                </span>
                                {switcher(accounts.await.unwrap_or_default(), viewer.via_saml)}
                                <form method="post" action="/auth/logout">
                                    <button type="submit" class="link">"Sign out"</button>
                                </form>
                            </nav>
                        }
                            .into_any()
                    }
                    _ => {
                        view! {
                            <nav class="account" aria-label="Account">
                                <a href="/signin">"Sign in"</a>
                            </nav>
                        }
                            .into_any()
                    }
                }
            })}
        </Transition>
    }
}

/// A plain form (it works without JavaScript): choose an account, press Switch. The server
/// checks the membership and issues a new session id.
fn switcher(accounts: Vec<AccountChoice>, via_saml: bool) -> Option<impl IntoView> {
    if accounts.len() < 2 {
        return None;
    }
    if via_saml {
        let current = accounts.into_iter().find(|a| a.current)?;
        return Some(
            view! {
                <span class="muted small" data-testid="account-current"
                    title="Signed in with your company's single sign-on: sign in again to open another account.">
                    {current.label}
                </span>
            }
            .into_any(),
        );
    }
    Some(
        view! {
            <form method="post" action="/auth/switch" class="account-switch">
                <label for="account-switch" class="visually-hidden">"Account"</label>
                <select id="account-switch" name="account_id" data-testid="account-switch">
                    {accounts
                        .into_iter()
                        .map(|a| {
                            let role = a.role.as_str();
                            view! {
                                <option value=a.account_id.to_string() selected=a.current>
                                    {format!("{} · {role}", a.label)}
                                </option>
                            }
                        })
                        .collect_view()}
                </select>
                <button type="submit" class="link">"Switch"</button>
            </form>
        }
        .into_any(),
    )
}
