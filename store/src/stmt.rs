//! Statements as values: SQL text plus its arguments, built once and run on either backend,
//! one at a time through sqlx, or prepared once and stepped by the SQLite push writer
//! (`pushes::sqlite_writer`).

use sqlx::{Arguments as _, Database, Encode, Type};

/// One bound value. Only the types the schema uses.
#[derive(Debug, Clone, PartialEq)]
pub(crate) enum Arg {
    Text(String),
    Int(i64),
    Real(f64),
    /// A NULL in a text column.
    NoText,
    /// A NULL in an integer column.
    NoInt,
    /// A NULL in a floating-point column.
    NoReal,
    Bool(bool),
    /// A NULL in a boolean column.
    NoBool,
}

impl From<&str> for Arg {
    fn from(s: &str) -> Self {
        Arg::Text(s.to_owned())
    }
}
impl From<String> for Arg {
    fn from(s: String) -> Self {
        Arg::Text(s)
    }
}
impl From<Option<String>> for Arg {
    fn from(s: Option<String>) -> Self {
        s.map_or(Arg::NoText, Arg::Text)
    }
}
impl From<Option<i64>> for Arg {
    fn from(n: Option<i64>) -> Self {
        n.map_or(Arg::NoInt, Arg::Int)
    }
}
impl From<Option<f64>> for Arg {
    fn from(x: Option<f64>) -> Self {
        x.map_or(Arg::NoReal, Arg::Real)
    }
}
impl From<bool> for Arg {
    fn from(b: bool) -> Self {
        Arg::Bool(b)
    }
}
impl From<Option<bool>> for Arg {
    fn from(b: Option<bool>) -> Self {
        b.map_or(Arg::NoBool, Arg::Bool)
    }
}
impl From<&String> for Arg {
    fn from(s: &String) -> Self {
        Arg::Text(s.clone())
    }
}
impl From<&Option<String>> for Arg {
    fn from(s: &Option<String>) -> Self {
        s.clone().into()
    }
}
macro_rules! id_args {
    ($($id:ty),*) => {$(
        impl From<$id> for Arg {
            fn from(id: $id) -> Self {
                Arg::Text(id.into())
            }
        }
        impl From<&$id> for Arg {
            fn from(id: &$id) -> Self {
                Arg::Text(id.as_str().to_owned())
            }
        }
        impl From<Option<$id>> for Arg {
            fn from(id: Option<$id>) -> Self {
                id.map_or(Arg::NoText, |id| Arg::Text(id.into()))
            }
        }
        impl From<&Option<$id>> for Arg {
            fn from(id: &Option<$id>) -> Self {
                id.clone().into()
            }
        }
    )*};
}
id_args!(
    crate::AccountId,
    crate::FindingId,
    crate::ProjectId,
    crate::ScanId
);

impl From<i64> for Arg {
    fn from(n: i64) -> Self {
        Arg::Int(n)
    }
}
impl From<f64> for Arg {
    fn from(x: f64) -> Self {
        Arg::Real(x)
    }
}

/// SQL whose placeholders are `$1`, `$2`, … each used once and in that order, so the same
/// text also reads correctly with SQLite's anonymous `?` (see [`positional`]).
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Stmt {
    pub sql: String,
    pub args: Vec<Arg>,
}

impl Stmt {
    pub fn new(sql: impl Into<String>) -> Self {
        Stmt {
            sql: sql.into(),
            args: Vec::new(),
        }
    }

    pub fn bind(mut self, arg: impl Into<Arg>) -> Self {
        self.args.push(arg.into());
        self
    }
}

/// Appends `args` to a backend's argument list.
pub(crate) fn add_args<'q, DB: Database>(
    out: &mut <DB as Database>::Arguments<'q>,
    args: Vec<Arg>,
) -> Result<(), sqlx::Error>
where
    String: Encode<'q, DB> + Type<DB>,
    Option<String>: Encode<'q, DB>,
    Option<i64>: Encode<'q, DB>,
    Option<f64>: Encode<'q, DB>,
    i64: Encode<'q, DB> + Type<DB>,
    f64: Encode<'q, DB> + Type<DB>,
    bool: Encode<'q, DB> + Type<DB>,
    Option<bool>: Encode<'q, DB>,
{
    for arg in args {
        match arg {
            Arg::Text(s) => out.add(s),
            Arg::Int(n) => out.add(n),
            Arg::Real(x) => out.add(x),
            Arg::NoText => out.add(None::<String>),
            Arg::NoInt => out.add(None::<i64>),
            Arg::NoReal => out.add(None::<f64>),
            Arg::Bool(b) => out.add(b),
            Arg::NoBool => out.add(None::<bool>),
        }
        .map_err(sqlx::Error::Encode)?;
    }
    Ok(())
}

/// `sql` with `args` bound, as a query for whichever backend runs it.
pub(crate) fn bound<'q, DB: Database>(
    sql: &'q str,
    args: Vec<Arg>,
) -> Result<sqlx::query::Query<'q, DB, <DB as Database>::Arguments<'q>>, sqlx::Error>
where
    String: Encode<'q, DB> + Type<DB>,
    Option<String>: Encode<'q, DB>,
    Option<i64>: Encode<'q, DB>,
    Option<f64>: Encode<'q, DB>,
    i64: Encode<'q, DB> + Type<DB>,
    f64: Encode<'q, DB> + Type<DB>,
    bool: Encode<'q, DB> + Type<DB>,
    Option<bool>: Encode<'q, DB>,
    <DB as Database>::Arguments<'q>: sqlx::IntoArguments<'q, DB>,
{
    let mut out = <DB as Database>::Arguments::<'q>::default();
    add_args::<DB>(&mut out, args)?;
    Ok(sqlx::query_with(sql, out))
}

/// Turns `$1 … $n` into anonymous `?`s for SQLite. SQLite reads `$1` as a *named* parameter
/// and looks each name up among those before it, so a statement of 5,000 rows (20,000
/// names) took 1.4 s to prepare; anonymous ones are numbered as they come.
pub(crate) fn positional(sql: &str) -> String {
    let mut out = String::with_capacity(sql.len());
    let mut chars = sql.chars().peekable();
    let mut expected = 1u32;
    while let Some(c) = chars.next() {
        if c == '$' && chars.peek().is_some_and(char::is_ascii_digit) {
            let mut n = 0u32;
            while let Some(d) = chars.peek().and_then(|d| d.to_digit(10)) {
                n = n * 10 + d;
                chars.next();
            }
            debug_assert_eq!(
                n, expected,
                "placeholders must be used once, in order: {sql}"
            );
            expected += 1;
            out.push('?');
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn numbered_placeholders_become_anonymous_ones() {
        assert_eq!(
            positional("UPDATE t SET a = $1, b = $2 WHERE id = $3 AND note = 'cost $'"),
            "UPDATE t SET a = ?, b = ? WHERE id = ? AND note = 'cost $'"
        );
        let many: Vec<String> = (1..=12).map(|n| format!("${n}")).collect();
        assert_eq!(positional(&many.join(",")), ["?"; 12].join(","));
    }

    #[test]
    #[should_panic(expected = "once, in order")]
    fn out_of_order_placeholders_are_caught() {
        positional("SELECT $2, $1");
    }
}
