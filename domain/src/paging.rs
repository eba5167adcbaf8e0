//! Keyset pages: where a page ended (the last row's time and id), as an opaque cursor the
//! caller hands back. A page reads only its rows whatever page it is, and rows added
//! meanwhile never shift a page already read.

use crate::Millis;

/// The last row of a page: its time and its id.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Keyset {
    pub at: Millis,
    pub id: String,
}

impl Keyset {
    pub fn encode(&self) -> String {
        use base64::Engine as _;
        base64::engine::general_purpose::URL_SAFE_NO_PAD
            .encode(format!("v1.{}.{}", self.at, self.id))
    }

    /// A cursor [`Keyset::encode`] could have written for an id starting with `prefix`
    /// (`lcn_`, `acct_`, `aud_`); anything else is `None`.
    pub fn parse(cursor: &str, prefix: &str) -> Option<Keyset> {
        use base64::Engine as _;
        if cursor.len() > 160 {
            return None;
        }
        let raw = base64::engine::general_purpose::URL_SAFE_NO_PAD
            .decode(cursor)
            .ok()?;
        let text = String::from_utf8(raw).ok()?;
        let mut parts = text.splitn(3, '.');
        let (version, at_text, id) = (parts.next()?, parts.next()?, parts.next()?);
        let at: Millis = at_text.parse().ok().filter(|t| *t >= 0)?;
        let id_ok = id.strip_prefix(prefix).is_some_and(|rest| {
            !rest.is_empty() && rest.len() <= 64 && rest.bytes().all(|b| b.is_ascii_alphanumeric())
        });
        (version == "v1" && id_ok && at.to_string() == at_text).then(|| Keyset {
            at,
            id: id.to_owned(),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cursors_read_back_only_as_written_and_for_their_kind() {
        let cursor = Keyset {
            at: 1_795_000_000_000,
            id: "lcn_abcdefghij234567abcd".into(),
        };
        assert_eq!(
            Keyset::parse(&cursor.encode(), "lcn_"),
            Some(cursor.clone())
        );
        assert_eq!(
            Keyset::parse(&cursor.encode(), "acct_"),
            None,
            "another kind's"
        );
        use base64::Engine as _;
        let enc = |t: &str| base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(t);
        for bad in [
            "".to_owned(),
            "not base64!".to_owned(),
            enc("v2.1.lcn_a"),
            enc("v1.01.lcn_a"),
            enc("v1.-1.lcn_a"),
            enc("v1.1.key_a"),
            enc("v1.1.lcn_a'--"),
        ] {
            assert_eq!(Keyset::parse(&bad, "lcn_"), None, "{bad}");
        }
    }
}
