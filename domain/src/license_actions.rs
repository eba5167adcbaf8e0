//! What a staff member may do to one licence from the console, as plain values: each parsed
//! from its form (so a value that exists is one the licence can take), with the permissions
//! it needs of the licence as it stands, the edit it makes, and the sentence its confirmation
//! shows. The admin API's role table decides who may: the console asks the same questions.

use chrono::{DateTime, NaiveDate, Utc};
use tidemark_wire::{Feature, Tier};

use crate::license::{License, LicenseEdit};
use crate::signing::{MachineFingerprint, MAX_OFFLINE_DAYS};
use crate::time::DAY_MS;
use crate::vendor::{is_brief_extension, permissions_for, Permission};
use crate::Millis;

/// The longest extension one form asks for (ten years).
pub const MAX_EXTEND_DAYS: u32 = 3650;
/// A suspension's or resumption's reason, as the admin API limits it.
pub const MAX_REASON_CHARS: usize = 500;
/// Bounds a person can mean; the API takes any `u64`, a form has no need to.
pub const MAX_PROJECTS_LIMIT: u64 = 100_000;
pub const MAX_SEATS_LIMIT: u64 = 100_000;
pub const MAX_RELEASE_DAYS: u32 = 3650;

/// The console's actions on a licence, by the path segment that names each.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ActionKind {
    Extend,
    SetExpiry,
    Suspend,
    Resume,
    Tier,
    Seats,
    Features,
    MaxProjects,
    Resend,
    ReleaseSeat,
    OfflineFile,
}

impl ActionKind {
    pub const ALL: [ActionKind; 11] = [
        ActionKind::Extend,
        ActionKind::SetExpiry,
        ActionKind::Suspend,
        ActionKind::Resume,
        ActionKind::Tier,
        ActionKind::Seats,
        ActionKind::Features,
        ActionKind::MaxProjects,
        ActionKind::Resend,
        ActionKind::ReleaseSeat,
        ActionKind::OfflineFile,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            ActionKind::Extend => "extend",
            ActionKind::SetExpiry => "expiry",
            ActionKind::Suspend => "suspend",
            ActionKind::Resume => "resume",
            ActionKind::Tier => "tier",
            ActionKind::Seats => "seats",
            ActionKind::Features => "features",
            ActionKind::MaxProjects => "max-projects",
            ActionKind::Resend => "resend",
            ActionKind::ReleaseSeat => "release-seat",
            ActionKind::OfflineFile => "offline-file",
        }
    }

    pub fn parse(text: &str) -> Option<ActionKind> {
        ActionKind::ALL.into_iter().find(|k| k.as_str() == text)
    }

    /// What the button says.
    pub fn label(self) -> &'static str {
        match self {
            ActionKind::Extend => "Extend",
            ActionKind::SetExpiry => "Set the expiry",
            ActionKind::Suspend => "Suspend",
            ActionKind::Resume => "Resume",
            ActionKind::Tier => "Change the tier",
            ActionKind::Seats => "Change the seats",
            ActionKind::Features => "Change the features",
            ActionKind::MaxProjects => "Change max projects",
            ActionKind::Resend => "Resend the licence",
            ActionKind::ReleaseSeat => "Release the seat",
            ActionKind::OfflineFile => "Download an offline file",
        }
    }

    /// What the licence page says once it is done.
    pub fn done(self) -> &'static str {
        match self {
            ActionKind::Extend | ActionKind::SetExpiry => "The expiry is moved.",
            ActionKind::Suspend => "The licence is suspended.",
            ActionKind::Resume => "The licence is resumed.",
            ActionKind::Tier => "The tier is changed.",
            ActionKind::Seats => "The seats are changed.",
            ActionKind::Features => "The features are changed.",
            ActionKind::MaxProjects => "Max projects is changed.",
            ActionKind::Resend => "The licence mail is queued.",
            ActionKind::ReleaseSeat => "The seat is free.",
            ActionKind::OfflineFile => "The offline file is made.",
        }
    }

    /// The permission that lets someone start it at all; the licence and the values asked
    /// for may need more ([`LicenseAction::needed`]: support's extensions stop at 30 days).
    pub fn permission(self) -> Permission {
        match self {
            ActionKind::Extend => Permission::ExtendBriefly,
            ActionKind::SetExpiry => Permission::SetExpiry,
            ActionKind::Suspend => Permission::Suspend,
            ActionKind::Resume => Permission::Resume,
            ActionKind::Tier => Permission::SetTier,
            ActionKind::Seats => Permission::SetSeats,
            ActionKind::Features => Permission::SetFeatures,
            ActionKind::MaxProjects => Permission::SetMaxProjects,
            ActionKind::Resend => Permission::Resend,
            ActionKind::ReleaseSeat => Permission::ReleaseSeat,
            ActionKind::OfflineFile => Permission::OfflineFile,
        }
    }
}

