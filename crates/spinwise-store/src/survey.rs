//! What a data directory holds outside its catalog — staging segments (`DATA/staging/seg-*.log`)
//! and stripe stacks (`DATA/disks/disk-*/blob-*-c*.stack`) — and the guards built on it
//! (docs/store.md, "A lost catalog"):
//!
//! - a store whose catalog is missing, empty or unreadable refuses to open, deleting nothing,
//!   while the directory holds segments or stacks: only the catalog names the objects in them,
//!   and opening over a new empty catalog would have staging recovery delete every segment
//!   (none is referenced) and later flushes collide with the old stacks;
//! - the catalog's blob id counter is raised above the highest blob id any stack on the disks
//!   carries, so a blob id is never handed out twice, even after the catalog was lost, replaced
//!   or restored from an older copy (the catalog's own counter only remembers what it saw).
//!   An ordinary open reads the names from the listings its emulated disks make to open
//!   ([`crate::stacks::stack_blob_id`] in `rack::open_emulated_disks`); the survey serves recovery and a store
//!   on given disks.
//!
//! Invariants: the survey only lists directories and parses names; it reads no file, changes
//! nothing, and spins no disk up. An emulated disk's files are host files, so their names are
//! host metadata (a store over real drives would need the names kept on the always-on disk).
//! A disk directory that cannot be listed (a failed or removed disk) is skipped and counted:
//! its stacks are columns of blobs whose other columns are on other disks of the group.

use crate::config::STAGING_DIR;
use crate::error::{StoreResult, io_error};
use crate::rack::DISKS_DIR;
use crate::stacks::stack_blob_id;
use spinwise_catalog::BlobId;
use std::path::{Path, PathBuf};

/// What [`survey`] found.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct DataSurvey {
    /// Files named like staging segments in `DATA/staging/`.
    pub staging_segments: u64,
    /// Complete stripe-stack files on the disks (not the disk's temporary files).
    pub stripe_stacks: u64,
    /// The highest blob id in any stack file's name, temporary ones (a write in progress or
    /// cut short) included: an id is taken from the moment a file carries it.
    pub highest_blob_id: Option<BlobId>,
    /// Disk directories that could not be listed, with why.
    pub unlisted_disks: Vec<String>,
}

impl DataSurvey {
    /// Whether the directory holds data only a catalog can name.
    pub fn holds_data(&self) -> bool {
        self.staging_segments > 0 || self.stripe_stacks > 0
    }
}

/// Whether `name` is a staging segment's file name (docs/staging-format.md).
fn is_segment_name(name: &str) -> bool {
    name.strip_prefix("seg-")
        .and_then(|rest| rest.strip_suffix(".log"))
        .is_some_and(|hex| hex.len() == 16 && hex.bytes().all(|byte| byte.is_ascii_hexdigit()))
}

/// The names in `directory`; an absent directory holds nothing.
fn names_in(directory: &Path) -> std::io::Result<Vec<String>> {
    let entries = match std::fs::read_dir(directory) {
        Ok(entries) => entries,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => return Ok(Vec::new()),
        Err(error) => return Err(error),
    };
    let mut names = Vec::new();
    for entry in entries {
        names.push(entry?.file_name().to_string_lossy().into_owned());
    }
    Ok(names)
}

/// The staging devices store.toml names (`DATA/staging` and the chain), or `DATA/staging`
/// alone when store.toml cannot be read (then the store does not open anyway).
fn staging_devices(data_dir: &Path) -> Vec<PathBuf> {
    match crate::config::read(data_dir) {
        Ok(config) => config.staging_devices(data_dir),
        Err(_) => vec![data_dir.join(STAGING_DIR)],
    }
}

