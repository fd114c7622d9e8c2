//! Every integration test of spinwise-cli, one module per former test file, built as one
//! binary: each test binary links the crate and all its dependencies again, and with one
//! binary per file that linking was most of CI's build time.

mod bad_input;
mod bench;
mod common;
mod design;
mod experiment;
mod explore;
mod extreme_values;
mod hostile_inputs;
mod one_owner;
mod plan;
mod presets_and_help;
mod s3_client_matrix;
mod s3_clients;
mod serve;
mod served_commands;
mod sim;
mod store_catalog_loss;
mod store_cli;
mod store_compact_faults;
mod store_faults;
mod store_memory;
mod store_migrate_cli;
mod store_rebuild_faults;
mod store_recover;
mod store_upkeep_cli;
mod store_warm_faults;
mod verify_targets;
mod workload;