/// One action with its values, as a form asked for it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum LicenseAction {
    /// Later by `days`, from the expiry or from today if it has passed.
    Extend {
        days: u32,
    },
    /// To this day, at the expiry's time of day (earlier or later).
    SetExpiry {
        date: NaiveDate,
    },
    Suspend {
        reason: String,
    },
    Resume {
        reason: String,
    },
    Tier(Tier),
    /// `None`: unlimited seats; the server's default release.
    Seats {
        max_machines: Option<u64>,
        release_after_days: Option<u32>,
    },
    /// The features the licence should carry; overrides are worked out from its tier.
    Features(Vec<Feature>),
    /// `None`: the tier's cap.
    MaxProjects(Option<u64>),
    Resend,
    ReleaseSeat {
        machine_id: String,
    },
    OfflineFile {
        days: u32,
        machine: Option<MachineFingerprint>,
    },
}

/// A form's fields, as the browser sent them (a name may repeat: checkboxes).
pub type Form = [(String, String)];

fn field<'a>(form: &'a Form, name: &str) -> Option<&'a str> {
    form.iter()
        .find(|(k, _)| k == name)
        .map(|(_, v)| v.trim())
        .filter(|v| !v.is_empty())
}

fn number<T>(
    form: &Form,
    name: &str,
    words: &str,
    range: std::ops::RangeInclusive<T>,
) -> Result<Option<T>, String>
where
    T: std::str::FromStr + PartialOrd + Copy + std::fmt::Display,
{
    let Some(text) = field(form, name) else {
        return Ok(None);
    };
    match text.parse::<T>() {
        Ok(n) if range.contains(&n) => Ok(Some(n)),
        _ => Err(format!(
            "{words} must be a whole number from {} to {}.",
            range.start(),
            range.end()
        )),
    }
}

fn required<T>(value: Option<T>, words: &str) -> Result<T, String> {
    value.ok_or_else(|| format!("Give {words}."))
}

fn reason(form: &Form) -> Result<String, String> {
    let text = field(form, "reason").unwrap_or("");
    if text.is_empty()
        || text.chars().count() > MAX_REASON_CHARS
        || text.chars().any(|c| c.is_control())
    {
        return Err(format!(
            "Give a reason of 1 to {MAX_REASON_CHARS} characters on one line: the audit log \
             keeps it."
        ));
    }
    Ok(text.to_owned())
}

fn day(ms: Millis) -> String {
    DateTime::<Utc>::from_timestamp_millis(ms)
        .map(|t| t.format("%Y-%m-%d").to_string())
        .unwrap_or_default()
}

fn feature_names(features: &[Feature]) -> String {
    if features.is_empty() {
        return "none".to_owned();
    }
    let names: Vec<&str> = features.iter().map(|f| f.as_str()).collect();
    names.join(", ")
}

fn or_unlimited(n: Option<u64>) -> String {
    n.map_or("unlimited".to_owned(), |n| n.to_string())
}

