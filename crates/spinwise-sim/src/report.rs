//! The run's result ([`Report`]) and latency summaries, plus the trace hash that fingerprints the
//! exact sequence of processed events.
//!
//! Invariants: every duration field is in seconds and every summary of an empty sample is all
//! zeros (never NaN), so two runs' reports compare with `==` and serialize to plain JSON numbers.
//! Per-class time to first byte ([`Report::ttfb_by_class_s`]) partitions the all-class sample:
//! its counts sum to `time_to_first_byte_s.count` whenever the layout has classes.

use serde::Serialize;

/// Mean, median, 99th percentile and maximum of a sample, in seconds. Percentiles are
/// nearest-rank (the smallest value with at least p of the sample at or below it), so they are
/// always observed values.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Summary {
    pub count: u64,
    pub mean: f64,
    pub p50: f64,
    pub p99: f64,
    pub max: f64,
}

impl Summary {
    /// Summarises durations in µs (nearest-rank percentiles); reorders `samples_us` in place.
    /// The ranks are found by selection, not a full sort (a sort of every sample was ~3% of a
    /// simulated Pelican day); the values are those a sort would give.
    pub fn of_us(samples_us: &mut [u64]) -> Summary {
        if samples_us.is_empty() {
            return Summary::default();
        }
        let n = samples_us.len();
        let rank_index = |p: f64| ((p * n as f64).ceil() as usize).clamp(1, n) - 1;
        let (p50_index, p99_index) = (rank_index(0.50), rank_index(0.99));
        let sum_us: u128 = samples_us.iter().map(|s| u128::from(*s)).sum();
        let max_us = *samples_us.iter().max().expect("not empty");
        let (_, p50_us, above) = samples_us.select_nth_unstable(p50_index);
        let p50_us = *p50_us;
        // p99's rank is at or above p50's: select it among the samples above p50.
        let p99_us = if p99_index == p50_index {
            p50_us
        } else {
            *above.select_nth_unstable(p99_index - p50_index - 1).1
        };
        Summary {
            count: n as u64,
            mean: sum_us as f64 / n as f64 / 1e6,
            p50: p50_us as f64 / 1e6,
            p99: p99_us as f64 / 1e6,
            max: max_us as f64 / 1e6,
        }
    }
}

/// How a client read is submitted: the S3 restore tier it stands for.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum ReadTier {
    /// Submitted on arrival, in the scheduler's order.
    Standard,
    /// Submitted on arrival as `Kind::Expedited`, ahead of standard reads.
    Expedited,
    /// May wait for a spin-up other work causes (`crate::config::Deferral`).
    Bulk,
}

impl ReadTier {
    pub fn name(self) -> &'static str {
        match self {
            ReadTier::Standard => "standard",
            ReadTier::Expedited => "expedited",
            ReadTier::Bulk => "bulk",
        }
    }
}

/// One client read the summaries count (it arrived in the window and completed), as the
/// simulator served it: the per-request log behind [`Report`]'s latency summaries, for analyses
/// a summary cannot answer (which class waited, how reads overlapped). Times are µs from the
/// run's start; time to first byte is `first_byte_us − arrival_us`, service time
/// `last_byte_us − serve_us`, completion time `last_byte_us − arrival_us`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
pub struct RequestRecord {
    /// The scheduler's request id (increasing in submission order).
    pub id: u64,
    pub tier: ReadTier,
    /// The request's target: a group, or a placement set of the random layout.
    pub target: u32,
    /// The scheduler class of its group, when the layout has classes.
    pub class: Option<u32>,
    pub bytes: u64,
    pub arrival_us: u64,
    /// When the scheduler dispatched it (its group was up).
    pub serve_us: u64,
    pub first_byte_us: u64,
    pub last_byte_us: u64,
}

