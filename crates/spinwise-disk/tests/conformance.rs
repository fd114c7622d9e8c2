//! Runs the conformance suite (src/conformance.rs) against every implementation that can run
//! here: the emulated disk instantly and with small real latencies, and the model disk.

use std::io::Read;

use spinwise_disk::{
    Disk, DiskError, DiskIndex, DiskTiming, EmulatedConfig, EmulatedDisk, ModelDisk, Overwrite,
    PowerState, Space, VirtualClock,
};
use spinwise_model::Distribution;
use tempfile::TempDir;

const CAPACITY_BYTES: u64 = 64 << 20;

/// An emulated disk that owns its temporary directory, so each test cleans up after itself.
struct TempEmulated {
    disk: EmulatedDisk,
    _directory: TempDir,
}

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

fn emulated(time_factor: f64) -> TempEmulated {
    let directory = TempDir::new().expect("temp dir");
    let mut config = EmulatedConfig::new(directory.path().join("disk"), 3, CAPACITY_BYTES);
    config.time_factor = time_factor;
    config.timing = timing();
    TempEmulated {
        disk: EmulatedDisk::create(config).expect("create"),
        _directory: directory,
    }
}

impl Disk for TempEmulated {
    fn index(&self) -> DiskIndex {
        self.disk.index()
    }
    fn power_state(&self) -> PowerState {
        self.disk.power_state()
    }
    fn spin_up(&self) -> Result<(), DiskError> {
        self.disk.spin_up()
    }
    fn spin_down(&self) -> Result<(), DiskError> {
        self.disk.spin_down()
    }
    fn mark_failed(&self) {
        self.disk.mark_failed()
    }
    fn write_file(
        &self,
        name: &str,
        len_bytes: u64,
        data: &mut dyn Read,
        overwrite: Overwrite,
    ) -> Result<(), DiskError> {
        self.disk.write_file(name, len_bytes, data, overwrite)
    }
    fn read_at(&self, name: &str, offset: u64, buffer: &mut [u8]) -> Result<usize, DiskError> {
        self.disk.read_at(name, offset, buffer)
    }
    fn file_len(&self, name: &str) -> Result<u64, DiskError> {
        self.disk.file_len(name)
    }
    fn remove_file(&self, name: &str) -> Result<(), DiskError> {
        self.disk.remove_file(name)
    }
    fn list_files(&self) -> Result<Vec<String>, DiskError> {
        self.disk.list_files()
    }
    fn space(&self) -> Result<Space, DiskError> {
        self.disk.space()
    }
}

spinwise_disk::conformance_tests!(emulated_instant, || super::emulated(0.0));
spinwise_disk::conformance_tests!(emulated_with_latency, || super::emulated(0.01));
spinwise_disk::conformance_tests!(model_disk, super::model);