impl LicenseAction {
    /// Reads `kind`'s form; the error is a sentence for the person who filled it in.
    pub fn parse(kind: ActionKind, form: &Form) -> Result<LicenseAction, String> {
        Ok(match kind {
            ActionKind::Extend => LicenseAction::Extend {
                days: required(
                    number(form, "days", "Days", 1..=MAX_EXTEND_DAYS)?,
                    "the number of days",
                )?,
            },
            ActionKind::SetExpiry => {
                let text = required(field(form, "date"), "the new expiry date")?;
                let date = NaiveDate::parse_from_str(text, "%Y-%m-%d")
                    .map_err(|_| "The date must be a day as YYYY-MM-DD.".to_owned())?;
                LicenseAction::SetExpiry { date }
            }
            ActionKind::Suspend => LicenseAction::Suspend {
                reason: reason(form)?,
            },
            ActionKind::Resume => LicenseAction::Resume {
                reason: reason(form)?,
            },
            ActionKind::Tier => LicenseAction::Tier(
                field(form, "tier")
                    .and_then(Tier::parse)
                    .ok_or("Choose individual, team, agency or enterprise.")?,
            ),
            ActionKind::Seats => LicenseAction::Seats {
                max_machines: number(form, "max_machines", "Seats", 1..=MAX_SEATS_LIMIT)?,
                release_after_days: number(
                    form,
                    "release_after_days",
                    "Days unseen",
                    0..=MAX_RELEASE_DAYS,
                )?,
            },
            ActionKind::Features => {
                let mut on = Vec::new();
                for (name, value) in form.iter().filter(|(k, _)| k == "feature") {
                    let feature = Feature::parse(value.trim())
                        .ok_or_else(|| format!("{name}: no feature is called {value:?}."))?;
                    on.push(feature);
                }
                on.sort();
                on.dedup();
                LicenseAction::Features(on)
            }
            ActionKind::MaxProjects => LicenseAction::MaxProjects(number(
                form,
                "max_projects",
                "Max projects",
                0..=MAX_PROJECTS_LIMIT,
            )?),
            ActionKind::Resend => LicenseAction::Resend,
            ActionKind::ReleaseSeat => {
                let id = required(field(form, "machine_id"), "the machine")?;
                if !id.starts_with("mch_")
                    || !id.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_')
                {
                    return Err("The machine must be one of the licence's (mch_…).".to_owned());
                }
                LicenseAction::ReleaseSeat {
                    machine_id: id.to_owned(),
                }
            }
            ActionKind::OfflineFile => LicenseAction::OfflineFile {
                days: required(
                    number(form, "days", "Days", 1..=MAX_OFFLINE_DAYS)?,
                    "the number of days the file runs",
                )?,
                machine: field(form, "machine")
                    .map(MachineFingerprint::parse)
                    .transpose()?,
            },
        })
    }

    pub fn kind(&self) -> ActionKind {
        match self {
            LicenseAction::Extend { .. } => ActionKind::Extend,
            LicenseAction::SetExpiry { .. } => ActionKind::SetExpiry,
            LicenseAction::Suspend { .. } => ActionKind::Suspend,
            LicenseAction::Resume { .. } => ActionKind::Resume,
            LicenseAction::Tier(_) => ActionKind::Tier,
            LicenseAction::Seats { .. } => ActionKind::Seats,
            LicenseAction::Features(_) => ActionKind::Features,
            LicenseAction::MaxProjects(_) => ActionKind::MaxProjects,
            LicenseAction::Resend => ActionKind::Resend,
            LicenseAction::ReleaseSeat { .. } => ActionKind::ReleaseSeat,
            LicenseAction::OfflineFile { .. } => ActionKind::OfflineFile,
        }
    }

