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
    let with_params = EXAMPLE_DESIGN.contains("params = \"mu=20.1,sigma=1.386\"");
    assert!(
        with_params,
        "the example's params changed: update this test"
    );
    let text = EXAMPLE_DESIGN.replace(
        "params = \"mu=20.1,sigma=1.386\"",
        "params = \"mu=20.1,sigma=1.386\"\nblob_bytes = 1000",
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
        // 1e-9 gave 685 million blocks meeting a first-byte target with no read measured.
        (
            "max_utilisation = 0.8",
            "max_utilisation = 1e-9",
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

#[test]
fn a_model_over_the_wrong_variable_is_refused_not_capped() {
    // mu = 20.1 is ln of 512 MiB; as a lognormal over log2 of the size it would be 2^(e^20).
    let text = EXAMPLE_DESIGN.replace("variable = \"bytes\"", "variable = \"log2\"");
    assert!(text != EXAMPLE_DESIGN);
    let error = refused(&text).to_string();
    assert!(error.contains("is `variable` right?"), "{error}");
}

#[test]
fn a_catalogue_of_more_blocks_than_the_limit_is_refused() {
    let mut file = DesignFile::parse(EXAMPLE_DESIGN).unwrap();
    let server = file.servers[0].clone();
    file.servers = (0..30)
        .map(|index| spinwise_design::catalogue::Server {
            name: format!("server-{index}"),
            ..server.clone()
        })
        .collect();
    let nic = file.nics[0].clone();
    file.nics = (0..30)
        .map(|index| spinwise_design::catalogue::Nic {
            name: format!("nic-{index}"),
            ..nic.clone()
        })
        .collect();
    // 4 enclosures × 5 disks × 30 × 30 = 18,000 blocks.
    assert_eq!(
        file.validate(),
        Err(CatalogueError::TooManyBlocks { blocks: 18_000 })
    );
}
