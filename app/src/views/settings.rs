use leptos::prelude::*;
use leptos::server_fn::ServerFn;
use leptos_meta::Title;

use super::{error_view, form_error, form_notice, loading};
use crate::api::badges::{load_badges, IssueBadge, RevokeBadge};
use crate::api::projects::SetArchived;
use crate::api::settings::{
    load_settings, AddMember, ChangeMember, ConfigureSso, CreateKey, ReleaseMachine, RemoveSso,
    RevokeKey, RotateKeys, VerifySso,
};
use crate::model::{
    BadgesView, KeyView, MemberAction, ProjectsView, SettingsView, ShownOnce, SsoState, SsoSummary,
};

/// Settings' sections, in the side navigation's order: the path segment under `/settings/`,
/// the title, and whether only admins see it (members are refused those pages anyway).
pub const SECTIONS: [(&str, &str, bool); 14] = [
    ("keys", "API keys", false),
    ("license", "License", false),
    ("machines", "Machines", false),
    ("members", "Members", false),
    ("sso", "Single sign-on", false),
    ("projects", "Projects", false),
    ("frameworks", "Frameworks", false),
    ("storage", "Storage", false),
    ("alerts", "Alerts", false),
    ("badges", "Badges", false),
    ("webhooks", "Webhooks", true),
    ("publishers", "Trusted publishers", true),
    ("provisioning", "Provisioning", true),
    ("audit", "Audit log", true),
];

/// `/settings`: the first section.
#[component]
pub fn SettingsPage() -> impl IntoView {
    settings_section("keys")
}

/// `/settings/<section>`; an unknown section is the not-found page.
#[component]
pub fn SettingsSectionPage() -> impl IntoView {
    let params = leptos_router::hooks::use_params_map();
    let section = params.read_untracked().get("section").unwrap_or_default();
    match SECTIONS.iter().find(|(key, _, _)| *key == section) {
        Some((key, _, _)) => settings_section(key),
        None => view! { <crate::pages::NotFound/> }.into_any(),
    }
}

fn settings_section(key: &'static str) -> AnyView {
    let title = SECTIONS
        .iter()
        .find(|(k, _, _)| *k == key)
        .map_or("Settings", |(_, t, _)| *t);
    let body = match key {
        "alerts" => view! { <super::alerts::AlertsPanel/> }.into_any(),
        "badges" => view! { <BadgesPanel/> }.into_any(),
        "webhooks" => view! { <super::webhooks::WebhooksPanel/> }.into_any(),
        "publishers" => view! { <super::publishers::PublishersPanel/> }.into_any(),
        "provisioning" => view! { <super::provisioning::ProvisioningPanel/> }.into_any(),
        "audit" => view! { <super::audit::AuditLog/> }.into_any(),
        "storage" => view! { <super::storage::StoragePanel/> }.into_any(),
        "frameworks" => view! { <super::custom_frameworks::CustomFrameworksPanel/> }.into_any(),
        other => view! { <SettingsPanel section=other.to_owned()/> }.into_any(),
    };
    view! {
        <Title text=format!("{title} · Settings · Tidemark")/>
        <section class="page-head"><h1>"Settings"</h1></section>
        <div class="settings-layout">
            <SettingsNav current=key/>
            <div class="settings-body">{body}</div>
        </div>
    }
    .into_any()
}

/// The side navigation: one link per section, the admin-only ones for admins only.
#[component]
fn SettingsNav(current: &'static str) -> impl IntoView {
    let viewer = Resource::new(|| (), |_| crate::auth::current_viewer());
    view! {
        <nav class="settings-nav" aria-label="Settings sections" data-testid="settings-nav">
            <Suspense fallback=|| ()>
                {move || Suspend::new(async move {
                    let admin = viewer.await.ok().flatten().is_some_and(|v| v.is_admin);
                    view! {
                        <ul>
                            {SECTIONS.iter().filter(|(_, _, admins)| admin || !admins).map(|(key, title, _)| {
                                let here = *key == current;
                                view! {
                                    <li>
                                        <a href=format!("/settings/{key}")
                                            class:active=here
                                            aria-current=here.then_some("page")>{*title}</a>
                                    </li>
                                }
                            }).collect_view()}
                        </ul>
                    }
                })}
            </Suspense>
        </nav>
    }
}

