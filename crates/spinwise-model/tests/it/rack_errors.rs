//! The rules of docs/rack-format.md, one test each: rack descriptions that break a rule are refused
//! with the specific `RackProblem`, a `field` naming the place in the file, and a message that
//! starts with the source name; the format's positive rules (row-major grid ids, `by` divisors,
//! explicit lists, micro-unit rounding, soft resources) hold. Each test starts from `MINIMAL_RACK`
//! (the example of docs/rack-format.md, checked here to be identical to the text in the document)
//! and changes one thing.

use spinwise_model::{Amount, Distribution, RackError, RackProblem, parse_rack};

const SOURCE: &str = "racks/test-rack.toml";

/// The minimal complete example of docs/rack-format.md: 2 trays of 4 disks.
const MINIMAL_RACK: &str = r#"[rack]
name = "two-trays"
description = "Two trays of four disks; power for one disk spinning up per tray"

[[axes]]
name = "tray"
size = 2
[[axes]]
name = "slot"
size = 4

[disks]
grid = true

[[states]]
name = "standby"
resting = true
[[states]]
name = "spinning_up"
transient = true
[[states]]
name = "active"
active = true

[[transitions]]
from = "standby"
to = "spinning_up"
[[transitions]]
from = "spinning_up"
to = "active"
[[transitions]]
from = "active"
to = "standby"

[[resources]]
name = "power"
kind = "hard"
unit = "W"
cost = { standby = 1.0, spinning_up = 20.0, active = 8.0 }
domains = { by = ["tray"] }
budget = 23.0
upper_bound = 80.0

[[resources]]
name = "link"
kind = "soft"
unit = "Gbps"
cost = { standby = 0, spinning_up = 0, active = 1.2 }
domains = { by = ["tray/2"] }
budget = 6

[[failure_domains]]
name = "tray"
domains = { by = ["tray"] }
annual_failure_rate = 0.005

[disk]
capacity_tb = 4.0
bandwidth_mb_per_s = 150
seek_ms = 4.2
spin_up_latency_s = { distribution = "normal", mean = 10.0, stddev = 1.0, min = 8.0, max = 14.0 }
mount_latency_s = { distribution = "uniform", min = 1.0, max = 4.0 }
unmount_latency_s = 0.5
annual_failure_rate = 0.03

[targets]
durability_nines = 6
service_interval_days = 180
deployment_lifetime_years = 5
file_bandwidth_floor_mb_per_s = 150
io_concurrency_target = 1
capacity_overhead_max = 0.5

[targets.fairness]
reordering_bound_gb = 100
rebuild_share = 0.5
max_queue_depth = 100
"#;

/// The same rack with its disks listed explicitly instead of `grid = true`.
fn listed_rack() -> String {
    let mut list = String::from("[disks]\nlist = [\n");
    for id in 0..8 {
        list.push_str(&format!(
            "  {{ id = {id}, at = [{}, {}] }},\n",
            id / 4,
            id % 4
        ));
    }
    list.push_str("]\n");
    edit(MINIMAL_RACK, "[disks]\ngrid = true\n", &list)
}

/// `text` with the single occurrence of `old` replaced by `new`.
fn edit(text: &str, old: &str, new: &str) -> String {
    assert_eq!(
        text.matches(old).count(),
        1,
        "`{old}` must occur exactly once in the rack text"
    );
    text.replacen(old, new, 1)
}

/// Parses `text`, which must be refused, and checks the message names the source and the field.
fn refused(text: &str) -> RackError {
    let error = parse_rack(SOURCE, text).expect_err("the rack must be refused");
    let shown = error.to_string();
    assert!(
        shown.starts_with(&format!("{SOURCE}: {}: ", error.field)),
        "message must start with the source and the field: {shown}"
    );
    assert!(
        shown.ends_with(&error.problem.to_string()),
        "message must end with the problem: {shown}"
    );
    error
}

/// 1-based number of the line holding `needle`.
fn line_of(text: &str, needle: &str) -> usize {
    text.lines()
        .position(|line| line.contains(needle))
        .unwrap_or_else(|| panic!("`{needle}` not in the text"))
        + 1
}

// ---------------------------------------------------------------------------------------------
// The example itself.

#[test]
fn docs_example_is_the_minimal_rack_and_parses() {
    let docs = std::fs::read_to_string(concat!(
        env!("CARGO_MANIFEST_DIR"),
        "/../../docs/rack-format.md"
    ))
    .expect("docs/rack-format.md exists");
    let begin = "<!-- minimal-example:begin -->\n```toml\n";
    let end = "```\n<!-- minimal-example:end -->";
    let start = docs.find(begin).expect("begin marker") + begin.len();
    let stop = start + docs[start..].find(end).expect("end marker");
    assert_eq!(&docs[start..stop], MINIMAL_RACK);
    let rack = parse_rack("docs/rack-format.md", &docs[start..stop]).unwrap();
    assert_eq!(rack.name, "two-trays");
}

