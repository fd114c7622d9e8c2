//! The design file: a catalogue of components (disk models, enclosures, servers, NICs), the
//! economics that turn them into a total cost of ownership, and the requirements a design must
//! meet (docs/design.md, "The design file").
//!
//! Invariants once [`DesignFile::parse`] returns `Ok`:
//! - every list is non-empty and holds at most [`MAX_ITEMS_PER_LIST`] entries with unique names;
//! - every number is finite, every price, capacity, bandwidth and rate positive where it must be,
//!   every fraction inside its range;
//! - the workload names exactly one of a file-size model or a fixed blob size.
//!
//! Nothing here touches the planner or the simulator: an enclosure's rack is only named here and
//! loaded by the caller (crate::candidate), so a bad catalogue fails before any simulation runs.

use serde::{Deserialize, Serialize};
use spinwise_workload::{Family, FileSizeModel, MAX_FILE_BYTES, Variable};
use std::collections::BTreeSet;
use thiserror::Error;

/// Most entries of one component list: the block types are the product of the four lists, and
/// every enclosure × disk pair costs simulations.
/// The smallest `requirements.max_utilisation`: a block loaded to a sliver of its saturation
/// measures no reads in any run length the design allows, and 1e-9 gave a design of 685
/// million blocks that "met" a first-byte target with 0 s measured (found 2026-12-01).
pub const MIN_UTILISATION: f64 = 0.01;

pub const MAX_ITEMS_PER_LIST: usize = 32;
/// Most bytes of a design file.
pub const MAX_DESIGN_FILE_BYTES: usize = 1 << 20;
/// The largest capacity a design may ask for, TB (an exabyte).
pub const MAX_CAPACITY_TB: f64 = 1e6;
/// Most building blocks (enclosures × disks × servers × NICs): the program's dominance pruning
/// compares every pair of blocks.
pub const MAX_BLOCKS: usize = 10_000;
/// The largest share of a file-size model's reads above spinwise-workload's largest file.
pub const MAX_SHARE_ABOVE_LARGEST_FILE: f64 = 0.001;
/// Most distinct block types a design may mix.
pub const MAX_BLOCK_TYPES: u32 = 8;

/// A whole design file.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DesignFile {
    pub requirements: Requirements,
    pub economics: Economics,
    pub disks: Vec<DiskModel>,
    pub enclosures: Vec<Enclosure>,
    pub servers: Vec<Server>,
    pub nics: Vec<Nic>,
}

/// What the archive must do.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Requirements {
    /// User data the archive must hold, TB (after erasure coding and spares).
    pub capacity_tb: f64,
    /// Sustained retrieval the archive must deliver, MB/s, spread over the stored data
    /// uniformly (every TB stored receives `read_mb_per_s / capacity_tb` of it).
    pub read_mb_per_s: f64,
    /// What a read reads.
    pub workload: Workload,
    /// The 99th percentile of time to first byte every block must keep at its load, s.
    #[serde(default)]
    pub first_byte_p99_s: Option<f64>,
    /// The most power the design may draw at peak (every disk budget full), kW.
    #[serde(default)]
    pub power_cap_kw: Option<f64>,
    /// The most the design may cost to buy.
    #[serde(default)]
    pub budget: Option<f64>,
    /// Most distinct building blocks in one design (operators keep few spares kinds).
    #[serde(default = "default_block_types")]
    pub max_block_types: u32,
    /// The share of a block's measured saturation throughput it may be loaded to.
    #[serde(default = "default_utilisation")]
    pub max_utilisation: f64,
}

fn default_block_types() -> u32 {
    2
}

fn default_utilisation() -> f64 {
    0.8
}

/// The size of one read: a file-size model (spinwise-workload's families) or one fixed size.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Workload {
    /// `gamma`, `gengamma` or `lognormal`, as `spinwise workload` names them.
    #[serde(default)]
    pub family: Option<String>,
    /// `bytes` or `log2`: the variable the model is over.
    #[serde(default)]
    pub variable: Option<String>,
    /// `name=value,…` as `spinwise workload generate --params` takes them.
    #[serde(default)]
    pub params: Option<String>,
    /// Every read reads this many bytes instead.
    #[serde(default)]
    pub blob_bytes: Option<u64>,
}

