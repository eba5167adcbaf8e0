//! The identifiers that cross crates, one type each, so a scan id cannot be handed to a
//! function that wants a project id. Each is the text the database and the wire carry
//! (`prj_…`, `acct_…`, `fnd_…`, a scan's `YYYYMMDD-HHMMSS-…`): serde and sqlx see the string.
//!
//! They deref to `str` (an id can be read as text anywhere) but nothing turns text into an id
//! by itself: `parse` checks the shape at the edge, and `trusted` is for text that came out of
//! the database or was just made by `tidemark_domain::ids`.
//!
//! The point of it, checked by the compiler:
//!
//! ```compile_fail
//! use tidemark_wire::ids::{ProjectId, ScanId};
//! fn project_page(_: &ProjectId) {}
//! let scan = ScanId::trusted("20261128-081500-main");
//! project_page(&scan); // a scan id is not a project id
//! ```
//!
//! ```
//! use tidemark_wire::ids::ProjectId;
//! fn project_page(id: &ProjectId) -> usize { id.len() }
//! let project = ProjectId::parse("prj_abcdefghijklmnopqrst").unwrap();
//! assert_eq!(project_page(&project), 24);
//! ```

use serde::{Deserialize, Serialize};

/// Text that is not an id of the kind asked for.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct NotAnId {
    pub kind: &'static str,
    pub example: &'static str,
}

impl std::fmt::Display for NotAnId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "not {} id (ids look like {})", self.kind, self.example)
    }
}

impl std::error::Error for NotAnId {}

macro_rules! id_type {
    ($(#[$doc:meta])* $name:ident, $kind:literal, $example:literal, $shape:expr) => {
        $(#[$doc])*
        #[derive(Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize, Default)]
        #[serde(transparent)]
        #[cfg_attr(feature = "sqlx", derive(sqlx::Type), sqlx(transparent))]
        pub struct $name(String);

        impl $name {
            /// The id if `s` has its shape; `None` for anything else (a wrong prefix, a
            /// megabyte of text, another kind of id).
            pub fn parse(s: &str) -> Option<Self> {
                Self::has_shape(s).then(|| Self(s.to_owned()))
            }

            /// Whether `s` has this id's shape, without making one.
            pub fn has_shape(s: &str) -> bool {
                let shape: fn(&str) -> bool = $shape;
                shape(s)
            }

            /// An id read back from the database or just generated: no shape check.
            pub fn trusted(s: impl Into<String>) -> Self {
                Self(s.into())
            }

            pub fn as_str(&self) -> &str {
                &self.0
            }

            pub fn into_string(self) -> String {
                self.0
            }
        }

        impl std::ops::Deref for $name {
            type Target = str;
            fn deref(&self) -> &str {
                &self.0
            }
        }

        impl AsRef<str> for $name {
            fn as_ref(&self) -> &str {
                &self.0
            }
        }

        impl std::borrow::Borrow<str> for $name {
            fn borrow(&self) -> &str {
                &self.0
            }
        }

        impl std::fmt::Display for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(&self.0)
            }
        }

        impl std::fmt::Debug for $name {
            fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                std::fmt::Debug::fmt(&self.0, f)
            }
        }

        impl PartialEq<str> for $name {
            fn eq(&self, other: &str) -> bool {
                self.0 == other
            }
        }

        impl PartialEq<&str> for $name {
            fn eq(&self, other: &&str) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<&$name> for $name {
            fn eq(&self, other: &&$name) -> bool {
                self.0 == other.0
            }
        }

        impl PartialEq<String> for $name {
            fn eq(&self, other: &String) -> bool {
                self.0 == *other
            }
        }

        impl PartialEq<$name> for String {
            fn eq(&self, other: &$name) -> bool {
                *self == other.0
            }
        }

        impl std::str::FromStr for $name {
            type Err = NotAnId;
            fn from_str(s: &str) -> Result<Self, NotAnId> {
                Self::parse(s).ok_or(NotAnId { kind: $kind, example: $example })
            }
        }

        impl From<$name> for String {
            fn from(id: $name) -> String {
                id.0
            }
        }
    };
}

const BASE32_LOWER: &[u8] = b"abcdefghijklmnopqrstuvwxyz234567";

fn prefixed_base32(s: &str, prefix: &str) -> bool {
    s.strip_prefix(prefix)
        .is_some_and(|r| r.len() == 20 && r.bytes().all(|b| BASE32_LOWER.contains(&b)))
}

id_type!(
    /// A project: `prj_` + 20 lowercase base32 characters, stable for the project's life.
    ProjectId,
    "a project",
    "prj_ followed by 20 letters and digits",
    |s| prefixed_base32(s, "prj_")
);

id_type!(
    /// An account (a customer): `acct_` + 20 lowercase base32 characters.
    AccountId,
    "an account",
    "acct_ followed by 20 letters and digits",
    |s| prefixed_base32(s, "acct_")
);

id_type!(
    /// A scan within its project: `YYYYMMDD-HHMMSS-<slug>`, maybe `-N`. The check is a cheap
    /// one that keeps anything else (NUL bytes, megabytes of text) away from the database.
    ScanId,
    "a scan",
    "20261128-081500-main",
    |s| {
        (1..=96).contains(&s.len())
            && s.bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
    }
);

id_type!(
    /// A finding, stable across the scans that see it: `fnd_` + 20 base32 characters from a
    /// push, or `fnd_m` + digits for findings the migration found in older scans.
    FindingId,
    "a finding",
    "fnd_ followed by letters and digits",
    |s| {
        s.strip_prefix("fnd_").is_some_and(|r| {
            (1..=24).contains(&r.len())
                && r.bytes()
                    .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit())
        })
    }
);

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_id_takes_only_its_own_shape() {
        let project = "prj_abcdefghijklmnopqrst";
        let account = "acct_abcdefghijklmnopqrst";
        assert!(ProjectId::parse(project).is_some());
        assert!(ProjectId::parse(account).is_none());
        assert!(AccountId::parse(account).is_some());
        assert!(AccountId::parse(project).is_none());
        assert!(ProjectId::parse("prj_ABCDEFGHIJKLMNOPQRST").is_none());
        assert!(ProjectId::parse("prj_abc").is_none());
        assert!(ScanId::parse("20261128-081000-main").is_some());
        assert!(ScanId::parse("20261128 081000").is_none());
        assert!(ScanId::parse(&"a".repeat(97)).is_none());
        assert!(FindingId::parse("fnd_m12").is_some());
        assert!(FindingId::parse("fnd_").is_none());
        assert!(FindingId::parse("../etc").is_none());
        let err = "prj_abcdefghijklmnopqrst".parse::<AccountId>().unwrap_err();
        assert_eq!(
            err.to_string(),
            "not an account id (ids look like acct_ followed by 20 letters and digits)"
        );
    }

    #[test]
    fn ids_are_their_text_on_the_wire() {
        let id = ProjectId::parse("prj_abcdefghijklmnopqrst").unwrap();
        let json = serde_json::to_string(&id).unwrap();
        assert_eq!(json, "\"prj_abcdefghijklmnopqrst\"");
        assert_eq!(id.to_string(), "prj_abcdefghijklmnopqrst");
        assert_eq!(format!("{id:?}"), "\"prj_abcdefghijklmnopqrst\"");
        assert!(id == "prj_abcdefghijklmnopqrst");
    }
}