#[test]
fn minimal_rack_has_two_trays_of_four_with_row_major_ids() {
    let rack = parse_rack(SOURCE, MINIMAL_RACK).unwrap();
    assert_eq!(rack.disk_count(), 8);
    // Row-major, last axis fastest: id = tray × 4 + slot.
    for disk in &rack.disks {
        assert_eq!(disk.coordinates, vec![disk.id / 4, disk.id % 4]);
    }
    let power = &rack.resources[rack.resource_index("power").unwrap()];
    assert_eq!(power.domains, vec![vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
    assert_eq!(power.domain_of, vec![0, 0, 0, 0, 1, 1, 1, 1]);
    assert_eq!(power.disks_at_highest_per_domain(), Some(1));
    // "tray/2" puts both trays (coordinates 0 and 1) in one domain.
    let link = &rack.resources[rack.resource_index("link").unwrap()];
    assert_eq!(link.domains.len(), 1);
    assert_eq!(rack.spin_up_path().len(), 3);
    assert!(rack.failure_domains[0].spread, "spread defaults to true");
    assert_eq!(rack.targets.spare_exhaustion_probability, 0.01);
}

#[test]
fn listing_the_grid_disks_explicitly_gives_the_same_rack() {
    let grid = parse_rack(SOURCE, MINIMAL_RACK).unwrap();
    let listed = parse_rack(SOURCE, &listed_rack()).unwrap();
    assert_eq!(grid, listed);
}

#[test]
fn explicit_domain_lists_equal_to_the_axes_give_the_same_rack() {
    let text = edit(
        MINIMAL_RACK,
        r#"domains = { by = ["tray"] }
budget = 23.0"#,
        r#"domains = { lists = [[7, 6, 5, 4], [0, 1, 2, 3]] }
budget = 23.0"#,
    );
    let by_axes = parse_rack(SOURCE, MINIMAL_RACK).unwrap();
    let by_lists = parse_rack(SOURCE, &text).unwrap();
    // Lists keep their order; each domain's disks are sorted.
    assert_eq!(
        by_lists.resources[0].domains,
        vec![vec![4, 5, 6, 7], vec![0, 1, 2, 3]]
    );
    assert_eq!(
        by_lists.resources[0].domain_of,
        vec![1, 1, 1, 1, 0, 0, 0, 0]
    );
    assert_eq!(
        by_axes.resources[0].disks_at_highest_per_domain(),
        by_lists.resources[0].disks_at_highest_per_domain()
    );
}

#[test]
fn empty_by_puts_every_disk_in_one_domain() {
    let text = edit(
        MINIMAL_RACK,
        "domains = { by = [\"tray/2\"] }",
        "domains = { by = [] }",
    );
    let rack = parse_rack(SOURCE, &text).unwrap();
    let link = &rack.resources[rack.resource_index("link").unwrap()];
    assert_eq!(link.domains, vec![(0..8).collect::<Vec<u32>>()]);
}

#[test]
fn amounts_are_rounded_to_the_nearest_micro_unit() {
    // 22.9999996 W rounds to 23 W exactly: one disk may spin up (20 + 3 × 1).
    let text = edit(MINIMAL_RACK, "budget = 23.0", "budget = 22.9999996");
    let rack = parse_rack(SOURCE, &text).unwrap();
    assert_eq!(rack.resources[0].budget, Amount::from_units(23));
    let text = edit(MINIMAL_RACK, "budget = 23.0", "budget = 22.9999994");
    assert!(matches!(
        refused(&text).problem,
        RackProblem::BudgetAdmitsNoDisk { .. }
    ));
}

#[test]
fn soft_resources_are_not_held_to_the_hard_budget_rules() {
    // A soft budget of 0 admits no active disk, and its resting state need not be cheapest.
    let text = edit(
        MINIMAL_RACK,
        "cost = { standby = 0, spinning_up = 0, active = 1.2 }",
        "cost = { standby = 2, spinning_up = 0, active = 1.2 }",
    );
    let text = edit(&text, "budget = 6", "budget = 0");
    assert!(parse_rack(SOURCE, &text).is_ok());
}

// ---------------------------------------------------------------------------------------------
// Syntax: TOML errors and unknown keys name the line.

#[test]
fn invalid_toml_is_a_syntax_error_naming_the_line() {
    let text = edit(MINIMAL_RACK, "budget = 23.0", "budget = = 23.0");
    let error = refused(&text);
    assert!(matches!(error.problem, RackProblem::Syntax { .. }));
    let line = line_of(&text, "budget = = 23.0");
    assert!(
        error.field.starts_with(&format!("line {line} ")),
        "{}",
        error.field
    );
    assert!(error.field.contains("budget = = 23.0"), "{}", error.field);
}

#[test]
fn misspelt_key_is_a_syntax_error_naming_its_line_and_the_key() {
    let text = edit(MINIMAL_RACK, "budget = 23.0", "budgett = 23.0");
    let error = refused(&text);
    let RackProblem::Syntax { message } = &error.problem else {
        panic!("expected a syntax error, got {error}");
    };
    assert!(message.contains("budgett"), "{message}");
    let line = line_of(&text, "budgett = 23.0");
    assert!(
        error.field.starts_with(&format!("line {line} ")),
        "{}",
        error.field
    );
}

#[test]
fn missing_required_table_is_a_syntax_error() {
    let start = MINIMAL_RACK.find("[targets]").unwrap();
    let text = &MINIMAL_RACK[..start];
    let error = refused(text);
    let RackProblem::Syntax { message } = &error.problem else {
        panic!("expected a syntax error, got {error}");
    };
    assert!(message.contains("targets"), "{message}");
}

#[test]
fn negative_budget_is_a_syntax_error_naming_its_line() {
    let text = edit(MINIMAL_RACK, "budget = 23.0", "budget = -23.0");
    let error = refused(&text);
    let RackProblem::Syntax { message } = &error.problem else {
        panic!("expected a syntax error, got {error}");
    };
    assert!(message.contains("not a quantity"), "{message}");
    let line = line_of(&text, "budget = -23.0");
    assert!(
        error.field.starts_with(&format!("line {line} ")),
        "{}",
        error.field
    );
}

#[test]
fn oversized_file_is_rejected_before_parsing() {
    let text = format!(
        "{MINIMAL_RACK}{}",
        "#".repeat(spinwise_model::limits::MAX_RACK_FILE_BYTES)
    );
    let error = refused(&text);
    assert_eq!(error.field, "(file)");
    assert_eq!(
        error.problem,
        RackProblem::TooMany {
            what: "bytes",
            limit: spinwise_model::limits::MAX_RACK_FILE_BYTES
        }
    );
}

// ---------------------------------------------------------------------------------------------
// Header, axes and disks.

#[test]
fn blank_rack_name_is_rejected_as_missing() {
    let text = edit(MINIMAL_RACK, r#"name = "two-trays""#, r#"name = "  ""#);
    let error = refused(&text);
    assert_eq!(error.field, "rack.name");
    assert_eq!(
        error.problem,
        RackProblem::Missing {
            what: "a rack name"
        }
    );
}

#[test]
fn zero_axis_size_is_rejected_naming_the_axis() {
    let text = edit(MINIMAL_RACK, "size = 2", "size = 0");
    let error = refused(&text);
    assert_eq!(error.field, "axes[tray].size");
    assert!(matches!(error.problem, RackProblem::OutOfRange { .. }));
}

#[test]
fn duplicate_axis_is_rejected() {
    let text = edit(MINIMAL_RACK, r#"name = "slot""#, r#"name = "tray""#);
    let error = refused(&text);
    assert_eq!(error.field, "axes[tray]");
    assert_eq!(
        error.problem,
        RackProblem::Duplicate {
            what: "axis",
            name: "tray".into()
        }
    );
}

#[test]
fn more_than_eight_axes_are_rejected() {
    let extra: String = (0..7)
        .map(|i| format!("[[axes]]\nname = \"extra{i}\"\nsize = 1\n"))
        .collect();
    let text = edit(MINIMAL_RACK, "[disks]\n", &format!("{extra}\n[disks]\n"));
    let error = refused(&text);
    assert_eq!(error.field, "axes");
    assert_eq!(
        error.problem,
        RackProblem::TooMany {
            what: "axes",
            limit: 8
        }
    );
}

#[test]
fn grid_with_more_than_the_disk_limit_is_rejected() {
    let text = edit(MINIMAL_RACK, "size = 4", "size = 50001");
    let error = refused(&text);
    assert_eq!(error.field, "disks.grid");
    assert_eq!(
        error.problem,
        RackProblem::TooMany {
            what: "disks",
            limit: 100_000
        }
    );
}

#[test]
fn grid_without_axes_is_rejected() {
    let start = MINIMAL_RACK.find("[[axes]]").unwrap();
    let end = MINIMAL_RACK.find("[disks]").unwrap();
    let text = format!("{}{}", &MINIMAL_RACK[..start], &MINIMAL_RACK[end..]);
    let error = refused(&text);
    assert_eq!(error.field, "disks.grid");
    assert!(matches!(error.problem, RackProblem::Missing { .. }));
}

#[test]
fn both_grid_and_list_are_rejected() {
    let text = edit(&listed_rack(), "[disks]\n", "[disks]\ngrid = true\n");
    let error = refused(&text);
    assert_eq!(error.field, "disks");
    assert_eq!(
        error.problem,
        RackProblem::DiskSpecification { found: "both" }
    );
}

#[test]
fn neither_grid_nor_list_is_rejected() {
    let text = edit(MINIMAL_RACK, "grid = true", "grid = false");
    let error = refused(&text);
    assert_eq!(error.field, "disks");
    assert_eq!(
        error.problem,
        RackProblem::DiskSpecification { found: "neither" }
    );
}

#[test]
fn empty_disk_list_is_rejected() {
    let text = edit(MINIMAL_RACK, "grid = true", "list = []");
    let error = refused(&text);
    assert_eq!(error.field, "disks.list");
    assert!(matches!(error.problem, RackProblem::Missing { .. }));
}

#[test]
fn duplicate_disk_id_is_rejected_naming_the_id() {
    let text = edit(
        &listed_rack(),
        "{ id = 7, at = [1, 3] }",
        "{ id = 6, at = [1, 3] }",
    );
    let error = refused(&text);
    assert_eq!(error.field, "disks.list[id=6]");
    assert_eq!(
        error.problem,
        RackProblem::Duplicate {
            what: "disk id",
            name: "6".into()
        }
    );
    assert!(error.to_string().contains("duplicate disk id `6`"));
}

#[test]
fn coordinate_out_of_range_is_rejected_naming_disk_and_axis() {
    let text = edit(
        &listed_rack(),
        "{ id = 7, at = [1, 3] }",
        "{ id = 7, at = [2, 3] }",
    );
    let error = refused(&text);
    assert_eq!(error.field, "disks.list[id=7].at");
    assert_eq!(
        error.problem,
        RackProblem::CoordinateOutOfRange {
            axis: "tray".into(),
            value: 2,
            size: 2
        }
    );
}

#[test]
fn two_disks_at_one_coordinate_are_refused_naming_both_ids_and_the_position() {
    let text = edit(
        &listed_rack(),
        "{ id = 7, at = [1, 3] }",
        "{ id = 7, at = [0, 2] }",
    );
    let error = refused(&text);
    assert_eq!(error.field, "disks.list[id=7].at");
    assert_eq!(
        error.problem,
        RackProblem::SameCoordinates {
            first: 2,
            second: 7,
            at: "(tray=0, slot=2)".into()
        }
    );
    assert!(
        error
            .to_string()
            .ends_with("disks 2 and 7 are both at (tray=0, slot=2)"),
        "{error}"
    );
}

#[test]
fn listed_disks_without_axes_share_no_position_and_are_accepted() {
    // No axes: every disk has the empty position, which says nothing about where it sits.
    let mut list = String::from("[disks]\nlist = [\n");
    for id in 0..8 {
        list.push_str(&format!("  {{ id = {id} }},\n"));
    }
    list.push_str("]\n");
    let text = edit(
        MINIMAL_RACK,
        "[[axes]]\nname = \"tray\"\nsize = 2\n[[axes]]\nname = \"slot\"\nsize = 4\n",
        "",
    );
    let text = edit(&text, "[disks]\ngrid = true\n", &list);
    let lists = r#"domains = { lists = [[0, 1, 2, 3], [4, 5, 6, 7]] }"#;
    let text = text
        .replace(r#"domains = { by = ["tray"] }"#, lists)
        .replace(r#"domains = { by = ["tray/2"] }"#, "domains = { by = [] }");
    let rack = parse_rack(SOURCE, &text).expect("a rack without axes is accepted");
    assert_eq!(rack.disk_count(), 8);
}

#[test]
fn wrong_number_of_coordinates_is_rejected() {
    let text = edit(
        &listed_rack(),
        "{ id = 7, at = [1, 3] }",
        "{ id = 7, at = [1] }",
    );
    let error = refused(&text);
    assert_eq!(error.field, "disks.list[id=7].at");
    assert_eq!(
        error.problem,
        RackProblem::CoordinateCount {
            expected: 2,
            found: 1
        }
    );
}

// ---------------------------------------------------------------------------------------------
// States and transitions.

#[test]
fn duplicate_state_is_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "name = \"spinning_up\"\ntransient = true",
        "name = \"standby\"\ntransient = true",
    );
    let error = refused(&text);
    assert_eq!(error.field, "states[standby]");
    assert_eq!(
        error.problem,
        RackProblem::Duplicate {
            what: "state",
            name: "standby".into()
        }
    );
}

#[test]
fn state_with_two_flags_is_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "resting = true",
        "resting = true\nactive = true",
    );
    let error = refused(&text);
    assert_eq!(error.field, "states[standby]");
    assert_eq!(
        error.problem,
        RackProblem::ConflictingStateFlags {
            name: "standby".into(),
            first: "resting",
            second: "active"
        }
    );
}

#[test]
fn zero_active_states_are_rejected() {
    let text = edit(MINIMAL_RACK, "active = true\n", "");
    let error = refused(&text);
    assert_eq!(error.field, "states");
    assert_eq!(
        error.problem,
        RackProblem::StateFlagCount {
            flag: "active",
            count: 0
        }
    );
}

#[test]
fn two_active_states_are_rejected() {
    let text = edit(MINIMAL_RACK, "transient = true", "active = true");
    let error = refused(&text);
    assert_eq!(error.field, "states");
    assert_eq!(
        error.problem,
        RackProblem::StateFlagCount {
            flag: "active",
            count: 2
        }
    );
}

#[test]
fn zero_resting_states_are_rejected() {
    let text = edit(MINIMAL_RACK, "resting = true\n", "");
    let error = refused(&text);
    assert_eq!(error.field, "states");
    assert_eq!(
        error.problem,
        RackProblem::StateFlagCount {
            flag: "resting",
            count: 0
        }
    );
}

#[test]
fn unknown_state_in_transition_from_is_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "from = \"spinning_up\"",
        "from = \"spinning-up\"",
    );
    let error = refused(&text);
    assert_eq!(error.field, "transitions[1].from");
    assert_eq!(
        error.problem,
        RackProblem::UnknownState {
            name: "spinning-up".into()
        }
    );
}

