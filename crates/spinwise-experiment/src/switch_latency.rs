//! [`SwitchLatency`]: a what-if change to the rack's group-switch latencies (spin-up, mount,
//! unmount), shared by `spinwise sim` and the `pelican-plateau` experiment.
//!
//! Invariants: a change only ever produces a valid rack — the scale is checked finite and in
//! `(0, MAX_SCALE]` before any distribution is touched ([`SwitchLatency::new`]), so user input
//! cannot reach `Distribution::scaled`'s assertion — and the layout stays the one planned for
//! the described rack: the planner never reads latencies, so re-binding a layout to the changed
//! rack's fingerprint is sound, and it is only done for a layout that matched the described rack.

use crate::error::{ExperimentError, ExperimentResult};
use spinwise_model::{Layout, Rack};

/// The largest scale accepted: a hundred times the described latencies (a 10 s spin-up becomes
/// ~17 minutes), well past any disk; a limit, like every other input has.
pub const MAX_SCALE: f64 = 100.0;

/// A change to the disks' spin-up, mount and unmount latencies: what a group switch costs. The
/// layout does not depend on these (the planner never reads them), so the layout planned for
/// the described rack serves the changed one, re-bound to its fingerprint.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct SwitchLatency {
    /// Every spin-up, mount (both loads) and unmount latency distribution is scaled by this.
    pub scale: f64,
    /// Keep the rack's high-load mount distribution (its stragglers), or mount with the
    /// low-load one at every load.
    pub high_load_mounts: bool,
}

impl Default for SwitchLatency {
    fn default() -> SwitchLatency {
        SwitchLatency::AS_DESCRIBED
    }
}

impl SwitchLatency {
    /// The rack as described: no change.
    pub const AS_DESCRIBED: SwitchLatency = SwitchLatency {
        scale: 1.0,
        high_load_mounts: true,
    };

    /// `rack` with this change applied.
    pub fn apply(&self, rack: &Rack) -> Rack {
        let mut rack = rack.clone();
        let disk = &mut rack.disk_model;
        disk.spin_up_latency_s = disk.spin_up_latency_s.scaled(self.scale);
        disk.mount_latency_s = disk.mount_latency_s.scaled(self.scale);
        disk.unmount_latency_s = disk.unmount_latency_s.scaled(self.scale);
        disk.mount_latency_high_load_s = if self.high_load_mounts {
            disk.mount_latency_high_load_s
                .as_ref()
                .map(|high| high.scaled(self.scale))
        } else {
            None
        };
        rack
    }

    /// A change from user input; a scale outside `(0, MAX_SCALE]` is a usage error.
    pub fn new(scale: f64, high_load_mounts: bool) -> ExperimentResult<SwitchLatency> {
        if !(scale.is_finite() && scale > 0.0 && scale <= MAX_SCALE) {
            return Err(ExperimentError::Invalid(format!(
                "--switch-latency-scale: {} is not in (0, {MAX_SCALE}]",
                spinwise_model::quote::number(scale)
            )));
        }
        Ok(SwitchLatency {
            scale,
            high_load_mounts,
        })
    }

    /// Whether this is the rack as described (nothing to change).
    pub fn is_as_described(&self) -> bool {
        *self == SwitchLatency::AS_DESCRIBED
    }

    /// `rack` changed and `layout` re-bound to it, when `layout` was planned for `rack`; a layout
    /// for another rack keeps its fingerprint, so the simulator still refuses it.
    pub fn apply_with_layout(&self, rack: &Rack, layout: &mut Layout) -> Rack {
        let changed = self.apply(rack);
        if layout.rack_fingerprint == rack.fingerprint() {
            layout.rack_fingerprint = changed.fingerprint();
        }
        changed
    }
}
