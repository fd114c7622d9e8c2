//! Design files: the example parses, and every kind of bad input is refused with the field it
//! concerns.

use spinwise_design::catalogue::{CatalogueError, ReadSize};
use spinwise_design::{DesignFile, EXAMPLE_DESIGN};

fn refused(text: &str) -> CatalogueError {
    DesignFile::parse(text).expect_err("the design file must be refused")
}

#[test]
fn the_example_design_parses_with_a_lognormal_read_size() {
    let file = DesignFile::parse(EXAMPLE_DESIGN).expect("the example parses");
    assert_eq!(file.requirements.capacity_tb, 10_000.0);
    assert_eq!(file.enclosures.len(), 4);
    assert!(matches!(
        file.requirements.workload.read_size(),
        Ok(ReadSize::Model(_))
    ));
}

#[test]
fn an_unknown_field_is_refused_with_its_name() {
    let text = EXAMPLE_DESIGN.replace("capacity_tb = 10000", "capacity_tbb = 10000");
    let error = refused(&text).to_string();
    assert!(error.contains("capacity_tbb"), "{error}");
}

#[test]
fn a_name_given_twice_is_refused() {
    let text = EXAMPLE_DESIGN.replace("name = \"cmr-20tb\"", "name = \"cmr-16tb\"");
    assert_eq!(
        refused(&text),
        CatalogueError::Duplicate {
            list: "disks",
            name: "cmr-16tb".into()
        }
    );
}

#[test]
fn a_workload_with_both_a_model_and_a_fixed_size_is_refused() {
    let text = EXAMPLE_DESIGN.replace(
        "params = \"mu=29,sigma=2\"",
        "params = \"mu=29,sigma=2\"\nblob_bytes = 1000",
    );
    assert!(
        matches!(refused(&text), CatalogueError::Invalid { field, .. } if field == "requirements.workload")
    );
}

#[test]
fn negative_prices_zero_capacity_and_bad_fractions_are_refused() {
    for (old, new, field) in [
        ("price = 260.0", "price = -1.0", "disks.cmr-16tb.price"),
        (
            "capacity_tb = 10000",
            "capacity_tb = 0",
            "requirements.capacity_tb",
        ),
        (
            "max_utilisation = 0.8",
            "max_utilisation = 1.5",
            "requirements.max_utilisation",
        ),
        ("pue = 1.4", "pue = 0.5", "economics.pue"),
        (
            "max_block_types = 2",
            "max_block_types = 0",
            "requirements.max_block_types",
        ),
    ] {
        let text = EXAMPLE_DESIGN.replacen(old, new, 1);
        assert!(text != EXAMPLE_DESIGN, "{old} is in the example");
        match refused(&text) {
            CatalogueError::OutOfRange { field: got, .. } => assert_eq!(got, field),
            other => panic!("{old} → {new}: {other}"),
        }
    }
}

#[test]
fn an_empty_list_is_refused() {
    let start = EXAMPLE_DESIGN
        .find("[[nics]]")
        .expect("nics in the example");
    let text = format!("nics = []\n{}", &EXAMPLE_DESIGN[..start]);
    assert_eq!(refused(&text), CatalogueError::EmptyList { list: "nics" });
}

#[test]
fn a_file_over_the_limit_is_refused_before_parsing() {
    let text = " ".repeat(spinwise_design::catalogue::MAX_DESIGN_FILE_BYTES + 1);
    assert!(matches!(refused(&text), CatalogueError::TooLarge { .. }));
}
