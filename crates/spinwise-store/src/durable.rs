//! Durability of the store's host files (the staging log, the blob indexes, the store's
//! configuration): every fsync the store does on a host file, and every directory change whose
//! durability depends on a directory fsync, goes through [`HostFiles`]. In production it only
//! performs the call (one `None` check more). Under simulation ([`HostFiles::simulated`]) a
//! [`HostCrashModel`] also records what a power cut would keep, and [`HostCrashModel::crash`]
//! applies that to the real files between two runs of the store: the same rule FaultyDisk
//! applies to the model disks (docs/faults.md, "Host files").
//!
//! The model (per file and per directory, POSIX's weakest promise):
//! - a file keeps the bytes it had when it was last fsynced ([`HostFiles::sync_file`]), its
//!   *durable length*; bytes written after that are lost, or torn at a 512-byte sector boundary;
//!   bytes cut by [`HostFiles::set_len`] below the durable length come back unless a sync
//!   follows. Writes inside the durable length are not modelled (the store only appends to its
//!   host files, and the only shrink, [`HostFiles::set_len`], saves what it cuts);
//! - a creation ([`HostFiles::created`]), rename ([`HostFiles::rename`]) or removal
//!   ([`HostFiles::remove_file`]) is durable only once its directory was fsynced
//!   ([`HostFiles::sync_directory`]); a file's own fsync does not make its name durable;
//! - a file the model never heard of, in a directory the crash sweeps, is not durable.
//!
//! Invariants: the model's books change only after the host call they describe succeeded; a
//! file's durable length is measured *before* its fsync starts, so a byte written during the
//! fsync is never counted durable; everything is kept in ordered maps and the crash draws from
//! one seeded stream, so the same calls and seed give the same files after a crash.

use std::collections::BTreeMap;
use std::fs::File;
use std::io;
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

/// The store's handle on host-file durability: production performs the fsyncs only; a
/// simulation also tells its [`HostCrashModel`]. Cheap to clone.
#[derive(Clone, Debug, Default)]
pub struct HostFiles {
    model: Option<Arc<HostCrashModel>>,
}

impl HostFiles {
    /// Fsyncs and records into `model` what a crash would keep.
    pub fn simulated(model: Arc<HostCrashModel>) -> HostFiles {
        HostFiles { model: Some(model) }
    }

    /// Fsyncs `file` (open at `path`): its bytes so far survive a crash. `site` names the call
    /// site (docs/BENCHMARKS.md, "Store swarm: fsyncs it catches").
    pub fn sync_file(&self, site: &'static str, file: &File, path: &Path) -> io::Result<()> {
        let Some(model) = &self.model else {
            return file.sync_all();
        };
        if model.removes(site) {
            return Ok(());
        }
        let length_bytes = file.metadata()?.len();
        file.sync_all()?;
        model.file_synced(path, length_bytes);
        Ok(())
    }

    /// Fsyncs the directory `directory`: every creation, rename and removal in it so far
    /// survives a crash.
    pub fn sync_directory(&self, site: &'static str, directory: &Path) -> io::Result<()> {
        let Some(model) = &self.model else {
            return File::open(directory)?.sync_all();
        };
        if model.removes(site) {
            return Ok(());
        }
        File::open(directory)?.sync_all()?;
        model.directory_synced(directory);
        Ok(())
    }

    /// Creates `directory` and its missing parents, fsyncing the parent of each directory it
    /// made, so a power cut after this returns cannot take the new directory (and everything
    /// later made durable inside it) away. Nothing is synced when it exists already. The crash
    /// model keeps directories (docs/faults.md), so it cannot show this fsync missing.
    pub fn create_directory(&self, site: &'static str, directory: &Path) -> io::Result<()> {
        let mut missing = Vec::new();
        let mut at = Some(directory);
        while let Some(path) = at.filter(|path| !path.as_os_str().is_empty() && !path.exists()) {
            missing.push(path);
            at = path.parent();
        }
        if missing.is_empty() {
            return Ok(());
        }
        std::fs::create_dir_all(directory)?;
        for created in missing.iter().rev() {
            let parent = created.parent().filter(|p| !p.as_os_str().is_empty());
            self.sync_directory(site, parent.unwrap_or(Path::new(".")))?;
        }
        Ok(())
    }

