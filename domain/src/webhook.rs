//! Webhooks: which events an endpoint hears, which URLs may receive them, how a delivery is
//! signed, when a failed one is tried again, and the Slack-compatible form of an event.

use std::net::{IpAddr, Ipv4Addr, Ipv6Addr};

use hmac::{Hmac, Mac};
use sha2::Sha256;
use tidemark_wire::{GateStatus, WebhookEvent as EventBody};

use crate::Millis;

/// The longest URL an endpoint may have.
pub const MAX_URL_LEN: usize = 2_000;
/// Endpoints per account: enough for every channel a team uses, few enough that one push
/// never fans out into a flood.
pub const MAX_ENDPOINTS: usize = 20;
/// A failed delivery is tried again, with growing pauses, until this long after the event
/// (or after a redelivery was asked for); the last attempt falls after it.
pub const RETRY_WINDOW_MS: Millis = crate::time::DAY_MS;
/// The longest pause between two attempts.
pub const MAX_RETRY_DELAY_MS: Millis = 4 * crate::time::HOUR_MS;
/// A receiver should refuse a signature whose `t` is further than this from its clock.
pub const SIGNATURE_TOLERANCE_SECS: i64 = 5 * 60;

#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum Event {
    ScanPushed,
    GateFailed,
    ScoreRegressed,
    /// A pull request's scan failed the gate against its base.
    PullRequestGateFailed,
    /// A push on the default branch where a requirement that passed before fails now (only
    /// for licences with `drift_detection`).
    PostureDrifted,
    KeysRotated,
    /// "Send a test event" in Settings: goes to the one endpoint, whatever it subscribes to.
    Test,
}

impl Event {
    /// What an endpoint can subscribe to, in the order Settings lists them.
    pub const SUBSCRIBABLE: [Event; 6] = [
        Event::ScanPushed,
        Event::GateFailed,
        Event::ScoreRegressed,
        Event::PullRequestGateFailed,
        Event::PostureDrifted,
        Event::KeysRotated,
    ];

    pub fn as_str(self) -> &'static str {
        match self {
            Event::ScanPushed => "scan.pushed",
            Event::GateFailed => "gate.failed",
            Event::ScoreRegressed => "score.regressed",
            Event::PullRequestGateFailed => "pull_request.gate_failed",
            Event::PostureDrifted => "posture.drifted",
            Event::KeysRotated => "keys.rotated",
            Event::Test => "webhook.test",
        }
    }

    pub fn parse(text: &str) -> Option<Event> {
        Event::SUBSCRIBABLE
            .into_iter()
            .chain([Event::Test])
            .find(|e| e.as_str() == text)
    }

    /// Whether the event is about one scan (and so carries the project and scan).
    pub fn is_about_a_scan(self) -> bool {
        matches!(
            self,
            Event::ScanPushed
                | Event::GateFailed
                | Event::ScoreRegressed
                | Event::PullRequestGateFailed
                | Event::PostureDrifted
        )
    }

    fn bit(self) -> u8 {
        match self {
            Event::ScanPushed => 1,
            Event::GateFailed => 2,
            Event::ScoreRegressed => 4,
            Event::KeysRotated => 8,
            Event::PullRequestGateFailed => 16,
            Event::PostureDrifted => 32,
            Event::Test => 0,
        }
    }
}

/// The events an endpoint subscribes to: at least one.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct EventSet(u8);

impl EventSet {
    /// From the names a form or API sent; unknown names and an empty list are refused.
    pub fn parse<'a>(names: impl IntoIterator<Item = &'a str>) -> Result<Self, WebhookError> {
        let mut bits = 0;
        for name in names {
            match Event::parse(name.trim()) {
                Some(e) if e != Event::Test => bits |= e.bit(),
                _ => {
                    return Err(WebhookError::UnknownEvent(
                        name.trim().chars().take(40).collect(),
                    ))
                }
            }
        }
        if bits == 0 {
            return Err(WebhookError::NoEvents);
        }
        Ok(EventSet(bits))
    }

    pub fn contains(self, event: Event) -> bool {
        self.0 & event.bit() != 0
    }

    pub fn events(self) -> Vec<Event> {
        Event::SUBSCRIBABLE
            .into_iter()
            .filter(|&e| self.contains(e))
            .collect()
    }

    /// `,scan.pushed,gate.failed,`: a `LIKE '%,<event>,%'` finds the subscribers.
    pub fn to_stored(self) -> String {
        let mut out = String::from(",");
        for e in self.events() {
            out.push_str(e.as_str());
            out.push(',');
        }
        out
    }

    /// The inverse of [`EventSet::to_stored`]; names it does not know are skipped.
    pub fn from_stored(stored: &str) -> Self {
        EventSet(
            stored
                .split(',')
                .filter_map(Event::parse)
                .fold(0, |bits, e| bits | e.bit()),
        )
    }
}