/// Status badges: the Markdown to paste into a README, per project. Server-rendered: making
/// or revoking a link is a plain form posting to its server function, which sends the browser
/// back here with the list as it now is (the section loads no WASM).
#[component]
fn BadgesPanel() -> impl IntoView {
    let badges = Resource::new(|| (), |_| load_badges());
    view! {
        <section class="card" aria-labelledby="badges-heading" data-testid="badges">
            <h2 id="badges-heading">"Status badges"</h2>
            <p class="muted small">
                "A badge shows a project's latest score and quality-gate verdict to anyone with its link, "
                "and nothing else. Making a new link stops the old one at once."
            </p>
            <Suspense fallback=loading>
                {move || Suspend::new(async move {
                    match badges.await {
                        Ok(v) => badge_rows(v).into_any(),
                        Err(err) => error_view(err),
                    }
                })}
            </Suspense>
            {form_notice(IssueBadge::PATH, "A new badge link is ready: the old one no longer shows.")}
            {form_notice(RevokeBadge::PATH, "Badge revoked: its link no longer shows.")}
        </section>
    }
}

fn badge_rows(v: BadgesView) -> impl IntoView {
    if v.rows.is_empty() {
        return view! { <p class="muted">"No active projects yet."</p> }.into_any();
    }
    let admin = v.is_admin;
    view! {
        <ul class="badge-list">
            {v.rows.into_iter().map(|row| {
                let label = row.label.clone();
                let has_badge = row.markdown.is_some();
                let (issue_id, revoke_id) = (row.project_id.to_string(), row.project_id.to_string());
                view! {
                    <li data-testid="badge-row" data-project=row.project_id.to_string()>
                        <strong>{row.label.clone()}</strong>
                        {row.image.map(|src| view! { <img src=src alt=format!("Badge of {label}")/> })}
                        {row.markdown.map(|md| view! { <pre class="badge-markdown" tabindex="0"><code>{md}</code></pre> })}
                        {admin.then(move || view! {
                            <div class="row-form">
                                <form method="post" action=IssueBadge::PATH>
                                    <input type="hidden" name="project_id" value=issue_id/>
                                    <button type="submit" class="secondary">
                                        {if has_badge { "New badge link" } else { "Create badge" }}
                                    </button>
                                </form>
                                {has_badge.then(move || view! {
                                    <form method="post" action=RevokeBadge::PATH>
                                        <input type="hidden" name="project_id" value=revoke_id/>
                                        <button type="submit" class="danger">"Revoke badge"</button>
                                    </form>
                                })}
                            </div>
                        })}
                    </li>
                }
            }).collect_view()}
        </ul>
    }
    .into_any()
}

/// The keys, licence, members, single sign-on and projects sections. Server-rendered, as
/// every Settings section is (none loads WASM): each change is a plain form posting to its
/// server function, which sends the browser back here saying what happened
/// (`api::ssr::back_to_form`); a rotated key comes back on this page, shown once
/// (`ShownOnce`). `public/dashboard.js` asks before the destructive ones (`data-confirm`) and
/// puts back what was typed into a form the server refused (`data-keep`).
#[component]
fn SettingsPanel(section: String) -> impl IntoView {
    if section == "projects" {
        let projects = Resource::new(|| (), |_| crate::api::projects::list_projects());
        return view! {
            <Suspense fallback=loading>
                {move || Suspend::new(async move {
                    match projects.await {
                        Ok(view) => archive_section(view).into_any(),
                        Err(err) => error_view(err),
                    }
                })}
            </Suspense>
        }
        .into_any();
    }
    let settings = Resource::new(|| (), |_| load_settings());
    view! {
        <Suspense fallback=loading>
            {move || {
                let section = section.clone();
                Suspend::new(async move {
                    match settings.await {
                        Ok(view) => settings_view(&section, view),
                        Err(err) => error_view(err),
                    }
                })
            }}
        </Suspense>
    }
    .into_any()
}

