//! When each verdict-signing key is published, signs and retires.
//!
//! A new key is published at once but signs only after an overlap, so every client that
//! refreshes its key set within the overlap knows the key before it sees a verdict signed by
//! it. An old key stays published until nothing it signed can still be valid: the offline
//! grace after its last signature, or the furthest expiry of an offline licence file it
//! signed, whichever is later.

use crate::Millis;

/// How long a verdict from `validate` or `activate` is trusted offline: the scanner's grace.
pub const VERDICT_LIFETIME: Millis = crate::time::WEEK_MS;
/// Default of `TIDEMARK_SIGNING_KEY_OVERLAP`.
pub const DEFAULT_OVERLAP: &str = "7d";
/// The longest an offline licence file may run.
pub const MAX_OFFLINE_DAYS: u32 = 400;

/// One signing key's schedule, as stored.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct KeyWindow {
    pub kid: String,
    /// 1 for the first key, one more per rotation: the order of succession.
    pub generation: i64,
    pub published_at: Millis,
    pub signs_from: Millis,
    /// The latest `exp` of anything it signed beyond the verdict lifetime (offline files).
    pub longest_exp: Millis,
}

/// A key's place in the schedule at one moment.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum KeyStage {
    /// Published, not signing yet.
    Announced,
    /// The key verdicts are signed with now.
    Signing,
    /// Superseded; published while what it signed may still be valid.
    Verifying,
    /// Nothing it signed is valid any more: unpublished, its private half destroyed.
    Retired,
}

/// The schedule of every live key, oldest first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Schedule {
    keys: Vec<KeyWindow>,
}

impl Schedule {
    pub fn new(mut keys: Vec<KeyWindow>) -> Self {
        keys.sort_by_key(|k| k.generation);
        Self { keys }
    }

    pub fn keys(&self) -> &[KeyWindow] {
        &self.keys
    }

    /// When `key` stops signing: its successor's start.
    pub fn signs_until(&self, key: &KeyWindow) -> Option<Millis> {
        self.keys
            .iter()
            .find(|k| k.generation > key.generation)
            .map(|k| k.signs_from.max(key.signs_from))
    }

    /// When `key` leaves the key set; `None` while it has no successor.
    pub fn retires_at(&self, key: &KeyWindow) -> Option<Millis> {
        self.signs_until(key)
            .map(|until| (until + VERDICT_LIFETIME).max(key.longest_exp))
    }

    pub fn stage(&self, key: &KeyWindow, now: Millis) -> KeyStage {
        if now < key.signs_from {
            return KeyStage::Announced;
        }
        match (self.signs_until(key), self.retires_at(key)) {
            (_, Some(retires)) if now >= retires => KeyStage::Retired,
            (Some(until), _) if now >= until => KeyStage::Verifying,
            _ => KeyStage::Signing,
        }
    }

    /// The key to sign with at `now`: the newest whose time has come.
    pub fn signer(&self, now: Millis) -> Option<&KeyWindow> {
        self.keys
            .iter()
            .rev()
            .find(|k| self.stage(k, now) == KeyStage::Signing)
    }

    /// The keys to publish at `now`: every one not retired.
    pub fn published(&self, now: Millis) -> impl Iterator<Item = &KeyWindow> {
        self.keys
            .iter()
            .filter(move |k| self.stage(k, now) != KeyStage::Retired)
    }

    /// When a key added at `now` starts signing: after the overlap, and never before a key
    /// already announced (so succession follows generation).
    pub fn next_signs_from(&self, now: Millis, overlap: Millis) -> Millis {
        let latest = self.keys.last().map_or(now, |k| k.signs_from);
        (now + overlap.max(0)).max(latest)
    }

    pub fn next_generation(&self) -> i64 {
        self.keys.last().map_or(1, |k| k.generation + 1)
    }
}

/// A machine's fingerprint as a scanner sends it (`X-Machine-Fingerprint`), bound into the
/// verdict so a cache copied to another machine is refused there: 1 to 128 characters of
/// letters, digits and `. _ : + / = -` (a hex or base64 digest, a UUID, `sha256:…`).
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct MachineFingerprint(String);

pub const FINGERPRINT_RULE: &str =
    "must be 1 to 128 characters of letters, digits and . _ : + / = -";

impl MachineFingerprint {
    pub fn parse(raw: &str) -> Result<Self, String> {
        let ok = !raw.is_empty()
            && raw.len() <= 128
            && raw
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._:+/=-".contains(&b));
        if ok {
            Ok(Self(raw.to_owned()))
        } else {
            Err(format!("X-Machine-Fingerprint {FINGERPRINT_RULE}"))
        }
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// Why an offline licence file cannot be issued.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum OfflineRefusal {
    Days(u32),
    Inactive,
    /// The licence itself ends before the file would.
    BeyondLicense {
        license_expires_at: Millis,
    },
}

impl std::fmt::Display for OfflineRefusal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            OfflineRefusal::Days(d) => write!(
                f,
                "an offline licence file runs 1 to {MAX_OFFLINE_DAYS} days, not {d}"
            ),
            OfflineRefusal::Inactive => {
                f.write_str("the licence is expired or suspended; renew it first")
            }
            OfflineRefusal::BeyondLicense { license_expires_at } => write!(
                f,
                "the licence expires on {}, before the file would; choose fewer days",
                crate::to_rfc3339(*license_expires_at)
            ),
        }
    }
}