    /// Notes that the file `path` was just created (empty): its name is durable after the next
    /// fsync of its directory.
    pub fn created(&self, path: &Path) {
        if let Some(model) = &self.model {
            model.created(path);
        }
    }

    /// Renames `from` to `to` (in one directory); durable after the next fsync of it.
    pub fn rename(&self, from: &Path, to: &Path) -> io::Result<()> {
        let Some(model) = &self.model else {
            return std::fs::rename(from, to);
        };
        let replaced = model.durable_bytes(to)?;
        std::fs::rename(from, to)?;
        model.renamed(from, to, replaced);
        Ok(())
    }

    /// Removes the file `path`; durable after the next fsync of its directory.
    pub fn remove_file(&self, path: &Path) -> io::Result<()> {
        let Some(model) = &self.model else {
            return std::fs::remove_file(path);
        };
        let durable = model.durable_bytes(path)?;
        std::fs::remove_file(path)?;
        model.removed(path, durable);
        Ok(())
    }

    /// Sets the length of `file` (open at `path`); a cut below the durable length is durable
    /// after the next [`HostFiles::sync_file`].
    pub fn set_len(&self, file: &File, path: &Path, length_bytes: u64) -> io::Result<()> {
        if let Some(model) = &self.model {
            model.cutting(file, path, length_bytes)?;
        }
        file.set_len(length_bytes)
    }
}

/// What a crash would keep of the host files the store told [`HostFiles`] about.
#[derive(Debug, Default)]
pub struct HostCrashModel {
    books: Mutex<Books>,
    /// The fsync site this simulation acts as if deleted from the source (neither performed nor
    /// recorded): how scripts/swarm-mutations.sh removes one without a rebuild per site.
    removed_site: Option<String>,
    /// Calls that reached the removed site (a removal never reached proves nothing).
    removed_site_calls: AtomicU64,
}

#[derive(Debug, Default)]
struct Books {
    files: BTreeMap<PathBuf, Tracked>,
    /// Directory changes not yet made durable by a directory fsync, oldest first.
    pending: Vec<Change>,
}

#[derive(Debug, Default)]
struct Tracked {
    durable_bytes: u64,
    /// Durable bytes cut off by an unsynced shrink, from this offset: a crash puts them back.
    cut: Option<(u64, Vec<u8>)>,
}

#[derive(Debug)]
enum Change {
    Created(PathBuf),
    Renamed {
        from: PathBuf,
        to: PathBuf,
        /// The durable content of the file the rename replaced, if there was one.
        replaced: Option<Vec<u8>>,
    },
    Removed {
        path: PathBuf,
        durable: Option<Vec<u8>>,
    },
}

impl Change {
    fn directory(&self) -> Option<&Path> {
        match self {
            Change::Created(path) | Change::Removed { path, .. } => path.parent(),
            Change::Renamed { to, .. } => to.parent(),
        }
    }
}

/// What one crash did to the host files.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct HostCrashReport {
    /// Files cut back to their durable length (lost their unsynced tail).
    pub tails_lost: u64,
    /// Files cut at a sector boundary inside their unsynced tail.
    pub tails_torn: u64,
    /// Creations, renames and removals undone (their directory was never fsynced after them).
    pub entries_undone: u64,
    /// Files in a swept directory the model never heard of, deleted.
    pub unknown_deleted: u64,
}

/// The sector a torn tail is cut at a multiple of.
pub const HOST_SECTOR_BYTES: u64 = 512;

impl HostCrashModel {
    pub fn new() -> Arc<HostCrashModel> {
        Arc::new(HostCrashModel::default())
    }

    /// A model of a store whose fsync site `site` was deleted (the mutation test's subject).
    pub fn without_site(site: &str) -> Arc<HostCrashModel> {
        Arc::new(HostCrashModel {
            removed_site: Some(site.to_string()),
            ..HostCrashModel::default()
        })
    }

    fn removes(&self, site: &str) -> bool {
        let removed = self.removed_site.as_deref() == Some(site);
        if removed {
            self.removed_site_calls.fetch_add(1, Ordering::Relaxed);
        }
        removed
    }