/// The `LIKE` pattern that finds endpoints subscribed to `event` in [`EventSet::to_stored`].
pub fn subscribed_pattern(event: Event) -> String {
    format!("%,{},%", event.as_str())
}

/// Which kind of line a scan was pushed to.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum LineKind {
    /// The project's default branch: the project's own line.
    Default,
    /// Another branch.
    Branch,
    PullRequest,
}

/// The events a stored push raises: always `scan.pushed`. On the default branch,
/// `gate.failed` when the gate failed and `score.regressed` when the score fell below the
/// previous scan's; on a pull request, `pull_request.gate_failed` when it failed the gate
/// against its base; on the default branch, `posture.drifted` when `drifted` (a requirement
/// that passed in the previous scan fails now, for a licence with drift detection). Other
/// branches raise nothing more: their half-finished states are not the project's.
pub fn push_events(
    line: LineKind,
    gate: GateStatus,
    score_delta: f64,
    drifted: bool,
) -> Vec<Event> {
    let mut events = vec![Event::ScanPushed];
    match line {
        LineKind::Default => {
            if gate == GateStatus::Failed {
                events.push(Event::GateFailed);
            }
            // A line's first scan has a delta of exactly 0.
            if score_delta < 0.0 {
                events.push(Event::ScoreRegressed);
            }
            if drifted {
                events.push(Event::PostureDrifted);
            }
        }
        LineKind::PullRequest if gate == GateStatus::Failed => {
            events.push(Event::PullRequestGateFailed);
        }
        LineKind::PullRequest | LineKind::Branch => {}
    }
    events
}

/// What a delivery's body looks like.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum PayloadFormat {
    /// [`tidemark_wire::WebhookEvent`].
    Tidemark,
    /// `{"text": …}`: what Slack's (and Mattermost's, and Teams' Slack-compatible) incoming
    /// webhooks accept.
    Slack,
}

impl PayloadFormat {
    pub fn as_str(self) -> &'static str {
        match self {
            PayloadFormat::Tidemark => "tidemark",
            PayloadFormat::Slack => "slack",
        }
    }

    pub fn parse(text: &str) -> Result<Self, WebhookError> {
        match text.trim() {
            "" | "tidemark" => Ok(PayloadFormat::Tidemark),
            "slack" => Ok(PayloadFormat::Slack),
            other => Err(WebhookError::UnknownFormat(
                other.chars().take(40).collect(),
            )),
        }
    }
}

#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum WebhookError {
    #[error("url must be an absolute http:// or https:// URL")]
    NotHttp,
    #[error("url is longer than {MAX_URL_LEN} characters")]
    UrlTooLong,
    #[error(
        "url points to a loopback, private or link-local address; webhooks go to public \
         addresses only (an operator can allow private ones with TIDEMARK_WEBHOOK_ALLOW_PRIVATE=1)"
    )]
    PrivateAddress,
    #[error("unknown event {0:?}; events are scan.pushed, gate.failed, score.regressed and keys.rotated")]
    UnknownEvent(String),
    #[error("choose at least one event")]
    NoEvents,
    #[error("unknown format {0:?}; formats are tidemark and slack")]
    UnknownFormat(String),
}

/// An endpoint's URL: absolute http(s), with a host that is not a loopback, private or
/// link-local address (unless the operator allows those). A name that *resolves* to such an
/// address is refused at delivery time, by the resolver the sender uses.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookUrl(url::Url);

impl std::fmt::Debug for WebhookUrl {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Slack-style URLs carry their credential in the path.
        write!(f, "WebhookUrl({})", self.display())
    }
}

