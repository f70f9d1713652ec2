//! The lexer: splits trimmed query text into whitespace-separated tokens, keeping a
//! double-quoted section (spaces included) inside its token.
//!
//! There is no escape mechanism: a quoted section ends at the next `"`. An opening quote with
//! no closing one runs to the end of the input and marks its token unterminated.

/// One token: a run of non-whitespace characters and quoted sections.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) struct Token<'a> {
    /// The token text, quotes included.
    pub text: &'a str,
    /// An opening `"` has no closing `"`.
    pub unterminated: bool,
}

impl<'a> Token<'a> {
    /// True when the token holds a `"`.
    pub fn has_quote(&self) -> bool {
        self.text.contains('"')
    }

    /// The characters outside quoted sections.
    pub fn outside_quotes(&self) -> impl Iterator<Item = char> + 'a {
        let mut quoted = false;
        self.text.chars().filter(move |&c| {
            if c == '"' {
                quoted = !quoted;
                false
            } else {
                !quoted
            }
        })
    }

    /// The text before the first `"` (all of it when there is none).
    pub fn before_quote(&self) -> &'a str {
        self.text.split('"').next().unwrap_or("")
    }
}

/// Splits `input` into tokens. Whitespace is any Unicode white space outside quotes.
pub(crate) fn tokens(input: &str) -> Vec<Token<'_>> {
    let mut out = Vec::new();
    let mut chars = input.char_indices().peekable();
    while let Some(&(start, c)) = chars.peek() {
        if c.is_whitespace() {
            chars.next();
            continue;
        }
        let mut end = input.len();
        let mut quoted = false;
        while let Some(&(i, c)) = chars.peek() {
            if !quoted && c.is_whitespace() {
                end = i;
                break;
            }
            if c == '"' {
                quoted = !quoted;
            }
            chars.next();
        }
        out.push(Token {
            text: &input[start..end],
            unterminated: quoted,
        });
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn splits_on_whitespace_outside_quotes() {
        let check = |input: &str, want: &[(&str, bool)]| {
            let got: Vec<_> = tokens(input)
                .iter()
                .map(|t| (t.text, t.unterminated))
                .collect();
            assert_eq!(got, want, "{input:?}");
        };
        check("", &[]);
        check(
            "port:22  AND\tprotocol:ssh",
            &[("port:22", false), ("AND", false), ("protocol:ssh", false)],
        );
        check(
            r#"organization:"Example  Corp" port:22"#,
            &[
                (r#"organization:"Example  Corp""#, false),
                ("port:22", false),
            ],
        );
        check(
            r#"organization:"Acme port:22"#,
            &[(r#"organization:"Acme port:22"#, true)],
        );
        check(r#"a"b c"d e"#, &[(r#"a"b c"d"#, false), ("e", false)]);
    }

    #[test]
    fn outside_quotes() {
        let t = tokens(r#"x:"(a)"&&"#)[0];
        assert_eq!(t.outside_quotes().collect::<String>(), "x:&&");
        assert_eq!(t.before_quote(), "x:");
    }
}