    /// How many calls reached the removed site so far.
    pub fn removed_site_calls(&self) -> u64 {
        self.removed_site_calls.load(Ordering::Relaxed)
    }

    fn books(&self) -> std::sync::MutexGuard<'_, Books> {
        self.books.lock().expect("host crash model lock")
    }

    fn file_synced(&self, path: &Path, length_bytes: u64) {
        let mut books = self.books();
        let tracked = books.files.entry(path.to_path_buf()).or_default();
        tracked.durable_bytes = length_bytes;
        tracked.cut = None;
    }

    fn directory_synced(&self, directory: &Path) {
        self.books()
            .pending
            .retain(|change| change.directory() != Some(directory));
    }

    fn created(&self, path: &Path) {
        let mut books = self.books();
        books.files.insert(path.to_path_buf(), Tracked::default());
        books.pending.push(Change::Created(path.to_path_buf()));
    }

    fn renamed(&self, from: &Path, to: &Path, replaced: Option<Vec<u8>>) {
        assert_eq!(from.parent(), to.parent(), "renames stay in one directory");
        let mut books = self.books();
        let moved = books.files.remove(from).unwrap_or_default();
        books.files.insert(to.to_path_buf(), moved);
        books.pending.push(Change::Renamed {
            from: from.to_path_buf(),
            to: to.to_path_buf(),
            replaced,
        });
    }

    fn removed(&self, path: &Path, durable: Option<Vec<u8>>) {
        let mut books = self.books();
        books.files.remove(path);
        books.pending.push(Change::Removed {
            path: path.to_path_buf(),
            durable,
        });
    }

    /// The bytes of `path` a crash now would keep, if the model tracks it and it exists.
    fn durable_bytes(&self, path: &Path) -> io::Result<Option<Vec<u8>>> {
        let books = self.books();
        let Some(tracked) = books.files.get(path) else {
            return Ok(None);
        };
        let file = match File::open(path) {
            Ok(file) => file,
            Err(error) if error.kind() == io::ErrorKind::NotFound => return Ok(None),
            Err(error) => return Err(error),
        };
        let kept = match &tracked.cut {
            Some((offset, _)) => *offset,
            None => tracked.durable_bytes.min(file.metadata()?.len()),
        };
        let mut bytes = vec![0; kept as usize];
        file.read_exact_at(&mut bytes, 0)?;
        if let Some((_, tail)) = &tracked.cut {
            bytes.extend_from_slice(tail);
        }
        Ok(Some(bytes))
    }

    /// Saves the durable bytes a shrink of `file` to `length_bytes` is about to cut.
    fn cutting(&self, file: &File, path: &Path, length_bytes: u64) -> io::Result<()> {
        let mut books = self.books();
        let Some(tracked) = books.files.get_mut(path) else {
            return Ok(());
        };
        // Durable bytes still in the file end at the earlier cut, or at the durable length.
        let (end, mut saved) = match tracked.cut.take() {
            Some((offset, tail)) => (offset, tail),
            None => (
                tracked.durable_bytes.min(file.metadata()?.len()),
                Vec::new(),
            ),
        };
        if length_bytes >= end {
            if !saved.is_empty() {
                tracked.cut = Some((end, saved));
            }
            return Ok(());
        }
        let mut cut = vec![0; (end - length_bytes) as usize];
        file.read_exact_at(&mut cut, length_bytes)?;
        cut.append(&mut saved);
        tracked.cut = Some((length_bytes, cut));
        Ok(())
    }

    /// Cuts the power: undoes every directory change no directory fsync made durable (newest
    /// first), deletes the files in `swept` the model never heard of, and cuts every tracked
    /// file back to its durable bytes or, by a draw from `seed`, tears it at a sector boundary
    /// inside its unsynced tail. Afterwards everything on the host counts as durable.
    /// Call only while nothing writes the files.
    pub fn crash(&self, seed: u64, swept: &[&Path]) -> io::Result<HostCrashReport> {
        let mut books = self.books();
        let mut report = HostCrashReport::default();
        let mut draws = SplitMix64(seed);
        while let Some(change) = books.pending.pop() {
            report.entries_undone += 1;
            match change {
                Change::Created(path) => {
                    books.files.remove(&path);
                    remove_if_present(&path)?;
                }
                Change::Renamed { from, to, replaced } => {
                    if let Some(moved) = books.files.remove(&to) {
                        books.files.insert(from.clone(), moved);
                    }
                    if to.exists() {
                        std::fs::rename(&to, &from)?;
                    }
                    if let Some(bytes) = replaced {
                        restore(&mut books, &to, &bytes)?;
                    }
                }
                Change::Removed { path, durable } => {
                    if let Some(bytes) = durable {
                        restore(&mut books, &path, &bytes)?;
                    }
                }
            }
        }
        for directory in swept {
            let entries = match std::fs::read_dir(directory) {
                Ok(entries) => entries,
                Err(error) if error.kind() == io::ErrorKind::NotFound => continue,
                Err(error) => return Err(error),
            };
            let mut unknown = Vec::new();
            for entry in entries {
                let entry = entry?;
                if entry.file_type()?.is_file() && !books.files.contains_key(&entry.path()) {
                    unknown.push(entry.path());
                }
            }
            unknown.sort();
            for path in unknown {
                std::fs::remove_file(&path)?;
                report.unknown_deleted += 1;
            }
        }
        let mut gone = Vec::new();
        for (path, tracked) in books.files.iter_mut() {
            let file = match std::fs::OpenOptions::new().write(true).open(path) {
                Ok(file) => file,
                Err(error) if error.kind() == io::ErrorKind::NotFound => {
                    gone.push(path.clone());
                    continue;
                }
                Err(error) => return Err(error),
            };
            if let Some((offset, tail)) = tracked.cut.take() {
                file.write_all_at(&tail, offset)?;
            }
            let length_bytes = file.metadata()?.len();
            let durable_bytes = tracked.durable_bytes;
            if length_bytes > durable_bytes {
                // Sector boundaries strictly inside the unsynced tail (counted from offset 0).
                let first = durable_bytes / HOST_SECTOR_BYTES + 1;
                let last = (length_bytes - 1) / HOST_SECTOR_BYTES;
                let torn = last >= first && draws.next() % 2 == 1;
                let kept = if torn {
                    report.tails_torn += 1;
                    (first + draws.next() % (last - first + 1)) * HOST_SECTOR_BYTES
                } else {
                    report.tails_lost += 1;
                    durable_bytes
                };
                file.set_len(kept)?;
                file.sync_all()?;
                tracked.durable_bytes = kept;
            } else {
                tracked.durable_bytes = length_bytes;
            }
        }
        for path in gone {
            books.files.remove(&path);
        }
        Ok(report)
    }
}

