//! Licence events to the vendor: their names, which an endpoint hears, when a licence is
//! "expiring", and the body every endpoint receives (the licence as it was).

use tidemark_wire::admin::{AdminLicense, EventMachine, VendorEvent, VendorEventData};

use crate::license::License;
use crate::time::DAY_MS;
use crate::{to_rfc3339, Millis};

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LicenseEvent {
    Created,
    Updated,
    Suspended,
    Resumed,
    Expiring,
    Expired,
    MachineActivated,
    MachineReleased,
    SeatLimitReached,
}

/// Days before its expiry that a licence is announced as expiring, nearest last.
pub const EXPIRING_DAYS: [u32; 3] = [30, 7, 1];
/// A licence that expired longer ago than this raises no `license.expired` (one expired
/// before events existed, or while the server was down for a week, is old news).
pub const EXPIRED_NEWS_MS: Millis = 7 * DAY_MS;
/// Endpoints the vendor may have.
pub const MAX_VENDOR_ENDPOINTS: usize = 10;

impl LicenseEvent {
    pub const ALL: [LicenseEvent; 9] = [
        LicenseEvent::Created,
        LicenseEvent::Updated,
        LicenseEvent::Suspended,
        LicenseEvent::Resumed,
        LicenseEvent::Expiring,
        LicenseEvent::Expired,
        LicenseEvent::MachineActivated,
        LicenseEvent::MachineReleased,
        LicenseEvent::SeatLimitReached,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            LicenseEvent::Created => "license.created",
            LicenseEvent::Updated => "license.updated",
            LicenseEvent::Suspended => "license.suspended",
            LicenseEvent::Resumed => "license.resumed",
            LicenseEvent::Expiring => "license.expiring",
            LicenseEvent::Expired => "license.expired",
            LicenseEvent::MachineActivated => "machine.activated",
            LicenseEvent::MachineReleased => "machine.released",
            LicenseEvent::SeatLimitReached => "seat_limit.reached",
        }
    }

    pub fn parse(text: &str) -> Option<LicenseEvent> {
        LicenseEvent::ALL.into_iter().find(|e| e.as_str() == text)
    }

    /// The stored subscription's `LIKE` pattern (names are fixed ASCII words).
    pub fn subscribed_pattern(self) -> String {
        format!("%,{},%", self.as_str())
    }
}

/// The events an endpoint hears, parsed from the names given (none given: all).
pub fn parse_subscription(names: Option<&[String]>) -> Result<Vec<LicenseEvent>, String> {
    let Some(names) = names else {
        return Ok(LicenseEvent::ALL.to_vec());
    };
    if names.is_empty() {
        return Err("`events` is empty: leave it out to receive every event.".to_owned());
    }
    let mut events = Vec::new();
    for name in names {
        let event = LicenseEvent::parse(name).ok_or_else(|| {
            let known: Vec<&str> = LicenseEvent::ALL.iter().map(|e| e.as_str()).collect();
            format!("Unknown event {name:?}; known: {}.", known.join(", "))
        })?;
        if !events.contains(&event) {
            events.push(event);
        }
    }
    // Stored and shown in the one order.
    events.sort_by_key(|e| LicenseEvent::ALL.iter().position(|a| a == e));
    Ok(events)
}

/// `,license.created,machine.activated,` (see the migration).
pub fn to_stored(events: &[LicenseEvent]) -> String {
    let mut s = String::from(",");
    for e in events {
        s.push_str(e.as_str());
        s.push(',');
    }
    s
}

pub fn from_stored(stored: &str) -> Vec<LicenseEvent> {
    stored.split(',').filter_map(LicenseEvent::parse).collect()
}

/// The `license.expiring` to raise now for a licence expiring at `expires_at`: the nearest
/// of [`EXPIRING_DAYS`] already reached (a licence made with 5 days left is announced at 7,
/// never late at 30). `None` once it has expired or while more than 30 days remain.
pub fn expiring_threshold(expires_at: Millis, now: Millis) -> Option<u32> {
    let left = expires_at - now;
    if left <= 0 {
        return None;
    }
    EXPIRING_DAYS
        .into_iter()
        .filter(|days| left <= i64::from(*days) * DAY_MS)
        .min()
}

/// What makes an event once-only, if it is: a second raise with the same key is nothing.
pub fn once_key(
    event: LicenseEvent,
    expires_at: Millis,
    days_left: Option<u32>,
    at: Millis,
) -> Option<String> {
    match event {
        LicenseEvent::Expiring => Some(format!("expiring:{}:{expires_at}", days_left.unwrap_or(0))),
        LicenseEvent::Expired => Some(format!("expired:{expires_at}")),
        // A customer's CI retrying an activation all day is one story an hour, not thousands.
        LicenseEvent::SeatLimitReached => Some(format!("seat_limit:{}", at / crate::time::HOUR_MS)),
        _ => None,
    }
}

