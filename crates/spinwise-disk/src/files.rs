//! Stripe-stack files in one directory: the file half of the contract, shared by the emulated
//! disk (its directory) and the block-device disk (its mount point) so both behave identically.
//!
//! Invariants:
//! - A write goes to a temporary file (`.tmp-<n>-<name>`, a name the contract forbids users, so
//!   it never shows in `list_files`), is fsynced, then renamed (`Replace`) or hard-linked
//!   (`Refuse`: the link fails atomically if the name exists) into place, and the directory is
//!   fsynced. On any error the temporary file is removed; after a crash, [`DirectoryFiles::open`]
//!   removes leftovers. So a name is either absent, the old file, or the whole new file.
//! - Several handles may open one directory (two stores on one data directory in one program;
//!   the CLI's owner lock keeps its processes apart, but the library does not). A write holds
//!   an exclusive `flock` on its temporary file from creating it until it is committed or
//!   removed, and opening removes only temporary files it can lock itself: a crash's leftovers
//!   (the kernel drops a dead process's locks), never another handle's write in flight. A
//!   temporary name another handle holds is skipped for the next.
//! - The space ledger's used bytes are the user files' lengths plus the reservations of writes
//!   in flight. The files are sized on the ledger's first use, not at open (a CLI command opens
//!   every disk of a rack and touches a few), and every path that changes the files asks for
//!   the ledger before it touches them, so the sizing never misses or doubles a change. A
//!   write reserves its length before touching the disk, so `NoSpace` leaves nothing.
//!   A `Replace` needs room for the new file before the old one is released (as a filesystem
//!   does during an atomic rename). Capacity is the configured one; a real filesystem that fills
//!   first answers ENOSPC, mapped to `HostFull` (the host, not the disk, is out of room).
//! - Only regular files with contract names are the disk's files (listed and counted); anything
//!   else in the directory (the failed marker, an operator's `lost+found`) is ignored.
//! - Limit: if the directory fsync after a successful rename fails, the write reports `Io`
//!   although the new file may already be visible; its durability is then unknown, which is
//!   exactly what the error says.
//! - `namespace` serializes the commit steps (link/rename/remove and the accounting of the
//!   replaced or removed length) so concurrent commits on one name account exactly; data IO
//!   (reads, the temp file's bytes, fsyncs of data) runs outside every lock.

use std::fs::{self, File, OpenOptions, TryLockError};
use std::io::{self, Read, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, OnceLock};

use crate::ledger::SpaceLedger;
use crate::timing::Throttle;
use crate::{DiskError, DiskIndex, Overwrite, Space, check_name};

/// Temporary files start with this; the contract forbids names starting with '.'.
pub(crate) const TEMP_PREFIX: &str = ".tmp-";
/// Streamed writes move at most this many bytes at a time, so memory stays bounded.
const CHUNK_BYTES: usize = 1 << 20;
/// The most temporary names one write tries: each handle numbers its own from 0, so another
/// handle on the directory may hold the name this one picks.
const TEMP_NAME_TRIES: u32 = 64;

/// What the emulated disk does to one operation (the block disk passes `Hooks::none()`).
#[derive(Clone, Copy, Default)]
pub(crate) struct Hooks<'a> {
    pub(crate) throttle: Option<&'a Throttle>,
    /// Fail this write with an IO error after its bytes reached the temporary file.
    pub(crate) fail_write: bool,
}

#[derive(Debug)]
pub(crate) struct DirectoryFiles {
    disk: DiskIndex,
    directory: PathBuf,
    capacity_bytes: u64,
    /// Sized on first use ([`DirectoryFiles::ledger`]), not at open: sizing stats every file,
    /// and a CLI command opens every disk of the rack to touch a few.
    space: OnceLock<SpaceLedger>,
    /// Serializes sizing, so one thread sizes and the others wait for its ledger.
    sizing: Mutex<()>,
    namespace: Mutex<()>,
    temp_sequence: AtomicU64,
}

/// Which of the hidden names a caller watches for (a disk's own markers, such as the emulated
/// disk's failed marker and power-state file) [`DirectoryFiles::list`] saw, so the caller needs
/// no second look at the directory. Holds only watched names: bounded by the caller's list.
#[derive(Debug, Default)]
pub(crate) struct Hidden {
    names: Vec<String>,
}