/// Writes `bytes` back as the durable file `path` (a removal or replacement undone).
fn restore(books: &mut Books, path: &Path, bytes: &[u8]) -> io::Result<()> {
    std::fs::write(path, bytes)?;
    books.files.insert(
        path.to_path_buf(),
        Tracked {
            durable_bytes: bytes.len() as u64,
            cut: None,
        },
    );
    Ok(())
}

fn remove_if_present(path: &Path) -> io::Result<()> {
    match std::fs::remove_file(path) {
        Err(error) if error.kind() != io::ErrorKind::NotFound => Err(error),
        _ => Ok(()),
    }
}

/// The crash's draws: SplitMix64, a fixed sequence per seed (no dependency needed for a few
/// numbers per crash).
struct SplitMix64(u64);

impl SplitMix64 {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::Write;

    fn write(path: &Path, bytes: &[u8]) -> File {
        let mut file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .read(true)
            .open(path)
            .unwrap();
        file.write_all(bytes).unwrap();
        file
    }

    #[test]
    fn creating_a_directory_fsyncs_the_parent_of_each_directory_it_made_and_nothing_when_it_exists()
    {
        let directory = tempfile_directory("creates");
        let model = HostCrashModel::without_site("made");
        let host = HostFiles::simulated(model.clone());
        let deepest = directory.join("a").join("b").join("c");
        host.create_directory("made", &deepest).unwrap();
        assert!(deepest.is_dir());
        assert_eq!(model.removed_site_calls(), 3, "a, b and c were made");
        host.create_directory("made", &deepest).unwrap();
        assert_eq!(
            model.removed_site_calls(),
            3,
            "nothing to make, nothing to sync"
        );
    }