/// The licence as the admin API shows it, at `now`.
pub fn license_view(l: &License, now: Millis) -> AdminLicense {
    AdminLicense {
        id: l.id.clone(),
        account_id: l.account_id.to_string(),
        email: l.email.clone(),
        tier: l.tier,
        state: l.state(now).as_str().to_owned(),
        expires_at: to_rfc3339(l.expires_at),
        suspended_at: l.suspended_at.map(to_rfc3339),
        max_projects: l.max_projects,
        project_cap: l.project_cap(),
        max_machines: l.max_machines,
        seat_release_after_days: l.seat_release_after_days,
        features: l.features(),
        features_added: l.features_added.clone(),
        features_removed: l.features_removed.clone(),
        created_at: to_rfc3339(l.created_at),
        version: l.version,
    }
}

/// A machine of an event, from its stored key (`fp:<fingerprint>` or `name:<name>`).
pub fn event_machine(id: Option<&str>, name: &str, machine_key: &str) -> EventMachine {
    EventMachine {
        id: id.map(str::to_owned),
        name: name.to_owned(),
        fingerprint: machine_key.strip_prefix("fp:").map(str::to_owned),
    }
}

/// What an event says beyond the licence.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Details {
    pub machine: Option<EventMachine>,
    pub reason: Option<String>,
    pub days_left: Option<u32>,
    pub seat_limit: Option<u64>,
}

/// The body every endpoint receives for the event, as JSON text.
pub fn body(
    id: &str,
    event: LicenseEvent,
    sequence: i64,
    license: &License,
    details: Details,
    at: Millis,
) -> String {
    let event = VendorEvent {
        id: id.to_owned(),
        event_type: event.as_str().to_owned(),
        created_at: to_rfc3339(at),
        license_id: license.id.clone(),
        sequence,
        data: VendorEventData {
            license: license_view(license, at),
            machine: details.machine,
            reason: details.reason,
            days_left: details.days_left,
            seat_limit: details.seat_limit,
        },
    };
    serde_json::to_string(&event).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_read_back_and_the_stored_form_matches_its_pattern() {
        for e in LicenseEvent::ALL {
            assert_eq!(LicenseEvent::parse(e.as_str()), Some(e));
            let stored = to_stored(&[e]);
            let needle = e.subscribed_pattern().trim_matches('%').to_owned();
            assert!(stored.contains(&needle), "{stored} / {needle}");
        }
        assert_eq!(
            from_stored(&to_stored(&LicenseEvent::ALL)),
            LicenseEvent::ALL
        );
    }

    #[test]
    fn a_subscription_is_every_event_unless_named_and_names_must_be_known() {
        assert_eq!(parse_subscription(None).unwrap().len(), 9);
        let named = vec![
            "machine.released".to_owned(),
            "license.created".into(),
            "license.created".into(),
        ];
        assert_eq!(
            parse_subscription(Some(&named)).unwrap(),
            [LicenseEvent::Created, LicenseEvent::MachineReleased]
        );
        let err = parse_subscription(Some(&["license.deleted".to_owned()])).unwrap_err();
        assert!(
            err.contains("license.deleted") && err.contains("seat_limit.reached"),
            "{err}"
        );
        assert!(parse_subscription(Some(&[])).is_err());
    }

    #[test]
    fn expiring_names_the_nearest_threshold_reached() {
        let now = 1_800_000_000_000;
        let at = |days: f64| now + (days * DAY_MS as f64) as i64;
        assert_eq!(expiring_threshold(at(45.0), now), None);
        assert_eq!(expiring_threshold(at(30.0), now), Some(30));
        assert_eq!(expiring_threshold(at(12.0), now), Some(30));
        assert_eq!(
            expiring_threshold(at(5.0), now),
            Some(7),
            "never late at 30"
        );
        assert_eq!(expiring_threshold(at(0.5), now), Some(1));
        assert_eq!(expiring_threshold(now, now), None, "expired, not expiring");
    }

    #[test]
    fn once_keys_follow_the_expiry_so_an_extension_announces_again() {
        let k = |exp| once_key(LicenseEvent::Expiring, exp, Some(7), 0);
        assert_ne!(k(1), k(2));
        assert_eq!(once_key(LicenseEvent::Updated, 1, None, 0), None);
        let hour = crate::time::HOUR_MS;
        assert_eq!(
            once_key(LicenseEvent::SeatLimitReached, 0, None, 10),
            once_key(LicenseEvent::SeatLimitReached, 0, None, hour - 1)
        );
        assert_ne!(
            once_key(LicenseEvent::SeatLimitReached, 0, None, 10),
            once_key(LicenseEvent::SeatLimitReached, 0, None, hour)
        );
    }
}
