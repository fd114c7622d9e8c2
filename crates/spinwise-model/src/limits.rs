//! Limits on what a rack description may hold, declared in one place with the reason for each.
//! Every limit is checked while parsing, so no later stage meets an input larger than these.

/// Disks in one rack. The largest racks we know of hold a few thousand disks; 100,000 keeps every
/// per-disk table in the planner under a few megabytes and every cost sum far from i64 overflow.
pub const MAX_DISKS: usize = 100_000;
/// Operating states. Drives expose a handful (standby, low-RPM idle, spinning up, active …).
pub const MAX_STATES: usize = 32;
/// Resources (power, cooling, vibration, bandwidth, hierarchical variants of each).
pub const MAX_RESOURCES: usize = 64;
/// Failure domain types (disk, tray, chassis, server, PDU …).
pub const MAX_FAILURE_DOMAINS: usize = 64;
/// Axes of the coordinate system.
pub const MAX_AXES: usize = 8;
/// Size of a rack file: a 100,000-disk explicit list fits in a few megabytes.
pub const MAX_RACK_FILE_BYTES: usize = 16 * 1024 * 1024;
/// Requests one scheduler class serves at once (`targets.fairness.concurrent_requests_per_class`).
/// A group of a few dozen disks is kept busy by two or three reads of k of them; each request in
/// service holds its read buffers in the server, so the count is bounded.
pub const MAX_CONCURRENT_REQUESTS_PER_CLASS: u32 = 64;