fn settings_view(section: &str, v: SettingsView) -> AnyView {
    let admin = v.is_admin;
    let note = (!admin).then(|| view! {
        <p class="notice" role="note">"You are a member: you can read everything here; an admin of the account makes changes."</p>
    });
    let body = match section {
        // The address it had before the UI said "license" everywhere.
        "license" | "licence" => license_section(v, admin),
        "members" => members_section(v, admin),
        "machines" => machines_section(v, admin),
        "sso" => {
            let enterprise = v.license.as_ref().is_some_and(|l| l.tier == "enterprise");
            if enterprise || !v.sso.is_empty() {
                sso_section(v.sso, admin)
            } else {
                view! {
                    <section class="card" aria-labelledby="sso-heading">
                        <h2 id="sso-heading">"Single sign-on (SAML)"</h2>
                        <p class="muted">"Single sign-on is part of the enterprise tier."</p>
                    </section>
                }
                .into_any()
            }
        }
        _ => keys_section(v, admin),
    };
    view! { {note} {body} }.into_any()
}

fn keys_section(v: SettingsView, admin: bool) -> AnyView {
    let shown = ShownOnce::of_this_request();
    let gone =
        matches!(shown, Some(ShownOnce::Gone)).then(|| super::shown_already("The new API key"));
    let new_key = match shown {
        Some(ShownOnce::ApiKey(key)) => Some(new_key_panel(key, true)),
        Some(ShownOnce::NamedApiKey(key)) => Some(new_key_panel(key, false)),
        _ => None,
    };
    view! {
        <section class="card" aria-labelledby="keys-heading">
            <h2 id="keys-heading">"API keys"</h2>
            <p class="muted">"Scanners and CI jobs push with these: one per machine or CI secret. Only the first characters are ever shown."</p>
            {new_key}
            {gone}
            {form_notice(RevokeKey::PATH, "Key revoked: it no longer pushes.")}
            {form_error(RotateKeys::PATH)}
            {form_error(CreateKey::PATH)}
            <div class="table-wrap" tabindex="0">
                <table data-testid="keys">
                    <thead><tr>
                        <th scope="col">"Key"</th><th scope="col">"Name or machine"</th><th scope="col">"Created"</th>
                        <th scope="col">"Last used"</th>
                        {admin.then(|| view! { <th scope="col"><span class="visually-hidden">"Actions"</span></th> })}
                    </tr></thead>
                    <tbody>
                        {v.keys.into_iter().map(key_row(admin)).collect_view()}
                    </tbody>
                </table>
            </div>
            {admin.then(new_key_form)}
            {admin.then(|| view! {
                <form method="post" action=RotateKeys::PATH class="inline">
                    {super::once_field()}
                    <button type="submit" class="danger" data-confirm=
                        "Rotate the API key? Every current key stops working at once: scanners and CI jobs need the new one."
                    >"Rotate Key"</button>
                    <span class="muted small">" Revokes every key above at once and issues one new key."</span>
                </form>
            })}
        </section>
    }
    .into_any()
}

fn key_row(admin: bool) -> impl Fn(KeyView) -> AnyView {
    move |k: KeyView| {
        let expires = match (k.expires_at, k.expired) {
            (None, _) => None,
            (Some(at), false) => Some(super::utc_time(at).into_any()),
            (Some(at), true) => Some(
                view! { <span class="badge fail">"expired"</span>" "{super::utc_time(at)} }
                    .into_any(),
            ),
        };
        view! {
            <tr data-expired=k.expired.then_some("true")>
                <td data-label="Key"><code>{format!("{}…", k.prefix)}</code></td>
                // The expiry under the name, not a column of its own: the table fits 1280 px.
                <td data-label="Name or machine">{k.machine.clone()}
                    {expires.map(|e| view! { <div class="muted small" data-testid="key-expiry">"expires " {e}</div> })}</td>
                <td data-label="Created">{super::utc_time(k.created_at)}</td>
                <td data-label="Last used">{super::utc_time_or(k.last_used_at, "never")}</td>
                {admin.then(|| view! {
                    <td>
                        <form method="post" action=RevokeKey::PATH>
                            <input type="hidden" name="key_id" value=k.id.clone()/>
                            <button type="submit" class="link" data-confirm=format!("Revoke the key {}… ({})? Whatever pushes with it is refused from now on.", k.prefix, k.machine)
                                aria-label=format!("Revoke key {} ({})", k.prefix, k.machine)>"Revoke"</button>
                        </form>
                    </td>
                })}
            </tr>
        }
        .into_any()
    }
}

