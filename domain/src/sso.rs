//! Single sign-on claims: which e-mail domains an account may claim, how it proves that it owns
//! one (a DNS TXT record), and what a DNS answer means for a pending claim.
//!
//! A claim made from Settings starts *pending*: it routes nobody and enforces nothing. It
//! becomes *verified*, and exclusive, once `_tidemark-challenge.<domain>` carries
//! `tidemark-domain-verification=<token>` with the claim's own token. The first account to
//! verify wins; every other claim on the domain *ends*.

use rand::RngCore as _;

/// The DNS label under the claimed domain where the proof is published.
pub const CHALLENGE_LABEL: &str = "_tidemark-challenge";
/// What the TXT record's value starts with; the claim's token follows.
pub const CHALLENGE_PREFIX: &str = "tidemark-domain-verification=";

/// Pending claims are looked up again this often in the background...
pub const RECHECK_EVERY_MS: i64 = 15 * 60 * 1000;
/// ...for this long after they were made ("Verify now" still works afterwards).
pub const RECHECK_FOR_MS: i64 = crate::time::WEEK_MS;

/// Public mail providers: their addresses belong to the provider's customers, not to one
/// company, so no account may route them to its own IdP. Not exhaustive (the public-suffix
/// rule and DNS verification cover the rest): the providers people actually sign up with.
pub const CONSUMER_MAIL_DOMAINS: &[&str] = &[
    "163.com",
    "126.com",
    "aim.com",
    "aol.com",
    "btinternet.com",
    "comcast.net",
    "fastmail.com",
    "free.fr",
    "gmail.com",
    "gmx.at",
    "gmx.com",
    "gmx.de",
    "gmx.net",
    "googlemail.com",
    "hey.com",
    "hotmail.co.uk",
    "hotmail.com",
    "hotmail.de",
    "hotmail.fr",
    "icloud.com",
    "inbox.ru",
    "laposte.net",
    "libero.it",
    "list.ru",
    "live.com",
    "mac.com",
    "mail.com",
    "mail.ru",
    "me.com",
    "msn.com",
    "naver.com",
    "orange.fr",
    "outlook.com",
    "outlook.de",
    "pm.me",
    "proton.me",
    "protonmail.ch",
    "protonmail.com",
    "qq.com",
    "rambler.ru",
    "rediffmail.com",
    "sina.com",
    "t-online.de",
    "tutanota.com",
    "tuta.io",
    "web.de",
    "yahoo.co.jp",
    "yahoo.co.uk",
    "yahoo.com",
    "yahoo.de",
    "yahoo.fr",
    "yandex.com",
    "yandex.ru",
    "ymail.com",
    "zoho.com",
];

/// Why a domain cannot be claimed. The texts are shown to admins as they are.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
pub enum DomainRefusal {
    #[error("{0:?} is not an e-mail domain such as example.com")]
    Invalid(String),
    #[error(
        "{0} is a public mail provider: its addresses belong to many people, so no account can \
         route them to its identity provider"
    )]
    ConsumerMail(String),
    #[error(
        "{0} is a public suffix (anyone can register names under it): claim your own domain \
         under it instead"
    )]
    PublicSuffix(String),
}

/// A lower-case e-mail domain that an account may claim for single sign-on.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ClaimableDomain(String);

impl ClaimableDomain {
    /// Accepts `example.com` (also `@example.com`, any case, a trailing dot); refuses anything
    /// that is not a host name of at least two labels, a public mail provider, or a bare
    /// public suffix such as `co.uk` or `github.io`.
    pub fn parse(raw: &str) -> Result<ClaimableDomain, DomainRefusal> {
        let trimmed = raw.trim();
        let name = trimmed
            .trim_start_matches('@')
            .trim_end_matches('.')
            .to_ascii_lowercase();
        let invalid = || DomainRefusal::Invalid(trimmed.chars().take(80).collect());
        if name.len() > 253 || !name.contains('.') {
            return Err(invalid());
        }
        let label_ok = |l: &str| {
            (1..=63).contains(&l.len())
                && l.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'-')
                && !l.starts_with('-')
                && !l.ends_with('-')
        };
        if !name.split('.').all(label_ok) || name.bytes().all(|b| b.is_ascii_digit() || b == b'.') {
            return Err(invalid());
        }
        if CONSUMER_MAIL_DOMAINS.contains(&name.as_str()) {
            return Err(DomainRefusal::ConsumerMail(name));
        }
        if psl::suffix_str(&name) == Some(name.as_str()) {
            return Err(DomainRefusal::PublicSuffix(name));
        }
        Ok(ClaimableDomain(name))
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// The name whose TXT record proves ownership: `_tidemark-challenge.<domain>`.
    pub fn challenge_name(&self) -> String {
        challenge_name(&self.0)
    }
}

