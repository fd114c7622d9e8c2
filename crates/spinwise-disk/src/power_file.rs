//! The power state an emulated disk publishes in its own directory, so any process can ask it
//! what it is doing, as `hdparm -C` asks a real drive: `DIR/.power-state`.
//!
//! Format (docs/disks.md, "Power-state file"): the ASCII name of one [`PowerPhase`]
//! (`standby`, `spinning-up`, `active`, `spinning-down`, `failed`) followed by one `\n`, nothing
//! else; at most [`MAX_POWER_FILE_BYTES`] bytes are read.
//!
//! `standby` is the file's absence: a disk at rest has no file, so opening a rack closed cleanly
//! reads no power-state file at all (a file an older version left saying `standby` reads the
//! same and is removed at the next open).
//!
//! Invariants: the file is replaced whole (written to `.power-state.<pid>.tmp`, then renamed
//! over) or removed, so a reader sees the old phase or the new one, never a torn word; the
//! writer's pid in the temporary name keeps two processes that opened the same disk (which the owner lock
//! prevents, but nothing in the disk itself) from tearing each other's temporary file. Both
//! names start with '.', so the contract's `list_files` never shows them and they can never
//! collide with a stripe stack; the temporary name does not start with `.tmp-`, so
//! `DirectoryFiles::open` leaves it alone (only a process killed between write and rename
//! leaves one, a few bytes). Not fsynced: after a host crash every disk is in standby
//! anyway, and the next open removes the file.

use std::fs;
use std::io::{self, Read};
use std::path::Path;

/// The power-state file's name in a disk's directory.
pub const POWER_STATE_FILE: &str = ".power-state";
/// The temporary file this process writes a new power state to before the rename.
fn temp_file_name() -> String {
    format!("{POWER_STATE_FILE}.{}.tmp", std::process::id())
}
/// The most bytes a reader takes from the file (the longest name and its newline fit).
pub const MAX_POWER_FILE_BYTES: u64 = 32;

/// What a drive is doing, as seen from outside its process: the gate's states plus the two
/// transitions, which cost power too (a spin-up draws the most current of all).
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash)]
pub enum PowerPhase {
    Standby,
    SpinningUp,
    Active,
    SpinningDown,
    Failed,
}

impl PowerPhase {
    /// The word the file holds.
    pub fn name(self) -> &'static str {
        match self {
            PowerPhase::Standby => "standby",
            PowerPhase::SpinningUp => "spinning-up",
            PowerPhase::Active => "active",
            PowerPhase::SpinningDown => "spinning-down",
            PowerPhase::Failed => "failed",
        }
    }

    fn parse(word: &str) -> Option<PowerPhase> {
        [
            PowerPhase::Standby,
            PowerPhase::SpinningUp,
            PowerPhase::Active,
            PowerPhase::SpinningDown,
            PowerPhase::Failed,
        ]
        .into_iter()
        .find(|phase| phase.name() == word)
    }
}

impl std::fmt::Display for PowerPhase {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.name())
    }
}

/// Why a power state could not be read.
#[derive(Debug, thiserror::Error)]
pub enum PowerFileError {
    #[error("{path}: {source}")]
    Io {
        path: String,
        #[source]
        source: io::Error,
    },
    #[error(
        "{path}: not a power state (expected one of standby, spinning-up, active, spinning-down, failed and a newline)"
    )]
    Malformed { path: String },
}

/// Publishes `phase` in `directory`: `standby` by removing the file (its absence says
/// standby, so a disk that rests costs the next open no read), any other phase by writing a
/// temporary file and renaming it over.
pub(crate) fn publish_power_phase(directory: &Path, phase: PowerPhase) -> io::Result<()> {
    let file = directory.join(POWER_STATE_FILE);
    if phase == PowerPhase::Standby {
        return match fs::remove_file(&file) {
            Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
            _ => Ok(()),
        };
    }
    let temp = directory.join(temp_file_name());
    fs::write(&temp, format!("{}\n", phase.name()))?;
    fs::rename(&temp, file)
}

/// Whether `directory`'s power-state file already holds `phase` (exactly its word and newline).
/// Opening a failed disk asks before it publishes `failed`: replacing a file with the word it
/// already holds tells no reader anything, and on ext4 each rename over an existing file waits
/// for the new file's blocks (`auto_da_alloc`), 2.5–4.7 ms per disk under strace
/// (docs/BENCHMARKS.md, "Migrated GET against dd (issue 32, 2026-11-30)").
pub(crate) fn holds_power_phase(directory: &Path, phase: PowerPhase) -> bool {
    let Ok(file) = fs::File::open(directory.join(POWER_STATE_FILE)) else {
        return false;
    };
    let mut text = String::new();
    file.take(MAX_POWER_FILE_BYTES)
        .read_to_string(&mut text)
        .is_ok_and(|_| text.strip_suffix('\n') == Some(phase.name()))
}

/// The power state the emulated disk in `directory` last published. A missing directory is a
/// pulled disk (`Failed`), as [`crate::EmulatedDisk::open`] sees it; a directory without the
/// file holds a disk at rest: `Standby`.
pub fn read_power_state(directory: &Path) -> Result<PowerPhase, PowerFileError> {
    if !directory.is_dir() {
        return Ok(PowerPhase::Failed);
    }
    let path = directory.join(POWER_STATE_FILE);
    let io_error = |source| PowerFileError::Io {
        path: path.display().to_string(),
        source,
    };
    let file = match fs::File::open(&path) {
        Ok(file) => file,
        Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(PowerPhase::Standby),
        Err(error) => return Err(io_error(error)),
    };
    let mut text = String::new();
    file.take(MAX_POWER_FILE_BYTES)
        .read_to_string(&mut text)
        .map_err(io_error)?;
    text.strip_suffix('\n')
        .and_then(PowerPhase::parse)
        .ok_or_else(|| PowerFileError::Malformed {
            path: path.display().to_string(),
        })
}