    #[test]
    fn a_crash_keeps_synced_bytes_and_names_and_drops_the_rest() {
        let directory = tempfile_directory("keeps");
        let model = HostCrashModel::new();
        let host = HostFiles::simulated(model.clone());
        let synced = directory.join("synced");
        let file = write(&synced, &[1; 100]);
        host.created(&synced);
        host.sync_file("test", &file, &synced).unwrap();
        host.sync_directory("test", &directory).unwrap();
        write(&synced, &[2; 50]);
        let unnamed = directory.join("unnamed");
        let other = write(&unnamed, &[3; 10]);
        host.created(&unnamed);
        host.sync_file("test", &other, &unnamed).unwrap();
        std::fs::write(directory.join("stranger"), b"x").unwrap();

        let report = model.crash(7, &[&directory]).unwrap();

        assert_eq!(std::fs::read(&synced).unwrap(), vec![1; 100]);
        assert!(
            !unnamed.exists(),
            "a creation never made durable by a directory fsync"
        );
        assert!(!directory.join("stranger").exists());
        assert_eq!(report.entries_undone, 1);
        assert_eq!(report.unknown_deleted, 1);
        assert_eq!(report.tails_lost + report.tails_torn, 1);
        std::fs::remove_dir_all(&directory).unwrap();
    }

    #[test]
    fn an_unsynced_cut_rename_or_removal_is_undone_by_a_crash() {
        let directory = tempfile_directory("undone");
        let model = HostCrashModel::new();
        let host = HostFiles::simulated(model.clone());
        let cut = directory.join("cut");
        let file = write(&cut, &[4; 2000]);
        host.created(&cut);
        host.sync_file("test", &file, &cut).unwrap();
        let gone = directory.join("gone");
        let other = write(&gone, &[5; 30]);
        host.created(&gone);
        host.sync_file("test", &other, &gone).unwrap();
        host.sync_directory("test", &directory).unwrap();
        host.set_len(&file, &cut, 100).unwrap();
        host.remove_file(&gone).unwrap();
        let moved = directory.join("moved");
        host.rename(&cut, &moved).unwrap();

        model.crash(1, &[&directory]).unwrap();

        assert_eq!(std::fs::read(&cut).unwrap(), vec![4; 2000]);
        assert!(!moved.exists());
        assert_eq!(std::fs::read(&gone).unwrap(), vec![5; 30]);
        std::fs::remove_dir_all(&directory).unwrap();
    }

    #[test]
    fn a_torn_tail_ends_on_a_sector_boundary_inside_the_unsynced_bytes_and_the_seed_decides() {
        let directory = tempfile_directory("torn");
        let mut kept = BTreeMap::new();
        for seed in 0..32u64 {
            let model = HostCrashModel::new();
            let host = HostFiles::simulated(model.clone());
            let path = directory.join(format!("file-{seed}"));
            let file = write(&path, &[6; 700]);
            host.created(&path);
            host.sync_file("test", &file, &path).unwrap();
            host.sync_directory("test", &directory).unwrap();
            write(&path, &[7; 5000]);
            model.crash(seed, &[]).unwrap();
            let length_bytes = std::fs::metadata(&path).unwrap().len();
            assert!(
                length_bytes == 700
                    || (length_bytes > 700
                        && length_bytes < 5700
                        && length_bytes.is_multiple_of(HOST_SECTOR_BYTES)),
                "seed {seed} kept {length_bytes} bytes"
            );
            kept.insert(seed, length_bytes);
        }
        assert!(kept.values().any(|length| *length == 700));
        assert!(kept.values().any(|length| *length > 700));
        std::fs::remove_dir_all(&directory).unwrap();
    }

    fn tempfile_directory(name: &str) -> PathBuf {
        let directory =
            std::env::temp_dir().join(format!("spinwise-durable-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&directory);
        std::fs::create_dir_all(&directory).unwrap();
        directory
    }
}
