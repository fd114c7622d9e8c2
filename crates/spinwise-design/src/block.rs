//! Building blocks and what each costs: one enclosure filled with one disk model, its servers
//! (as many as the rack's `server` domain names) each with one NIC, measured under the workload.
//!
//! Total cost of ownership of one block over the service life:
//! - capex = enclosure + disks × disk price + servers × (server + NIC);
//! - energy = (enclosure + servers × (server + NIC) + the disks' simulated mean draw at the
//!   block's load) × hours of the service life × electricity price × PUE;
//! - replacements = disks × annual failure rate × years × disk price.
//!
//! A block stores `min(usable, load / read intensity)` TB: when its measured sustainable read
//! rate cannot serve the reads its full capacity would attract (the required MB/s per stored
//! TB), the design may fill it only as far as its reads allow. So the read-rate requirement
//! enters the program as capacity, and a read-bound block is seen as capacity it strands.

use crate::candidate::RackFigures;
use crate::catalogue::{DesignFile, DiskModel, Enclosure, Nic, Server};
use crate::performance::Measured;
use serde::Serialize;

/// Hours in a year of 365.25 days.
pub const HOURS_PER_YEAR: f64 = 8766.0;

/// Catalogue indices of one block's parts.
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Serialize)]
pub struct Parts {
    pub enclosure: usize,
    pub disk: usize,
    pub server: usize,
    pub nic: usize,
}

/// One building block with its economics and measured performance.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct Block {
    /// `enclosure+disk+server+nic`.
    pub name: String,
    #[serde(skip)]
    pub parts: Parts,
    pub figures: RackFigures,
    pub measured: Measured,
    pub capex: f64,
    pub energy_cost: f64,
    pub replacement_cost: f64,
    /// capex + energy + replacements.
    pub tco: f64,
    /// Facility watts at peak: every disk budget full, servers and enclosure on (× PUE not
    /// applied: a power cap is on IT load).
    pub peak_w: f64,
    /// Mean IT watts at the block's load.
    pub mean_w: f64,
    /// User data the block holds in the design, TB (module docs).
    pub stored_tb: f64,
    /// The block stores less than it could because its reads would exceed its load.
    pub read_bound: bool,
}

/// Prices and economics a sensitivity run may scale.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct PriceScales {
    pub disks: f64,
    pub enclosures: f64,
    pub servers_and_nics: f64,
    pub electricity: f64,
    pub service_life: f64,
}

impl Default for PriceScales {
    fn default() -> Self {
        PriceScales {
            disks: 1.0,
            enclosures: 1.0,
            servers_and_nics: 1.0,
            electricity: 1.0,
            service_life: 1.0,
        }
    }
}

/// The network a block's servers have in all, Gbps.
pub fn network_gbps(figures: &RackFigures, server: &Server, nic: &Nic) -> f64 {
    f64::from(figures.servers) * nic.gbps.min(server.max_gbps)
}

/// Prices a measured block (module docs).
pub fn price_block(
    file: &DesignFile,
    parts: Parts,
    figures: &RackFigures,
    measured: &Measured,
    intensity_mb_per_s_per_tb: f64,
    scales: &PriceScales,
) -> Block {
    let (enclosure, disk, server, nic): (&Enclosure, &DiskModel, &Server, &Nic) = (
        &file.enclosures[parts.enclosure],
        &file.disks[parts.disk],
        &file.servers[parts.server],
        &file.nics[parts.nic],
    );
    let economics = &file.economics;
    let servers = f64::from(figures.servers);
    let disks = f64::from(figures.disks);
    let capex = enclosure.price * scales.enclosures
        + disks * disk.price * scales.disks
        + servers * (server.price + nic.price) * scales.servers_and_nics;
    let fixed_w = enclosure.watts + servers * (server.watts + nic.watts);
    let mean_w = fixed_w + measured.disk_power_mean_w;
    let years = economics.service_life_years * scales.service_life;
    let energy_cost = mean_w / 1000.0
        * HOURS_PER_YEAR
        * years
        * economics.electricity_per_kwh
        * scales.electricity
        * economics.pue;
    let replacement_cost = disks * disk.annual_failure_rate * years * disk.price * scales.disks;
    let readable_tb = measured.load_mb_per_s / intensity_mb_per_s_per_tb;
    let stored_tb = figures.usable_tb.min(readable_tb);
    Block {
        name: format!(
            "{}+{}+{}+{}",
            enclosure.name, disk.name, server.name, nic.name
        ),
        parts,
        figures: figures.clone(),
        measured: measured.clone(),
        capex,
        energy_cost,
        replacement_cost,
        tco: capex + energy_cost + replacement_cost,
        peak_w: fixed_w + figures.peak_disk_w,
        mean_w,
        stored_tb,
        read_bound: readable_tb < figures.usable_tb * (1.0 - 1e-9),
    }
}
