//! Issue 31: no test of this crate sleeps on the wall clock to wait for the code under test.
//! Time the code waits on is moved with a `ManualClock`; the few remaining wall-clock sleeps
//! each say why under a `// wall-clock:` comment (see `support/wall_clock.rs` in
//! spinwise-store's tests, shared by the store and S3 crates).

use crate::support::wall_clock;

#[test]
fn no_test_sleeps_on_the_wall_clock_without_saying_why() {
    wall_clock::assert_no_unexplained_sleeps(env!("CARGO_MANIFEST_DIR"));
}