/// The lifetimes New key offers (the server takes any whole number of days up to a year).
const KEY_LIFETIME_DAYS: [u32; 4] = [7, 30, 90, 365];

/// New key: a name and a lifetime; the key comes back on this page once, and the others keep
/// working (unlike Rotate Key).
fn new_key_form() -> impl IntoView {
    view! {
        <form method="post" action=CreateKey::PATH class="row-form" data-keep="" data-testid="new-key-form">
            {super::once_field()}
            <label>"Name" <input type="text" name="name" required maxlength="64" placeholder="GitHub Actions"/></label>
            <label>"Expires"
                <select name="expires_in_days">
                    <option value="">"never"</option>
                    {KEY_LIFETIME_DAYS.iter().map(|d| view! { <option value=d.to_string()>{format!("in {d} days")}</option> }).collect_view()}
                </select>
            </label>
            <button type="submit" class="primary">"New key"</button>
        </form>
    }
}

/// The licence's seats: which machines hold one, when each was last seen, and (for admins)
/// a Release button that frees the seat and revokes that machine's keys at once.
fn machines_section(v: SettingsView, admin: bool) -> AnyView {
    let seats = v.seats;
    let used = seats.machines.len();
    let limit = match seats.max_machines {
        Some(max) => format!("{used} of {max} seats in use."),
        None => format!("{used} machines; this licence has no seat limit."),
    };
    let full = seats.max_machines.is_some_and(|max| used as u64 >= max);
    let quiet = match seats.release_after_days {
        0 => "Seats are only freed here or by the vendor's support.".to_owned(),
        days => format!("A machine unseen for {days} days gives its seat back by itself."),
    };
    view! {
        <section class="card" aria-labelledby="machines-heading">
            <h2 id="machines-heading">"Machines"</h2>
            <p data-testid="seats-used"><strong>{limit}</strong>" "<span class="muted">{quiet}</span></p>
            {full.then(|| view! {
                <p class="notice" role="note">"Every seat is taken: a new machine's activation is refused (seat_limit_reached) until one is released."</p>
            })}
            {form_notice(ReleaseMachine::PATH, "Seat released: that machine's keys no longer work.")}
            {if seats.machines.is_empty() {
                view! { <p class="muted">"No machine has activated this licence yet (tidemark activate)."</p> }.into_any()
            } else {
                view! {
                    <div class="table-wrap" tabindex="0">
                        <table data-testid="machines">
                            <thead><tr>
                                <th scope="col">"Machine"</th><th scope="col">"Fingerprint"</th>
                                <th scope="col">"Last seen"</th><th scope="col">"Live keys"</th>
                                {admin.then(|| view! { <th scope="col"><span class="visually-hidden">"Actions"</span></th> })}
                            </tr></thead>
                            <tbody>
                                {seats.machines.into_iter().map(|m| view! {
                                    <tr>
                                        <td data-label="Machine">{m.name.clone()}
                                            <br/><span class="muted small">{match m.offline_until.clone() {
                                                // A plain date: the page's script words past times only.
                                                Some(until) => format!("held by an offline file until {until}"),
                                                None => format!("activated {}", m.activated_at),
                                            }}</span>
                                        </td>
                                        <td data-label="Fingerprint">{m.fingerprint.clone().map_or_else(|| view! { <span class="muted">"by name"</span> }.into_any(), |f| view! { <code>{f}</code> }.into_any())}</td>
                                        <td data-label="Last seen">{super::utc_time(m.last_seen_at)}</td>
                                        <td data-label="Live keys">{m.live_keys}</td>
                                        // An offline file's seat cannot be released before the file expires.
                                        {admin.then(|| m.offline_until.is_some()).map(|offline| if offline {
                                            view! { <td data-label="Actions"><span class="muted small">"held until the file expires"</span></td> }.into_any()
                                        } else { view! {
                                            <td>
                                                <form method="post" action=ReleaseMachine::PATH>
                                                    <input type="hidden" name="machine_id" value=m.id.clone()/>
                                                    <button type="submit" class="link" data-confirm=format!(
                                                        "Release {}'s seat? Its API keys stop working at once.", m.name)
                                                        aria-label=format!("Release the seat of {}", m.name)>"Release"</button>
                                                </form>
                                            </td>
                                        }.into_any() })}
                                    </tr>
                                }).collect_view()}
                            </tbody>
                        </table>
                    </div>
                }.into_any()
            }}
        </section>
    }
    .into_any()
}

