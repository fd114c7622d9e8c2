//! Rack and layout texts built to hurt the parser (issue 29): a file of more tokens than the
//! parser should hold, a megabytes-long line, a depth bomb, numbers no format should print as
//! 301 digits. Each is refused with a typed error whose message stays short, whatever the text.
//! The byte limit itself is the reader's (spinwise-cli's `source::read_bounded`) and is tested
//! there; what is checked here is what the pure parsers do with text they are handed.

use spinwise_model::limits::{MAX_RACK_FILE_BYTES, MAX_RACK_TOKENS};
use spinwise_model::quote::{MAX_MESSAGE_CHARS, MAX_QUOTED_CHARS};
use spinwise_model::{Layout, RackProblem, parse_rack};

const SOURCE: &str = "hostile.toml";
/// No refusal may be longer than this, whatever the file holds: the source name, a field and a
/// problem, each bounded by `spinwise_model::quote`.
const MAX_REFUSAL_CHARS: usize = 2 * MAX_MESSAGE_CHARS + 200;

fn minimal_rack() -> String {
    let doc = include_str!("../../../../docs/rack-format.md");
    let begin = doc
        .find("<!-- minimal-example:begin -->\n```toml\n")
        .expect("docs hold the minimal example");
    let rest = &doc[begin..];
    let start = rest.find("[rack]").expect("the example starts with [rack]");
    let end = rest
        .find("```\n<!-- minimal-example:end -->")
        .expect("and ends");
    rest[start..end].to_string()
}

fn with(old: &str, new: &str) -> String {
    let text = minimal_rack();
    assert_eq!(text.matches(old).count(), 1, "`{old}` occurs once");
    text.replacen(old, new, 1)
}

/// Parses `text`, which must be refused, and checks the message is short.
fn refused(text: &str) -> spinwise_model::RackError {
    let error = parse_rack(SOURCE, text).expect_err("the rack must be refused");
    let shown = error.to_string();
    assert!(
        shown.chars().count() <= MAX_REFUSAL_CHARS,
        "a refusal of {} chars: {}…",
        shown.len(),
        &shown[..shown
            .char_indices()
            .nth(300)
            .map_or(shown.len(), |(i, _)| i)]
    );
    error
}

#[test]
fn a_rack_of_more_tokens_than_the_limit_is_refused_before_parsing() {
    // Short values, no more bytes than a small file: the memory is in the parser's per-token
    // tree, which the limit keeps from being built.
    let values = "1,".repeat(MAX_RACK_TOKENS / 2 + 1);
    let text = with(
        "budget = 23.0",
        &format!("budget = 23.0\nextra = [{values}]"),
    );
    assert!(text.len() < MAX_RACK_FILE_BYTES);
    let error = refused(&text);
    assert_eq!(error.field, "(file)");
    assert!(
        matches!(error.problem, RackProblem::TooMany { limit, .. } if limit == MAX_RACK_TOKENS),
        "{error}"
    );
}

#[test]
fn every_shipped_preset_is_far_below_the_token_limit() {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../presets");
    for entry in std::fs::read_dir(dir).expect("presets/ exists") {
        let path = entry.expect("entry").path();
        let text = std::fs::read_to_string(&path).expect("readable preset");
        let tokens = toml_parser::Source::new(&text).lex().count();
        assert!(
            tokens * 20 < MAX_RACK_TOKENS,
            "{}: {tokens} tokens",
            path.display()
        );
    }
}

#[test]
fn a_bad_line_of_megabytes_is_quoted_by_its_start_and_its_length() {
    let junk = "x".repeat(MAX_RACK_FILE_BYTES - 2_000);
    let error = refused(&with("budget = 23.0", &format!("budget = 23.0 {junk}")));
    assert!(error.field.contains("budget = 23.0 xxx"), "{}", error.field);
    assert!(error.field.contains(" bytes)"), "{}", error.field);
    assert!(error.field.len() < MAX_QUOTED_CHARS + 60, "{}", error.field);
}

#[test]
fn a_string_of_megabytes_where_a_number_belongs_gives_a_short_message() {
    // The parser's own message quotes the string ("invalid type: string \"xxx…\""): it is cut,
    // and keeps what was expected at its end.
    let junk = "x".repeat(MAX_RACK_FILE_BYTES - 2_000);
    let error = refused(&with("budget = 23.0", &format!("budget = \"{junk}\"")));
    let shown = error.to_string();
    assert!(shown.contains("bytes in all"), "{shown}");
}

#[test]
fn a_key_of_megabytes_gives_a_short_message() {
    let key = "k".repeat(MAX_RACK_FILE_BYTES - 2_000);
    refused(&with("budget = 23.0", &format!("budget = 23.0\n{key} = 1")));
}

#[test]
fn a_depth_bomb_is_refused_with_a_short_message_not_a_stack_overflow() {
    // 90,000 nested arrays (within the token limit): the TOML parser's recursion guard (80
    // levels) refuses them. 200,000 are refused by the token count before the parser runs.
    for depth in [90_000, 200_000] {
        let bomb = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
        let error = refused(&with("budget = 23.0", &format!("budget = {bomb}")));
        let expected = if depth < MAX_RACK_TOKENS / 2 {
            "recursion"
        } else {
            "TOML tokens"
        };
        assert!(error.to_string().contains(expected), "{error}");
    }
    let depth = 40_000;
    let tables = format!("{}1{}", "{a=".repeat(depth), "}".repeat(depth));
    let error = refused(&with("budget = 23.0", &format!("budget = {tables}")));
    assert!(error.to_string().contains("recursion"), "{error}");
}

