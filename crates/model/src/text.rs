//! Free text typed by users and stored (organisation names, problem reports, key names, claims
//! from a provider): which characters it may not hold. One rule for every edge of both
//! services — the sign-in pages, the browser application, `periscope admin` — so that no
//! stored text can drive the terminal or reorder the screen of whoever reads it later.

/// Whether `c` is hidden and can drive a terminal or reorder text on screen: a control
/// character (C0 — ESC, BEL, CR, tab, line feed —, DEL, C1), a Unicode bidirectional control
/// (the "Trojan Source" characters) or a Unicode line or paragraph separator.
pub fn is_hidden_control(c: char) -> bool {
    c.is_control()
        || matches!(c, '\u{061C}' | '\u{200E}' | '\u{200F}' | '\u{202A}'..='\u{202E}'
            | '\u{2066}'..='\u{2069}' | '\u{2028}' | '\u{2029}')
}

/// The first hidden control character of `text` ([`is_hidden_control`]) and its position
/// (1-based, in characters); line feeds and tabs are allowed when `multi_line`.
pub fn hidden_control(text: &str, multi_line: bool) -> Option<(usize, char)> {
    text.chars().enumerate().find_map(|(i, c)| {
        let allowed = multi_line && matches!(c, '\n' | '\t');
        (is_hidden_control(c) && !allowed).then_some((i + 1, c))
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hidden_controls() {
        for (text, multi_line, expect) in [
            ("Example Ltd, Zürich", false, None),
            ("two\nlines\tand a tab", true, None),
            ("two\nlines", false, Some((4, '\n'))),
            ("\u{1b}[31m", true, Some((1, '\u{1b}'))),
            ("bell\u{7}", true, Some((5, '\u{7}'))),
            ("bare\rcr", true, Some((5, '\r'))),
            ("c1 \u{9b}", true, Some((4, '\u{9b}'))),
            ("del\u{7f}", true, Some((4, '\u{7f}'))),
            ("abc\u{202e}fed", true, Some((4, '\u{202e}'))),
            ("\u{2066}isolate", true, Some((1, '\u{2066}'))),
            ("para\u{2029}", true, Some((5, '\u{2029}'))),
        ] {
            assert_eq!(hidden_control(text, multi_line), expect, "{text:?}");
        }
    }
}