    /// The form fields that ask for exactly this action again: what a confirmation carries.
    pub fn fields(&self) -> Vec<(&'static str, String)> {
        let opt = |n: Option<u64>| n.map_or(String::new(), |n| n.to_string());
        match self {
            LicenseAction::Extend { days } => vec![("days", days.to_string())],
            LicenseAction::SetExpiry { date } => vec![("date", date.to_string())],
            LicenseAction::Suspend { reason } | LicenseAction::Resume { reason } => {
                vec![("reason", reason.clone())]
            }
            LicenseAction::Tier(tier) => vec![("tier", tier.as_str().to_owned())],
            LicenseAction::Seats {
                max_machines,
                release_after_days,
            } => vec![
                ("max_machines", opt(*max_machines)),
                (
                    "release_after_days",
                    release_after_days.map_or(String::new(), |d| d.to_string()),
                ),
            ],
            LicenseAction::Features(on) => on
                .iter()
                .map(|f| ("feature", f.as_str().to_owned()))
                .collect(),
            LicenseAction::MaxProjects(n) => vec![("max_projects", opt(*n))],
            LicenseAction::Resend => Vec::new(),
            LicenseAction::ReleaseSeat { machine_id } => vec![("machine_id", machine_id.clone())],
            LicenseAction::OfflineFile { days, machine } => vec![
                ("days", days.to_string()),
                (
                    "machine",
                    machine
                        .as_ref()
                        .map_or(String::new(), |m| m.as_str().to_owned()),
                ),
            ],
        }
    }

    /// The new expiry an extension or a new date gives `current`.
    fn new_expiry(&self, current: &License, now: Millis) -> Option<Millis> {
        match self {
            LicenseAction::Extend { days } => {
                Some(current.expires_at.max(now) + i64::from(*days) * DAY_MS)
            }
            LicenseAction::SetExpiry { date } => {
                let time_of_day = current.expires_at.rem_euclid(DAY_MS);
                let midnight = date.and_hms_opt(0, 0, 0)?.and_utc().timestamp_millis();
                Some(midnight + time_of_day)
            }
            _ => None,
        }
    }

    /// The licence change this action makes, or `None` for the ones that are not one
    /// (resend, releasing a seat, an offline file).
    pub fn edit(&self, current: &License, now: Millis) -> Option<LicenseEdit> {
        let mut edit = LicenseEdit::default();
        match self {
            LicenseAction::Extend { .. } | LicenseAction::SetExpiry { .. } => {
                edit.expires_at = self.new_expiry(current, now);
            }
            LicenseAction::Suspend { reason } => {
                edit.suspended = Some((true, Some(reason.clone())))
            }
            LicenseAction::Resume { reason } => {
                edit.suspended = Some((false, Some(reason.clone())))
            }
            LicenseAction::Tier(tier) => edit.tier = Some(*tier),
            LicenseAction::Seats {
                max_machines,
                release_after_days,
            } => {
                edit.max_machines = Some(*max_machines);
                edit.seat_release_after_days = Some(*release_after_days);
            }
            LicenseAction::Features(on) => {
                let base = crate::tier::base_features(current.tier);
                edit.features_added =
                    Some(on.iter().filter(|f| !base.contains(f)).copied().collect());
                edit.features_removed =
                    Some(base.iter().filter(|f| !on.contains(f)).copied().collect());
            }
            LicenseAction::MaxProjects(n) => edit.max_projects = Some(*n),
            LicenseAction::Resend
            | LicenseAction::ReleaseSeat { .. }
            | LicenseAction::OfflineFile { .. } => return None,
        }
        Some(edit)
    }

    /// What it needs of the person's roles, on `current` as it stands: an extension past
    /// support's 30 days needs what any other new expiry does.
    pub fn needed(&self, current: &License, now: Millis) -> Vec<Permission> {
        match self.edit(current, now) {
            Some(edit) => {
                let mut needed = permissions_for(&edit, current, now);
                if needed.is_empty() {
                    needed.push(self.kind().permission());
                }
                needed
            }
            None => vec![self.kind().permission()],
        }
    }