#[test]
fn transition_to_an_unknown_state_is_a_transition_to_nowhere() {
    let text = edit(MINIMAL_RACK, "to = \"active\"", "to = \"spinning\"");
    let error = refused(&text);
    assert_eq!(error.field, "transitions[1].to");
    assert_eq!(
        error.problem,
        RackProblem::TransitionToNowhere {
            name: "spinning".into()
        }
    );
}

#[test]
fn active_state_unreachable_from_resting_is_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "[[transitions]]\nfrom = \"spinning_up\"\nto = \"active\"\n",
        "",
    );
    let error = refused(&text);
    assert_eq!(error.field, "transitions");
    assert_eq!(
        error.problem,
        RackProblem::ActiveUnreachable {
            resting: "standby".into(),
            active: "active".into()
        }
    );
}

#[test]
fn resting_state_unreachable_from_active_is_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "[[transitions]]\nfrom = \"active\"\nto = \"standby\"\n",
        "",
    );
    let error = refused(&text);
    assert_eq!(error.field, "transitions");
    assert_eq!(
        error.problem,
        RackProblem::RestingUnreachable {
            resting: "standby".into(),
            active: "active".into()
        }
    );
}

// ---------------------------------------------------------------------------------------------
// Resources: costs, domains, budgets.

#[test]
fn missing_cost_for_a_state_is_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "cost = { standby = 1.0, spinning_up = 20.0, active = 8.0 }",
        "cost = { standby = 1.0, active = 8.0 }",
    );
    let error = refused(&text);
    assert_eq!(error.field, "resources[power].cost");
    assert_eq!(
        error.problem,
        RackProblem::MissingCost {
            state: "spinning_up".into()
        }
    );
}

