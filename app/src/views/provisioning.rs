//! Settings' provisioning panel (admins): the SCIM base URL and token for the identity
//! provider, and which pushed group gives the admin role.

use leptos::prelude::*;

use super::{action_error, confirm_first, loading};
use crate::api::provisioning::{
    load_provisioning, CreateScimToken, RevokeScimToken, SetAdminGroup,
};
use crate::model::{ProvisioningView, ScimGroupRow};

/// Its own island: a new token or a changed group refreshes only this panel.
#[island]
pub fn ProvisioningPanel() -> impl IntoView {
    let create = ServerAction::<CreateScimToken>::new();
    let revoke = ServerAction::<RevokeScimToken>::new();
    let mark = ServerAction::<SetAdminGroup>::new();
    let view_data = Resource::new(
        move || {
            (
                create.version().get(),
                revoke.version().get(),
                mark.version().get(),
            )
        },
        |_| load_provisioning(),
    );
    view! {
        <Suspense fallback=loading>
            {move || Suspend::new(async move {
                match view_data.await {
                    Ok(v) => panel(v, create, revoke, mark),
                    Err(err) => super::error_view(err),
                }
            })}
        </Suspense>
        {move || create.value().get().and_then(|r| r.ok()).map(new_token_panel)}
        {action_error(create)}
        {action_error(revoke)}
        {action_error(mark)}
    }
}

fn panel(
    v: ProvisioningView,
    create: ServerAction<CreateScimToken>,
    revoke: ServerAction<RevokeScimToken>,
    mark: ServerAction<SetAdminGroup>,
) -> AnyView {
    let unavailable = v.unavailable.clone().map(|why| {
        view! { <p class="notice" role="note" data-testid="scim-unavailable">{why}</p> }
    });
    let token = match v.token.clone() {
        Some(t) => view! {
            <p data-testid="scim-token">
                "Token " <code>{format!("{}…", t.prefix)}</code> ", made " {t.created_at}
                ", last used " {t.last_used_at.unwrap_or_else(|| "never".into())} "."
            </p>
            <div class="row-form">
                <ActionForm action=create attr:class="inline">
                    <button type="submit" class="danger" on:click=confirm_first(
                        "Replace the SCIM token? The identity provider's current token stops working at once."
                    )>"Rotate token"</button>
                </ActionForm>
                <ActionForm action=revoke attr:class="inline">
                    <button type="submit" class="link danger-text" on:click=confirm_first(
                        "Revoke the SCIM token? Provisioning stops until a new token is made."
                    )>"Revoke"</button>
                </ActionForm>
            </div>
        }
        .into_any(),
        None => view! {
            <ActionForm action=create attr:class="inline">
                <button type="submit" class="primary">"Create token"</button>
            </ActionForm>
        }
        .into_any(),
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
            {token}
            <p data-testid="scim-people">
                {format!("{} people provisioned, {} active.", v.people, v.active_people)}
            </p>
            {groups_table(v.groups, mark)}
        </section>
    }
    .into_any()
}

fn groups_table(rows: Vec<ScimGroupRow>, mark: ServerAction<SetAdminGroup>) -> AnyView {
    if rows.is_empty() {
        return view! { <p class="muted">"No groups pushed yet. Every provisioned person is a member until a group is marked as the admins' group."</p> }
            .into_any();
    }
    view! {
        <p class="muted small">"Once a group is marked, its members are the account's admins and every other provisioned person is a member."</p>
        <table class="data" data-testid="scim-groups">
            <thead><tr>
                <th scope="col">"Group"</th><th scope="col">"People"</th><th scope="col">"Role it gives"</th>
                <th scope="col"><span class="visually-hidden">"Actions"</span></th>
            </tr></thead>
            <tbody>
                {rows.into_iter().map(|g| {
                    let (label, flip, button) = if g.grants_admin {
                        ("admin", "false", "Stop giving admin")
                    } else {
                        ("member", "true", "Give admin")
                    };
                    view! {
                        <tr>
                            <td>{g.name.clone()}</td>
                            <td>{g.members}</td>
                            <td>{label}</td>
                            <td>
                                <ActionForm action=mark>
                                    <input type="hidden" name="group_id" value=g.id.clone()/>
                                    <input type="hidden" name="admin" value=flip/>
                                    <button type="submit" class="link" aria-label=format!("{button}: {}", g.name)>{button}</button>
                                </ActionForm>
                            </td>
                        </tr>
                    }
                }).collect_view()}
            </tbody>
        </table>
    }
    .into_any()
}

fn new_token_panel(token: String) -> impl IntoView {
    view! {
        <div class="notice new-key" role="alert" data-testid="new-scim-token-panel">
            <p><strong>"Your new SCIM token"</strong> " — shown once. Paste it into your identity provider's provisioning settings now; any previous token stopped working."</p>
            <p><code data-testid="new-scim-token">{token}</code></p>
        </div>
    }
}