pub fn challenge_name(domain: &str) -> String {
    format!("{CHALLENGE_LABEL}.{domain}")
}

/// The exact TXT value a claim with `token` waits for.
pub fn challenge_value(token: &str) -> String {
    format!("{CHALLENGE_PREFIX}{token}")
}

/// 128 random bits, hex: one per claim, so one account's record never proves another's claim.
pub fn new_challenge_token() -> String {
    let mut bytes = [0u8; 16];
    rand::rngs::OsRng.fill_bytes(&mut bytes);
    hex::encode(bytes)
}

/// Where a claim stands.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum ClaimState {
    /// Waiting for the DNS record: routes nobody, enforces nothing.
    Pending,
    /// Proven: SAML routes the domain's people to this claim's IdP; enforcement applies.
    Verified,
    /// Over (another account verified first, or it predates verification); kept so its
    /// Settings can say why.
    Ended,
}

impl ClaimState {
    pub fn as_str(self) -> &'static str {
        match self {
            ClaimState::Pending => "pending",
            ClaimState::Verified => "verified",
            ClaimState::Ended => "ended",
        }
    }

    pub fn parse(raw: &str) -> Option<ClaimState> {
        match raw {
            "pending" => Some(ClaimState::Pending),
            "verified" => Some(ClaimState::Verified),
            "ended" => Some(ClaimState::Ended),
            _ => None,
        }
    }
}

/// What the DNS said about `_tidemark-challenge.<domain>`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum TxtAnswer {
    /// The TXT strings found (each record's character-strings joined, as RFC 7208 does).
    Records(Vec<String>),
    /// The name exists but has no TXT record.
    NoRecords,
    /// The name does not exist.
    NxDomain,
    /// No answer: the resolver could not be reached, timed out or failed.
    LookupFailed(String),
}

/// The verdict on one look-up for a claim.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum CheckVerdict {
    Verified,
    /// Still pending, with the reason in words for the admin.
    NotYet(String),
}

/// Decides whether `answer` proves the claim with `token` on `domain`.
pub fn judge_txt(domain: &str, token: &str, answer: &TxtAnswer) -> CheckVerdict {
    let name = challenge_name(domain);
    let expected = challenge_value(token);
    match answer {
        TxtAnswer::Records(values) if values.iter().any(|v| v.trim() == expected) => {
            CheckVerdict::Verified
        }
        TxtAnswer::Records(values) => {
            let ours = values
                .iter()
                .any(|v| v.trim().starts_with(CHALLENGE_PREFIX));
            CheckVerdict::NotYet(if ours {
                format!(
                    "{name} has a TXT record with a different token; publish exactly {expected}"
                )
            } else {
                format!("{name} has TXT records, but none is {expected}")
            })
        }
        TxtAnswer::NoRecords => CheckVerdict::NotYet(format!("{name} has no TXT record yet")),
        TxtAnswer::NxDomain => CheckVerdict::NotYet(format!(
            "{name} does not exist in DNS yet (NXDOMAIN); publish the TXT record there"
        )),
        TxtAnswer::LookupFailed(why) => CheckVerdict::NotYet(format!(
            "the DNS look-up of {name} failed ({why}); try again"
        )),
    }
}

