//! Runs the conformance suite (src/conformance.rs) against every implementation that can run
//! here: the emulated disk instantly and with small real latencies, and the model disk. (The
//! block disk runs it with stand-in commands in tests/it/block.rs.)

use crate::common;

use common::WithTempDir;
use spinwise_disk::{DiskTiming, EmulatedConfig, EmulatedDisk, ModelDisk, VirtualClock};
use spinwise_model::Distribution;
use tempfile::TempDir;

const CAPACITY_BYTES: u64 = 64 << 20;

/// A latency model with every distribution kind, so sampling is exercised.
fn timing() -> DiskTiming {
    DiskTiming {
        spin_up_latency_s: Distribution::Uniform { min: 0.5, max: 1.0 },
        mount_latency_s: Distribution::Normal {
            mean: 0.2,
            stddev: 0.05,
            min: 0.1,
            max: 0.3,
        },
        unmount_latency_s: Distribution::Fixed { value: 0.1 },
        bandwidth_bytes_per_s: 100e6,
        seek_s: 0.008,
    }
}

fn model() -> ModelDisk {
    ModelDisk::new(5, CAPACITY_BYTES, timing(), VirtualClock::new(), 11).expect("model disk")
}

fn emulated(time_factor: f64) -> WithTempDir<EmulatedDisk> {
    let directory = TempDir::new().expect("temp dir");
    let mut config = EmulatedConfig::new(directory.path().join("disk"), 3, CAPACITY_BYTES);
    config.time_factor = time_factor;
    config.timing = timing();
    WithTempDir {
        disk: EmulatedDisk::create(config).expect("create"),
        _directory: directory,
    }
}

spinwise_disk::conformance_tests!(emulated_instant, || super::emulated(0.0));
spinwise_disk::conformance_tests!(emulated_with_latency, || super::emulated(0.01));
spinwise_disk::conformance_tests!(model_disk, super::model);