impl Hidden {
    pub(crate) fn contains(&self, name: &str) -> bool {
        self.names.iter().any(|hidden| hidden == name)
    }
}

impl DirectoryFiles {
    /// Opens the files in `directory`: removes temporary files a crash left (the user files
    /// are sized on first use).
    pub(crate) fn open(
        disk: DiskIndex,
        directory: &Path,
        capacity_bytes: u64,
    ) -> Result<DirectoryFiles, DiskError> {
        let listed = fs::read_dir(directory);
        DirectoryFiles::from_listing(disk, directory, capacity_bytes, listed, &[], &mut |_| {})
            .map(|(files, _)| files)
    }

    /// [`DirectoryFiles::open`] in one listing that also reports which `watched` hidden names
    /// the directory holds and shows `seen` every name listed, temporary files included and
    /// before any is removed; `None` when `directory` is missing or not a directory (a pulled
    /// disk).
    pub(crate) fn list(
        disk: DiskIndex,
        directory: &Path,
        capacity_bytes: u64,
        watched: &[&str],
        seen: &mut dyn FnMut(&str),
    ) -> Result<Option<(DirectoryFiles, Hidden)>, DiskError> {
        let listed = match fs::read_dir(directory) {
            Err(error)
                if matches!(
                    error.kind(),
                    io::ErrorKind::NotFound | io::ErrorKind::NotADirectory
                ) =>
            {
                return Ok(None);
            }
            listed => listed,
        };
        DirectoryFiles::from_listing(disk, directory, capacity_bytes, listed, watched, seen)
            .map(Some)
    }

    /// Walks one listing: shows `seen` every name, removes temporary files nobody holds and
    /// notes the watched hidden names (no file is stat'ed: the ledger sizes the files on first
    /// use).
    fn from_listing(
        disk: DiskIndex,
        directory: &Path,
        capacity_bytes: u64,
        listed: io::Result<fs::ReadDir>,
        watched: &[&str],
        seen: &mut dyn FnMut(&str),
    ) -> Result<(DirectoryFiles, Hidden), DiskError> {
        let io_error = |context: &str, source| DiskError::Io {
            disk,
            context: format!("{context} {}", directory.display()),
            source,
        };
        let mut removed_temp_files = false;
        let mut hidden = Hidden::default();
        for entry in listed.map_err(|e| io_error("listing", e))? {
            let entry = entry.map_err(|e| io_error("listing", e))?;
            let name = entry.file_name().to_string_lossy().into_owned();
            seen(&name);
            if name.starts_with(TEMP_PREFIX) {
                removed_temp_files |= remove_if_unheld(&entry.path())
                    .map_err(|e| io_error("removing a temp file in", e))?;
            } else if watched.contains(&name.as_str()) {
                hidden.names.push(name);
            }
        }
        // Only a removal changed the directory; a clean one costs no fsync (a CLI command
        // opens every disk of the rack).
        if removed_temp_files {
            sync_directory(directory).map_err(|e| io_error("syncing", e))?;
        }
        let files = DirectoryFiles {
            disk,
            directory: directory.to_path_buf(),
            capacity_bytes,
            space: OnceLock::new(),
            sizing: Mutex::new(()),
            namespace: Mutex::new(()),
            temp_sequence: AtomicU64::new(0),
        };
        Ok((files, hidden))
    }

    fn path(&self, name: &str) -> PathBuf {
        self.directory.join(name)
    }

    fn io_error(&self, context: String, source: io::Error) -> DiskError {
        DiskError::Io {
            disk: self.disk,
            context,
            source,
        }
    }

    /// Maps an error on the user file `name`: missing is `NotFound`, anything else `Io`.
    fn file_error(&self, name: &str, action: &str, source: io::Error) -> DiskError {
        if source.kind() == io::ErrorKind::NotFound {
            DiskError::NotFound {
                disk: self.disk,
                name: name.to_string(),
            }
        } else {
            self.io_error(format!("{action} {name:?}"), source)
        }
    }

    /// The space ledger, sizing the user files the first time. Every path that changes the
    /// files asks for it before it touches them, so no change of this handle's can fall between
    /// the sizing and the ledger (a removal's file is counted, then released).
    fn ledger(&self) -> Result<&SpaceLedger, DiskError> {
        if let Some(ledger) = self.space.get() {
            return Ok(ledger);
        }
        let _sizing = self.sizing.lock().expect("sizing lock poisoned");
        if let Some(ledger) = self.space.get() {
            return Ok(ledger);
        }
        let used_bytes = self.size_files()?;
        Ok(self
            .space
            .get_or_init(|| SpaceLedger::new(self.disk, self.capacity_bytes, used_bytes)))
    }