#[test]
fn unknown_state_in_a_cost_table_is_rejected_naming_the_resource() {
    let text = edit(
        MINIMAL_RACK,
        "cost = { standby = 1.0, spinning_up = 20.0, active = 8.0 }",
        "cost = { standby = 1.0, spinning_up = 20.0, active = 8.0, idle = 5.0 }",
    );
    let error = refused(&text);
    assert_eq!(error.field, "resources[power].cost");
    assert_eq!(
        error.problem,
        RackProblem::UnknownState {
            name: "idle".into()
        }
    );
}

#[test]
fn duplicate_resource_is_rejected() {
    let text = edit(MINIMAL_RACK, r#"name = "link""#, r#"name = "power""#);
    let error = refused(&text);
    assert_eq!(error.field, "resources[power]");
    assert_eq!(
        error.problem,
        RackProblem::Duplicate {
            what: "resource",
            name: "power".into()
        }
    );
}

#[test]
fn more_than_the_resource_limit_is_rejected() {
    let extra: String = (0..64)
        .map(|i| {
            format!(
                "[[resources]]\nname = \"extra{i}\"\nkind = \"soft\"\n\
                 cost = {{ standby = 0, spinning_up = 0, active = 1 }}\n\
                 domains = {{ by = [\"tray\"] }}\nbudget = 1\n\n"
            )
        })
        .collect();
    let text = edit(
        MINIMAL_RACK,
        "[[failure_domains]]",
        &format!("{extra}[[failure_domains]]"),
    );
    let error = refused(&text);
    assert_eq!(error.field, "resources");
    assert_eq!(
        error.problem,
        RackProblem::TooMany {
            what: "resources",
            limit: 64
        }
    );
}

#[test]
fn unknown_axis_in_by_is_rejected_naming_the_axis() {
    let text = edit(
        MINIMAL_RACK,
        "domains = { by = [\"tray/2\"] }",
        "domains = { by = [\"shelf/2\"] }",
    );
    let error = refused(&text);
    assert_eq!(error.field, "resources[link].domains.by");
    assert_eq!(
        error.problem,
        RackProblem::UnknownAxis {
            name: "shelf".into()
        }
    );
}

#[test]
fn zero_divisor_in_by_is_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "domains = { by = [\"tray/2\"] }",
        "domains = { by = [\"tray/0\"] }",
    );
    let error = refused(&text);
    assert_eq!(error.field, "resources[link].domains.by");
    assert_eq!(
        error.problem,
        RackProblem::OutOfRange {
            value: "tray/0".into(),
            expected: "`axis` or `axis/positive-integer`"
        }
    );
}

