//! How an error quotes what a user wrote: always bounded, so a hostile file cannot make its own
//! refusal as large as itself (a 16 MB line, a 301-digit rendering of `1e300`).
//!
//! Invariants: [`excerpt`] returns at most [`MAX_QUOTED_CHARS`] characters of the input plus a
//! short suffix; [`message`] at most [`MAX_MESSAGE_CHARS`] characters plus a short marker;
//! [`number`] at most ~25 characters for any `f64`. Cuts fall on character boundaries, and
//! control characters are escaped.

/// Characters of a source line or a value quoted in an error: enough to recognise the line (the
/// key and the start of its value), short enough for one terminal line.
pub const MAX_QUOTED_CHARS: usize = 100;
/// Characters of a whole problem message (which may embed a quoted name or a parser's own
/// quotation of the input). The longest messages the formats write are ~470 characters (an
/// unknown key of a layout file with the list of the 29 expected ones), so only input-made
/// messages are ever cut.
pub const MAX_MESSAGE_CHARS: usize = 600;

/// `text` if short; otherwise its first [`MAX_QUOTED_CHARS`] characters, an ellipsis and the
/// length of the whole, so the reader knows it was cut and by how much.
pub fn excerpt(text: &str) -> String {
    match text.char_indices().nth(MAX_QUOTED_CHARS) {
        None => printable(text),
        Some((cut, _)) => format!("{}… ({} bytes)", printable(&text[..cut]), text.len()),
    }
}

/// Control characters (a NUL, an escape sequence) escaped, so a quote cannot garble or
/// drive the terminal it is printed on.
fn printable(text: &str) -> String {
    if !text.chars().any(char::is_control) {
        return text.to_string();
    }
    text.chars()
        .map(|c| {
            if c.is_control() {
                c.escape_default().to_string()
            } else {
                c.to_string()
            }
        })
        .collect()
}

/// `text` if at most [`MAX_MESSAGE_CHARS`] characters; otherwise its head and tail around a
/// marker giving the length. The tail is kept because parser messages end with what was
/// expected (`…, expected u32`), which is the useful part.
pub fn message(text: &str) -> String {
    if text.chars().nth(MAX_MESSAGE_CHARS).is_none() {
        return printable(text);
    }
    let head_end = text
        .char_indices()
        .nth(MAX_MESSAGE_CHARS / 2)
        .map_or(text.len(), |(at, _)| at);
    let tail_chars = MAX_MESSAGE_CHARS / 4;
    let tail_start = text
        .char_indices()
        .rev()
        .nth(tail_chars - 1)
        .map_or(head_end, |(at, _)| at.max(head_end));
    format!(
        "{} …[{} bytes in all]… {}",
        printable(&text[..head_end]),
        text.len(),
        printable(&text[tail_start..])
    )
}

/// A number as a person would write it: plain decimal for everyday magnitudes, scientific
/// notation beyond them (`1e300`, not a 301-digit integer; `1e-9`, not `0.000000001`).
pub fn number(value: f64) -> String {
    let magnitude = value.abs();
    if value == 0.0 || !value.is_finite() || (1e-6..1e15).contains(&magnitude) {
        value.to_string()
    } else {
        format!("{value:e}")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_long_line_is_quoted_by_its_start_and_its_length() {
        let line = format!("budget = {}", "x".repeat(16 << 20));
        let quoted = excerpt(&line);
        assert!(quoted.starts_with("budget = xxx"));
        assert!(quoted.ends_with(&format!("… ({} bytes)", line.len())));
        assert!(quoted.chars().count() < MAX_QUOTED_CHARS + 30, "{quoted}");
        assert_eq!(excerpt("budget = 23.0"), "budget = 23.0");
    }

    #[test]
    fn a_cut_never_splits_a_character() {
        let line = "é".repeat(500);
        assert!(excerpt(&line).starts_with(&"é".repeat(MAX_QUOTED_CHARS)));
        let long = format!("{}, expected u32", "ü".repeat(10_000));
        let shown = message(&long);
        assert!(shown.ends_with(", expected u32"), "{shown}");
        assert!(shown.chars().count() < MAX_MESSAGE_CHARS + 40);
    }

    #[test]
    fn control_characters_are_escaped() {
        assert_eq!(excerpt("a\0b\x1b[2J"), "a\\u{0}b\\u{1b}[2J");
        assert!(!message(&"\0".repeat(10_000)).contains('\0'));
    }

    #[test]
    fn huge_and_tiny_numbers_are_quoted_in_scientific_form() {
        assert_eq!(number(1e300), "1e300");
        assert_eq!(number(-1e300), "-1e300");
        assert_eq!(number(1e-9), "1e-9");
        assert_eq!(number(23.5), "23.5");
        assert_eq!(number(0.0), "0");
        assert_eq!(number(f64::NAN), "NaN");
        assert_eq!(number(f64::NEG_INFINITY), "-inf");
        assert!(number(f64::MAX).len() < 30);
    }
}
