//! Weighted fair sharing between the rebuild and client queues (Pelican §2.3, "Rate limiting"):
//! the share is validated, an empty queue hands the other everything, ties and repeated runs are
//! deterministic, share 1.0 is strict priority for rebuild, and, over long random sequences with
//! both queues backlogged, the rebuild queue's served cost stays within one maximum request cost
//! of its share — exactly −w·L_client ≤ W_rebuild − w·T ≤ (1 − w)·L_rebuild at every step. A queue
//! that was empty banks no credit: over any interval with both backlogged the SFQ bound holds.
//!
//! Proptest runs from a fixed seed; a failure prints the shrunk case.

use proptest::prelude::*;
use proptest::test_runner::{Config, RngAlgorithm, TestCaseError, TestRng, TestRunner};
use spinwise_sched::fair::{FairShare, FairShareError, PARTS_PER_MILLION, Queue};

const GIGABYTE: u64 = 1_000_000_000;

fn runner(cases: u32) -> TestRunner {
    let config = Config {
        cases,
        failure_persistence: None,
        max_shrink_iters: 4_000,
        ..Config::default()
    };
    TestRunner::new_with_rng(config, TestRng::deterministic_rng(RngAlgorithm::ChaCha))
}

fn run<S: Strategy>(
    cases: u32,
    strategy: S,
    property: impl Fn(S::Value) -> Result<(), TestCaseError>,
) {
    if let Err(error) = runner(cases).run(&strategy, property) {
        panic!("{error}");
    }
}

/// Serves `steps` requests with both queues always backlogged, costs drawn in turn from each
/// queue's list; returns the choices.
fn serve_backlogged(
    fair: &mut FairShare,
    rebuild: &[u64],
    client: &[u64],
    steps: usize,
) -> Vec<Queue> {
    let (mut next_rebuild, mut next_client) = (0, 0);
    (0..steps)
        .map(|_| {
            let queue = fair.choose(true, true).expect("both queues are waiting");
            let cost = match queue {
                Queue::Rebuild => {
                    next_rebuild += 1;
                    rebuild[(next_rebuild - 1) % rebuild.len()]
                }
                Queue::Client => {
                    next_client += 1;
                    client[(next_client - 1) % client.len()]
                }
            };
            fair.charge(queue, cost);
            queue
        })
        .collect()
}

// ---------------------------------------------------------------------------------------------
// The share.

#[test]
fn the_share_must_be_a_number_in_zero_exclusive_to_one_inclusive() {
    assert_eq!(FairShare::new(f64::NAN), Err(FairShareError::NotANumber));
    for share in [
        0.0,
        -0.0,
        -0.5,
        1.000_001,
        2.0,
        f64::INFINITY,
        f64::NEG_INFINITY,
    ] {
        assert_eq!(
            FairShare::new(share),
            Err(FairShareError::OutOfRange { share }),
            "{share}"
        );
    }
    for share in [0.000_001, 0.01, 0.5, 0.999_999, 1.0] {
        assert!(FairShare::new(share).is_ok(), "{share}");
    }
}

#[test]
fn a_share_below_one_part_per_million_is_refused_rather_than_rounded_to_zero() {
    let share = 0.000_000_4;
    assert_eq!(
        FairShare::new(share),
        Err(FairShareError::OutOfRange { share })
    );
    let message = FairShare::new(share).unwrap_err().to_string();
    assert!(message.contains("(0, 1]"), "{message}");
}

#[test]
fn the_share_is_kept_in_parts_per_million() {
    let fair = FairShare::new(0.5).unwrap();
    assert_eq!(fair.rebuild_weight_ppm(), 500_000);
    assert_eq!(fair.rebuild_share(), 0.5);
    assert_eq!(
        FairShare::new(0.123_456_7).unwrap().rebuild_weight_ppm(),
        123_457
    );
    assert_eq!(
        FairShare::from_parts_per_million(PARTS_PER_MILLION).rebuild_share(),
        1.0
    );
}

#[test]
#[should_panic(expected = "outside 1..=1,000,000")]
fn a_weight_of_zero_parts_per_million_is_a_programming_error() {
    FairShare::from_parts_per_million(0);
}

// ---------------------------------------------------------------------------------------------
// Choices.

#[test]
fn with_nothing_waiting_nothing_is_chosen() {
    assert_eq!(FairShare::new(0.5).unwrap().choose(false, false), None);
}

#[test]
fn ties_go_to_the_rebuild_queue() {
    let fair = FairShare::new(0.5).unwrap();
    assert_eq!(fair.choose(true, true), Some(Queue::Rebuild));
    // Tiny rebuild weight: still first at the very start, where both tags are zero.
    assert_eq!(
        FairShare::new(0.000_001).unwrap().choose(true, true),
        Some(Queue::Rebuild)
    );
}