fn license_section(v: SettingsView, admin: bool) -> AnyView {
    view! {
        {v.license.map(|l| view! {
            <section class="card" aria-labelledby="license-heading">
                <h2 id="license-heading">"License"</h2>
                <dl class="meta" data-testid="license">
                    <dt>"Tier"</dt><dd>{l.tier}</dd>
                    <dt>"State"</dt><dd>{l.state}</dd>
                    <dt>"Features"</dt><dd>{l.features.join(", ")}</dd>
                    <dt>"Expires"</dt><dd>{super::utc_time(l.expires_at)}</dd>
                    <dt>"Projects"</dt>
                    <dd>{match l.project_cap {
                        Some(cap) => format!("{} of {cap} used", l.projects_used),
                        None => format!("{} used (no limit)", l.projects_used),
                    }}</dd>
                </dl>
                {admin.then(|| view! {
                    <h3 id="offline-heading">"Offline license file"</h3>
                    <p class="muted small">"For an air-gapped machine: a signed file it installs with "
                        <code>"tidemark activate --offline FILE"</code>
                        ". It works until it expires, even if the license is suspended meanwhile, so keep it short. "
                        "Bind it to one machine with the fingerprint "<code>"tidemark fingerprint"</code>" prints there."</p>
                    // The answer is a download, not a page.
                    <form method="post" action="/settings/license/offline-file" class="inline" aria-labelledby="offline-heading" data-testid="offline-file">
                        <label>"Days "<input type="number" name="days" value="30" min="1" max="400" required/></label>
                        <label>" Machine fingerprint (optional) "<input type="text" name="machine" maxlength="128" placeholder="sha256:…"/></label>
                        <button type="submit" class="secondary">"Download offline license file"</button>
                    </form>
                })}
            </section>
        })}
    }
    .into_any()
}

