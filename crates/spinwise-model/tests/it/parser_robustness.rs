//! The rack parser never panics, whatever the text: random edits of every shipped preset (bytes
//! replaced, lines dropped or duplicated, numbers changed) are either accepted or refused with a
//! `RackError` naming the source. A cheap, always-on stand-in for a coverage-guided fuzzer.

use proptest::prelude::*;
use spinwise_model::parse_rack;

fn presets() -> Vec<(String, String)> {
    let dir = concat!(env!("CARGO_MANIFEST_DIR"), "/../../presets");
    let mut presets: Vec<(String, String)> = std::fs::read_dir(dir)
        .expect("presets/ exists")
        .map(|entry| entry.expect("readable entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .map(|path| {
            (
                path.display().to_string(),
                std::fs::read_to_string(&path).expect("readable preset"),
            )
        })
        .collect();
    presets.sort();
    presets
}

#[derive(Clone, Debug)]
enum Edit {
    ReplaceByte { at: usize, byte: u8 },
    DropLine { line: usize },
    DuplicateLine { line: usize },
    ReplaceNumber { nth: usize, with: String },
}

fn apply(text: &str, edit: &Edit) -> String {
    let lines: Vec<&str> = text.lines().collect();
    match edit {
        Edit::ReplaceByte { at, byte } => {
            let mut bytes = text.as_bytes().to_vec();
            let at = at % bytes.len();
            bytes[at] = *byte;
            String::from_utf8_lossy(&bytes).into_owned()
        }
        Edit::DropLine { line } => {
            let skip = line % lines.len();
            lines
                .iter()
                .enumerate()
                .filter(|(i, _)| *i != skip)
                .map(|(_, l)| *l)
                .collect::<Vec<_>>()
                .join("\n")
        }
        Edit::DuplicateLine { line } => {
            let copy = line % lines.len();
            let mut out: Vec<&str> = lines.clone();
            out.insert(copy, lines[copy]);
            out.join("\n")
        }
        Edit::ReplaceNumber { nth, with } => {
            let numbers: Vec<(usize, usize)> = number_spans(text);
            if numbers.is_empty() {
                return text.to_string();
            }
            let (start, end) = numbers[nth % numbers.len()];
            format!("{}{}{}", &text[..start], with, &text[end..])
        }
    }
}

fn number_spans(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i].is_ascii_digit() {
            let start = i;
            while i < bytes.len() && (bytes[i].is_ascii_digit() || bytes[i] == b'.') {
                i += 1;
            }
            spans.push((start, i));
        } else {
            i += 1;
        }
    }
    spans
}

fn edit_strategy() -> impl Strategy<Value = Edit> {
    prop_oneof![
        (any::<usize>(), any::<u8>()).prop_map(|(at, byte)| Edit::ReplaceByte { at, byte }),
        any::<usize>().prop_map(|line| Edit::DropLine { line }),
        any::<usize>().prop_map(|line| Edit::DuplicateLine { line }),
        (
            any::<usize>(),
            prop_oneof![
                Just("0".to_string()),
                Just("-1".to_string()),
                Just("1e300".to_string()),
                Just("4294967296".to_string()),
                Just("0.0000001".to_string()),
                Just("nan".to_string())
            ]
        )
            .prop_map(|(nth, with)| Edit::ReplaceNumber { nth, with }),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 512, failure_persistence: None, rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed), .. ProptestConfig::default() })]

    #[test]
    fn edited_presets_are_accepted_or_refused_never_panic(preset in any::<usize>(), edits in prop::collection::vec(edit_strategy(), 1..4)) {
        let presets = presets();
        let (name, text) = &presets[preset % presets.len()];
        let edited = edits.iter().fold(text.clone(), |text, edit| apply(&text, edit));
        if let Err(error) = parse_rack(name, &edited) {
            prop_assert!(error.to_string().starts_with(name.as_str()), "error does not name the source: {error}");
        }
    }
}
