//! Text from manifests, events and replicas shown on a terminal as text: its control characters
//! (an escape sequence could move the cursor, retitle the window or hide what follows) and the
//! bidirectional overrides (U+202E shows what follows backwards) written as escapes instead, as
//! kubectl escapes them (CVE-2021-25743). Newlines and tabs stay.

use std::borrow::Cow;

/// `text` with each character that would act on the terminal written as `\u{...}`.
pub fn escaped(text: &str) -> Cow<'_, str> {
    if !text.chars().any(acts_on_terminal) {
        return Cow::Borrowed(text);
    }
    let mut out = String::with_capacity(text.len() + 8);
    for c in text.chars() {
        if acts_on_terminal(c) {
            out.extend(c.escape_unicode());
        } else {
            out.push(c);
        }
    }
    Cow::Owned(out)
}

/// A control character other than a newline or a tab, or a bidirectional embedding, override or
/// isolate.
fn acts_on_terminal(c: char) -> bool {
    (c.is_control() && c != '\n' && c != '\t')
        || matches!(c, '\u{202a}'..='\u{202e}' | '\u{2066}'..='\u{2069}')
}

#[cfg(test)]
mod tests {
    use super::escaped;

    #[test]
    fn controls_and_overrides_are_shown_as_escapes_and_plain_text_is_kept() {
        assert_eq!(escaped("plain\ttext\n"), "plain\ttext\n");
        assert_eq!(
            escaped("evil\x1b]0;owned\x07 \u{202e}txt.exe"),
            "evil\\u{1b}]0;owned\\u{7} \\u{202e}txt.exe"
        );
        assert_eq!(escaped("\r\u{9b}"), "\\u{d}\\u{9b}");
    }
}
