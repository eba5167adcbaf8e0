//! Status badges: a project's latest score and gate verdict as a shields-style SVG, reachable
//! through an unguessable, revocable token that is meant to be published (in a README), so it
//! grants nothing else.

use tidemark_wire::GateStatus;

const TOKEN_PREFIX: &str = "bdg_";
const TOKEN_CHARS: usize = 32;

/// `bdg_` + 32 base62 characters (190 bits).
#[derive(Clone, PartialEq, Eq)]
pub struct BadgeToken(String);

impl std::fmt::Debug for BadgeToken {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // Published on purpose, but logs still have no business collecting them.
        f.write_str("BadgeToken(bdg_…)")
    }
}

impl BadgeToken {
    pub fn generate() -> Self {
        BadgeToken(format!(
            "{TOKEN_PREFIX}{}",
            crate::ids::random_base62(TOKEN_CHARS)
        ))
    }

    /// The token in a badge URL's file name (`<token>.svg`); anything else is `None`, so the
    /// database never sees text that cannot be a token.
    pub fn from_file_name(name: &str) -> Option<Self> {
        let token = name.strip_suffix(".svg")?;
        let tail = token.strip_prefix(TOKEN_PREFIX)?;
        (tail.len() == TOKEN_CHARS && tail.bytes().all(|b| b.is_ascii_alphanumeric()))
            .then(|| BadgeToken(token.to_owned()))
    }

    pub fn from_stored(raw: String) -> Self {
        BadgeToken(raw)
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }
}

/// What a badge shows.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum BadgeState {
    /// The project has no scan yet.
    NoScans,
    Scored {
        score: f64,
        gate: GateStatus,
    },
    /// The token names no badge (never made, or revoked).
    Unknown,
}

/// Shields' colours, by score: 90 and up bright green, 75 green, 60 yellow, 40 orange, red.
pub fn colour(state: BadgeState) -> &'static str {
    match state {
        BadgeState::Scored { score, .. } if score >= 90.0 => "#4c1",
        BadgeState::Scored { score, .. } if score >= 75.0 => "#97ca00",
        BadgeState::Scored { score, .. } if score >= 60.0 => "#dfb317",
        BadgeState::Scored { score, .. } if score >= 40.0 => "#fe7d37",
        BadgeState::Scored { .. } => "#e05d44",
        BadgeState::NoScans | BadgeState::Unknown => "#9f9f9f",
    }
}

pub fn message(state: BadgeState) -> String {
    match state {
        BadgeState::Scored { score, gate } => match gate {
            GateStatus::None => format!("{score:.1}"),
            GateStatus::Passed => format!("{score:.1} · gate passed"),
            GateStatus::Failed => format!("{score:.1} · gate failed"),
        },
        BadgeState::NoScans => "no scans".into(),
        BadgeState::Unknown => "unknown badge".into(),
    }
}

/// Text width in Verdana 11px, near enough for a badge (shields measures the same font).
fn text_width(text: &str) -> u32 {
    let tenths: u32 = text
        .chars()
        .map(|c| match c {
            ' ' | '.' | '·' => 35,
            'i' | 'l' => 30,
            'f' | 't' | 'r' => 45,
            'm' | 'w' => 95,
            c if c.is_ascii_digit() => 70,
            _ => 65,
        })
        .sum();
    tenths.div_ceil(10)
}

/// The badge as SVG. Every text in it is ours (a number and fixed words, never a project
/// label), so nothing needs escaping.
pub fn render(state: BadgeState) -> String {
    let label = "tidemark";
    let message = message(state);
    let colour = colour(state);
    let lw = text_width(label) + 10;
    let mw = text_width(&message) + 10;
    let width = lw + mw;
    let (lx, mx) = (lw * 5, lw * 10 + mw * 5);
    let title = format!("{label}: {message}");
    format!(
        r##"<svg xmlns="http://www.w3.org/2000/svg" width="{width}" height="20" role="img" aria-label="{title}"><title>{title}</title><linearGradient id="s" x2="0" y2="100%"><stop offset="0" stop-color="#bbb" stop-opacity=".1"/><stop offset="1" stop-opacity=".1"/></linearGradient><clipPath id="r"><rect width="{width}" height="20" rx="3" fill="#fff"/></clipPath><g clip-path="url(#r)"><rect width="{lw}" height="20" fill="#555"/><rect x="{lw}" width="{mw}" height="20" fill="{colour}"/><rect width="{width}" height="20" fill="url(#s)"/></g><g fill="#fff" text-anchor="middle" font-family="Verdana,Geneva,DejaVu Sans,sans-serif" font-size="110"><text x="{lx}" y="150" fill="#010101" fill-opacity=".3" transform="scale(.1)">{label}</text><text x="{lx}" y="140" transform="scale(.1)">{label}</text><text x="{mx}" y="150" fill="#010101" fill-opacity=".3" transform="scale(.1)">{message}</text><text x="{mx}" y="140" transform="scale(.1)">{message}</text></g></svg>"##
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_generated_token_reads_back_from_its_file_name_and_nothing_else_does() {
        let token = BadgeToken::generate();
        let file = format!("{}.svg", token.as_str());
        assert_eq!(BadgeToken::from_file_name(&file), Some(token.clone()));
        assert_ne!(BadgeToken::generate(), token);
        for bad in [
            token.as_str().to_owned(),
            format!("{}.png", token.as_str()),
            format!("{}x.svg", token.as_str()),
            "bdg_.svg".into(),
            format!("bdg_{}.svg", "é".repeat(16)),
            format!("svc_api_{}.svg", "a".repeat(32)),
        ] {
            assert_eq!(BadgeToken::from_file_name(&bad), None, "{bad}");
        }
        assert_eq!(format!("{token:?}"), "BadgeToken(bdg_…)");
    }

    #[test]
    fn colours_follow_the_score_and_the_message_names_the_gate() {
        let scored = |score, gate| BadgeState::Scored { score, gate };
        assert_eq!(colour(scored(95.0, GateStatus::None)), "#4c1");
        assert_eq!(colour(scored(75.0, GateStatus::None)), "#97ca00");
        assert_eq!(colour(scored(60.0, GateStatus::None)), "#dfb317");
        assert_eq!(colour(scored(40.0, GateStatus::None)), "#fe7d37");
        assert_eq!(colour(scored(39.9, GateStatus::None)), "#e05d44");
        assert_eq!(colour(BadgeState::NoScans), "#9f9f9f");
        assert_eq!(
            message(scored(82.46, GateStatus::Failed)),
            "82.5 · gate failed"
        );
        assert_eq!(message(scored(82.0, GateStatus::None)), "82.0");
    }

    #[test]
    fn the_svg_is_sized_to_its_text_and_carries_an_accessible_name() {
        let svg = render(BadgeState::Scored {
            score: 71.5,
            gate: GateStatus::Passed,
        });
        assert!(svg.starts_with("<svg xmlns=\"http://www.w3.org/2000/svg\""));
        assert!(svg.contains("aria-label=\"tidemark: 71.5 · gate passed\""));
        assert!(svg.contains("fill=\"#dfb317\""));
        let short = render(BadgeState::Scored {
            score: 71.5,
            gate: GateStatus::None,
        });
        let width = |s: &str| {
            s.split("width=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap()
                .parse::<u32>()
                .unwrap()
        };
        assert!(width(&svg) > width(&short));
    }
}
