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
/// Size of a rack file. Readers stop at one byte more than this (spinwise-cli's
/// `source::read_bounded`), so a larger file, a sparse 4 GB one or `/dev/zero` costs at most
/// this much memory to refuse. 4 MiB holds any rack within [`MAX_RACK_TOKENS`] with room for
/// comments (a 10,000-disk list written one disk per line is ~300 KB), and bounds what a
/// refusal copies: the file, and a parser message quoting one line of it (measured: a 16 MiB
/// one-line file took 65 MB and 2.8 s to refuse, debug build).
pub const MAX_RACK_FILE_BYTES: usize = 4 * 1024 * 1024;
/// TOML tokens (keys, values, punctuation, whitespace runs) in a rack file, counted by a
/// streaming lexer pass before the document is parsed. Why: the TOML parser keeps a token, an
/// event and a tree node per token, 100–250 bytes per token (measured: 500,000 tokens of
/// `{a=1},` took 129 MB; a listed rack of 100,000 disks, 2.3 million tokens, 250 MB), so the
/// byte limit alone let a 16 MiB file of short values cost 1.4 GB to refuse. 200,000 tokens
/// bound any parse at ~50 MB. Every grid rack and every shipped preset is far below it
/// (pelican: ~1,500 tokens); a disk list written one disk per line, as in
/// docs/rack-format.md, costs ~23 tokens a disk, so an explicit list holds ~8,000 disks (a grid
/// holds up to [`MAX_DISKS`]).
pub const MAX_RACK_TOKENS: usize = 200_000;
/// Size of a layout file (docs/layout-format.md). The planner writes ~80–150 bytes per disk
/// (pelican: 91 KB for 1,152 disks; smr-archive-2400: 357 KB), so a layout of a
/// [`MAX_DISKS`]-disk rack fits in ~15 MB. Readers stop at one byte more than this.
pub const MAX_LAYOUT_FILE_BYTES: usize = 16 * 1024 * 1024;
/// A disk's spin-up, mount or unmount latency, in seconds (every value a distribution can
/// draw: a fixed value, a uniform's `max`, a normal's `max`). Drives take seconds and a tape
/// library's mount a few minutes; a day is far above both. Why a limit at all: the simulator
/// and the store add these draws to clocks counted in whole microseconds (`u64`), and an
/// unbounded one (a rack saying `1e15` seconds) overflowed them, which gave silently wrong
/// results or a panic (2026-12-01).
pub const MAX_LATENCY_S: f64 = 86_400.0;
/// A disk's average seek, in milliseconds (`disk.seek_ms`): ten minutes, far above any drive's
/// (4–15 ms) or a tape's locate (~100 s); the same reason as [`MAX_LATENCY_S`].
pub const MAX_SEEK_MS: f64 = 600_000.0;
/// Requests one scheduler class serves at once (`targets.fairness.concurrent_requests_per_class`).
/// A group of a few dozen disks is kept busy by two or three reads of k of them; each request in
/// service holds its read buffers in the server, so the count is bounded.
pub const MAX_CONCURRENT_REQUESTS_PER_CLASS: u32 = 64;
