//! What a SAML document must be before any XML parser reads it: our policy on untrusted
//! bytes at the ACS and in uploaded IdP metadata, kept free of XML libraries so it can be
//! tested and fuzzed on its own (`fuzz/`).

use base64::Engine as _;

/// Why a `SAMLResponse` was refused before parsing. The text is safe to show.
#[derive(Debug, Clone, Copy, PartialEq, Eq, thiserror::Error)]
pub enum SamlInputError {
    #[error("SAMLResponse is not base64-encoded XML")]
    NotBase64Xml,
    #[error("XML with a DOCTYPE or entity declarations is refused")]
    Doctype,
    #[error("XML declaring an encoding other than UTF-8 is refused")]
    NotUtf8,
}

/// The XML of an HTTP-POST binding's `SAMLResponse` field, if it may be parsed at all:
/// base64 of UTF-8, no DOCTYPE or entities, no declared encoding but UTF-8.
pub fn decode_post_binding(field: &str) -> Result<String, SamlInputError> {
    let xml = base64::engine::general_purpose::STANDARD
        .decode(field.trim())
        .ok()
        .and_then(|bytes| String::from_utf8(bytes).ok())
        .ok_or(SamlInputError::NotBase64Xml)?;
    if has_doctype(&xml) {
        return Err(SamlInputError::Doctype);
    }
    if !declares_utf8(&xml) {
        return Err(SamlInputError::NotUtf8);
    }
    Ok(xml)
}

/// True when an XML document declares a DOCTYPE or entities: never parsed.
pub fn has_doctype(xml: &str) -> bool {
    let lower = xml.to_ascii_lowercase();
    lower.contains("<!doctype") || lower.contains("<!entity")
}

/// False when the XML declaration names an encoding other than UTF-8. No declaration, or
/// one without an encoding, means UTF-8.
pub fn declares_utf8(xml: &str) -> bool {
    let text = xml.trim_start_matches('\u{feff}').trim_start();
    let Some(declaration) = text
        .strip_prefix("<?xml")
        .and_then(|rest| rest.split_once("?>"))
        .map(|(inside, _)| inside)
    else {
        return true;
    };
    let Some(at) = declaration.find("encoding") else {
        return true;
    };
    let value = declaration[at + "encoding".len()..]
        .trim_start()
        .strip_prefix('=')
        .map(str::trim_start)
        .and_then(|v| {
            let quote = v.chars().next().filter(|q| *q == '"' || *q == '\'')?;
            v[1..].split(quote).next()
        });
    value
        .is_some_and(|name| name.eq_ignore_ascii_case("utf-8") || name.eq_ignore_ascii_case("utf8"))
}

/// How many `Assertion` (or `EncryptedAssertion`) elements the document has, whatever their
/// namespace prefix. Exactly one is accepted: a second one is how signature-wrapping attacks
/// smuggle an unsigned assertion past a verifier.
pub fn assertion_count(xml: &str) -> usize {
    xml.match_indices('<')
        .filter(|(i, _)| {
            let rest = &xml[i + 1..];
            let name_end = rest
                .find(|c: char| c.is_whitespace() || c == '>' || c == '/')
                .unwrap_or(rest.len());
            let name = &rest[..name_end];
            let local = name.rsplit(':').next().unwrap_or(name);
            local == "Assertion" || local == "EncryptedAssertion"
        })
        .count()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exactly_one_assertion_whatever_the_prefix() {
        assert_eq!(
            assertion_count(
                "<samlp:Response><saml:Assertion ID=\"a\"></saml:Assertion></samlp:Response>"
            ),
            1
        );
        assert_eq!(
            assertion_count("<Response><Assertion>x</Assertion><Assertion/></Response>"),
            2
        );
        assert_eq!(
            assertion_count("<r><s2:EncryptedAssertion></s2:EncryptedAssertion></r>"),
            1
        );
        assert_eq!(assertion_count("<r><saml:AssertionIDRef/></r>"), 0);
    }

    #[test]
    fn only_utf8_documents_are_read() {
        for ok in [
            "<r/>",
            "<?xml version=\"1.0\"?><r/>",
            "<?xml version=\"1.0\" encoding=\"UTF-8\"?><r/>",
            "\u{feff} <?xml version='1.0' encoding = 'utf-8' ?><r/>",
            "<?xml version=\"1.0\" encoding=\"utf8\" standalone=\"yes\"?><r/>",
        ] {
            assert!(declares_utf8(ok), "{ok}");
        }
        for bad in [
            "<?xml version=\"1.0\" encoding=\"UTF-16\"?><r/>",
            "<?xml version=\"1.0\" encoding=\"ISO-8859-1\"?><r/>",
            "<?xml version=\"1.0\" encoding='UTF-7'?><r/>",
            "<?xml version=\"1.0\" encoding=UTF-8?><r/>",
            "<?xml version=\"1.0\" encoding=\"\"?><r/>",
        ] {
            assert!(!declares_utf8(bad), "{bad}");
        }
    }

    #[test]
    fn the_post_binding_is_decoded_or_refused_by_reason() {
        let b64 = |s: &str| base64::engine::general_purpose::STANDARD.encode(s);
        assert_eq!(
            decode_post_binding(&format!(" {} ", b64("<r/>"))).unwrap(),
            "<r/>"
        );
        assert_eq!(
            decode_post_binding("not base64!"),
            Err(SamlInputError::NotBase64Xml)
        );
        let latin1 = base64::engine::general_purpose::STANDARD.encode([b'<', 0xe9, b'/', b'>']);
        assert_eq!(
            decode_post_binding(&latin1),
            Err(SamlInputError::NotBase64Xml)
        );
        assert_eq!(
            decode_post_binding(&b64("<!DOCTYPE r><r/>")),
            Err(SamlInputError::Doctype)
        );
        assert_eq!(
            decode_post_binding(&b64("<?xml version=\"1.0\" encoding=\"UTF-16\"?><r/>")),
            Err(SamlInputError::NotUtf8)
        );
    }

    #[test]
    fn doctype_and_entities_are_spotted_in_any_case() {
        assert!(has_doctype("<?xml version=\"1.0\"?><!doctype x><x/>"));
        assert!(has_doctype("<x><!ENTITY a \"b\"></x>"));
        assert!(!has_doctype("<x>doctype</x>"));
    }
}