#[test]
fn a_budget_of_1e300_is_quoted_as_written_not_as_301_digits() {
    let error = refused(&with("budget = 23.0", "budget = 1e300"));
    let shown = error.to_string();
    assert!(
        shown.contains("1e300 is not a quantity"),
        "the number as written: {shown}"
    );
    assert!(!shown.contains("10000000000"), "{shown}");
}

#[test]
fn nan_inf_and_negative_budgets_are_refused_naming_the_value() {
    for (value, shown_as) in [
        ("nan", "NaN"),
        ("inf", "inf"),
        ("-inf", "-inf"),
        ("-5", "-5"),
        ("-1e300", "-1e300"),
    ] {
        let error = refused(&with("budget = 23.0", &format!("budget = {value}")));
        assert!(
            matches!(error.problem, RackProblem::Syntax { .. }),
            "{error}"
        );
        assert!(
            error
                .to_string()
                .contains(&format!("{shown_as} is not a quantity")),
            "{error}"
        );
    }
}

#[test]
fn an_out_of_range_number_is_quoted_in_scientific_form() {
    let error = refused(&with("seek_ms = 4.2", "seek_ms = -1e300"));
    assert_eq!(
        error.problem,
        RackProblem::OutOfRange {
            value: "-1e300".into(),
            expected: "a finite number ≥ 0"
        }
    );
    let error = refused(&with(
        "capacity_overhead_max = 0.5",
        "capacity_overhead_max = 1e300",
    ));
    assert!(
        error.to_string().contains("1e300 is out of range"),
        "{error}"
    );
}

#[test]
fn a_state_name_of_megabytes_is_quoted_briefly() {
    // Validation errors name things from the file (here an unknown state in a cost table).
    let name = "s".repeat(1_000_000);
    let error = refused(&with(
        "cost = { standby = 1.0, spinning_up = 20.0, active = 8.0 }",
        &format!("cost = {{ standby = 1.0, spinning_up = 20.0, active = 8.0, {name} = 1.0 }}"),
    ));
    assert!(
        matches!(error.problem, RackProblem::UnknownState { .. }),
        "{error}"
    );
}

// ---------------------------------------------------------------------------------------------
// Layout files.

#[test]
fn a_layout_depth_bomb_is_refused_with_a_short_message() {
    let depth = 200_000;
    let text = format!("{}{}", "[".repeat(depth), "]".repeat(depth));
    let error = Layout::from_json("bomb.json", &text).expect_err("refused");
    assert!(error.to_string().len() < MAX_REFUSAL_CHARS, "{error}");
    // As the format, which the probe reads as any JSON value: serde_json's recursion limit
    // (128) refuses it.
    let text = format!("{{\"format\": {}{}}}", "[".repeat(depth), "]".repeat(depth));
    let error = Layout::from_json("bomb.json", &text).expect_err("refused");
    assert!(error.to_string().contains("recursion limit"), "{error}");
    // Under a key the probe skips (serde_json skips without recursing), then refused by name.
    let text = format!(
        "{{\"format\": \"spinwise-layout\", \"version\": 1, \"skipped\": {}{}}}",
        "[".repeat(depth),
        "]".repeat(depth)
    );
    let error = Layout::from_json("bomb.json", &text).expect_err("refused");
    assert!(
        error.to_string().contains("unknown field `skipped`"),
        "{error}"
    );
}

#[test]
fn a_layout_quoting_megabytes_gives_a_short_message() {
    let junk = "x".repeat(4_000_000);
    for text in [
        format!("{{\"format\": \"{junk}\"}}"),
        format!("{{\"format\": \"spinwise-layout\", \"version\": 1, \"disks\": \"{junk}\"}}"),
        format!("{{\"format\": \"spinwise-layout\", \"version\": 1, \"{junk}\": 1}}"),
        "{\"format\": \"spinwise-layout\", \"version\": 1e300}".to_string(),
    ] {
        let error = Layout::from_json("big.json", &text).expect_err("refused");
        assert!(
            error.to_string().chars().count() < MAX_REFUSAL_CHARS,
            "{} chars",
            error.to_string().len()
        );
    }
}

#[test]
fn a_layout_of_more_groups_or_states_than_a_rack_can_have_is_refused_as_it_is_read() {
    let head = r#"{"format": "spinwise-layout", "version": 1, "#;
    let limit = spinwise_model::limits::MAX_DISKS;
    for (text, expected) in [
        (
            format!("{head}\"groups\": [{}[]]}}", "[],".repeat(limit)),
            format!("more than {limit} groups"),
        ),
        (
            format!("{head}\"groups\": [[{}0]]}}", "0,".repeat(limit)),
            format!("more than {limit} disk ids in all groups"),
        ),
        (
            format!("{head}\"groups\": [[{}0], [0]]}}", "0,".repeat(limit - 1)),
            format!("more than {limit} disk ids in all groups"),
        ),
        (
            format!("{head}\"states\": [{}\"\"]}}", "\"\",".repeat(32)),
            "more than 32 elements".to_string(),
        ),
        (
            format!("{head}\"active_witness\": [{}0]}}", "0,".repeat(limit)),
            format!("more than {limit} elements"),
        ),
    ] {
        let error = Layout::from_json("many.json", &text).expect_err("refused");
        assert!(error.to_string().contains(&expected), "{error}");
    }
}