/// The rebuild after the configured disk failure.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct RebuildReport {
    /// The group that lost a disk, and that disk's rack id.
    pub group: u32,
    pub failed_disk: u32,
    /// Stripe stacks regenerated (one rebuild request each) and the bytes they hold.
    pub stacks: u64,
    pub bytes: u64,
    /// When the disk failed, from the run's start.
    pub failed_at_s: f64,
    /// Failure → last rebuild request served (Pelican Fig. 7's rebuild time).
    pub time_s: f64,
}

#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize)]
pub struct Power {
    pub mean: f64,
    pub peak: f64,
}

/// What one run measured. Counts and samples cover requests *arriving* in the window
/// `[warmup_hours, hours)`; rates, power and disk counts cover time inside it.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Report {
    pub rack: String,
    pub seed: u64,
    /// Requests a Pelican class (a Flamingo active group) served at once: the layout's
    /// `concurrent_requests_per_class` for those two policies, 1 for FP and the random layout.
    pub concurrent_requests: u32,
    /// Staggered switches in effect (Pelican's scheduler, the layout's
    /// `stagger_switches_min_queue`, and a network whose NICs classes share): that queue length.
    pub stagger_switches_min_queue: Option<u32>,
    /// Offered client requests per second (`SimConfig::offered_rate_per_s`).
    pub rate_per_s: f64,
    /// The measured window's length (a burst's: from 0 to the last event).
    pub window_s: f64,
    /// Requests that arrived in the window.
    pub requests: u64,
    /// Of those, served to the last byte (every accepted request is: the run drains).
    pub completed: u64,
    /// Of those, refused by the scheduler (a full class queue).
    pub rejected: u64,
    /// `rejected / requests` (0 without requests).
    pub reject_rate: f64,
    /// Arrival → first byte (after the seek).
    pub time_to_first_byte_s: Summary,
    /// The same, split by the scheduler class of the request's group (index = class), so the
    /// class a rebuild shares can be told from the others (Pelican Fig. 7). Empty when the
    /// layout has no classes or the targets are not the layout's groups (the random layout).
    pub ttfb_by_class_s: Vec<Summary>,
    /// Arrival → last byte.
    pub completion_time_s: Summary,
    /// `Serve` action → last byte: seek plus transfer, queueing excluded.
    pub service_time_s: Summary,
    /// Pelican §4.1's service time: "the time from when a request is dequeued by the scheduler
    /// to when the last byte associated with the request is transferred", which "includes
    /// delays due to spinning up disks". A read the scheduler switched its class's group for
    /// is dequeued when the spin-up starts (the first `concurrent_requests_per_class` reads
    /// that waited for it); any other read when it is served, so it equals `service_time_s`.
    pub service_from_dequeue_s: Summary,
    /// Group spin-ups started in the window: `SpinUp` → every disk spun up and mounted.
    pub spin_up_s: Summary,
    /// Client reads arriving in the window that could wait for their group's spin-up
    /// ([`crate::config::Deferral`]; 0 without one), and their arrival → first byte, wait
    /// included (a subset of `time_to_first_byte_s`).
    pub deferred: u64,
    pub deferred_ttfb_s: Summary,
    /// Client reads arriving in the window submitted as expedited
    /// ([`crate::config::SimConfig::expedited_fraction`]; 0 without), their arrival → first
    /// byte, and that of the other reads that are neither expedited nor deferred (both subsets of
    /// `time_to_first_byte_s`).
    pub expedited: u64,
    pub expedited_ttfb_s: Summary,
    pub standard_ttfb_s: Summary,
    /// When the last client read arriving in the window delivered its last byte, from the
    /// run's start (0 without one): a burst or trace has drained its reads then, so bytes over
    /// this time is its throughput the way Pelican §4.4 measures it ("ran until all requests
    /// had been serviced"), whatever other events (a rebuild, a spin-down) end the run later.
    pub last_byte_s: f64,
    /// Bytes delivered inside the window × 8 / window length.
    pub throughput_gbps: f64,
    /// `SpinUp` actions in the window.
    pub spin_ups: u64,
    /// Disk spin-ups in the window (each group spin-up spins up all its disks), scaled to a
    /// 365-day year and divided by the rack's disks (Pelican Fig. 9(a)).
    pub spin_ups_per_disk_per_year: f64,
    /// Bytes the disks moved in the window (client reads off k disks; rebuild stacks read from k
    /// disks and written to one), in TB, scaled to a year and divided by the rack's disks.
    pub tb_per_disk_per_year: f64,
    /// Group spin-ups in the window whose mounts used the high-load latency.
    pub high_load_spin_ups: u64,
    /// The rebuild, when a disk failure was configured.
    pub rebuild: Option<RebuildReport>,
    /// The class of the group that lost the disk, when a failure happened on a layout with
    /// classes (an index into `ttfb_by_class_s`).
    pub rebuild_class: Option<u32>,
    /// Rack draw on the hard resource "power", time-weighted; zeros when the rack has none.
    pub power_w: Power,
    /// Most disks not resting at once during the window.
    pub max_active_disks: u32,
    /// Hard domains found over budget by the independent checker (must be 0).
    pub budget_violations: u64,
    /// Disk power-state changes the rack engine's budget audit refused (each disk withheld from
    /// its unit's spin-up). The audit books disks before the model moves them, so a policy that
    /// would break a budget is stopped here; 0 on every correct run.
    pub audit_refusals: u64,
    /// Events processed over the whole run (warm-up and drain included), stale completions not.
    pub events: u64,
    /// Completion wake-ups a rate change superseded before their time, and timeouts the policy
    /// no longer wanted. Since issue 32 a superseded completion is dropped when it is replaced
    /// instead of popping from the event heap as a stale event, and counted then: the count is
    /// the same.
    pub stale_events: u64,
    /// FNV-1a 64 over every processed (time, event), in order.
    pub trace_hash: u64,
    /// The idle spin-down time in effect, s: `None` when off, or for FP and the random layout,
    /// whose schedulers never spin an idle group down.
    pub idle_spin_down_s: Option<f64>,
    /// Group spin-downs in the window decided because the group was idle (the others made room
    /// for another group).
    pub idle_spin_downs: u64,
    /// Energy the disks drew in the window, kWh: mean power × window length.
    pub energy_kwh: f64,
    /// The same run without idle spin-down, when asked for ([`crate::simulate_with_baseline`]).
    pub idle_savings: Option<IdleSavings>,
}

