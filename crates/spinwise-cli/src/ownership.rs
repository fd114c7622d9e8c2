//! Who drives a data directory's disks (spinwise_store::owner): a `spinwise store` command
//! waits until it owns the directory (or the wait limit passes), so whatever runs at once, one
//! process spins disks and its budget audit sees every disk.
//!
//! Invariants: the waiter prints one line to stderr (whom it waits for) and none if it owns the
//! directory at once; it polls every [`POLL_INTERVAL`] and gives up after the limit with an
//! error naming the owner, so it never waits unbounded. The guard it returns must live until
//! the store is closed.

use crate::error::{CliError, CliResult};
use spinwise_store::owner::{Claim, OwnerGuard, owner_lock_path, try_claim};
use std::path::Path;
use std::time::{Duration, Instant};

/// How often a waiter tries the lock again.
pub const POLL_INTERVAL: Duration = Duration::from_millis(20);
/// The longest wait a user may ask for (a day), so a typo cannot park a process for years.
pub const MAX_WAIT_S: f64 = 86_400.0;

fn owner_name(pid: Option<u32>) -> String {
    match pid {
        Some(pid) => format!("process {pid}"),
        None => "another process".to_string(),
    }
}

fn claim_error(error: spinwise_store::owner::OwnerError) -> CliError {
    CliError::Usage(error.to_string())
}

/// The wait limit a user gave, checked.
pub fn wait_limit(wait_s: f64) -> CliResult<Duration> {
    if wait_s.is_finite() && (0.0..=MAX_WAIT_S).contains(&wait_s) {
        Ok(Duration::from_secs_f64(wait_s))
    } else {
        Err(CliError::Usage(format!(
            "--wait-s takes a number of seconds from 0 to {MAX_WAIT_S}, not {wait_s}"
        )))
    }
}

/// Owns `data_dir`, waiting up to `limit` for its owner to finish.
pub async fn own(data_dir: &Path, limit: Duration) -> CliResult<OwnerGuard> {
    let deadline = Instant::now() + limit;
    let mut announced = false;
    loop {
        let owner_pid = match try_claim(data_dir).map_err(claim_error)? {
            Claim::Owned(guard) => return Ok(guard),
            Claim::Busy { owner_pid } => owner_pid,
        };
        if Instant::now() >= deadline {
            return Err(CliError::Usage(format!(
                "{} owns {} (it holds {}) and did not finish within the {:.0} s wait \
                 (--wait-s); try again when it is done",
                owner_name(owner_pid),
                data_dir.display(),
                owner_lock_path(data_dir).display(),
                limit.as_secs_f64()
            )));
        }
        if !announced {
            eprintln!(
                "waiting for the owner of {} ({}) to finish: one process drives the disks at a time",
                data_dir.display(),
                owner_name(owner_pid)
            );
            announced = true;
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// `spinwise serve`'s ownership of an existing store in `data_dir` for its lifetime: it waits
/// for a running command to finish. `None` when the directory holds no store yet: the server
/// creates it and then calls [`own_new`], so a start refused before creation (an unknown
/// preset) leaves no directory behind.
pub async fn own_for_serve(data_dir: &Path) -> CliResult<Option<OwnerGuard>> {
    if !data_dir.join(spinwise_store::config::STORE_FILE).exists() {
        return Ok(None);
    }
    own(data_dir, Duration::from_secs_f64(MAX_WAIT_S))
        .await
        .map(Some)
}

/// Ownership of a store this process has just created (`claimed` from [`own_for_serve`] if it
/// already owned the directory); refused at once if another process took it meanwhile.
pub async fn own_new(data_dir: &Path, claimed: Option<OwnerGuard>) -> CliResult<OwnerGuard> {
    match claimed {
        Some(guard) => Ok(guard),
        None => own(data_dir, Duration::ZERO).await,
    }
}