    /// The bytes of the user files: regular files with contract names.
    fn size_files(&self) -> Result<u64, DiskError> {
        let sizing_error = |e| self.io_error(format!("sizing {}", self.directory.display()), e);
        let mut used_bytes = 0u64;
        for entry in fs::read_dir(&self.directory).map_err(sizing_error)? {
            let entry = entry.map_err(sizing_error)?;
            let name = entry.file_name();
            if check_name(&name.to_string_lossy()).is_err() {
                continue;
            }
            let metadata = entry.metadata().map_err(sizing_error)?;
            if metadata.is_file() {
                used_bytes += metadata.len();
            }
        }
        Ok(used_bytes)
    }

    pub(crate) fn space(&self) -> Result<Space, DiskError> {
        Ok(self.ledger()?.space())
    }

    pub(crate) fn write_file(
        &self,
        name: &str,
        len_bytes: u64,
        data: &mut dyn Read,
        overwrite: Overwrite,
        hooks: Hooks<'_>,
    ) -> Result<(), DiskError> {
        check_name(name)?;
        if overwrite == Overwrite::Refuse && self.path(name).exists() {
            return Err(self.already_exists(name));
        }
        self.ledger()?.reserve(len_bytes)?;
        let (temp, mut file) = match self.create_temp(name, len_bytes) {
            Ok(created) => created,
            Err(error) => {
                self.ledger()?.release(len_bytes);
                return Err(error);
            }
        };
        let written = self
            .fill_temp(&mut file, name, len_bytes, data, hooks)
            .and_then(|()| self.commit(&temp, name, overwrite));
        if let Err(error) = written {
            let _ = fs::remove_file(&temp);
            self.ledger()?.release(len_bytes);
            return Err(error);
        }
        // The lock goes with the descriptor, once the name is committed.
        drop(file);
        sync_directory(&self.directory)
            .map_err(|e| self.io_error(format!("syncing the directory after {name:?}"), e))
    }

    /// Creates a new temporary file for `name` and locks it (module docs): the path and the
    /// file, the lock held for as long as the file is. A name that exists, or that another
    /// handle's opening holds or removed between the creation and the lock, is left to it and
    /// the next number tried.
    fn create_temp(&self, name: &str, len_bytes: u64) -> Result<(PathBuf, File), DiskError> {
        let write_error = |e: io::Error| self.write_error(name, len_bytes, e);
        for _ in 0..TEMP_NAME_TRIES {
            let sequence = self.temp_sequence.fetch_add(1, Ordering::Relaxed);
            let temp = self.path(&format!("{TEMP_PREFIX}{sequence}-{name}"));
            let file = match OpenOptions::new().write(true).create_new(true).open(&temp) {
                Ok(file) => file,
                Err(e) if e.kind() == io::ErrorKind::AlreadyExists => continue,
                Err(e) => return Err(write_error(e)),
            };
            match file.try_lock() {
                Ok(()) => {}
                // Another handle's opening took it for a leftover and removes it.
                Err(TryLockError::WouldBlock) => continue,
                Err(TryLockError::Error(e)) => return Err(write_error(e)),
            }
            if names_inode(&temp, &file).map_err(write_error)? {
                return Ok((temp, file));
            }
        }
        Err(self.io_error(
            format!("writing {name:?}"),
            io::Error::other(format!(
                "no free temporary name after {TEMP_NAME_TRIES} tries"
            )),
        ))
    }

    fn already_exists(&self, name: &str) -> DiskError {
        DiskError::AlreadyExists {
            disk: self.disk,
            name: name.to_string(),
        }
    }

