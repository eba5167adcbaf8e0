//! Settings' provisioning section (admins): the SCIM base URL and token for the identity
//! provider, and which pushed group gives the admin role.
//!
//! Rendered on the server only, with plain forms posting to `/settings/provisioning/change`:
//! an admin page visited a few times a year ships nothing to every visitor's WASM bundle (an
//! island here cost 28 KB gzipped). A new token is shown once on the page that answers the
//! post; other changes come back here with a notice (`?done=…` or `?refused=…`, codes only).

use leptos::prelude::*;
use leptos_router::hooks::use_query_map;

use super::loading;
use crate::api::provisioning::load_provisioning;
use crate::model::{ProvisioningAction as Act, ProvisioningView, ScimGroupRow};

/// Where every change posts.
pub const CHANGE_PATH: &str = "/settings/provisioning/change";

#[component]
pub fn ProvisioningPanel() -> impl IntoView {
    let data = Resource::new(|| (), |_| load_provisioning());
    let query = use_query_map();
    let notice = move || {
        let q = query.read();
        let text = match (q.get("done").as_deref(), q.get("refused").as_deref()) {
            (_, Some("last_admin")) => Some((
                "alert",
                "Not changed: the account would be left without an admin. Make someone else an admin first.",
            )),
            (_, Some(_)) => Some(("alert", "Not changed: that group or token no longer exists.")),
            (Some("revoked"), _) => Some(("status", "The SCIM token is revoked: provisioning calls are refused until a new token is made.")),
            (Some(_), _) => Some(("status", "Saved.")),
            _ => None,
        };
        text.map(|(role, text)| view! { <p class="notice" role=role data-testid="provisioning-notice">{text}</p> })
    };
    view! {
        {notice}
        <Suspense fallback=loading>
            {move || Suspend::new(async move {
                match data.await {
                    Ok(v) => panel(v),
                    Err(err) => super::error_view(err),
                }
            })}
        </Suspense>
    }
}

/// A form posting `action` (for `group_id`), with `inner` (its button and any check).
fn change_form(action: Act, group_id: &str, inner: AnyView) -> AnyView {
    view! {
        <form method="post" action=CHANGE_PATH class="inline">
            {(action == Act::CreateToken).then(super::once_field)}
            <input type="hidden" name="action" value=action.as_str()/>
            <input type="hidden" name="group_id" value=group_id.to_owned()/>
            {inner}
        </form>
    }
    .into_any()
}

fn panel(v: ProvisioningView) -> AnyView {
    let unavailable = v.unavailable.clone().map(|why| {
        view! { <p class="notice" role="note" data-testid="scim-unavailable">{why}</p> }
    });
    let token = match v.token.clone() {
        Some(t) => view! {
            <p data-testid="scim-token">
                "Token " <code>{format!("{}…", t.prefix)}</code> ", made " {super::utc_time(t.created_at)}
                ", last used " {super::utc_time_or(t.last_used_at, "never")} "."
            </p>
            <div class="row-form">
                {change_form(Act::CreateToken, "", view! {
                    <button type="submit" class="danger">"Rotate token"</button>
                    <span class="muted small">" The current token stops working at once."</span>
                }.into_any())}
                {change_form(Act::RevokeToken, "", view! {
                    <label class="check">
                        <input type="checkbox" name="confirm" value="yes" required/>
                        " stop provisioning"
                    </label>
                    <button type="submit" class="link danger-text">"Revoke"</button>
                }.into_any())}
            </div>
        }
        .into_any(),
        None => change_form(
            Act::CreateToken,
            "",
            view! { <button type="submit" class="primary">"Create token"</button> }.into_any(),
        ),
    };
    view! {
        <section class="card" aria-labelledby="provisioning-heading" data-testid="provisioning">
            <h2 id="provisioning-heading">"Provisioning (SCIM)"</h2>
            <p class="muted small">
                "Your identity provider (Okta, Microsoft Entra ID, …) adds and removes this account's people. Point its SCIM 2.0 provisioning at "
                <code data-testid="scim-url">{v.scim_url.clone()}</code>
                " with the token below as a bearer token. A person it deactivates or removes loses access at once; provisioned people are changed there, not here. See docs/scim.md."
            </p>
            {unavailable}
            {shown_token()}
            {token}
            <p data-testid="scim-people">
                {match v.people {
                    1 => format!("1 person provisioned, {} active.", v.active_people),
                    n => format!("{n} people provisioned, {} active.", v.active_people),
                }}
            </p>
            {groups_table(v.groups)}
        </section>
    }
    .into_any()
}

/// The token just made, on the page its form was sent to (once), or what a reload says.
fn shown_token() -> Option<AnyView> {
    match crate::model::ShownOnce::of_this_request()? {
        crate::model::ShownOnce::ScimToken(token) => Some(view! {
            <div class="notice new-key" role="alert" data-testid="new-scim-token-panel">
                <p><strong>"Your new SCIM token"</strong>" — shown once. Paste it into your identity provider's provisioning settings (the secret token, or the Authorization header as "<code>"Bearer"</code>" and the token) now; any previous token stopped working."</p>
                <p><code data-testid="new-scim-token" id="new-scim-token">{token}</code></p>
                <button type="button" class="primary" data-copy="new-scim-token" hidden>"Copy"</button>
            </div>
        }.into_any()),
        crate::model::ShownOnce::Gone => Some(super::shown_already("The new SCIM token").into_any()),
        _ => None,
    }
}

fn groups_table(rows: Vec<ScimGroupRow>) -> AnyView {
    if rows.is_empty() {
        return view! { <p class="muted">"No groups pushed yet. Every provisioned person is a member until a group is marked as the admins' group."</p> }
            .into_any();
    }
    view! {
        <p class="muted small">"Once a group is marked, its members are the account's admins and every other provisioned person is a member."</p>
        <div class="table-wrap" tabindex="0">
            <table class="data" data-testid="scim-groups">
                <thead><tr>
                    <th scope="col">"Group"</th><th scope="col">"People"</th><th scope="col">"Role it gives"</th>
                    <th scope="col"><span class="visually-hidden">"Actions"</span></th>
                </tr></thead>
                <tbody>
                    {rows.into_iter().map(|g| {
                        let (label, flip, button) = if g.grants_admin {
                            ("admin", Act::StopAdmin, "Stop giving admin")
                        } else {
                            ("member", Act::GiveAdmin, "Give admin")
                        };
                        let aria = format!("{button}: {}", g.name);
                        view! {
                            <tr>
                                <td data-label="Group">{g.name.clone()}</td>
                                <td data-label="People">{g.members}</td>
                                <td data-label="Role it gives">{label}</td>
                                <td>
                                    {change_form(flip, &g.id, view! {
                                        <button type="submit" class="link" aria-label=aria>{button}</button>
                                    }.into_any())}
                                </td>
                            </tr>
                        }
                    }).collect_view()}
                </tbody>
            </table>
        </div>
    }
    .into_any()
}
