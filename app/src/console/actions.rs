//! What a staff member may do to a licence: one form per action their roles allow, each
//! asking for a confirmation page before anything changes (no script: the confirmation is a
//! page of its own, carrying the same values and a single-use token).

use leptos::prelude::*;
use tidemark_domain::license_actions::ActionKind;

/// The licence as the action forms start from, and which of them to show.
#[derive(Debug, Clone, Default)]
pub struct ActionsView {
    pub license_id: String,
    /// The actions the person's roles may start, in the page's order.
    pub allowed: Vec<ActionKind>,
    /// "support": the roles, for a person who may do nothing here.
    pub roles: String,
    /// Support's extensions stop at 30 days; others' do not.
    pub extend_max_days: u32,
    pub expiry_date: String,
    pub tier: String,
    pub suspended: bool,
    /// Empty: unlimited.
    pub max_machines: String,
    /// Empty: the server's default.
    pub release_after_days: String,
    /// Each feature's name, label, and whether the licence carries it now.
    pub features: Vec<(&'static str, &'static str, bool)>,
    /// Empty: the tier's cap.
    pub max_projects: String,
    /// Machines holding a seat: id and what to call them.
    pub held_machines: Vec<(String, String)>,
}

fn action_path(license_id: &str, kind: ActionKind) -> String {
    format!("/console/licenses/{license_id}/actions/{}", kind.as_str())
}

/// One action's form inside a disclosure, so the page stays a summary until one is opened.
fn action_form(license_id: &str, kind: ActionKind, hint: &'static str, fields: AnyView) -> AnyView {
    let path = action_path(license_id, kind);
    let test_id = format!("action-{}", kind.as_str());
    view! {
        <details class="action" data-testid=test_id>
            <summary>{kind.label()}</summary>
            <form method="post" action=path class="row-form">
                {fields}
                <button type="submit">{kind.label()}"…"</button>
            </form>
            {(!hint.is_empty()).then(|| view! { <p class="muted small">{hint}</p> })}
        </details>
    }
    .into_any()
}

fn reason_field() -> AnyView {
    view! {
        <label>"Reason (kept in the audit log)"
            <input type="text" name="reason" required maxlength="500" size="40"/>
        </label>
    }
    .into_any()
}

fn fields_of(v: &ActionsView, kind: ActionKind) -> (AnyView, &'static str) {
    match kind {
        ActionKind::Extend => {
            let max = v.extend_max_days.to_string();
            let hint = if v.extend_max_days <= 30 {
                "From the expiry, or from today if it has passed. Support extends by 30 days at most."
            } else {
                "From the expiry, or from today if it has passed."
            };
            (
                view! {
                    <label>"Days"
                        <input type="number" name="days" min="1" max=max value="14" required/>
                    </label>
                }
                .into_any(),
                hint,
            )
        }
        ActionKind::SetExpiry => (
            view! {
                <label>"New expiry"
                    <input type="date" name="date" value=v.expiry_date.clone() required/>
                </label>
            }
            .into_any(),
            "Earlier or later; the licence keeps its time of day.",
        ),
        ActionKind::Suspend | ActionKind::Resume => (reason_field(), ""),
        ActionKind::Tier => {
            let tier = v.tier.clone();
            (
                view! {
                    <label>"Tier"
                        <select name="tier">
                            {tidemark_wire::Tier::ALL
                                .into_iter()
                                .map(|t| {
                                    let selected = t.as_str() == tier;
                                    view! { <option value=t.as_str() selected=selected>{t.as_str()}</option> }
                                })
                                .collect_view()}
                        </select>
                    </label>
                }
                .into_any(),
                "Features and the project cap follow the tier, except where overridden.",
            )
        }
        ActionKind::Seats => (
            view! {
                <label>"Seats (empty: unlimited)"
                    <input type="number" name="max_machines" min="1" value=v.max_machines.clone()/>
                </label>
                <label>"Free a seat after days unseen (0: never; empty: default)"
                    <input type="number" name="release_after_days" min="0" value=v.release_after_days.clone()/>
                </label>
            }
            .into_any(),
            "",
        ),
        ActionKind::Features => (
            view! {
                <fieldset class="checks">
                    <legend>"Features the licence carries"</legend>
                    {v.features
                        .iter()
                        .map(|(name, label, on)| view! {
                            <label class="check">
                                <input type="checkbox" name="feature" value=*name checked=*on/>
                                " "{*label}
                            </label>
                        })
                        .collect_view()}
                </fieldset>
            }
            .into_any(),
            "Kept as overrides of the tier: a later tier change keeps them.",
        ),
        ActionKind::MaxProjects => (
            view! {
                <label>"Max projects (empty: the tier's)"
                    <input type="number" name="max_projects" min="0" value=v.max_projects.clone()/>
                </label>
            }
            .into_any(),
            "",
        ),
        ActionKind::Resend => (
            ().into_any(),
            "Mails the holder every licence registered to their address.",
        ),
        ActionKind::ReleaseSeat => (
            view! {
                <label>"Machine"
                    <select name="machine_id" required>
                        {v.held_machines
                            .iter()
                            .map(|(id, name)| view! { <option value=id.clone()>{name.clone()}</option> })
                            .collect_view()}
                    </select>
                </label>
            }
            .into_any(),
            "Its API keys are revoked at once.",
        ),
        ActionKind::OfflineFile => (
            view! {
                <label>"Days"
                    <input type="number" name="days" min="1" max="400" value="30" required/>
                </label>
                <label>"Machine fingerprint (optional)"
                    <input type="text" name="machine" maxlength="128"/>
                </label>
            }
            .into_any(),
            "A signed file for an air-gapped machine; it holds a seat until it expires.",
        ),
    }
}