/// Money and time.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Economics {
    /// Price of a kWh at the wall.
    pub electricity_per_kwh: f64,
    /// Years the hardware serves; energy and disk replacements are paid over them.
    pub service_life_years: f64,
    /// Power usage effectiveness: facility watts per IT watt (cooling, distribution).
    #[serde(default = "default_pue")]
    pub pue: f64,
    /// What prices are in, for output only.
    #[serde(default = "default_currency")]
    pub currency: String,
}

fn default_pue() -> f64 {
    1.0
}

fn default_currency() -> String {
    "USD".into()
}

/// Watts of a disk in each of its enclosure's states, by state name.
pub type WattsByState = std::collections::BTreeMap<String, f64>;

/// A disk model.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct DiskModel {
    pub name: String,
    pub capacity_tb: f64,
    pub price: f64,
    pub bandwidth_mb_per_s: f64,
    /// Watts per state; every state of an enclosure this disk goes into must be named.
    pub watts: WattsByState,
    /// Mean time from standby to ready, s (the enclosure keeps the spread of its own model).
    pub spin_up_s: f64,
    pub annual_failure_rate: f64,
}

/// An enclosure: a rack description (a shipped preset or a rack file) whose disks this
/// catalogue's disk models fill, with its own price and fixed draw.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Enclosure {
    pub name: String,
    /// A preset name (`spinwise presets`) or a path to a rack file, relative to the design file.
    pub rack: String,
    pub price: f64,
    /// Fans, expanders and controllers, W, whatever the disks do.
    pub watts: f64,
}

/// A storage server; every server of an enclosure's rack is one of these.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Server {
    pub name: String,
    pub price: f64,
    pub watts: f64,
    /// The most it moves from disks to the network, Gbps (HBA, memory, CPU).
    pub max_gbps: f64,
}

/// A network card; every server has one.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Nic {
    pub name: String,
    pub gbps: f64,
    pub price: f64,
    pub watts: f64,
}

/// What is wrong with a design file.
#[derive(Debug, Error, PartialEq)]
pub enum CatalogueError {
    #[error("the design file is {bytes} bytes, more than the limit of {MAX_DESIGN_FILE_BYTES}")]
    TooLarge { bytes: usize },
    #[error("not a design file: {message}")]
    Syntax { message: String },
    #[error("`{list}` is empty: a design needs at least one")]
    EmptyList { list: &'static str },
    #[error("`{list}` has {count} entries, more than the limit of {MAX_ITEMS_PER_LIST}")]
    TooMany { list: &'static str, count: usize },
    #[error("`{list}` names `{name}` twice")]
    Duplicate { list: &'static str, name: String },
    #[error("`{field}` is {value}; it must be {expected}")]
    OutOfRange {
        field: String,
        value: f64,
        expected: &'static str,
    },
    #[error(
        "the catalogue makes {blocks} building blocks (enclosures × disks × servers × NICs), more than the limit of {MAX_BLOCKS}"
    )]
    TooManyBlocks { blocks: usize },
    #[error("`{field}`: {message}")]
    Invalid { field: String, message: String },
}

impl DesignFile {
    /// Parses and validates a design file's text.
    pub fn parse(text: &str) -> Result<DesignFile, CatalogueError> {
        if text.len() > MAX_DESIGN_FILE_BYTES {
            return Err(CatalogueError::TooLarge { bytes: text.len() });
        }
        let file: DesignFile = toml::from_str(text).map_err(|error| CatalogueError::Syntax {
            message: error.to_string().trim().to_string(),
        })?;
        file.validate()?;
        Ok(file)
    }