fn members_section(v: SettingsView, admin: bool) -> AnyView {
    let me = v.viewer_email.clone();
    view! {
        <section class="card" aria-labelledby="members-heading">
            <h2 id="members-heading">"Members"</h2>
            {form_notice(AddMember::PATH, "Member added: they sign in with that address.")}
            {form_notice(ChangeMember::PATH, "Saved.")}
            <div class="table-wrap" tabindex="0">
                <table data-testid="members">
                    <thead><tr>
                        <th scope="col">"E-mail"</th><th scope="col">"Role"</th><th scope="col">"Last sign-in"</th>
                        {admin.then(|| view! { <th scope="col"><span class="visually-hidden">"Actions"</span></th> })}
                    </tr></thead>
                    <tbody>
                        {v.members.into_iter().map(|m| {
                            let role = m.role.as_str();
                            let other = m.role.other();
                            let is_me = m.email == me;
                            let managed = m.managed;
                            let (email_role, email_remove) = (m.email.clone(), m.email.clone());
                            // Provisioned people (SCIM) are marked, and changed in the IdP: the
                            // stylesheet hides their forms (`tr[data-managed]`).
                            view! {
                                <tr data-managed=managed.then_some("scim")>
                                    <td data-label="E-mail">
                                        {m.email}{is_me.then_some(" (you)")}{managed.then_some(" · SCIM")}
                                    </td>
                                    <td data-label="Role">{role}</td>
                                    <td data-label="Last sign-in">{super::utc_time_or(m.last_login_at, "never")}</td>
                                    {admin.then(|| view! {
                                        <td class="actions">
                                            {managed.then_some("Change in your identity provider")}
                                            <form method="post" action=ChangeMember::PATH>
                                                <input type="hidden" name="email" value=email_role.clone()/>
                                                <input type="hidden" name="action" value=MemberAction::to_role(other).as_str()/>
                                                <button type="submit" class="link">{format!("Make {}", other.as_str())}</button>
                                            </form>
                                            <form method="post" action=ChangeMember::PATH>
                                                <input type="hidden" name="email" value=email_remove.clone()/>
                                                <input type="hidden" name="action" value=MemberAction::Remove.as_str()/>
                                                <button type="submit" class="link danger-text" data-confirm=
                                                    "Remove this member from the account? They lose access at once."
                                                >"Remove"</button>
                                            </form>
                                        </td>
                                    })}
                                </tr>
                            }
                        }).collect_view()}
                    </tbody>
                </table>
            </div>
            {admin.then(|| view! {
                <form method="post" action=AddMember::PATH class="row-form" data-keep="">
                    <label>"E-mail" <input type="email" name="email" required placeholder="colleague@company.com"/></label>
                    <label class="check"><input type="checkbox" name="admin" value="true"/> " admin"</label>
                    <button type="submit" class="primary">"Add member"</button>
                </form>
            })}
        </section>
    }
    .into_any()
}

fn sso_section(domains: Vec<SsoSummary>, admin: bool) -> AnyView {
    view! {
        <section class="card" aria-labelledby="sso-heading">
            <h2 id="sso-heading">"Single sign-on (SAML)"</h2>
            <p class="muted">
                "People whose address is at a verified domain sign in through your identity provider, "
                "and only into this account. A domain you add is pending until you prove that you own "
                "it with a DNS record; until then it changes nothing for anybody. "
                "Public mail providers (gmail.com, outlook.com, …) cannot be claimed."
            </p>
            {form_notice(ConfigureSso::PATH, "Saved: publish the DNS record shown, then press Verify now.")}
            {form_notice(VerifySso::PATH, "Checked: the domain's state is below.")}
            {form_notice(RemoveSso::PATH, "Single sign-on removed for that domain.")}
            <ul class="plain sso-claims" data-testid="sso-domains">
                {domains.into_iter().map(|s| sso_claim(s, admin)).collect_view()}
            </ul>
            {admin.then(|| view! {
                <form method="post" action=ConfigureSso::PATH class="stack" data-keep="">
                    <label for="sso-domain">"E-mail domain"</label>
                    <input id="sso-domain" type="text" name="domain" required placeholder="company.com"/>
                    <label for="sso-metadata">"IdP metadata (SAML 2.0 XML; it must name a signing certificate)"</label>
                    <textarea id="sso-metadata" name="metadata_xml" rows="6" required
                        placeholder="<EntityDescriptor …>"></textarea>
                    <label class="check">
                        <input type="checkbox" name="enforce" value="true"/>
                        " Enforce: once verified, refuse OpenID Connect sign-in for this domain"
                    </label>
                    <button type="submit" class="primary">"Save SSO"</button>
                </form>
            })}
        </section>
    }
    .into_any()
}