#[test]
fn an_even_share_with_equal_requests_alternates_starting_with_rebuild() {
    let mut fair = FairShare::new(0.5).unwrap();
    let choices = serve_backlogged(&mut fair, &[GIGABYTE], &[GIGABYTE], 6);
    use Queue::{Client, Rebuild};
    assert_eq!(choices, [Rebuild, Client, Rebuild, Client, Rebuild, Client]);
    assert_eq!(fair.served_cost(Rebuild), 3 * u128::from(GIGABYTE));
    assert_eq!(fair.served_cost(Client), 3 * u128::from(GIGABYTE));
}

#[test]
fn a_quarter_share_serves_one_rebuild_request_per_three_client_requests_of_the_same_size() {
    let mut fair = FairShare::new(0.25).unwrap();
    let choices = serve_backlogged(&mut fair, &[GIGABYTE], &[GIGABYTE], 400);
    for window in choices.chunks(4) {
        let rebuilds = window
            .iter()
            .filter(|queue| **queue == Queue::Rebuild)
            .count();
        assert_eq!(rebuilds, 1, "{choices:?}");
    }
}

#[test]
fn a_share_is_of_cost_not_of_requests() {
    // Rebuild reads 1 GB stripe stacks, clients 100 MB objects: at 50% the client gets ten
    // requests per rebuild request.
    let mut fair = FairShare::new(0.5).unwrap();
    serve_backlogged(&mut fair, &[GIGABYTE], &[GIGABYTE / 10], 11_000);
    let rebuild = fair.served_cost(Queue::Rebuild);
    let client = fair.served_cost(Queue::Client);
    assert!(
        rebuild.abs_diff(client) <= u128::from(GIGABYTE),
        "{rebuild} vs {client}"
    );
}

#[test]
fn a_rebuild_of_x_bytes_at_share_w_finishes_after_about_x_over_w_bytes_of_service() {
    // Pelican: time to repair ≈ x / t × 1 / w. In service: x / w bytes of both queues, within one
    // request.
    for (share, rebuild_bytes) in [
        (0.5, 400 * GIGABYTE),
        (0.25, 300 * GIGABYTE),
        (0.1, 50 * GIGABYTE),
    ] {
        let mut fair = FairShare::new(share).unwrap();
        let mut total = 0u64;
        while fair.served_cost(Queue::Rebuild) < u128::from(rebuild_bytes) {
            let queue = fair.choose(true, true).unwrap();
            fair.charge(queue, GIGABYTE);
            total += GIGABYTE;
        }
        let expected = rebuild_bytes as f64 / share;
        assert!(
            (total as f64 - expected).abs() <= GIGABYTE as f64 / share,
            "share {share}: {total} bytes served, expected about {expected}"
        );
    }
}

#[test]
fn share_one_serves_clients_only_while_rebuild_is_empty_and_starves_nothing_else() {
    let mut fair = FairShare::new(1.0).unwrap();
    for _ in 0..100 {
        assert_eq!(fair.choose(true, true), Some(Queue::Rebuild));
        fair.charge(Queue::Rebuild, GIGABYTE);
    }
    // Rebuild empty: the client gets everything.
    for _ in 0..100 {
        assert_eq!(fair.choose(false, true), Some(Queue::Client));
        fair.charge(Queue::Client, GIGABYTE);
    }
    // Rebuild is back: it goes first again at once, even against a zero-cost client request.
    assert_eq!(fair.choose(true, true), Some(Queue::Rebuild));
    fair.charge(Queue::Client, 0);
    assert_eq!(fair.choose(true, true), Some(Queue::Rebuild));
}

#[test]
fn a_queue_that_was_empty_does_not_bank_credit_while_the_other_was_served() {
    let mut fair = FairShare::new(0.5).unwrap();
    // Rebuild alone for 100 GB.
    for _ in 0..100 {
        assert_eq!(fair.choose(true, false), Some(Queue::Rebuild));
        fair.charge(Queue::Rebuild, GIGABYTE);
    }
    // The client arrives: it competes from now, it does not get 100 GB in a row.
    let choices = serve_backlogged(&mut fair, &[GIGABYTE], &[GIGABYTE], 10);
    let clients = choices
        .iter()
        .filter(|queue| **queue == Queue::Client)
        .count();
    assert_eq!(clients, 5, "{choices:?}");
}

#[test]
fn charging_the_queue_not_chosen_forfeits_the_chosen_queues_turn_and_sharing_resumes() {
    let mut fair = FairShare::new(0.5).unwrap();
    assert_eq!(fair.choose(true, true), Some(Queue::Rebuild));
    // The rebuild request's group cannot spin up yet; the scheduler serves a client request.
    fair.charge(Queue::Client, GIGABYTE);
    let choices = serve_backlogged(&mut fair, &[GIGABYTE], &[GIGABYTE], 1_000);
    let rebuilds = choices
        .iter()
        .filter(|queue| **queue == Queue::Rebuild)
        .count();
    assert!((499..=501).contains(&rebuilds), "{rebuilds}");
}