#[test]
fn both_by_and_lists_are_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "domains = { by = [\"tray/2\"] }",
        "domains = { by = [\"tray/2\"], lists = [[0, 1, 2, 3, 4, 5, 6, 7]] }",
    );
    let error = refused(&text);
    assert_eq!(error.field, "resources[link].domains");
    assert_eq!(
        error.problem,
        RackProblem::Missing {
            what: "exactly one of `by` or `lists`"
        }
    );
}

#[test]
fn disk_missing_from_explicit_domains_is_rejected_naming_disk_and_resource() {
    let text = edit(
        MINIMAL_RACK,
        "domains = { by = [\"tray\"] }\nbudget = 23.0",
        "domains = { lists = [[0, 1, 2], [4, 5, 6]] }\nbudget = 23.0",
    );
    let error = refused(&text);
    assert_eq!(error.field, "resources[power].domains");
    assert_eq!(
        error.problem,
        RackProblem::DiskAbsentFromDomains {
            disk_id: 3,
            resource: "power".into()
        }
    );
    assert!(error.to_string().contains("disk 3 is in no domain"));
}

#[test]
fn domains_of_unequal_size_are_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "domains = { by = [\"tray\"] }\nbudget = 23.0",
        "domains = { lists = [[0, 1, 2, 3, 4], [5, 6, 7]] }\nbudget = 23.0",
    );
    let error = refused(&text);
    assert_eq!(error.field, "resources[power].domains");
    assert_eq!(
        error.problem,
        RackProblem::UnequalDomainSizes {
            first_size: 5,
            other: 1,
            other_size: 3
        }
    );
}