fn sso_claim(s: SsoSummary, admin: bool) -> AnyView {
    let (state_label, state_class) = match s.state {
        SsoState::Pending => ("pending verification", "chip pending"),
        SsoState::Verified => ("verified", "chip verified"),
        SsoState::Ended => ("ended", "chip ended"),
    };
    let domain = s.domain.clone();
    let remove_domain = s.domain.clone();
    view! {
        <li data-domain=s.domain.clone() data-state=state_label>
            <p>
                <strong>{s.domain.clone()}</strong> " → " <code>{s.idp_entity_id.clone()}</code> " "
                <span class=state_class>{state_label}</span>
                {(s.enforce && s.state == SsoState::Verified)
                    .then_some(" · enforced: OpenID Connect refused for this domain")}
                {(s.enforce && s.state == SsoState::Pending)
                    .then_some(" · enforcement starts once verified")}
            </p>
            {(s.state == SsoState::Pending).then(|| view! {
                <div class="dns-record" data-testid="dns-record">
                    <p>"Publish this DNS record at your domain, then press Verify now:"</p>
                    <dl class="meta">
                        <dt>"Type"</dt><dd><code>"TXT"</code></dd>
                        <dt>"Name"</dt><dd><code data-testid="dns-record-name">{s.record_name.clone()}</code></dd>
                        <dt>"Value"</dt><dd><code data-testid="dns-record-value">{s.record_value.clone()}</code></dd>
                    </dl>
                    <p class="muted small" data-testid="sso-check" role="status">
                        {match (&s.checked_at, &s.check_message) {
                            (Some(at), Some(message)) => format!("Last checked {at}: {message}."),
                            _ => "Not checked yet.".to_owned(),
                        }}
                        {if s.rechecking {
                            " Tidemark also checks by itself every 15 minutes for 7 days."
                        } else {
                            " Automatic checks have stopped; use Verify now."
                        }}
                    </p>
                </div>
            })}
            {s.verified_at.clone().map(|at| view! { <p class="muted small">"Verified " {super::utc_time(at)}</p> })}
            {s.ended_reason.clone().map(|why| view! {
                <p class="notice" role="note" data-testid="sso-ended">{why}</p>
            })}
            {admin.then(|| view! {
                <div class="actions">
                    {(s.state == SsoState::Pending).then(|| view! {
                        <form method="post" action=VerifySso::PATH class="inline">
                            <input type="hidden" name="domain" value=domain.clone()/>
                            <button type="submit" class="primary">"Verify now"</button>
                        </form>
                    })}
                    <form method="post" action=RemoveSso::PATH class="inline">
                        <input type="hidden" name="domain" value=remove_domain.clone()/>
                        <button type="submit" class="link danger-text"
                            aria-label=format!("Remove SSO for {remove_domain}")>"Remove"</button>
                    </form>
                </div>
            })}
        </li>
    }
    .into_any()
}

/// The one new key, on the page that answered Rotate Key or New key (never again: reloading
/// the page shows the keys without it). "Copy" is `public/dashboard.js`'s (`data-copy`).
fn new_key_panel(key: String, rotated: bool) -> impl IntoView {
    let others = if rotated {
        "every previous key stopped working."
    } else {
        "the other keys keep working."
    };
    view! {
        <div class="notice new-key" role="alert" data-testid="new-key-panel">
            <p><strong>"Your new API key"</strong> " — shown once. Store it in your CI secrets now; "{others}</p>
            <p><code data-testid="new-key" id="new-key">{key}</code></p>
            <button type="button" class="primary" data-copy="new-key" hidden>"Copy"</button>
        </div>
    }
}

fn archive_section(v: ProjectsView) -> impl IntoView {
    let admin = v.is_admin;
    view! {
        <section class="card" aria-labelledby="archive-heading">
            <h2 id="archive-heading">"Projects"</h2>
            <p class="muted">"Archiving frees a project slot; its history stays readable. A push to an archived label is refused."</p>
            {form_notice(SetArchived::PATH, "Saved.")}
            <ul class="plain" data-testid="archive-list">
                {v.projects.into_iter().map(|p| view! {
                    <li>
                        <a href=format!("/projects/{}", p.id)>{p.label.clone()}</a>
                        {p.archived.then_some(" (archived)")}
                        {admin.then(|| view! {
                            <form method="post" action=SetArchived::PATH class="inline">
                                <input type="hidden" name="project_id" value=p.id.to_string()/>
                                <input type="hidden" name="archived" value=(!p.archived).to_string()/>
                                <button type="submit" class="link" aria-label=format!("{} {}", if p.archived { "Unarchive" } else { "Archive" }, p.label)>
                                    {if p.archived { "Unarchive" } else { "Archive" }}
                                </button>
                            </form>
                        })}
                    </li>
                }).collect_view()}
            </ul>
        </section>
    }
}