    /// Streams exactly `len_bytes` from `data` into the new temporary `file` and fsyncs it.
    fn fill_temp(
        &self,
        file: &mut File,
        name: &str,
        len_bytes: u64,
        data: &mut dyn Read,
        hooks: Hooks<'_>,
    ) -> Result<(), DiskError> {
        let write_error = |e: io::Error| self.write_error(name, len_bytes, e);
        let mut buffer = vec![0u8; CHUNK_BYTES.min(len_bytes as usize)];
        let mut remaining = len_bytes;
        // The end of the last chunk's bandwidth booking: the next chunk waits for it.
        let mut booked_until = None;
        while remaining > 0 {
            if let Some(throttle) = hooks.throttle {
                throttle.wait_until(booked_until);
            }
            // A chunk continues the operation's timeline, so lateness does not accumulate.
            let started_us = booked_until.or_else(|| hooks.throttle.map(Throttle::now_us));
            let want = buffer.len().min(remaining as usize);
            let got = match data.read(&mut buffer[..want]) {
                Ok(0) => {
                    let source = io::Error::new(
                        io::ErrorKind::UnexpectedEof,
                        format!(
                            "the source ended after {} of {len_bytes} bytes",
                            len_bytes - remaining
                        ),
                    );
                    return Err(self.io_error(format!("writing {name:?}"), source));
                }
                Ok(got) => got,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.io_error(format!("reading the data for {name:?}"), e)),
            };
            file.write_all(&buffer[..got]).map_err(write_error)?;
            if let Some(throttle) = hooks.throttle {
                // A paced disk puts each chunk on the platter within its booking, so the final
                // fsync has little left to do, instead of the host flushing everything at once.
                file.sync_data().map_err(write_error)?;
                let started_us = started_us.unwrap_or_else(|| throttle.now_us());
                booked_until = Some(throttle.reserve(got as u64, started_us));
            }
            remaining -= got as u64;
        }
        if hooks.fail_write {
            return Err(self.io_error(
                format!("writing {name:?}"),
                io::Error::other("injected write fault"),
            ));
        }
        file.sync_all().map_err(write_error)?;
        if let Some(throttle) = hooks.throttle {
            throttle.wait_until(booked_until);
        }
        Ok(())
    }

    fn write_error(&self, name: &str, len_bytes: u64, source: io::Error) -> DiskError {
        if source.kind() == io::ErrorKind::StorageFull {
            // Not `NoSpace` with the ledger's free bytes: the ledger had room (the write booked
            // its bytes first), so that message read "1048692 bytes needed, 17999998951308
            // free" (found 2026-12-01).
            DiskError::HostFull {
                disk: self.disk,
                needed_bytes: len_bytes,
            }
        } else {
            self.io_error(format!("writing {name:?}"), source)
        }
    }

    /// Puts the synced temporary file in place and settles the accounting of a replaced file.
    fn commit(&self, temp: &Path, name: &str, overwrite: Overwrite) -> Result<(), DiskError> {
        let target = self.path(name);
        let _namespace = self.namespace.lock().expect("namespace lock poisoned");
        match overwrite {
            Overwrite::Refuse => {
                fs::hard_link(temp, &target).map_err(|e| {
                    if e.kind() == io::ErrorKind::AlreadyExists {
                        self.already_exists(name)
                    } else {
                        self.io_error(format!("linking {name:?} into place"), e)
                    }
                })?;
                // The name is committed; a failure here only leaves a temp file for `open`.
                let _ = fs::remove_file(temp);
            }
            Overwrite::Replace => {
                let old_len = fs::metadata(&target).map(|m| m.len()).ok();
                fs::rename(temp, &target)
                    .map_err(|e| self.io_error(format!("renaming {name:?} into place"), e))?;
                if let Some(old_len) = old_len {
                    self.ledger()?.release_file(old_len);
                }
            }
        }
        Ok(())
    }

    /// Reads at `offset` until `buffer` is full or the file ends.
    pub(crate) fn read_at(
        &self,
        name: &str,
        offset: u64,
        buffer: &mut [u8],
        hooks: Hooks<'_>,
    ) -> Result<usize, DiskError> {
        check_name(name)?;
        let file = File::open(self.path(name)).map_err(|e| self.file_error(name, "opening", e))?;
        let started_us = hooks.throttle.map(Throttle::now_us);
        let mut filled = 0;
        while filled < buffer.len() {
            match file.read_at(&mut buffer[filled..], offset + filled as u64) {
                Ok(0) => break,
                Ok(got) => filled += got,
                Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
                Err(e) => return Err(self.file_error(name, "reading", e)),
            }
        }
        if let (Some(throttle), Some(started_us)) = (hooks.throttle, started_us) {
            throttle.wait_until(Some(throttle.reserve(filled as u64, started_us)));
        }
        Ok(filled)
    }

    pub(crate) fn file_len(&self, name: &str) -> Result<u64, DiskError> {
        check_name(name)?;
        fs::metadata(self.path(name))
            .map(|m| m.len())
            .map_err(|e| self.file_error(name, "sizing", e))
    }

    pub(crate) fn remove_file(&self, name: &str) -> Result<(), DiskError> {
        check_name(name)?;
        let target = self.path(name);
        // Sized before the file goes, so the release below finds it counted.
        let ledger = self.ledger()?;
        {
            let _namespace = self.namespace.lock().expect("namespace lock poisoned");
            let len = fs::metadata(&target)
                .map(|m| m.len())
                .map_err(|e| self.file_error(name, "sizing", e))?;
            fs::remove_file(&target).map_err(|e| self.file_error(name, "removing", e))?;
            ledger.release_file(len);
        }
        sync_directory(&self.directory)
            .map_err(|e| self.io_error(format!("syncing the directory after removing {name:?}"), e))
    }

    /// Creates the (empty) marker file `marker` durably, e.g. the failed marker.
    pub(crate) fn write_marker(&self, marker: &str) -> io::Result<()> {
        File::create(self.path(marker))?.sync_all()?;
        sync_directory(&self.directory)
    }

    pub(crate) fn list_files(&self) -> Result<Vec<String>, DiskError> {
        let listing_error = |e| self.io_error(format!("listing {}", self.directory.display()), e);
        let mut names = Vec::new();
        for entry in fs::read_dir(&self.directory).map_err(listing_error)? {
            let entry = entry.map_err(listing_error)?;
            let is_file = entry.file_type().map_err(listing_error)?.is_file();
            let name = entry.file_name().to_string_lossy().into_owned();
            if is_file && check_name(&name).is_ok() {
                names.push(name);
            }
        }
        names.sort();
        Ok(names)
    }
}