impl WebhookUrl {
    pub fn parse(raw: &str, allow_private: bool) -> Result<Self, WebhookError> {
        let raw = raw.trim();
        if raw.len() > MAX_URL_LEN {
            return Err(WebhookError::UrlTooLong);
        }
        let mut url = url::Url::parse(raw).map_err(|_| WebhookError::NotHttp)?;
        if !matches!(url.scheme(), "http" | "https") {
            return Err(WebhookError::NotHttp);
        }
        let forbidden = match url.host() {
            None => return Err(WebhookError::NotHttp),
            Some(url::Host::Ipv4(ip)) => is_forbidden_ip(IpAddr::V4(ip)),
            Some(url::Host::Ipv6(ip)) => is_forbidden_ip(IpAddr::V6(ip)),
            // RFC 6761: these names are loopback wherever they are resolved.
            Some(url::Host::Domain(name)) => {
                let name = name.trim_end_matches('.');
                name == "localhost" || name.ends_with(".localhost")
            }
        };
        if forbidden && !allow_private {
            return Err(WebhookError::PrivateAddress);
        }
        url.set_fragment(None);
        Ok(WebhookUrl(url))
    }

    pub fn as_str(&self) -> &str {
        self.0.as_str()
    }

    /// Scheme, host and port, and `/…` when there is more: what Settings and logs show, since
    /// the rest may be a credential.
    pub fn display(&self) -> String {
        let more = self.0.path() != "/" || self.0.query().is_some();
        format!(
            "{}://{}{}",
            self.0.scheme(),
            self.0.host_str().unwrap_or_default(),
            match (self.0.port(), more) {
                (Some(port), true) => format!(":{port}/…"),
                (Some(port), false) => format!(":{port}"),
                (None, true) => "/…".to_owned(),
                (None, false) => String::new(),
            }
        )
    }
}

/// Addresses a webhook must not reach without the operator's leave: this host, its networks,
/// and addresses that are not unicast on the internet (an attacker's webhook URL must not
/// become a way into them).
pub fn is_forbidden_ip(ip: IpAddr) -> bool {
    match ip {
        IpAddr::V4(v4) => is_forbidden_v4(v4),
        IpAddr::V6(v6) => {
            if let Some(v4) = v6.to_ipv4_mapped() {
                return is_forbidden_v4(v4);
            }
            let s = v6.segments();
            // NAT64 (64:ff9b::/96) reaches the embedded IPv4 address.
            if s[0] == 0x64 && s[1] == 0xff9b && s[2..6] == [0, 0, 0, 0] {
                let o = v6.octets();
                return is_forbidden_v4(Ipv4Addr::new(o[12], o[13], o[14], o[15]));
            }
            v6.is_unspecified()
                || v6.is_loopback()
                || v6.is_multicast()
                || (s[0] & 0xfe00) == 0xfc00 // unique local fc00::/7
                || (s[0] & 0xffc0) == 0xfe80 // link-local fe80::/10
                || (s[0] & 0xffc0) == 0xfec0 // old site-local fec0::/10
                || (s[0] == 0x2001 && s[1] == 0x0db8) // documentation
                || (s[0..6] == [0, 0, 0, 0, 0, 0] && v6 != Ipv6Addr::UNSPECIFIED)
            // IPv4-compatible
        }
    }
}

fn is_forbidden_v4(ip: Ipv4Addr) -> bool {
    let o = ip.octets();
    ip.is_unspecified()
        || o[0] == 0 // "this network"
        || ip.is_loopback()
        || ip.is_private()
        || ip.is_link_local()
        || ip.is_broadcast()
        || ip.is_multicast()
        || ip.is_documentation()
        || (o[0] == 100 && (o[1] & 0xc0) == 64) // shared address space 100.64/10
        || (o[0] == 192 && o[1] == 0 && o[2] == 0) // IETF protocol assignments
        || (o[0] == 198 && (o[1] & 0xfe) == 18) // benchmarking 198.18/15
        || o[0] >= 240 // reserved
}

/// An endpoint's signing secret: `whsec_` + 32 base62 characters. Shown to the admin once;
/// stored encrypted, because the server must sign with it.
#[derive(Clone, PartialEq, Eq)]
pub struct WebhookSecret(String);

impl std::fmt::Debug for WebhookSecret {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("WebhookSecret(whsec_…)")
    }
}

impl WebhookSecret {
    pub fn generate() -> Self {
        WebhookSecret(format!("whsec_{}", crate::ids::random_base62(32)))
    }

