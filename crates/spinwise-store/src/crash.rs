//! Crash points for fault tests: `crash::point("migrate:after-stacks")` aborts the process on
//! the spot (like `kill -9`: no destructors, no flushes) when the environment variable
//! `SPINWISE_CRASH_AT` names that point. Tests run the real binary with it set, then restart
//! the store and check what survived. Unset (always, in production) it costs one cached lookup.
//!
//! Invariant: a crash point is placed only where the real process could die (between two
//! durable steps), never inside a step the store assumes atomic.

use std::sync::OnceLock;

/// The environment variable naming the crash point to die at.
pub const CRASH_ENV: &str = "SPINWISE_CRASH_AT";

fn armed() -> Option<&'static str> {
    static ARMED: OnceLock<Option<String>> = OnceLock::new();
    ARMED
        .get_or_init(|| {
            std::env::var(CRASH_ENV)
                .ok()
                .filter(|name| !name.is_empty())
        })
        .as_deref()
}

/// Aborts the process if `name` is the armed crash point.
pub fn point(name: &str) {
    if armed() == Some(name) {
        eprintln!("spinwise: crashing at `{name}` ({CRASH_ENV})");
        std::process::abort();
    }
}