/// Makes the directory's entries (creations, renames, removals) durable.
/// Removes the temporary file at `path` if no live handle holds its lock (a crash's leftover:
/// the kernel drops a dead process's locks); `false` when it is left alone (a write in flight
/// holds it) or already gone (committed or removed meanwhile).
fn remove_if_unheld(path: &Path) -> io::Result<bool> {
    let file = match File::open(path) {
        Ok(file) => file,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(false),
        Err(e) => return Err(e),
    };
    match file.try_lock() {
        Ok(()) => {}
        Err(TryLockError::WouldBlock) => return Ok(false),
        Err(TryLockError::Error(e)) => return Err(e),
    }
    // Locked, so nobody writes it; and while it has the name, nobody can create that name. A
    // name that moved on since the listing is someone else's now.
    if !names_inode(path, &file)? {
        return Ok(false);
    }
    match fs::remove_file(path) {
        Ok(()) => Ok(true),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

/// Whether `path` still names `file`'s inode (an absent path does not).
fn names_inode(path: &Path, file: &File) -> io::Result<bool> {
    use std::os::unix::fs::MetadataExt;
    let held = file.metadata()?;
    match fs::symlink_metadata(path) {
        Ok(named) => Ok(named.dev() == held.dev() && named.ino() == held.ino()),
        Err(e) if e.kind() == io::ErrorKind::NotFound => Ok(false),
        Err(e) => Err(e),
    }
}

pub(crate) fn sync_directory(directory: &Path) -> io::Result<()> {
    File::open(directory)?.sync_all()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_host_running_out_of_room_is_host_full_not_a_full_disk_with_room_to_spare() {
        let directory =
            std::env::temp_dir().join(format!("spinwise-disk-host-full-{}", std::process::id()));
        fs::create_dir_all(&directory).unwrap();
        let files = DirectoryFiles::open(3, &directory, 1 << 40).unwrap();
        let error = files.write_error("stack", 4096, io::Error::from(io::ErrorKind::StorageFull));
        assert!(
            matches!(
                error,
                DiskError::HostFull {
                    disk: 3,
                    needed_bytes: 4096
                }
            ),
            "{error:?}"
        );
        assert!(error.to_string().contains("host filesystem"), "{error}");
        let other = files.write_error("stack", 4096, io::Error::other("bad sector"));
        assert!(!matches!(other, DiskError::HostFull { .. }), "{other:?}");
        fs::remove_dir_all(&directory).unwrap();
    }
}