#[test]
fn divisor_that_does_not_divide_the_axis_gives_unequal_domains() {
    // slot/3 over slots 0..4 groups {0, 1, 2} and {3}.
    let text = edit(
        MINIMAL_RACK,
        "domains = { by = [\"tray\"] }\nannual_failure_rate = 0.005",
        "domains = { by = [\"tray\", \"slot/3\"] }\nannual_failure_rate = 0.005",
    );
    let error = refused(&text);
    assert_eq!(error.field, "failure_domains[tray].domains");
    assert_eq!(
        error.problem,
        RackProblem::UnequalDomainSizes {
            first_size: 3,
            other: 1,
            other_size: 1
        }
    );
}

#[test]
fn disk_in_two_domains_is_rejected_naming_the_disk_and_both_domains() {
    let text = edit(
        MINIMAL_RACK,
        "domains = { by = [\"tray\"] }\nbudget = 23.0",
        "domains = { lists = [[0, 1, 2, 3], [3, 4, 5, 6]] }\nbudget = 23.0",
    );
    let error = refused(&text);
    assert_eq!(error.field, "resources[power].domains");
    assert_eq!(
        error.problem,
        RackProblem::DiskInTwoDomains {
            disk_id: 3,
            first: 0,
            second: 1
        }
    );
}

#[test]
fn unknown_disk_id_in_lists_is_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "domains = { by = [\"tray\"] }\nbudget = 23.0",
        "domains = { lists = [[0, 1, 2, 3], [4, 5, 6, 8]] }\nbudget = 23.0",
    );
    let error = refused(&text);
    assert_eq!(error.field, "resources[power].domains.lists");
    assert_eq!(error.problem, RackProblem::UnknownDisk { id: 8 });
}

#[test]
fn empty_domain_is_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "domains = { by = [\"tray\"] }\nbudget = 23.0",
        "domains = { lists = [[], [0, 1, 2, 3, 4, 5, 6, 7]] }\nbudget = 23.0",
    );
    let error = refused(&text);
    assert_eq!(error.field, "resources[power].domains");
    assert_eq!(error.problem, RackProblem::EmptyDomain { index: 0 });
}

#[test]
fn budget_that_lets_no_disk_become_active_is_rejected() {
    let text = edit(MINIMAL_RACK, "budget = 23.0", "budget = 22.9");
    let error = refused(&text);
    assert_eq!(error.field, "resources[power].budget");
    assert_eq!(
        error.problem,
        RackProblem::BudgetAdmitsNoDisk {
            budget: "22.9".into(),
            domain_size: 4,
            resting: "4".into(),
            state: "spinning_up".into(),
            needed: "23".into()
        }
    );
}

#[test]
fn resting_state_that_is_not_the_cheapest_of_a_hard_resource_is_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "cost = { standby = 1.0, spinning_up = 20.0, active = 8.0 }",
        "cost = { standby = 1.0, spinning_up = 20.0, active = 0.5 }",
    );
    let error = refused(&text);
    assert_eq!(error.field, "resources[power].cost");
    assert_eq!(
        error.problem,
        RackProblem::RestingNotCheapest {
            state: "active".into(),
            cost: "0.5".into(),
            resting_cost: "1".into()
        }
    );
}

#[test]
fn upper_bound_below_budget_is_rejected() {
    let text = edit(MINIMAL_RACK, "upper_bound = 80.0", "upper_bound = 20.0");
    let error = refused(&text);
    assert_eq!(error.field, "resources[power].upper_bound");
    assert_eq!(
        error.problem,
        RackProblem::UpperBoundBelowBudget {
            upper_bound: "20".into(),
            budget: "23".into()
        }
    );
}

#[test]
fn unknown_resource_kind_is_a_syntax_error() {
    let text = edit(MINIMAL_RACK, "kind = \"hard\"", "kind = \"firm\"");
    let error = refused(&text);
    assert!(matches!(error.problem, RackProblem::Syntax { .. }));
    let line = line_of(&text, "kind = \"firm\"");
    assert!(error.field.starts_with(&format!("line {line} ")));
}

// ---------------------------------------------------------------------------------------------
// Failure domains, disk model, targets.

#[test]
fn duplicate_failure_domain_is_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "[disk]\n",
        "[[failure_domains]]\nname = \"tray\"\ndomains = { by = [\"slot\"] }\nannual_failure_rate = 0.01\n\n[disk]\n",
    );
    let error = refused(&text);
    assert_eq!(error.field, "failure_domains[tray]");
    assert_eq!(
        error.problem,
        RackProblem::Duplicate {
            what: "failure domain",
            name: "tray".into()
        }
    );
}

#[test]
fn failure_rate_above_one_is_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "annual_failure_rate = 0.005",
        "annual_failure_rate = 1.5",
    );
    let error = refused(&text);
    assert_eq!(error.field, "failure_domains[tray].annual_failure_rate");
    assert!(matches!(error.problem, RackProblem::OutOfRange { .. }));
}

#[test]
fn zero_disk_bandwidth_is_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "bandwidth_mb_per_s = 150",
        "bandwidth_mb_per_s = 0",
    );
    let error = refused(&text);
    assert_eq!(error.field, "disk.bandwidth_mb_per_s");
    assert_eq!(
        error.problem,
        RackProblem::OutOfRange {
            value: "0".into(),
            expected: "a positive finite number"
        }
    );
}