/// Whether `kind` makes sense for the licence as it is (no "resume" of a licence in force).
fn applies(v: &ActionsView, kind: ActionKind) -> bool {
    match kind {
        ActionKind::Suspend => !v.suspended,
        ActionKind::Resume => v.suspended,
        ActionKind::ReleaseSeat => !v.held_machines.is_empty(),
        _ => true,
    }
}

/// The licence page's "Actions" card.
pub fn actions_section(v: ActionsView) -> AnyView {
    let forms: Vec<AnyView> = v
        .allowed
        .iter()
        .copied()
        .filter(|k| applies(&v, *k))
        .map(|kind| {
            let (fields, hint) = fields_of(&v, kind);
            action_form(&v.license_id, kind, hint, fields)
        })
        .collect();
    let body = if forms.is_empty() {
        view! {
            <p class="muted" data-testid="no-actions">
                "Your roles ("{v.roles}") read licences; changing one needs sales, support or admin."
            </p>
        }
        .into_any()
    } else {
        forms.into_iter().collect_view().into_any()
    };
    view! {
        <section class="card" aria-labelledby="actions-heading">
            <h2 id="actions-heading">"Actions"</h2>
            <p class="muted small">"Each asks you to confirm, and goes in the audit trail under your name."</p>
            {body}
        </section>
    }
    .into_any()
}

/// What a confirmation page shows and carries.
#[derive(Debug, Clone)]
pub struct Confirmation {
    pub license_id: String,
    pub kind: ActionKind,
    pub sentence: String,
    pub fields: Vec<(&'static str, String)>,
    /// Single use: a reload or a second click changes nothing.
    pub token: String,
}

pub fn confirm_page(c: Confirmation) -> AnyView {
    let path = action_path(&c.license_id, c.kind);
    let back = format!("/console/licenses/{}", c.license_id);
    view! {
        <section class="card narrow">
            <h1>{c.kind.label()}"?"</h1>
            <p data-testid="confirm-sentence">{c.sentence}</p>
            <form method="post" action=path class="row-form">
                {c.fields
                    .into_iter()
                    .map(|(name, value)| view! { <input type="hidden" name=name value=value/> })
                    .collect_view()}
                <input type="hidden" name="confirm" value=c.token/>
                <button type="submit">"Confirm"</button>
                <a href=back>"Cancel"</a>
            </form>
        </section>
    }
    .into_any()
}