#[test]
fn a_queue_skipped_for_group_affinity_keeps_its_turns_and_gets_them_back_first() {
    let mut fair = FairShare::new(0.5).unwrap();
    fair.charge(Queue::Rebuild, GIGABYTE);
    assert_eq!(fair.choose(true, true), Some(Queue::Client));
    // The client's head is for another group: ten rebuild requests are served out of turn.
    for _ in 0..10 {
        fair.charge_out_of_turn(Queue::Rebuild, GIGABYTE);
        assert_eq!(fair.choose(true, true), Some(Queue::Client));
    }
    // Once it can be served, the client gets the eleven turns it is owed before rebuild again.
    let choices = serve_backlogged(&mut fair, &[GIGABYTE], &[GIGABYTE], 12);
    assert_eq!(choices[..11], [Queue::Client; 11], "{choices:?}");
    assert_eq!(choices[11], Queue::Rebuild, "{choices:?}");
    // Even after the client's 11 turns; the 12th choice is rebuild's next request.
    assert_eq!(
        fair.served_cost(Queue::Rebuild),
        fair.served_cost(Queue::Client) + u128::from(GIGABYTE)
    );
}

#[test]
fn charging_the_other_queue_in_turn_instead_forfeits_the_skipped_turns() {
    // The rule before charge_out_of_turn: the skipped client's lag is dropped.
    let mut fair = FairShare::new(0.5).unwrap();
    fair.charge(Queue::Rebuild, GIGABYTE);
    for _ in 0..10 {
        fair.charge(Queue::Rebuild, GIGABYTE);
    }
    let choices = serve_backlogged(&mut fair, &[GIGABYTE], &[GIGABYTE], 4);
    assert_eq!(choices[0], Queue::Client);
    assert!(choices.contains(&Queue::Rebuild), "{choices:?}");
}

// ---------------------------------------------------------------------------------------------
// Properties.

fn costs() -> impl Strategy<Value = Vec<u64>> {
    // Bytes, from a small object to a 64 GiB blob, with the odd empty request.
    let cost = prop_oneof![1 => Just(0u64), 3 => 1..=1u64 << 20, 6 => 1u64 << 20..=1u64 << 36];
    prop::collection::vec(cost, 1..40)
}

fn weight_ppm() -> impl Strategy<Value = u32> {
    prop_oneof![
        1 => Just(1u32),
        1 => Just(PARTS_PER_MILLION),
        1 => Just(PARTS_PER_MILLION / 2),
        6 => 1..=PARTS_PER_MILLION,
    ]
}

#[test]
fn with_both_queues_backlogged_the_rebuild_share_stays_within_one_maximum_request_cost_of_its_weight()
 {
    run(
        500,
        (weight_ppm(), costs(), costs()),
        |(weight, rebuild, client)| {
            let mut fair = FairShare::from_parts_per_million(weight);
            let (phi_rebuild, phi_client) =
                (i128::from(weight), i128::from(PARTS_PER_MILLION - weight));
            let (mut next_rebuild, mut next_client) = (0usize, 0usize);
            let (mut served_rebuild, mut served_client) = (0i128, 0i128);
            let (mut largest_rebuild, mut largest_client) = (0i128, 0i128);
            for step in 0..3_000 {
                let queue = fair.choose(true, true).unwrap();
                let cost = match queue {
                    Queue::Rebuild => {
                        next_rebuild += 1;
                        rebuild[(next_rebuild - 1) % rebuild.len()]
                    }
                    Queue::Client => {
                        next_client += 1;
                        client[(next_client - 1) % client.len()]
                    }
                };
                fair.charge(queue, cost);
                let cost = i128::from(cost);
                match queue {
                    Queue::Rebuild => {
                        served_rebuild += cost;
                        largest_rebuild = largest_rebuild.max(cost);
                    }
                    Queue::Client => {
                        served_client += cost;
                        largest_client = largest_client.max(cost);
                    }
                }
                // Exactly, in parts per million: −w·L_c ≤ W_r − w·T ≤ (1 − w)·L_r.
                let total = served_rebuild + served_client;
                let excess = served_rebuild * i128::from(PARTS_PER_MILLION) - phi_rebuild * total;
                prop_assert!(
                    -largest_client * phi_rebuild <= excess
                        && excess <= largest_rebuild * phi_client,
                    "step {}: rebuild served {} of {}, share {} ppm, largest requests {} / {}",
                    step,
                    served_rebuild,
                    total,
                    weight,
                    largest_rebuild,
                    largest_client
                );
                // The headline: within one maximum request cost of the ideal share.
                let largest = largest_rebuild.max(largest_client) * i128::from(PARTS_PER_MILLION);
                prop_assert!(excess.abs() <= largest);
            }
            prop_assert_eq!(fair.served_cost(Queue::Rebuild) as i128, served_rebuild);
            prop_assert_eq!(fair.served_cost(Queue::Client) as i128, served_client);
            Ok(())
        },
    );
}