/// What idle spin-down saved: this run against the same configuration and seed with idle
/// spin-down off. The two runs draw arrivals from one seeded generator that the disks'
/// latency draws share, so their arrivals agree until the first idle spin-down and are then
/// two draws of the same process: the saving is a paired difference, exact in expectation, and
/// at heavy loads (where it is near zero) within the noise of one draw.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct IdleSavings {
    /// The energy of the run without idle spin-down, kWh, over the same window.
    pub baseline_energy_kwh: f64,
    /// `baseline_energy_kwh − energy_kwh` (negative if idle spin-down cost energy).
    pub saved_kwh: f64,
    /// `saved_kwh / baseline_energy_kwh` (0 without baseline energy).
    pub saved_fraction: f64,
    /// The baseline's mean power, W, group spin-ups and client time to first byte.
    pub baseline_power_mean_w: f64,
    pub baseline_spin_ups: u64,
    pub baseline_time_to_first_byte_s: Summary,
}

/// FNV-1a 64, fed incrementally (the same function as the layout's rack fingerprint; not a
/// security hash, only a cheap, stable digest of the trace).
#[derive(Clone, Copy, Debug)]
pub struct TraceHash(u64);

impl Default for TraceHash {
    fn default() -> Self {
        TraceHash::new()
    }
}

impl TraceHash {
    const OFFSET: u64 = 0xcbf2_9ce4_8422_2325;
    const PRIME: u64 = 0x0000_0100_0000_01b3;