    /// Why it cannot be done to `current` at all, whoever asks: it would change nothing, or
    /// would contradict the licence.
    pub fn refusal(&self, current: &License, now: Millis) -> Option<String> {
        let state = current.state(now);
        match self {
            LicenseAction::Suspend { .. } if current.suspended_at.is_some() => {
                return Some("The licence is suspended already.".to_owned())
            }
            LicenseAction::Resume { .. } if current.suspended_at.is_none() => {
                return Some("The licence is not suspended.".to_owned())
            }
            LicenseAction::OfflineFile { .. } if !state.is_active() => {
                return Some(format!(
                    "An offline file is only made for an active licence; this one is {}.",
                    state.as_str()
                ))
            }
            _ => {}
        }
        if let Some(edit) = self.edit(current, now) {
            if permissions_for(&edit, current, now).is_empty() {
                return Some(
                    "That is how the licence already stands: nothing would change.".to_owned(),
                );
            }
        }
        None
    }

    /// The confirmation's sentence: what will change, from what to what.
    pub fn describe(&self, current: &License, now: Millis) -> String {
        let id = &current.id;
        match self {
            LicenseAction::Extend { days } => {
                let to = self.new_expiry(current, now).unwrap_or(current.expires_at);
                let brief = if is_brief_extension(current.expires_at, to, now) {
                    ""
                } else {
                    " (beyond support's 30 days)"
                };
                format!(
                    "Extend licence {id} by {days} days{brief}: its expiry moves from {} to {}.",
                    day(current.expires_at),
                    day(to)
                )
            }
            LicenseAction::SetExpiry { .. } => {
                let to = self.new_expiry(current, now).unwrap_or(current.expires_at);
                let way = if to < current.expires_at {
                    "earlier"
                } else {
                    "later"
                };
                format!(
                    "Move licence {id}'s expiry {way}, from {} to {}.",
                    day(current.expires_at),
                    day(to)
                )
            }
            LicenseAction::Suspend { reason } => format!(
                "Suspend licence {id}: validation answers not valid and pushes are refused \
                 until it is resumed. Reason: {reason}"
            ),
            LicenseAction::Resume { reason } => {
                format!("Resume licence {id}: it is in force again at once. Reason: {reason}")
            }
            LicenseAction::Tier(tier) => format!(
                "Change licence {id}'s tier from {} to {}.",
                current.tier.as_str(),
                tier.as_str()
            ),
            LicenseAction::Seats {
                max_machines,
                release_after_days,
            } => format!(
                "Set licence {id}'s seats from {} to {}, and free a seat after {}.",
                or_unlimited(current.max_machines),
                or_unlimited(*max_machines),
                match release_after_days {
                    Some(0) => "never".to_owned(),
                    Some(d) => format!("{d} days unseen"),
                    None => "the server's default days unseen".to_owned(),
                }
            ),
            LicenseAction::Features(on) => format!(
                "Set licence {id}'s features from {} to {}.",
                feature_names(&current.features()),
                feature_names(on)
            ),
            LicenseAction::MaxProjects(n) => format!(
                "Set licence {id}'s max projects from {} to {}.",
                or_unlimited(current.project_cap()),
                match n {
                    Some(n) => n.to_string(),
                    None => format!(
                        "the {} tier's ({})",
                        current.tier.as_str(),
                        or_unlimited(crate::tier::project_cap(current.tier, None))
                    ),
                }
            ),
            LicenseAction::Resend => format!(
                "Mail {} every licence registered to that address.",
                current.email
            ),
            LicenseAction::ReleaseSeat { machine_id } => format!(
                "Free the seat of machine {machine_id} on licence {id}: its API keys are revoked \
                 at once."
            ),
            LicenseAction::OfflineFile { days, machine } => format!(
                "Make a signed offline file for licence {id}, running {days} days{}. It holds a \
                 seat until it expires and cannot be revoked.",
                machine.as_ref().map_or(String::new(), |m| format!(
                    ", bound to machine {}",
                    m.as_str()
                ))
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::ids::AccountId;

    const NOW: Millis = 1_800_000_000_000;

    fn license() -> License {
        License {
            id: "lcn_1".into(),
            account_id: AccountId::trusted("acct_1"),
            email: "ops@example.com".into(),
            tier: Tier::Team,
            expires_at: NOW + 10 * DAY_MS,
            suspended_at: None,
            max_projects: None,
            max_machines: Some(3),
            seat_release_after_days: None,
            features_added: Vec::new(),
            features_removed: Vec::new(),
            created_at: NOW - 100 * DAY_MS,
            version: 4,
        }
    }

    fn form(pairs: &[(&str, &str)]) -> Vec<(String, String)> {
        pairs
            .iter()
            .map(|(k, v)| ((*k).to_owned(), (*v).to_owned()))
            .collect()
    }

    fn parse(kind: ActionKind, pairs: &[(&str, &str)]) -> Result<LicenseAction, String> {
        LicenseAction::parse(kind, &form(pairs))
    }

    #[test]
    fn every_kind_is_named_by_its_path_segment() {
        for kind in ActionKind::ALL {
            assert_eq!(ActionKind::parse(kind.as_str()), Some(kind));
        }
        assert_eq!(ActionKind::parse("delete"), None);
    }

    #[test]
    fn support_extends_by_thirty_days_and_no_further() {
        let l = license();
        let month = parse(ActionKind::Extend, &[("days", "30")]).expect("parsed");
        assert_eq!(month.needed(&l, NOW), vec![Permission::ExtendBriefly]);
        let more = parse(ActionKind::Extend, &[("days", "31")]).expect("parsed");
        assert_eq!(more.needed(&l, NOW), vec![Permission::SetExpiry]);
        let edit = month.edit(&l, NOW).expect("an edit");
        assert_eq!(edit.expires_at, Some(l.expires_at + 30 * DAY_MS));
    }

    #[test]
    fn an_expired_licence_is_extended_from_today() {
        let mut l = license();
        l.expires_at = NOW - 5 * DAY_MS;
        let two_weeks = parse(ActionKind::Extend, &[("days", "14")]).expect("parsed");
        assert_eq!(
            two_weeks.edit(&l, NOW).and_then(|e| e.expires_at),
            Some(NOW + 14 * DAY_MS)
        );
        assert!(two_weeks.describe(&l, NOW).contains("by 14 days"));
    }

    #[test]
    fn a_new_date_keeps_the_expirys_time_of_day() {
        let l = license();
        let action = parse(ActionKind::SetExpiry, &[("date", "2027-03-01")]).expect("parsed");
        let at = action
            .edit(&l, NOW)
            .and_then(|e| e.expires_at)
            .expect("a date");
        assert_eq!(at.rem_euclid(DAY_MS), l.expires_at.rem_euclid(DAY_MS));
        assert_eq!(day(at), "2027-03-01");
        assert!(parse(ActionKind::SetExpiry, &[("date", "1 March")]).is_err());
    }

    #[test]
    fn features_become_overrides_of_the_tier() {
        let l = license();
        // Team carries hosted_dashboard and drift_detection.
        let action = parse(
            ActionKind::Features,
            &[
                ("feature", "hosted_dashboard"),
                ("feature", "custom_frameworks"),
            ],
        )
        .expect("parsed");
        let edit = action.edit(&l, NOW).expect("an edit");
        assert_eq!(edit.features_added, Some(vec![Feature::CustomFrameworks]));
        assert_eq!(edit.features_removed, Some(vec![Feature::DriftDetection]));
        assert_eq!(action.needed(&l, NOW), vec![Permission::SetFeatures]);
        assert!(parse(ActionKind::Features, &[("feature", "teleport")]).is_err());
    }

    #[test]
    fn an_action_that_changes_nothing_is_refused() {
        let l = license();
        let same = parse(
            ActionKind::Features,
            &[
                ("feature", "hosted_dashboard"),
                ("feature", "drift_detection"),
            ],
        )
        .expect("parsed");
        assert!(same.refusal(&l, NOW).is_some());
        let tier = parse(ActionKind::Tier, &[("tier", "team")]).expect("parsed");
        assert!(tier.refusal(&l, NOW).is_some());
        let resume = parse(ActionKind::Resume, &[("reason", "paid")]).expect("parsed");
        assert_eq!(
            resume.refusal(&l, NOW).as_deref(),
            Some("The licence is not suspended.")
        );
        let agency = parse(ActionKind::Tier, &[("tier", "agency")]).expect("parsed");
        assert_eq!(agency.refusal(&l, NOW), None);
    }

    #[test]
    fn bad_values_are_sentences_not_panics() {
        for (kind, pairs) in [
            (ActionKind::Extend, vec![("days", "0")]),
            (ActionKind::Extend, vec![("days", "-3")]),
            (ActionKind::Extend, vec![("days", "99999999999999999999")]),
            (ActionKind::Extend, vec![]),
            (ActionKind::Suspend, vec![("reason", "  ")]),
            (ActionKind::Suspend, vec![("reason", "two\nlines")]),
            (ActionKind::Seats, vec![("max_machines", "0")]),
            (ActionKind::MaxProjects, vec![("max_projects", "1e3")]),
            (ActionKind::ReleaseSeat, vec![("machine_id", "../x")]),
            (ActionKind::OfflineFile, vec![("days", "401")]),
            (ActionKind::Tier, vec![("tier", "platinum")]),
        ] {
            let pairs: Vec<(&str, &str)> = pairs;
            let err = parse(kind, &pairs).expect_err("refused");
            assert!(err.ends_with('.'), "{kind:?}: {err}");
        }
        let long = "x".repeat(MAX_REASON_CHARS + 1);
        assert!(parse(ActionKind::Suspend, &[("reason", &long)]).is_err());
    }

    #[test]
    fn a_confirmation_carries_the_same_action() {
        let l = license();
        for (kind, pairs) in [
            (ActionKind::Extend, vec![("days", "14")]),
            (ActionKind::SetExpiry, vec![("date", "2027-01-31")]),
            (ActionKind::Suspend, vec![("reason", "chargeback")]),
            (
                ActionKind::Seats,
                vec![("max_machines", ""), ("release_after_days", "0")],
            ),
            (ActionKind::Features, vec![("feature", "priority_support")]),
            (ActionKind::MaxProjects, vec![("max_projects", "")]),
            (ActionKind::ReleaseSeat, vec![("machine_id", "mch_ab12")]),
            (
                ActionKind::OfflineFile,
                vec![("days", "30"), ("machine", "host-7")],
            ),
            (ActionKind::Resend, vec![]),
        ] {
            let action = parse(kind, &pairs).expect("parsed");
            let again: Vec<(String, String)> = action
                .fields()
                .into_iter()
                .map(|(k, v)| (k.to_owned(), v))
                .collect();
            assert_eq!(LicenseAction::parse(kind, &again), Ok(action.clone()));
            assert!(action.describe(&l, NOW).contains("lcn_1") || kind == ActionKind::Resend);
        }
    }

    #[test]
    fn the_permission_each_kind_starts_with_matches_the_role_table() {
        use crate::vendor::VendorRole;
        let sales_may: Vec<ActionKind> = ActionKind::ALL
            .into_iter()
            .filter(|k| VendorRole::Sales.may(k.permission()))
            .collect();
        assert_eq!(
            sales_may,
            vec![
                ActionKind::Extend,
                ActionKind::SetExpiry,
                ActionKind::Tier,
                ActionKind::Seats,
                ActionKind::Features,
                ActionKind::MaxProjects
            ]
        );
        let support_may: Vec<ActionKind> = ActionKind::ALL
            .into_iter()
            .filter(|k| VendorRole::Support.may(k.permission()))
            .collect();
        assert_eq!(
            support_may,
            vec![
                ActionKind::Extend,
                ActionKind::Suspend,
                ActionKind::Resume,
                ActionKind::Resend,
                ActionKind::ReleaseSeat,
                ActionKind::OfflineFile
            ]
        );
    }
}
