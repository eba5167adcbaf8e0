//! Dashboard access rules: roles, where a browser may be sent after sign-in, which requests
//! count as same-origin, and how long a session lives.

use crate::Millis;

/// What a member of an account may do.
#[derive(Debug, Clone, Copy, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Role {
    /// May rotate keys, manage members, archive projects and configure SSO.
    Admin,
    /// Reads the dashboard.
    Member,
}

impl Role {
    pub fn as_str(self) -> &'static str {
        match self {
            Role::Admin => "admin",
            Role::Member => "member",
        }
    }

    pub fn parse(raw: &str) -> Option<Role> {
        match raw {
            "admin" => Some(Role::Admin),
            "member" => Some(Role::Member),
            _ => None,
        }
    }
}

/// The path a browser is sent to after sign-in: `raw` when it is a plain same-origin path,
/// `/` otherwise. Anything a browser could read as another host is refused: `//host`,
/// `/\host`, an encoded slash or backslash (`/%2F%2Fhost`), a scheme (`https:host`,
/// `javascript:`), control characters.
pub fn safe_return_path(raw: Option<&str>) -> String {
    let Some(raw) = raw else {
        return "/".to_owned();
    };
    let lower = raw.to_ascii_lowercase();
    let acceptable = raw.len() <= 512
        && raw.starts_with('/')
        && !raw.starts_with("//")
        && !raw.contains('\\')
        && !lower.contains("%2f")
        && !lower.contains("%5c")
        && raw.bytes().all(|b| b.is_ascii_graphic());
    if acceptable {
        raw.to_owned()
    } else {
        "/".to_owned()
    }
}

/// Whether a state-changing browser request comes from our own pages. `Origin` must equal
/// ours; without it (older browsers on same-origin requests) `Sec-Fetch-Site` must say
/// `same-origin`. A request carrying neither is refused: only browsers change dashboard state.
pub fn is_same_origin_request(
    origin: Option<&str>,
    sec_fetch_site: Option<&str>,
    dashboard_url: &str,
) -> bool {
    if sec_fetch_site.is_some_and(|site| site != "same-origin") {
        return false;
    }
    match origin {
        Some(origin) => same_origin(origin, dashboard_url),
        None => sec_fetch_site == Some("same-origin"),
    }
}

/// Compares the (scheme, host, port) origins of two URLs the way browsers do: the host's case
/// and an explicit default port do not matter, and an opaque origin (`null`) matches nothing.
fn same_origin(a: &str, b: &str) -> bool {
    match (url::Url::parse(a), url::Url::parse(b)) {
        (Ok(a), Ok(b)) => {
            let a = a.origin();
            a.is_tuple() && a == b.origin()
        }
        _ => false,
    }
}

/// How long sessions last.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct SessionPolicy {
    /// Inactivity after which a session ends (any authenticated request is activity).
    pub idle_ms: Millis,
    /// Age after which a session ends whatever the activity.
    pub absolute_ms: Millis,
}

impl SessionPolicy {
    pub const DEFAULT: SessionPolicy = SessionPolicy {
        idle_ms: crate::time::DAY_MS,
        absolute_ms: crate::time::WEEK_MS,
    };

    /// When a session that is used at `now` ends, given when it must end at the latest.
    pub fn expiry_after_activity(self, now: Millis, absolute_expires_at: Millis) -> Millis {
        (now + self.idle_ms).min(absolute_expires_at)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn return_paths_stay_on_this_site() {
        for good in [
            "/",
            "/projects/prj_abc",
            "/projects?range=30d#chart",
            "/a:b",
        ] {
            assert_eq!(safe_return_path(Some(good)), good);
        }
        for evil in [
            "//evil.com",
            "/\\evil.com",
            "/%2F%2Fevil.com",
            "/%2f%2fevil.com",
            "/%5Cevil.com",
            "https:evil.com",
            "https://evil.com",
            "javascript:alert(1)",
            "evil.com",
            "",
            "/\tpath",
            "/ path",
        ] {
            assert_eq!(safe_return_path(Some(evil)), "/", "{evil:?}");
        }
        assert_eq!(safe_return_path(None), "/");
        assert_eq!(
            safe_return_path(Some(&format!("/{}", "a".repeat(600)))),
            "/"
        );
    }

    #[test]
    fn only_our_origin_may_change_state() {
        let ours = "http://127.0.0.1:3000";
        assert!(is_same_origin_request(
            Some(ours),
            Some("same-origin"),
            ours
        ));
        assert!(is_same_origin_request(Some(ours), None, ours));
        assert!(is_same_origin_request(None, Some("same-origin"), ours));
        assert!(!is_same_origin_request(
            Some("http://localhost:3000"),
            None,
            ours
        ));
        assert!(!is_same_origin_request(Some("null"), None, ours));
        assert!(!is_same_origin_request(
            Some(ours),
            Some("cross-site"),
            ours
        ));
        assert!(!is_same_origin_request(None, Some("same-site"), ours));
        assert!(!is_same_origin_request(None, None, ours));
    }

    #[test]
    fn origins_compare_as_browsers_send_them() {
        // An operator's base URL with an explicit default port, an upper-case host or a path
        // still matches what the browser sends in `Origin`.
        for configured in [
            "https://x.example:443",
            "https://X.Example",
            "https://x.example/",
            "https://x.example:443/dashboard",
        ] {
            assert!(
                is_same_origin_request(Some("https://x.example"), None, configured),
                "{configured}"
            );
        }
        assert!(is_same_origin_request(
            Some("http://127.0.0.1:3000"),
            None,
            "http://127.0.0.1:3000/"
        ));
        // Another scheme, port or host is another origin.
        for other in [
            "http://x.example",
            "https://x.example:8443",
            "https://y.example",
            "https://x.example.evil.example",
            "not a url",
        ] {
            assert!(
                !is_same_origin_request(Some(other), None, "https://x.example:443"),
                "{other}"
            );
        }
    }

    #[test]
    fn activity_extends_a_session_up_to_its_absolute_end() {
        let policy = SessionPolicy {
            idle_ms: 100,
            absolute_ms: 1_000,
        };
        assert_eq!(policy.expiry_after_activity(0, 1_000), 100);
        assert_eq!(policy.expiry_after_activity(950, 1_000), 1_000);
    }

    #[test]
    fn roles_round_trip() {
        for role in [Role::Admin, Role::Member] {
            assert_eq!(Role::parse(role.as_str()), Some(role));
        }
        assert_eq!(Role::parse("owner"), None);
    }
}