    /// Checks every range and name; see the module's invariants.
    pub fn validate(&self) -> Result<(), CatalogueError> {
        self.requirements.validate()?;
        self.economics.validate()?;
        check_list("disks", self.disks.iter().map(|d| d.name.as_str()))?;
        check_list(
            "enclosures",
            self.enclosures.iter().map(|e| e.name.as_str()),
        )?;
        check_list("servers", self.servers.iter().map(|s| s.name.as_str()))?;
        check_list("nics", self.nics.iter().map(|n| n.name.as_str()))?;
        let blocks =
            self.enclosures.len() * self.disks.len() * self.servers.len() * self.nics.len();
        if blocks > MAX_BLOCKS {
            return Err(CatalogueError::TooManyBlocks { blocks });
        }
        for disk in &self.disks {
            disk.validate()?;
        }
        for enclosure in &self.enclosures {
            let field = |name: &str| format!("enclosures.{}.{name}", enclosure.name);
            non_negative(&field("price"), enclosure.price)?;
            non_negative(&field("watts"), enclosure.watts)?;
        }
        for server in &self.servers {
            let field = |name: &str| format!("servers.{}.{name}", server.name);
            non_negative(&field("price"), server.price)?;
            non_negative(&field("watts"), server.watts)?;
            positive(&field("max_gbps"), server.max_gbps)?;
        }
        for nic in &self.nics {
            let field = |name: &str| format!("nics.{}.{name}", nic.name);
            positive(&field("gbps"), nic.gbps)?;
            non_negative(&field("price"), nic.price)?;
            non_negative(&field("watts"), nic.watts)?;
        }
        Ok(())
    }
}

impl Requirements {
    fn validate(&self) -> Result<(), CatalogueError> {
        if !(self.capacity_tb > 0.0 && self.capacity_tb <= MAX_CAPACITY_TB) {
            return Err(out_of_range(
                "requirements.capacity_tb",
                self.capacity_tb,
                "above 0 and at most 1,000,000 TB",
            ));
        }
        positive("requirements.read_mb_per_s", self.read_mb_per_s)?;
        if let Some(seconds) = self.first_byte_p99_s {
            positive("requirements.first_byte_p99_s", seconds)?;
        }
        if let Some(kw) = self.power_cap_kw {
            positive("requirements.power_cap_kw", kw)?;
        }
        if let Some(budget) = self.budget {
            positive("requirements.budget", budget)?;
        }
        if !(1..=MAX_BLOCK_TYPES).contains(&self.max_block_types) {
            return Err(out_of_range(
                "requirements.max_block_types",
                f64::from(self.max_block_types),
                "1 to 8",
            ));
        }
        if !(MIN_UTILISATION..=1.0).contains(&self.max_utilisation) {
            return Err(out_of_range(
                "requirements.max_utilisation",
                self.max_utilisation,
                "0.01 to 1",
            ));
        }
        self.workload.read_size().map(|_| ())
    }
}

/// What one read reads, resolved from [`Workload`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum ReadSize {
    Fixed { bytes: u64 },
    Model(FileSizeModel),
}

impl Workload {
    /// The size of a read: exactly one of `blob_bytes` or (`family`, `variable`, `params`).
    pub fn read_size(&self) -> Result<ReadSize, CatalogueError> {
        let invalid = |message: String| CatalogueError::Invalid {
            field: "requirements.workload".into(),
            message,
        };
        match (self.blob_bytes, &self.family, &self.variable, &self.params) {
            (Some(0), ..) => Err(invalid("blob_bytes must be at least 1".into())),
            (Some(bytes), None, None, None) => Ok(ReadSize::Fixed { bytes }),
            (None, Some(family), variable, Some(params)) => {
                let family = parse_family(family).map_err(invalid)?;
                let variable =
                    parse_variable(variable.as_deref().unwrap_or("bytes")).map_err(invalid)?;
                let model = FileSizeModel::parse_params(family, variable, params)
                    .map_err(|error| invalid(error.to_string()))?;
                // Draws above the largest file are redrawn (spinwise-workload); a model that
                // puts much weight there is almost always a model over the wrong variable
                // (mu = 29 meant as log2 bytes but read as ln of bytes, say).
                let above = model.sf_bytes(MAX_FILE_BYTES as f64);
                if above > MAX_SHARE_ABOVE_LARGEST_FILE {
                    return Err(invalid(format!(
                        "the model puts {:.1}% of reads above the largest file ({MAX_FILE_BYTES} bytes); is `variable` right?",
                        above * 100.0
                    )));
                }
                Ok(ReadSize::Model(model))
            }
            _ => Err(invalid(
                "give either blob_bytes, or family, params (and optionally variable), not both"
                    .into(),
            )),
        }
    }
}