/// Lists `data_dir`'s staging devices and every disk directory under `DATA/disks/`. A staging
/// directory that cannot be listed is an error (it is on the always-on disk, and what it holds
/// decides whether opening is safe); a disk directory that cannot be listed is reported in
/// [`DataSurvey::unlisted_disks`].
pub fn survey(data_dir: &Path) -> StoreResult<DataSurvey> {
    let mut found = DataSurvey::default();
    for staging in staging_devices(data_dir) {
        found.staging_segments += names_in(&staging)
            .map_err(io_error(&staging))?
            .iter()
            .filter(|name| is_segment_name(name))
            .count() as u64;
    }
    let disks = data_dir.join(DISKS_DIR);
    let mut disk_directories: Vec<PathBuf> = names_in(&disks)
        .map_err(io_error(&disks))?
        .into_iter()
        .filter(|name| name.starts_with("disk-"))
        .map(|name| disks.join(name))
        .collect();
    disk_directories.sort();
    // Each thread tallies a run of directories in order, and the runs are merged in order, so
    // the survey is the same however many threads list it.
    let tallies = crate::runs::in_runs(
        &disk_directories,
        DIRECTORIES_PER_THREAD,
        MAX_SURVEY_THREADS,
        survey_disks,
    );
    for tally in tallies {
        found.stripe_stacks += tally.stripe_stacks;
        found.highest_blob_id = found.highest_blob_id.max(tally.highest_blob_id);
        found.unlisted_disks.extend(tally.unlisted_disks);
    }
    Ok(found)
}

/// Disk directories one survey thread lists at least: cold, each listing waits for a read of
/// the host's disk, and threads overlap those waits (1152 directories: 72–102 ms listed in
/// turn, 44–50 ms on 4 threads); for a small rack a thread would cost more than it saves.
const DIRECTORIES_PER_THREAD: usize = 128;
/// The most survey threads (a limit on everything: the host's disk gains nothing past a few).
const MAX_SURVEY_THREADS: usize = 4;

/// The stacks and the highest blob id in `directories`, and those that could not be listed.
fn survey_disks(directories: &[PathBuf]) -> DataSurvey {
    let mut found = DataSurvey::default();
    for directory in directories {
        let names = match names_in(directory) {
            Ok(names) => names,
            Err(error) => {
                found
                    .unlisted_disks
                    .push(format!("{}: {error}", directory.display()));
                continue;
            }
        };
        for (blob, temporary) in names.iter().filter_map(|name| stack_blob_id(name)) {
            if !temporary {
                found.stripe_stacks += 1;
            }
            found.highest_blob_id = found.highest_blob_id.max(Some(blob));
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::{is_segment_name, survey, survey_disks};
    use crate::rack::DISKS_DIR;
    use crate::stacks::stack_name;

    /// 300 disk directories (three survey threads), stacks on some, one temporary file, and a
    /// "disk" that is a plain file (unlistable): the threads' merged survey is the one-thread
    /// survey, unlisted disks in directory order.
    #[test]
    fn a_survey_on_threads_finds_what_one_thread_finds_in_the_same_order() {
        let data = tempfile::tempdir().unwrap();
        let disks = data.path().join(DISKS_DIR);
        std::fs::create_dir_all(&disks).unwrap();
        let mut directories = Vec::new();
        for index in 0..300u64 {
            let directory = disks.join(format!("disk-{index:05}"));
            directories.push(directory.clone());
            if index % 100 == 50 {
                std::fs::write(&directory, b"not a directory").unwrap();
                continue;
            }
            std::fs::create_dir(&directory).unwrap();
            if index % 7 == 0 {
                std::fs::write(directory.join(stack_name(index * 3, 1)), b"").unwrap();
            }
        }
        let temporary = format!(".tmp-1-{}", stack_name(5000, 0));
        std::fs::write(directories[299].join(temporary), b"").unwrap();
        let found = survey(data.path()).unwrap();
        let alone = survey_disks(&directories);
        assert_eq!(found, alone);
        assert_eq!(found.stripe_stacks, 43);
        assert_eq!(found.highest_blob_id, Some(5000));
        assert_eq!(found.unlisted_disks.len(), 3);
        assert!(found.unlisted_disks[0].contains("disk-00050"));
        assert!(found.unlisted_disks[2].contains("disk-00250"));
    }

    #[test]
    fn segment_names_are_seg_sixteen_hex_digits_log() {
        assert!(is_segment_name("seg-0000000000000001.log"));
        assert!(!is_segment_name("seg-1.log"));
        assert!(!is_segment_name("seg-0000000000000001.log.tmp"));
    }
}