    /// From the decrypted stored form.
    pub fn from_stored(raw: String) -> Self {
        WebhookSecret(raw)
    }

    pub fn expose(&self) -> &str {
        &self.0
    }

    /// The `Tidemark-Signature` header for `body` sent at `t` (Unix seconds):
    /// `t=<t>,v1=<hex HMAC-SHA256 of "<t>.<body>">`. The key is the whole secret, prefix
    /// included, as the admin copied it.
    pub fn sign(&self, t: i64, body: &[u8]) -> String {
        let tag = mac(self.0.as_bytes(), t, body).finalize().into_bytes();
        format!("t={t},v1={}", hex::encode(tag))
    }
}

/// The MAC of `"<t>.<body>"` under `key`, before it is finalised (signing) or compared
/// (verifying, in constant time).
fn mac(key: &[u8], t: i64, body: &[u8]) -> Hmac<Sha256> {
    // HMAC takes a key of any length.
    let mut mac = Hmac::<Sha256>::new_from_slice(key).unwrap_or_else(|_| unreachable!());
    mac.update(t.to_string().as_bytes());
    mac.update(b".");
    mac.update(body);
    mac
}

#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SignatureError {
    #[error("the header is not t=<unix seconds>,v1=<hex>")]
    Malformed,
    #[error("the signature's time is more than five minutes from now")]
    Stale,
    #[error("no v1 signature matches the body")]
    Mismatch,
}

/// The check a receiver makes (docs/dashboard.md's recipe, as code): the header parses, its time is
/// within [`SIGNATURE_TOLERANCE_SECS`] of `now_secs`, and one `v1` value is the HMAC of
/// `"<t>.<body>"` under the secret, compared in constant time.
pub fn verify_signature(
    header: &str,
    secret: &str,
    body: &[u8],
    now_secs: i64,
) -> Result<(), SignatureError> {
    let mut t = None;
    let mut candidates = Vec::new();
    for part in header.split(',') {
        match part.trim().split_once('=') {
            Some(("t", v)) => t = Some(v.parse::<i64>().map_err(|_| SignatureError::Malformed)?),
            Some(("v1", v)) => {
                candidates.push(hex::decode(v).map_err(|_| SignatureError::Malformed)?)
            }
            _ => {}
        }
    }
    let t = t.ok_or(SignatureError::Malformed)?;
    if candidates.is_empty() {
        return Err(SignatureError::Malformed);
    }
    if (now_secs - t).abs() > SIGNATURE_TOLERANCE_SECS {
        return Err(SignatureError::Stale);
    }
    for candidate in candidates {
        if mac(secret.as_bytes(), t, body)
            .verify_slice(&candidate)
            .is_ok()
        {
            return Ok(());
        }
    }
    Err(SignatureError::Mismatch)
}

/// The pause before the next attempt after `failed` failed attempts: `base_ms`, three times
/// longer each time, at most [`MAX_RETRY_DELAY_MS`]. With the default 10 s base: 10 s, 30 s,
/// 90 s, 4.5 min, 13.5 min, 40.5 min, 2 h, then every 4 h.
pub fn retry_delay_ms(failed: i64, base_ms: Millis) -> Millis {
    let mut delay = base_ms.max(1);
    for _ in 1..failed.clamp(1, 40) {
        delay = delay.saturating_mul(3);
        if delay >= MAX_RETRY_DELAY_MS {
            return MAX_RETRY_DELAY_MS;
        }
    }
    delay.min(MAX_RETRY_DELAY_MS)
}

/// When to try a failed delivery again, or `None` to give up: attempts go on until
/// [`RETRY_WINDOW_MS`] after `window_start` (the event, or the admin's redelivery).
pub fn next_attempt_at(
    failed: i64,
    window_start: Millis,
    now: Millis,
    base_ms: Millis,
) -> Option<Millis> {
    (now - window_start < RETRY_WINDOW_MS).then(|| now + retry_delay_ms(failed, base_ms))
}

/// Whether an HTTP status from the receiver means delivered. Redirects are not followed and
/// count as failures: the endpoint's URL is what the admin approved.
pub fn is_delivered(status: u16) -> bool {
    (200..300).contains(&status)
}

