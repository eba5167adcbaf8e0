//! Building links: the one way a value goes into a query string, here and in the server's
//! redirects.

use percent_encoding::{utf8_percent_encode, AsciiSet, NON_ALPHANUMERIC};

/// Everything but RFC 3986's unreserved characters and `/` (which keeps return paths such as
/// `next=/projects/prj_…` readable, and is allowed in a query) is percent-encoded.
const QUERY_VALUE: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b'/');

/// A path segment keeps RFC 3986's unreserved characters and `:` (a custom framework's
/// `custom:` prefix) as they are; `/` is encoded so the segment stays one.
const PATH_SEGMENT: &AsciiSet = &NON_ALPHANUMERIC
    .remove(b'-')
    .remove(b'.')
    .remove(b'_')
    .remove(b'~')
    .remove(b':');

/// `text`, encoded to stand as one segment of a path.
pub fn path_segment(text: &str) -> String {
    utf8_percent_encode(text, PATH_SEGMENT).to_string()
}

/// `text`, encoded to stand as one value in a query string.
pub fn query_value(text: &str) -> String {
    utf8_percent_encode(text, QUERY_VALUE).to_string()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_survive_a_query_string() {
        assert_eq!(
            query_value("/projects/prj_a?x=1&y"),
            "/projects/prj_a%3Fx%3D1%26y"
        );
        assert_eq!(query_value("a b+c#d"), "a%20b%2Bc%23d");
        assert_eq!(query_value("cis-aws-2.0_x~"), "cis-aws-2.0_x~");
        assert_eq!(query_value("é"), "%C3%A9");
    }
}
