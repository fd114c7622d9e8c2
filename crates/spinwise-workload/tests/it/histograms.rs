//! The histogram CSV: what it accepts (comments, any order, gaps, CRLF) and what it refuses, by
//! line and reason, and that a histogram reads back from its own CSV.

use proptest::prelude::*;
use spinwise_workload::{HISTOGRAM_HEADER, Histogram, HistogramProblem, MAX_HISTOGRAM_FILES};

#[test]
fn buckets_in_any_order_with_gaps_and_comments_parse_to_contiguous_counts() {
    let text = "# a survey\r\nbucket_log2,count\r\n12, 7\n\n10,3\n# gap at 11\n13,0\n";
    let histogram = Histogram::parse(text).unwrap();
    assert_eq!(histogram.first_bucket_log2, 10);
    assert_eq!(histogram.counts, vec![3, 0, 7, 0]);
    assert_eq!(histogram.total_files(), 10);
    assert_eq!(histogram.occupied_buckets(), 2);
}

#[test]
fn the_shipped_example_histogram_parses() {
    let text = include_str!("../../data/example-histogram.csv");
    let histogram = Histogram::parse(text).unwrap();
    assert!(histogram.total_files() > 1_000_000);
    assert!(histogram.occupied_buckets() > 20);
}

#[test]
fn each_bad_line_is_refused_with_its_line_number_and_reason() {
    let refused = |text: &str| Histogram::parse(text).unwrap_err();
    let header = HISTOGRAM_HEADER;
    assert_eq!(refused("").problem, HistogramProblem::Empty);
    assert!(matches!(
        refused("size,count\n1,2\n").problem,
        HistogramProblem::Header { .. }
    ));
    let error = refused(&format!("{header}\n1,2\n3\n"));
    assert_eq!(error.line, 3);
    assert_eq!(error.problem, HistogramProblem::FieldCount { found: 1 });
    assert!(matches!(
        refused(&format!("{header}\n63,2\n")).problem,
        HistogramProblem::Bucket { .. }
    ));
    assert!(matches!(
        refused(&format!("{header}\n-1,2\n")).problem,
        HistogramProblem::Bucket { .. }
    ));
    assert!(matches!(
        refused(&format!("{header}\n1,2.5\n")).problem,
        HistogramProblem::Count { .. }
    ));
    assert_eq!(
        refused(&format!("{header}\n1,2\n1,3\n")).problem,
        HistogramProblem::Repeated { bucket_log2: 1 }
    );
    assert_eq!(
        refused(&format!("{header}\n1,0\n2,0\n")).problem,
        HistogramProblem::NoFiles
    );
    assert_eq!(
        refused(&format!("{header}\n1,{}\n2,1\n", MAX_HISTOGRAM_FILES)).problem,
        HistogramProblem::TooManyFiles {
            max: MAX_HISTOGRAM_FILES
        }
    );
    assert!(matches!(
        refused(&format!("{header}\n1,{}\n", u64::MAX)).problem,
        HistogramProblem::TooManyFiles { .. }
    ));
}

#[test]
fn sizes_bin_into_the_bucket_of_their_highest_bit() {
    let histogram = Histogram::from_sizes(&[1, 2, 3, 4, 7, 8, 1023, 1024]);
    assert_eq!(histogram.first_bucket_log2, 0);
    assert_eq!(histogram.counts, vec![1, 2, 2, 1, 0, 0, 0, 0, 0, 1, 1]);
}

proptest! {
    #[test]
    fn a_histogram_reads_back_from_its_own_csv(
        first in 0u32..40,
        counts in proptest::collection::vec(0u64..1_000_000, 1..20),
    ) {
        prop_assume!(counts.iter().any(|&c| c > 0));
        let histogram = Histogram::from_counts(first, counts);
        let again = Histogram::parse(&histogram.to_csv()).unwrap();
        prop_assert_eq!(again.total_files(), histogram.total_files());
        // Parsing keeps listed zero buckets at the ends, so the value is identical.
        prop_assert_eq!(again, histogram);
    }

    #[test]
    fn arbitrary_text_is_refused_or_parsed_but_never_panics(text in ".{0,200}") {
        let _ = Histogram::parse(&text);
        let _ = Histogram::parse(&format!("{HISTOGRAM_HEADER}\n{text}"));
    }
}