/// The Slack-compatible body for an event: one line of text with a link, in Slack's
/// `<url|text>` markup (`&`, `<` and `>` escaped as Slack asks).
pub fn slack_message(event: &EventBody) -> serde_json::Value {
    let esc = |s: &str| {
        s.replace('&', "&amp;")
            .replace('<', "&lt;")
            .replace('>', "&gt;")
    };
    let project = event
        .project
        .as_ref()
        .map(|p| esc(&p.label))
        .unwrap_or_default();
    let mut text = match (event.event_type.as_str(), &event.scan) {
        ("gate.failed", Some(scan)) => format!(
            ":red_circle: Quality gate failed for *{project}*: score {} ({:+})",
            scan.score, scan.score_delta
        ),
        ("pull_request.gate_failed", Some(scan)) => {
            let pr = scan.pull_request.as_ref();
            let number = pr.map(|p| format!(" #{}", p.number)).unwrap_or_default();
            let title = pr
                .and_then(|p| p.title.as_deref())
                .map(|t| format!(" ({})", esc(t)))
                .unwrap_or_default();
            let base = pr
                .map(|p| format!(": {}", esc(&p.base.message)))
                .unwrap_or_default();
            format!(
                ":red_circle: Pull request{number}{title} of *{project}* failed the quality gate{base}"
            )
        }
        ("score.regressed", Some(scan)) => format!(
            ":chart_with_downwards_trend: *{project}* regressed: score {} ({:+})",
            scan.score, scan.score_delta
        ),
        ("posture.drifted", Some(scan)) => {
            let n: usize = scan.drifted.iter().map(|d| d.requirements.len()).sum();
            format!(
                ":warning: Compliance drift in *{project}*: {n} {} that passed before {} now",
                if n == 1 {
                    "requirement"
                } else {
                    "requirements"
                },
                if n == 1 { "fails" } else { "fail" }
            )
        }
        (_, Some(scan)) => format!(
            "New scan of *{project}*: score {} ({:+}), gate {}",
            scan.score,
            scan.score_delta,
            scan.gate.status.as_str()
        ),
        ("keys.rotated", None) => {
            ":key: The account's API keys were rotated; the previous keys no longer work."
                .to_owned()
        }
        _ => "Tidemark test event: this endpoint receives Tidemark webhooks.".to_owned(),
    };
    if let Some(scan) = &event.scan {
        for reason in &scan.gate.reasons {
            text.push_str(&format!("\n• {}", esc(reason)));
        }
        if event.event_type == "posture.drifted" {
            for d in &scan.drifted {
                text.push_str(&format!(
                    "\n• {}: {}",
                    esc(&d.framework),
                    esc(&d.requirements.join(", "))
                ));
            }
        }
    }
    text.push_str(&format!("\n<{}|Open in Tidemark>", event.dashboard_url));
    serde_json::json!({ "text": text })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn event_sets_parse_store_and_refuse_unknown_or_empty() {
        let set = EventSet::parse(["gate.failed", "scan.pushed"]).unwrap();
        assert_eq!(set.to_stored(), ",scan.pushed,gate.failed,");
        assert_eq!(EventSet::from_stored(&set.to_stored()), set);
        assert!(set.contains(Event::GateFailed) && !set.contains(Event::KeysRotated));
        assert_eq!(EventSet::parse([]), Err(WebhookError::NoEvents));
        assert!(matches!(
            EventSet::parse(["scan.pushed", "push"]),
            Err(WebhookError::UnknownEvent(e)) if e == "push"
        ));
        // The test event is sent on request, never subscribed to.
        assert!(EventSet::parse(["webhook.test"]).is_err());
        let stored = set.to_stored();
        let pattern = subscribed_pattern(Event::GateFailed);
        assert!(stored.contains(pattern.trim_matches('%')));
        assert!(!stored.contains(subscribed_pattern(Event::KeysRotated).trim_matches('%')));
    }

    #[test]
    fn a_push_raises_scan_pushed_and_failure_or_regression_when_they_happen() {
        use LineKind::*;
        assert_eq!(
            push_events(Default, GateStatus::None, 0.0, false),
            [Event::ScanPushed]
        );
        assert_eq!(
            push_events(Default, GateStatus::Passed, 2.0, false),
            [Event::ScanPushed]
        );
        assert_eq!(
            push_events(Default, GateStatus::Failed, -0.5, false),
            [Event::ScanPushed, Event::GateFailed, Event::ScoreRegressed]
        );
        assert_eq!(
            push_events(Default, GateStatus::Passed, -1.0, false),
            [Event::ScanPushed, Event::ScoreRegressed]
        );
        assert_eq!(
            push_events(Default, GateStatus::Passed, 1.0, true),
            [Event::ScanPushed, Event::PostureDrifted]
        );
        // Drift on a branch or pull request is theirs, not the project's.
        assert_eq!(
            push_events(Branch, GateStatus::Passed, 1.0, true),
            [Event::ScanPushed]
        );
        assert_eq!(
            push_events(PullRequest, GateStatus::Passed, 1.0, true),
            [Event::ScanPushed]
        );
    }

    #[test]
    fn branches_never_alarm_and_pull_requests_raise_their_own_failure() {
        use LineKind::*;
        assert_eq!(
            push_events(Branch, GateStatus::Failed, -30.0, false),
            [Event::ScanPushed]
        );
        assert_eq!(
            push_events(PullRequest, GateStatus::Failed, -30.0, false),
            [Event::ScanPushed, Event::PullRequestGateFailed]
        );
        assert_eq!(
            push_events(PullRequest, GateStatus::Passed, -30.0, false),
            [Event::ScanPushed]
        );
    }

    #[test]
    fn urls_must_be_http_and_public_unless_the_operator_allows_private() {
        for ok in [
            "https://hooks.example.com/services/T0/B0/xyz",
            "http://203.0.113.1.nip.io/hook",
            "https://[2606:4700::1111]/x",
            "http://8.8.8.8:8080/",
        ] {
            assert!(WebhookUrl::parse(ok, false).is_ok(), "{ok}");
        }
        for bad in [
            "ftp://example.com/",
            "example.com/hook",
            "https://",
            "javascript:alert(1)",
        ] {
            assert_eq!(
                WebhookUrl::parse(bad, false),
                Err(WebhookError::NotHttp),
                "{bad}"
            );
        }
        for private in [
            "http://127.0.0.1:9000/",
            "http://localhost/",
            "http://api.localhost./",
            "http://10.1.2.3/",
            "http://172.20.0.1/",
            "http://192.168.1.1/",
            "http://169.254.169.254/latest/meta-data/",
            "http://100.64.0.1/",
            "http://0.0.0.0/",
            "http://[::1]/",
            "http://[fe80::1]/",
            "http://[fd00::1]/",
            "http://[::ffff:127.0.0.1]/",
            "http://[64:ff9b::a00:1]/",
            "http://2130706433/", // 127.0.0.1 as one number
            "http://0x7f.1/",
        ] {
            assert_eq!(
                WebhookUrl::parse(private, false),
                Err(WebhookError::PrivateAddress),
                "{private}"
            );
            assert!(WebhookUrl::parse(private, true).is_ok(), "{private}");
        }
        assert_eq!(
            WebhookUrl::parse(&format!("https://e.com/{}", "a".repeat(2_000)), false),
            Err(WebhookError::UrlTooLong)
        );
    }

    #[test]
    fn the_url_shown_hides_path_query_and_credentials() {
        let url = WebhookUrl::parse(
            "https://user:pw@hooks.slack.com/services/T0/B0/secret?x=1#f",
            false,
        )
        .unwrap();
        assert_eq!(url.display(), "https://hooks.slack.com/…");
        assert!(!format!("{url:?}").contains("secret"));
        assert!(!url.as_str().contains('#'));
        let url = WebhookUrl::parse("http://example.com:8080", false).unwrap();
        assert_eq!(url.display(), "http://example.com:8080");
    }

    #[test]
    fn signatures_verify_and_refuse_tampering_other_secrets_and_old_times() {
        let secret = WebhookSecret::generate();
        assert!(secret.expose().starts_with("whsec_") && secret.expose().len() == 38);
        assert!(!format!("{secret:?}").contains(&secret.expose()[6..]));
        let body = br#"{"id":"evt_1"}"#;
        let header = secret.sign(1_800_000_000, body);
        assert!(header.starts_with("t=1800000000,v1="));
        assert_eq!(header.len(), "t=1800000000,v1=".len() + 64);
        assert_eq!(
            verify_signature(&header, secret.expose(), body, 1_800_000_100),
            Ok(())
        );
        assert_eq!(
            verify_signature(&header, secret.expose(), b"{}", 1_800_000_100),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_signature(
                &header,
                WebhookSecret::generate().expose(),
                body,
                1_800_000_100
            ),
            Err(SignatureError::Mismatch)
        );
        assert_eq!(
            verify_signature(&header, secret.expose(), body, 1_800_000_000 + 301),
            Err(SignatureError::Stale)
        );
        assert_eq!(
            verify_signature("v1=abcd", secret.expose(), body, 0),
            Err(SignatureError::Malformed)
        );
        // A vector computed elsewhere (Python's hmac), so docs/dashboard.md's recipe is checked.
        assert_eq!(
            WebhookSecret::from_stored("whsec_test".into()).sign(1, b"{}"),
            "t=1,v1=7500d5d4be4b3ef07af1fe56f7d522d135cdaa7530de557e67cc1049c52de094"
        );
    }

    #[test]
    fn retries_back_off_and_go_on_for_a_day() {
        assert_eq!(retry_delay_ms(1, 10_000), 10_000);
        assert_eq!(retry_delay_ms(2, 10_000), 30_000);
        assert_eq!(retry_delay_ms(7, 10_000), 7_290_000);
        assert_eq!(retry_delay_ms(8, 10_000), MAX_RETRY_DELAY_MS);
        assert_eq!(retry_delay_ms(400, 10_000), MAX_RETRY_DELAY_MS);
        // Simulate a receiver that is down for good: attempts continue past 24 hours.
        let start = 0;
        let (mut now, mut failed) = (start, 0);
        loop {
            failed += 1;
            match next_attempt_at(failed, start, now, 10_000) {
                Some(at) => now = at,
                None => break,
            }
        }
        assert!(now - start >= RETRY_WINDOW_MS, "last attempt at {now}");
        assert!(now - start < RETRY_WINDOW_MS + MAX_RETRY_DELAY_MS);
        assert!((10..=20).contains(&failed), "{failed} attempts");
    }

    #[test]
    fn slack_messages_say_what_happened_and_link_to_the_scan() {
        let event = EventBody {
            id: "evt_x".into(),
            event_type: "gate.failed".into(),
            created_at: "2026-11-23T10:00:00Z".into(),
            account_id: "acct_x".into(),
            project: Some(tidemark_wire::WebhookProject {
                id: "prj_x".into(),
                label: "pay<ments>".into(),
            }),
            scan: Some(tidemark_wire::WebhookScan {
                scan_id: "s".into(),
                score: 71.5,
                score_delta: -4.0,
                passed: 1,
                failed: 2,
                severity_counts: tidemark_wire::SeverityCounts::from_columns(0, 1, 0, 0),
                scanned_at: "2026-11-23T10:00:00Z".into(),
                gate: tidemark_wire::GateResult {
                    status: GateStatus::Failed,
                    reasons: vec!["score 71.5 is below the gate's minimum of 80".into()],
                },
                branch: Some("main".into()),
                commit: None,
                pull_request: None,
                pushed_by: None,
                drifted: Vec::new(),
            }),
            dashboard_url: "https://t.example/projects/prj_x/scans/s".into(),
        };
        let text = slack_message(&event)["text"].as_str().unwrap().to_owned();
        assert!(
            text.contains("Quality gate failed for *pay&lt;ments&gt;*: score 71.5 (-4)"),
            "{text}"
        );
        assert!(text.contains("• score 71.5 is below the gate's minimum of 80"));
        assert!(text.ends_with("<https://t.example/projects/prj_x/scans/s|Open in Tidemark>"));

        let mut pr_event = event.clone();
        pr_event.event_type = "pull_request.gate_failed".into();
        if let Some(scan) = pr_event.scan.as_mut() {
            scan.pull_request = Some(tidemark_wire::WebhookPullRequest {
                number: 42,
                title: Some("Open <the> bucket".into()),
                url: None,
                base: crate::append::base_comparison(
                    "main",
                    Some(("b".into(), 80.0)),
                    71.5,
                    Some((2, 0)),
                ),
            });
        }
        let text = slack_message(&pr_event)["text"]
            .as_str()
            .unwrap()
            .to_owned();
        assert!(
            text.starts_with(
                ":red_circle: Pull request #42 (Open &lt;the&gt; bucket) of *pay&lt;ments&gt;* \
                 failed the quality gate: 2 new findings and 0 fixed compared with main"
            ),
            "{text}"
        );
    }
}