    pub fn new() -> TraceHash {
        TraceHash(Self::OFFSET)
    }

    pub fn write(&mut self, bytes: &[u8]) {
        for byte in bytes {
            self.0 ^= u64::from(*byte);
            self.0 = self.0.wrapping_mul(Self::PRIME);
        }
    }

    /// `write(&value.to_le_bytes())`, faster: a zero byte only multiplies by the prime, so the
    /// high zero bytes of a small value (most of a trace: times, ids, zero fields) are one
    /// multiplication by a power of the prime instead of one dependent multiplication each.
    pub fn write_u64_le(&mut self, value: u64) {
        let significant = 8 - value.leading_zeros() as usize / 8;
        let mut rest = value;
        for _ in 0..significant {
            self.0 ^= rest & 0xff;
            self.0 = self.0.wrapping_mul(Self::PRIME);
            rest >>= 8;
        }
        self.0 = self.0.wrapping_mul(PRIME_POWERS[8 - significant]);
    }

    pub fn finish(self) -> u64 {
        self.0
    }
}

/// `TraceHash::PRIME`^k mod 2^64 for k = 0..=8.
const PRIME_POWERS: [u64; 9] = {
    let mut powers = [1u64; 9];
    let mut k = 1;
    while k < 9 {
        powers[k] = powers[k - 1].wrapping_mul(TraceHash::PRIME);
        k += 1;
    }
    powers
};

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn summaries_use_nearest_rank_and_seconds() {
        let mut samples: Vec<u64> = (1..=100).map(|s| s * 1_000_000).collect();
        let summary = Summary::of_us(&mut samples);
        assert_eq!(summary.count, 100);
        assert_eq!(summary.mean, 50.5);
        assert_eq!(summary.p50, 50.0);
        assert_eq!(summary.p99, 99.0);
        assert_eq!(summary.max, 100.0);
        assert_eq!(Summary::of_us(&mut []), Summary::default());
    }

    #[test]
    fn summaries_by_selection_equal_those_of_a_sorted_copy() {
        let mut state = 0x9e37_79b9_7f4a_7c15_u64;
        for n in [1usize, 2, 3, 99, 100, 101, 1_000, 4_097] {
            let mut samples: Vec<u64> = (0..n)
                .map(|_| {
                    state = state
                        .wrapping_mul(6_364_136_223_846_793_005)
                        .wrapping_add(1);
                    (state >> 40) % 5_000
                })
                .collect();
            let mut sorted = samples.clone();
            sorted.sort_unstable();
            let rank = |p: f64| sorted[((p * n as f64).ceil() as usize).clamp(1, n) - 1];
            let summary = Summary::of_us(&mut samples);
            assert_eq!(summary.p50, rank(0.50) as f64 / 1e6, "n = {n}");
            assert_eq!(summary.p99, rank(0.99) as f64 / 1e6, "n = {n}");
            assert_eq!(summary.max, sorted[n - 1] as f64 / 1e6, "n = {n}");
            assert_eq!(summary.count, n as u64);
        }
    }

    #[test]
    fn the_trace_hash_is_fnv_1a_64() {
        let mut hash = TraceHash::new();
        hash.write(b"a");
        assert_eq!(hash.finish(), 0xaf63_dc4c_8601_ec8c);
    }

    #[test]
    fn writing_a_u64_hashes_exactly_its_eight_little_endian_bytes() {
        let values = [
            0,
            1,
            0xff,
            0x100,
            0x1234_5678,
            0x8000_0000_0000_0000,
            u64::MAX,
            86_400_000_000,
        ];
        for value in values {
            let (mut bytes, mut word) = (TraceHash::new(), TraceHash::new());
            bytes.write(b"x");
            word.write(b"x");
            bytes.write(&value.to_le_bytes());
            word.write_u64_le(value);
            assert_eq!(word.finish(), bytes.finish(), "{value:#x}");
        }
    }
}