#[test]
fn zero_capacity_is_rejected() {
    let text = edit(MINIMAL_RACK, "capacity_tb = 4.0", "capacity_tb = 0");
    let error = refused(&text);
    assert_eq!(error.field, "disk.capacity_tb");
    assert!(matches!(error.problem, RackProblem::OutOfRange { .. }));
}

#[test]
fn inverted_distribution_range_is_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "mount_latency_s = { distribution = \"uniform\", min = 1.0, max = 4.0 }",
        "mount_latency_s = { distribution = \"uniform\", min = 4.0, max = 1.0 }",
    );
    let error = refused(&text);
    assert_eq!(error.field, "disk.mount_latency_s");
    assert_eq!(
        error.problem,
        RackProblem::InvertedRange { min: 4.0, max: 1.0 }
    );
}

#[test]
fn a_latency_that_can_draw_more_than_a_day_is_refused_and_a_day_is_accepted() {
    // A draw above the limit would overflow the simulator's and the store's µs clocks.
    let cases = [
        (
            "spin_up_latency_s = { distribution = \"normal\", mean = 10.0, stddev = 1.0, min = 8.0, max = 14.0 }",
            "spin_up_latency_s = { distribution = \"normal\", mean = 10.0, stddev = 1.0, min = 8.0, max = 1e15 }",
            "disk.spin_up_latency_s",
        ),
        (
            "mount_latency_s = { distribution = \"uniform\", min = 1.0, max = 4.0 }",
            "mount_latency_s = { distribution = \"uniform\", min = 1.0, max = 86400.5 }",
            "disk.mount_latency_s",
        ),
        (
            "unmount_latency_s = 0.5",
            "unmount_latency_s = 1e300",
            "disk.unmount_latency_s",
        ),
        (
            "unmount_latency_s = 0.5",
            "unmount_latency_s = 0.5\nmount_latency_high_load_s = 100000",
            "disk.mount_latency_high_load_s",
        ),
    ];
    for (old, new, field) in cases {
        let error = refused(&edit(MINIMAL_RACK, old, new));
        assert_eq!(error.field, field);
        assert!(
            matches!(error.problem, RackProblem::OutOfRange { .. }),
            "{error}"
        );
    }
    let a_day = edit(
        MINIMAL_RACK,
        "mount_latency_s = { distribution = \"uniform\", min = 1.0, max = 4.0 }",
        "mount_latency_s = { distribution = \"uniform\", min = 1.0, max = 86400.0 }",
    );
    let rack = parse_rack(SOURCE, &a_day).expect("a day is the limit, not past it");
    assert_eq!(
        rack.disk_model.mount_latency_s,
        Distribution::Uniform {
            min: 1.0,
            max: 86_400.0
        }
    );
}

#[test]
fn a_seek_over_ten_minutes_is_refused() {
    let error = refused(&edit(MINIMAL_RACK, "seek_ms = 4.2", "seek_ms = 1e18"));
    assert_eq!(error.field, "disk.seek_ms");
    assert!(matches!(error.problem, RackProblem::OutOfRange { .. }));
    let ten_minutes = edit(MINIMAL_RACK, "seek_ms = 4.2", "seek_ms = 600000");
    assert_eq!(
        parse_rack(SOURCE, &ten_minutes).unwrap().disk_model.seek_ms,
        600_000.0
    );
}

#[test]
fn capacity_overhead_of_one_is_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "capacity_overhead_max = 0.5",
        "capacity_overhead_max = 1.0",
    );
    let error = refused(&text);
    assert_eq!(error.field, "targets.capacity_overhead_max");
    assert!(matches!(error.problem, RackProblem::OutOfRange { .. }));
}

#[test]
fn zero_io_concurrency_target_is_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "io_concurrency_target = 1",
        "io_concurrency_target = 0",
    );
    let error = refused(&text);
    assert_eq!(error.field, "targets.io_concurrency_target");
    assert!(matches!(error.problem, RackProblem::OutOfRange { .. }));
}

#[test]
fn zero_rebuild_share_is_rejected() {
    let text = edit(MINIMAL_RACK, "rebuild_share = 0.5", "rebuild_share = 0");
    let error = refused(&text);
    assert_eq!(error.field, "targets.fairness.rebuild_share");
    assert!(matches!(error.problem, RackProblem::OutOfRange { .. }));
}

#[test]
fn zero_queue_depth_is_rejected() {
    let text = edit(MINIMAL_RACK, "max_queue_depth = 100", "max_queue_depth = 0");
    let error = refused(&text);
    assert_eq!(error.field, "targets.fairness.max_queue_depth");
    assert!(matches!(error.problem, RackProblem::OutOfRange { .. }));
}

#[test]
fn concurrent_requests_per_class_defaults_to_one_and_outside_one_to_sixty_four_is_rejected() {
    let rack = parse_rack("minimal.toml", MINIMAL_RACK).unwrap();
    assert_eq!(rack.targets.fairness.concurrent_requests_per_class, 1);
    let with = |count: &str| {
        edit(
            MINIMAL_RACK,
            "max_queue_depth = 100",
            &format!("max_queue_depth = 100\nconcurrent_requests_per_class = {count}"),
        )
    };
    let four = parse_rack("four.toml", &with("4")).unwrap();
    assert_eq!(four.targets.fairness.concurrent_requests_per_class, 4);
    // The default is left out of the fingerprint, so racks written before the setting existed
    // keep theirs (and the layouts planned for them still bind); another value changes it.
    let one = parse_rack("one.toml", &with("1")).unwrap();
    assert_eq!(one.fingerprint(), rack.fingerprint());
    assert!(
        !serde_json::to_string(&rack)
            .unwrap()
            .contains("concurrent_requests")
    );
    assert_ne!(four.fingerprint(), rack.fingerprint());
    for bad in ["0", "65"] {
        let error = refused(&with(bad));
        assert_eq!(
            error.field,
            "targets.fairness.concurrent_requests_per_class"
        );
        assert!(matches!(error.problem, RackProblem::OutOfRange { .. }));
    }
}

