//! Readers of layout files never panic: numbers of a real layout replaced by hostile values are
//! refused by `Layout::from_json`, or, if accepted, measured by `quality` and judged by `verify`
//! without a panic (an overflow, an out-of-range index). Layout files come from users' disks, so
//! this is input like any other.

mod common;

use proptest::prelude::*;
use spinwise_model::Layout;
use spinwise_plan::{plan, quality, verify};
use std::sync::OnceLock;

fn ocp() -> &'static (spinwise_model::Rack, String) {
    static OCP: OnceLock<(spinwise_model::Rack, String)> = OnceLock::new();
    OCP.get_or_init(|| {
        let rack = common::preset("ocp-cold-storage");
        let layout = plan(&rack).expect("the OCP preset plans").layout.to_json();
        (rack, layout)
    })
}

/// Byte spans of the JSON numbers in `text`.
fn number_spans(text: &str) -> Vec<(usize, usize)> {
    let bytes = text.as_bytes();
    let mut spans = Vec::new();
    let mut i = 0;
    while i < bytes.len() {
        let starts = bytes[i].is_ascii_digit() && (i == 0 || !bytes[i - 1].is_ascii_alphanumeric());
        if starts {
            let start = i;
            while i < bytes.len()
                && (bytes[i].is_ascii_digit() || matches!(bytes[i], b'.' | b'e' | b'-' | b'+'))
            {
                i += 1;
            }
            spans.push((start, i));
        } else {
            i += 1;
        }
    }
    spans
}

fn hostile_number() -> impl Strategy<Value = String> {
    prop_oneof![
        Just("0".to_string()),
        Just("1".to_string()),
        Just("4294967295".to_string()),
        Just("18446744073709551615".to_string()),
        Just("1000000".to_string()),
        Just("1e300".to_string()),
        Just("-1".to_string()),
        Just("0.5".to_string()),
        (0u32..100).prop_map(|n| n.to_string()),
    ]
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 256, failure_persistence: None, rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed), .. ProptestConfig::default() })]

    #[test]
    fn a_layout_with_hostile_numbers_is_refused_or_read_safely(edits in prop::collection::vec((any::<usize>(), hostile_number()), 1..4)) {
        let (rack, json) = ocp();
        let mut text = json.clone();
        for (nth, value) in &edits {
            let spans = number_spans(&text);
            let (start, end) = spans[nth % spans.len()];
            text = format!("{}{}{}", &text[..start], value, &text[end..]);
        }
        if let Ok(layout) = Layout::from_json("edited.json", &text) {
            let measured = quality(&layout, 64, 1);
            prop_assert!((0.0..=1.0).contains(&measured.low_load) && (0.0..=1.0).contains(&measured.high_load));
            let _ = verify(rack, &layout);
        }
    }
}