fn parse_family(text: &str) -> Result<Family, String> {
    match text {
        "gamma" => Ok(Family::Gamma),
        "gengamma" => Ok(Family::GeneralizedGamma),
        "lognormal" => Ok(Family::LogNormal),
        other => Err(format!(
            "family `{other}` is none of gamma, gengamma, lognormal"
        )),
    }
}

fn parse_variable(text: &str) -> Result<Variable, String> {
    match text {
        "bytes" => Ok(Variable::Bytes),
        "log2" => Ok(Variable::Log2),
        other => Err(format!("variable `{other}` is neither bytes nor log2")),
    }
}

impl Economics {
    fn validate(&self) -> Result<(), CatalogueError> {
        non_negative("economics.electricity_per_kwh", self.electricity_per_kwh)?;
        if !(self.service_life_years > 0.0 && self.service_life_years <= 50.0) {
            return Err(out_of_range(
                "economics.service_life_years",
                self.service_life_years,
                "above 0 and at most 50",
            ));
        }
        if !(1.0..=5.0).contains(&self.pue) {
            return Err(out_of_range("economics.pue", self.pue, "1 to 5"));
        }
        Ok(())
    }
}

impl DiskModel {
    fn validate(&self) -> Result<(), CatalogueError> {
        let field = |name: &str| format!("disks.{}.{name}", self.name);
        positive(&field("capacity_tb"), self.capacity_tb)?;
        non_negative(&field("price"), self.price)?;
        positive(&field("bandwidth_mb_per_s"), self.bandwidth_mb_per_s)?;
        positive(&field("spin_up_s"), self.spin_up_s)?;
        if !(0.0..1.0).contains(&self.annual_failure_rate) {
            return Err(out_of_range(
                &field("annual_failure_rate"),
                self.annual_failure_rate,
                "at least 0 and below 1",
            ));
        }
        if self.watts.is_empty() {
            return Err(CatalogueError::Invalid {
                field: field("watts"),
                message: "name the watts of every state, e.g. { standby = 0.8, spinning_up = 25, active = 7 }".into(),
            });
        }
        for (state, watts) in &self.watts {
            non_negative(&field(&format!("watts.{state}")), *watts)?;
        }
        Ok(())
    }
}

fn check_list<'a>(
    list: &'static str,
    names: impl ExactSizeIterator<Item = &'a str>,
) -> Result<(), CatalogueError> {
    let count = names.len();
    if count == 0 {
        return Err(CatalogueError::EmptyList { list });
    }
    if count > MAX_ITEMS_PER_LIST {
        return Err(CatalogueError::TooMany { list, count });
    }
    let mut seen = BTreeSet::new();
    for name in names {
        if name.is_empty() || name.len() > 64 || name.contains(['+', ',', '/']) {
            return Err(CatalogueError::Invalid {
                field: format!("{list}.name"),
                message: format!(
                    "`{}` must be 1 to 64 characters without `+`, `,` or `/`",
                    name.chars().take(64).collect::<String>()
                ),
            });
        }
        if !seen.insert(name) {
            return Err(CatalogueError::Duplicate {
                list,
                name: name.into(),
            });
        }
    }
    Ok(())
}

fn out_of_range(field: &str, value: f64, expected: &'static str) -> CatalogueError {
    CatalogueError::OutOfRange {
        field: field.into(),
        value,
        expected,
    }
}

fn positive(field: &str, value: f64) -> Result<(), CatalogueError> {
    if value.is_finite() && value > 0.0 && value <= 1e12 {
        Ok(())
    } else {
        Err(out_of_range(field, value, "a finite number above 0"))
    }
}

fn non_negative(field: &str, value: f64) -> Result<(), CatalogueError> {
    if value.is_finite() && (0.0..=1e12).contains(&value) {
        Ok(())
    } else {
        Err(out_of_range(field, value, "a finite number at least 0"))
    }
}