#[test]
fn stagger_switches_min_queue_is_absent_by_default_and_outside_one_to_the_queue_depth_is_rejected()
{
    let rack = parse_rack("minimal.toml", MINIMAL_RACK).unwrap();
    assert_eq!(rack.targets.fairness.stagger_switches_min_queue, None);
    let with = |count: &str| {
        edit(
            MINIMAL_RACK,
            "max_queue_depth = 100",
            &format!("max_queue_depth = 100\nstagger_switches_min_queue = {count}"),
        )
    };
    for good in [1, 100] {
        let staggered = parse_rack("staggered.toml", &with(&good.to_string())).unwrap();
        assert_eq!(
            staggered.targets.fairness.stagger_switches_min_queue,
            Some(good)
        );
        // Absent is left out of the fingerprint (older racks keep theirs); a value changes it.
        assert_ne!(staggered.fingerprint(), rack.fingerprint());
    }
    assert!(!serde_json::to_string(&rack).unwrap().contains("stagger"));
    for bad in ["0", "101"] {
        let error = refused(&with(bad));
        assert_eq!(error.field, "targets.fairness.stagger_switches_min_queue");
        assert!(matches!(error.problem, RackProblem::OutOfRange { .. }));
    }
}

#[test]
fn disk_listed_twice_in_one_domain_is_rejected_as_a_duplicate() {
    let text = edit(
        MINIMAL_RACK,
        "domains = { by = [\"tray\"] }\nbudget = 23.0",
        "domains = { lists = [[0, 1, 2, 2], [3, 4, 5, 6]] }\nbudget = 23.0",
    );
    let error = refused(&text);
    assert_eq!(error.field, "resources[power].domains.lists");
    assert_eq!(
        error.problem,
        RackProblem::Duplicate {
            what: "disk id within one domain",
            name: "2".into()
        }
    );
}

#[test]
fn unknown_key_inside_a_distribution_is_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "mount_latency_s = { distribution = \"uniform\", min = 1.0, max = 4.0 }",
        "mount_latency_s = { distribution = \"uniform\", min = 1.0, max = 4.0, mean = 9.0 }",
    );
    assert!(matches!(refused(&text).problem, RackProblem::Syntax { .. }));
}

#[test]
fn normal_distribution_with_mean_outside_its_range_is_rejected() {
    let text = edit(
        MINIMAL_RACK,
        "mount_latency_s = { distribution = \"uniform\", min = 1.0, max = 4.0 }",
        "mount_latency_s = { distribution = \"normal\", mean = 9.0, stddev = 1.0, min = 1.0, max = 4.0 }",
    );
    let error = refused(&text);
    assert_eq!(error.field, "disk.mount_latency_s.mean");
    assert!(matches!(error.problem, RackProblem::OutOfRange { .. }));
}

#[test]
fn transient_state_without_a_way_out_is_rejected() {
    let text = format!("{MINIMAL_RACK}\n[[states]]\nname = \"parking\"\ntransient = true\n");
    let error = refused(&text);
    assert_eq!(error.field, "states[parking]");
    assert_eq!(
        error.problem,
        RackProblem::TransientWithoutExit {
            state: "parking".into()
        }
    );
}

#[test]
fn high_load_mount_latency_is_optional_and_checked_like_the_others() {
    let rack = parse_rack("minimal.toml", MINIMAL_RACK).unwrap();
    assert_eq!(rack.disk_model.mount_latency_high_load_s, None);
    let base = "mount_latency_s = { distribution = \"uniform\", min = 1.0, max = 4.0 }";
    let good = edit(
        MINIMAL_RACK,
        base,
        &format!(
            "{base}\nmount_latency_high_load_s = {{ distribution = \"uniform\", min = 1.0, max = 9.0 }}"
        ),
    );
    let rack = parse_rack("high-load.toml", &good).unwrap();
    assert_eq!(
        rack.disk_model.mount_latency_high_load_s,
        Some(spinwise_model::Distribution::Uniform { min: 1.0, max: 9.0 })
    );
    let inverted = edit(
        MINIMAL_RACK,
        base,
        &format!(
            "{base}\nmount_latency_high_load_s = {{ distribution = \"uniform\", min = 9.0, max = 1.0 }}"
        ),
    );
    let error = refused(&inverted);
    assert_eq!(error.field, "disk.mount_latency_high_load_s");
    assert_eq!(
        error.problem,
        RackProblem::InvertedRange { min: 9.0, max: 1.0 }
    );
    let negative = edit(
        MINIMAL_RACK,
        base,
        &format!("{base}\nmount_latency_high_load_s = -2"),
    );
    assert_eq!(refused(&negative).field, "disk.mount_latency_high_load_s");
}
