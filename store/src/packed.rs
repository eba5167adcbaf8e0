//! Rows packed into one text column, each field as `<byte length>:<bytes>`: how the push's head
//! statement brings a line's live spans and open tracked findings in its single row.
//!
//! They were JSON arrays; building 2,000 spans as JSON cost PostgreSQL 2.8 ms a push and the
//! server again to parse them, where this costs PostgreSQL 1.8 ms (`pgbench` on the same rows)
//! and the server one pass over the bytes. The lengths make any text safe, separators and all.

use crate::{Backend, StoreError};

/// The aggregate of `fields` (SQL expressions of one row each, text or integer) over the rows
/// of a `FROM` that follows it: every row's fields in order, nothing between rows; NULL when
/// there are no rows.
pub(crate) fn packed_rows(backend: Backend, fields: &[&str]) -> String {
    let parts: Vec<String> = fields
        .iter()
        .map(|f| match backend {
            Backend::Sqlite => {
                format!("length(CAST(CAST({f} AS TEXT) AS BLOB)) || ':' || {f}")
            }
            Backend::Postgres => format!("octet_length(CAST({f} AS TEXT)) || ':' || {f}"),
        })
        .collect();
    let row = parts.join(" || ");
    match backend {
        Backend::Sqlite => format!("group_concat({row}, '')"),
        Backend::Postgres => format!("string_agg({row}, '')"),
    }
}

/// The fields of a [`packed_rows`] value, in order (`what` names it in an error).
pub(crate) struct Fields<'a> {
    rest: &'a str,
    what: &'static str,
}

impl<'a> Fields<'a> {
    pub(crate) fn new(text: &'a str, what: &'static str) -> Self {
        Fields { rest: text, what }
    }

    /// Whether every field has been read.
    pub(crate) fn is_done(&self) -> bool {
        self.rest.is_empty()
    }

    /// The next field.
    pub(crate) fn text(&mut self) -> Result<&'a str, StoreError> {
        let corrupt = StoreError::Corrupt(self.what);
        let (len, after) = self.rest.split_once(':').ok_or(corrupt)?;
        let len: usize = len.parse().map_err(|_| StoreError::Corrupt(self.what))?;
        let field = after.get(..len).ok_or(StoreError::Corrupt(self.what))?;
        self.rest = &after[len..];
        Ok(field)
    }

    /// The next field, as an integer.
    pub(crate) fn int(&mut self) -> Result<i64, StoreError> {
        let what = self.what;
        self.text()?.parse().map_err(|_| StoreError::Corrupt(what))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fields_read_back_whatever_they_hold() {
        let packed = "2:-71:a0:5:x:y\u{e9}1:9";
        let mut fields = Fields::new(packed, "test");
        assert_eq!(fields.int().unwrap(), -7);
        assert_eq!(fields.text().unwrap(), "a");
        assert_eq!(fields.text().unwrap(), "");
        assert_eq!(fields.text().unwrap(), "x:y\u{e9}");
        assert_eq!(fields.int().unwrap(), 9);
        assert!(fields.is_done());
    }

    #[test]
    fn a_damaged_value_is_an_error_not_a_panic() {
        for bad in ["3:ab", "x:a", "1", "1:\u{e9}", "-1:a"] {
            let mut fields = Fields::new(bad, "test");
            assert!(fields.text().is_err(), "{bad:?}");
        }
    }
}