/// SAML's transient NameID format: a new opaque id at every sign-in, never worth binding.
pub const NAMEID_TRANSIENT: &str = "urn:oasis:names:tc:SAML:2.0:nameid-format:transient";

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn company_domains_parse_in_any_spelling() {
        for raw in [
            "Example.COM",
            "@example.com",
            " example.com. ",
            "eu.corp-1.example.com",
        ] {
            let d = ClaimableDomain::parse(raw).unwrap_or_else(|e| panic!("{raw}: {e}"));
            assert!(d.as_str().ends_with("example.com"), "{raw}");
            assert_eq!(d.as_str(), d.as_str().to_ascii_lowercase());
        }
        assert_eq!(
            ClaimableDomain::parse("victim.example").map(|d| d.challenge_name()),
            Ok("_tidemark-challenge.victim.example".to_owned())
        );
    }

    #[test]
    fn malformed_names_are_refused() {
        for raw in [
            "",
            "localhost",
            "exa mple.com",
            "-bad.com",
            "bad-.com",
            "a..b.com",
            "user@example.com",
            "[10.0.0.1]",
            "10.0.0.1",
            "ex_ample.com",
            &format!("{}.com", "a".repeat(64)),
        ] {
            assert!(
                matches!(ClaimableDomain::parse(raw), Err(DomainRefusal::Invalid(_))),
                "{raw:?} was accepted"
            );
        }
    }

    #[test]
    fn public_mail_providers_and_bare_suffixes_are_refused() {
        for raw in [
            "gmail.com",
            "GoogleMail.com",
            "outlook.com",
            "hotmail.com",
            "live.com",
            "msn.com",
            "yahoo.com",
            "icloud.com",
            "me.com",
            "aol.com",
            "proton.me",
            "protonmail.com",
            "gmx.com",
            "gmx.de",
            "web.de",
            "mail.ru",
            "yandex.ru",
            "qq.com",
            "163.com",
        ] {
            assert!(
                matches!(
                    ClaimableDomain::parse(raw),
                    Err(DomainRefusal::ConsumerMail(_))
                ),
                "{raw} was accepted"
            );
        }
        for raw in ["com", "co.uk", "github.io", "s3.amazonaws.com"] {
            let refused = ClaimableDomain::parse(raw);
            assert!(
                matches!(
                    refused,
                    Err(DomainRefusal::PublicSuffix(_) | DomainRefusal::Invalid(_))
                ),
                "{raw} was accepted"
            );
        }
        assert!(matches!(
            ClaimableDomain::parse("co.uk"),
            Err(DomainRefusal::PublicSuffix(_))
        ));
        // A company's own name under a public suffix is fine.
        assert!(ClaimableDomain::parse("acme.co.uk").is_ok());
        assert!(ClaimableDomain::parse("acme.github.io").is_ok());
    }

    #[test]
    fn tokens_are_128_random_bits() {
        let (a, b) = (new_challenge_token(), new_challenge_token());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()));
        assert_ne!(a, b);
    }

    #[test]
    fn only_the_claims_own_token_verifies() {
        let token = "0123456789abcdef0123456789abcdef";
        let right = format!("tidemark-domain-verification={token}");
        let verdict = |a: TxtAnswer| judge_txt("acme.example", token, &a);
        assert_eq!(
            verdict(TxtAnswer::Records(vec![
                "v=spf1 -all".into(),
                right.clone()
            ])),
            CheckVerdict::Verified
        );
        let wrong = verdict(TxtAnswer::Records(vec![
            "tidemark-domain-verification=ffffffffffffffffffffffffffffffff".into(),
        ]));
        assert!(
            matches!(&wrong, CheckVerdict::NotYet(m) if m.contains("different token") && m.contains(&right)),
            "{wrong:?}"
        );
        for (answer, words) in [
            (TxtAnswer::Records(vec!["v=spf1 -all".into()]), "none is"),
            (TxtAnswer::NoRecords, "no TXT record"),
            (TxtAnswer::NxDomain, "NXDOMAIN"),
            (TxtAnswer::LookupFailed("timed out".into()), "timed out"),
        ] {
            let v = verdict(answer);
            assert!(
                matches!(&v, CheckVerdict::NotYet(m) if m.contains(words) && m.contains("_tidemark-challenge.acme.example")),
                "{v:?}"
            );
        }
        // A token is never accepted as a prefix of a longer value.
        assert!(matches!(
            verdict(TxtAnswer::Records(vec![format!("{right}0")])),
            CheckVerdict::NotYet(_)
        ));
    }
}