/// A step: which queues are waiting, and the cost of the request served if one is chosen.
fn waiting_steps() -> impl Strategy<Value = Vec<(bool, bool, u64)>> {
    // Runs of states so that both-backlogged intervals of some length occur.
    let run = (any::<bool>(), any::<bool>(), 1..60usize, 1..=1u64 << 32)
        .prop_map(|(rebuild, client, length, cost)| vec![(rebuild, client, cost); length]);
    prop::collection::vec(run, 1..30).prop_map(|runs| runs.concat())
}

#[test]
fn an_empty_queue_gives_the_other_everything() {
    run(300, (weight_ppm(), waiting_steps()), |(weight, steps)| {
        let mut fair = FairShare::from_parts_per_million(weight);
        for (rebuild_waiting, client_waiting, cost) in steps {
            let choice = fair.choose(rebuild_waiting, client_waiting);
            match (rebuild_waiting, client_waiting) {
                (false, false) => prop_assert_eq!(choice, None),
                (true, false) => prop_assert_eq!(choice, Some(Queue::Rebuild)),
                (false, true) => prop_assert_eq!(choice, Some(Queue::Client)),
                (true, true) => prop_assert!(choice.is_some()),
            }
            if let Some(queue) = choice {
                fair.charge(queue, cost);
            }
        }
        Ok(())
    });
}

#[test]
fn over_any_interval_with_both_queues_backlogged_the_sfq_fairness_bound_holds() {
    run(300, (weight_ppm(), waiting_steps()), |(weight, steps)| {
        let mut fair = FairShare::from_parts_per_million(weight);
        let (phi_rebuild, phi_client) =
            (i128::from(weight), i128::from(PARTS_PER_MILLION - weight));
        // Service since the current both-backlogged interval began.
        let (mut rebuild, mut client) = (0i128, 0i128);
        // The largest request each queue has had, ever (the L of the SFQ theorem): a queue that
        // comes back may be owed up to the other's last request, which started before it returned.
        let (mut largest_rebuild, mut largest_client) = (0i128, 0i128);
        for (step, (rebuild_waiting, client_waiting, cost)) in steps.into_iter().enumerate() {
            let cost = i128::from(cost);
            // Every request in a run costs the same, so a waiting queue's head costs `cost`.
            if rebuild_waiting {
                largest_rebuild = largest_rebuild.max(cost);
            }
            if client_waiting {
                largest_client = largest_client.max(cost);
            }
            if !(rebuild_waiting && client_waiting) {
                (rebuild, client) = (0, 0);
            }
            let Some(queue) = fair.choose(rebuild_waiting, client_waiting) else {
                continue;
            };
            fair.charge(queue, cost as u64);
            if !(rebuild_waiting && client_waiting) {
                continue;
            }
            match queue {
                Queue::Rebuild => rebuild += cost,
                Queue::Client => client += cost,
            }
            // |W_r / φ_r − W_c / φ_c| ≤ L_r / φ_r + L_c / φ_c, multiplied by φ_r·φ_c.
            let gap = (rebuild * phi_client - client * phi_rebuild).abs();
            prop_assert!(
                gap <= largest_rebuild * phi_client + largest_client * phi_rebuild,
                "step {}: rebuild {} and client {} since both became backlogged, share {} ppm",
                step,
                rebuild,
                client,
                weight
            );
        }
        Ok(())
    });
}

#[test]
fn the_same_inputs_give_the_same_choices() {
    run(200, (weight_ppm(), waiting_steps()), |(weight, steps)| {
        let replay = |steps: &[(bool, bool, u64)]| {
            let mut fair = FairShare::from_parts_per_million(weight);
            let choices: Vec<Option<Queue>> = steps
                .iter()
                .map(|&(rebuild_waiting, client_waiting, cost)| {
                    let choice = fair.choose(rebuild_waiting, client_waiting);
                    if let Some(queue) = choice {
                        fair.charge(queue, cost);
                    }
                    choice
                })
                .collect();
            (choices, fair)
        };
        let (first_choices, first_state) = replay(&steps);
        let (second_choices, second_state) = replay(&steps);
        prop_assert_eq!(first_choices, second_choices);
        prop_assert_eq!(first_state, second_state);
        Ok(())
    });
}
