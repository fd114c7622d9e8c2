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

/// Fills the queue budget of group 0 with `max_queue_depth` reads spread over `groups` (no group
/// spun up, so nothing is dequeued) and returns what the next read for group 0 gets.
fn one_read_past_the_depth(policy: &mut FullyProvisioned, groups: &[u32], depth: u32) -> bool {
    for id in 0..u64::from(depth) {
        let group = groups[id as usize % groups.len()];
        policy.submit(1, read(id, group)).unwrap();
    }
    policy.submit(2, read(u64::from(depth), 0)).is_ok()
}

#[test]
fn per_scheduler_queues_share_one_depth_over_the_groups_of_a_class() {
    let (_, layout) = &planned()[1];
    let classes = layout
        .classes
        .as_ref()
        .expect("the pelican layout has classes");
    let class_mates: Vec<u32> = (0..layout.groups.len() as u32)
        .filter(|&g| classes[g as usize] == classes[0])
        .collect();
    assert!(class_mates.len() > 1, "{class_mates:?}");
    let other_class = (0..layout.groups.len() as u32)
        .find(|&g| classes[g as usize] != classes[0])
        .expect("more than one class");
    let depth = layout.scheduler.max_queue_depth;
    // Per scheduler: the class's groups together fill the depth, so group 0 is refused ...
    let mut shared = FullyProvisioned::per_scheduler(layout);
    assert!(!one_read_past_the_depth(&mut shared, &class_mates, depth));
    // ... while another class still has its whole depth.
    assert!(shared.submit(3, read(u64::MAX, other_class)).is_ok());
    // Per group (Spinwise's default): the same reads leave group 0 room.
    let mut per_group = FullyProvisioned::new(layout);
    assert!(one_read_past_the_depth(&mut per_group, &class_mates, depth));
}

#[test]
fn a_served_read_frees_its_place_in_the_shared_depth() {
    let (_, layout) = &planned()[1];
    let depth = layout.scheduler.max_queue_depth;
    let mut policy = FullyProvisioned::per_scheduler(layout);
    let spin_ups = poll_all(&mut policy, 0);
    assert!(!one_read_past_the_depth(&mut policy, &[0], depth));
    policy.spun_up(SPIN_UP_US, 0);
    let served = poll_all(&mut policy, SPIN_UP_US);
    assert_eq!(served, [Action::Serve(read(0, 0))], "{spin_ups:?}");
    assert!(policy.submit(SPIN_UP_US, read(u64::MAX, 0)).is_ok());
}