/// The `exp` of an offline licence file issued at `now` for `days` days.
pub fn offline_file_exp(
    now: Millis,
    days: u32,
    license_active: bool,
    license_expires_at: Millis,
) -> Result<Millis, OfflineRefusal> {
    if days == 0 || days > MAX_OFFLINE_DAYS {
        return Err(OfflineRefusal::Days(days));
    }
    if !license_active {
        return Err(OfflineRefusal::Inactive);
    }
    let exp = now + i64::from(days) * crate::time::DAY_MS;
    if exp > license_expires_at {
        return Err(OfflineRefusal::BeyondLicense { license_expires_at });
    }
    Ok(exp)
}

#[cfg(test)]
mod tests {
    use super::*;

    const DAY: Millis = 86_400_000;

    fn key(generation: i64, published_at: Millis, signs_from: Millis) -> KeyWindow {
        KeyWindow {
            kid: format!("k{generation}"),
            generation,
            published_at,
            signs_from,
            longest_exp: 0,
        }
    }

    #[test]
    fn the_first_key_signs_at_once_and_never_retires_alone() {
        let s = Schedule::new(vec![key(1, 0, 0)]);
        assert_eq!(s.signer(0).unwrap().kid, "k1");
        assert_eq!(s.stage(&s.keys()[0], 1000 * DAY), KeyStage::Signing);
        assert_eq!(s.retires_at(&s.keys()[0]), None);
        assert_eq!(s.published(1000 * DAY).count(), 1);
    }

    #[test]
    fn a_rotation_is_announced_then_signs_then_the_old_key_retires() {
        let overlap = 7 * DAY;
        let first = Schedule::new(vec![key(1, 0, 0)]);
        let rotated_at = 30 * DAY;
        let from = first.next_signs_from(rotated_at, overlap);
        assert_eq!(from, 37 * DAY);
        let s = Schedule::new(vec![key(1, 0, 0), key(2, rotated_at, from)]);
        let (old, new) = (&s.keys()[0], &s.keys()[1]);

        // During the overlap: both published, the old one signs.
        assert_eq!(s.stage(new, rotated_at + DAY), KeyStage::Announced);
        assert_eq!(s.signer(rotated_at + DAY).unwrap().kid, "k1");
        assert_eq!(s.published(rotated_at + DAY).count(), 2);
        // From signs_from: the new one signs; the old one verifies for a verdict lifetime.
        assert_eq!(s.signer(from).unwrap().kid, "k2");
        assert_eq!(s.stage(old, from), KeyStage::Verifying);
        assert_eq!(s.signs_until(old), Some(from));
        assert_eq!(s.retires_at(old), Some(from + VERDICT_LIFETIME));
        assert_eq!(
            s.stage(old, from + VERDICT_LIFETIME - 1),
            KeyStage::Verifying
        );
        assert_eq!(s.stage(old, from + VERDICT_LIFETIME), KeyStage::Retired);
        assert_eq!(
            s.published(from + VERDICT_LIFETIME)
                .map(|k| k.kid.as_str())
                .collect::<Vec<_>>(),
            ["k2"]
        );
    }

    #[test]
    fn an_offline_file_keeps_its_key_published_until_it_expires() {
        let mut old = key(1, 0, 0);
        old.longest_exp = 200 * DAY;
        let s = Schedule::new(vec![old, key(2, 10 * DAY, 17 * DAY)]);
        assert_eq!(s.retires_at(&s.keys()[0]), Some(200 * DAY));
        assert_eq!(s.stage(&s.keys()[0], 199 * DAY), KeyStage::Verifying);
        assert_eq!(s.stage(&s.keys()[0], 200 * DAY), KeyStage::Retired);
    }

    #[test]
    fn rotating_again_during_an_overlap_keeps_succession_in_order() {
        let s = Schedule::new(vec![key(1, 0, 0), key(2, DAY, 8 * DAY)]);
        // Zero overlap asked for, yet key 3 cannot start before key 2.
        assert_eq!(s.next_signs_from(2 * DAY, 0), 8 * DAY);
        assert_eq!(s.next_generation(), 3);
        let s = Schedule::new(vec![
            key(1, 0, 0),
            key(2, DAY, 8 * DAY),
            key(3, 2 * DAY, 9 * DAY),
        ]);
        assert_eq!(s.signer(8 * DAY + 1).unwrap().kid, "k2");
        assert_eq!(s.signer(9 * DAY).unwrap().kid, "k3");
        assert_eq!(s.stage(&s.keys()[1], 9 * DAY), KeyStage::Verifying);
    }

    #[test]
    fn fingerprints_are_short_printable_digests() {
        assert!(MachineFingerprint::parse("sha256:0a1b").is_ok());
        assert!(MachineFingerprint::parse("4f1c2d3e-aaaa-bbbb-cccc-0123456789ab").is_ok());
        assert!(MachineFingerprint::parse(&"a".repeat(128)).is_ok());
        for bad in ["", " ", "a b", "ä", "x\n", &"a".repeat(129)] {
            assert!(MachineFingerprint::parse(bad).is_err(), "{bad:?}");
        }
    }

    #[test]
    fn offline_files_run_within_the_license_and_the_limit() {
        let now = 100 * DAY;
        assert_eq!(offline_file_exp(now, 30, true, 365 * DAY), Ok(130 * DAY));
        assert_eq!(
            offline_file_exp(now, 0, true, 365 * DAY),
            Err(OfflineRefusal::Days(0))
        );
        assert_eq!(
            offline_file_exp(now, MAX_OFFLINE_DAYS + 1, true, 9999 * DAY),
            Err(OfflineRefusal::Days(MAX_OFFLINE_DAYS + 1))
        );
        assert_eq!(
            offline_file_exp(now, 30, false, 365 * DAY),
            Err(OfflineRefusal::Inactive)
        );
        assert!(matches!(
            offline_file_exp(now, 300, true, 365 * DAY),
            Err(OfflineRefusal::BeyondLicense { .. })
        ));
    }
}
