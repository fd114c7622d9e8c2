//! Pelican's fully provisioned baseline (`FullyProvisioned`), stepped by hand: every group spins
//! up once, and each group serves its own FIFO, one request at a time, with expedited reads ahead
//! of the standard ones and first-in-first-out among themselves.

use crate::common;

use common::{SPIN_UP_US, expedited, planned, poll_all, read, served_ids, settle};
use spinwise_sched::policy::{FullyProvisioned, Policy};
use spinwise_sched::scheduler::Action;

#[test]
fn expedited_reads_go_ahead_of_the_standard_reads_queued_for_their_group_in_arrival_order() {
    let (_, layout) = &planned()[1];
    let mut policy = FullyProvisioned::new(layout);
    let spin_ups = poll_all(&mut policy, 0);
    assert_eq!(spin_ups.len(), layout.groups.len());
    assert_eq!(spin_ups[0], Action::SpinUp(0));
    for request in [read(0, 0), read(1, 0), read(2, 0)] {
        policy.submit(1, request).unwrap();
    }
    for request in [expedited(3, 0), expedited(4, 0), read(5, 0)] {
        policy.submit(2, request).unwrap();
    }
    policy.spun_up(SPIN_UP_US, 0);
    let first = poll_all(&mut policy, SPIN_UP_US);
    assert_eq!(first, [Action::Serve(expedited(3, 0))]);
    // Arriving while the group serves, an expedited read queues behind the earlier one only.
    policy.submit(SPIN_UP_US + 1, expedited(6, 0)).unwrap();
    let unfinished = [&spin_ups[1..], &first[..]].concat();
    let rest = settle(&mut policy, SPIN_UP_US + 1, &unfinished);
    assert_eq!(served_ids(&rest), [4, 6, 0, 1, 2, 5], "{rest:?}");
}
