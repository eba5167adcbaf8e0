//! Which client is calling, as its `User-Agent` names itself: the first product token
//! (`tidemark-cli/1.4.2`, `curl/8.5.0`), for the vendor's picture of the versions in the field.
//! Anything else a header holds (comments, platforms, a megabyte of text) is dropped, so what
//! is kept is short, printable and one of few values.

use crate::time::DAY_MS;
use crate::Millis;

const MAX_PRODUCT: usize = 40;
const MAX_VERSION: usize = 24;

/// `product/version`, both short runs of safe characters.
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct ClientVersion(String);

impl ClientVersion {
    /// The first token of `header` if it is `product/version`; `None` otherwise.
    pub fn from_user_agent(header: &str) -> Option<ClientVersion> {
        let token = header.split_whitespace().next()?;
        let (product, version) = token.split_once('/')?;
        let safe = |s: &str, max: usize, extra: &[u8]| {
            !s.is_empty()
                && s.len() <= max
                && s.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || extra.contains(&b))
        };
        (safe(product, MAX_PRODUCT, b"-_.") && safe(version, MAX_VERSION, b"-_.+"))
            .then(|| ClientVersion(format!("{product}/{version}")))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// The UTC day `at` falls in, as its midnight.
pub fn day_of(at: Millis) -> Millis {
    at - at.rem_euclid(DAY_MS)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_first_product_is_kept_and_nothing_else() {
        let v = |h: &str| ClientVersion::from_user_agent(h).map(|c| c.0);
        assert_eq!(
            v("tidemark-cli/1.4.2").as_deref(),
            Some("tidemark-cli/1.4.2")
        );
        assert_eq!(
            v("tidemark-cli/2.0.0-rc.1+build.7 (linux; x86_64)").as_deref(),
            Some("tidemark-cli/2.0.0-rc.1+build.7")
        );
        assert_eq!(v("curl/8.5.0").as_deref(), Some("curl/8.5.0"));
        for refused in [
            "",
            "tidemark",
            "/1.0",
            "tidemark-cli/",
            "<script>/1",
            "a/b/c",
            &format!("x/{}", "9".repeat(MAX_VERSION + 1)),
        ] {
            assert_eq!(v(refused), None, "{refused:?}");
        }
    }

    #[test]
    fn a_day_starts_at_utc_midnight() {
        assert_eq!(day_of(DAY_MS * 3 + 5), DAY_MS * 3);
        assert_eq!(day_of(DAY_MS * 3), DAY_MS * 3);
        assert_eq!(day_of(-1), -DAY_MS);
    }
}
