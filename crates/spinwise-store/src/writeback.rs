//! Kernel hints for streaming files: start writeback of dirty pages early, and declare a
//! sequential read. Both are advisory: they change when the kernel does IO, never what ends up
//! on disk, so durability still comes only from the fsync that follows (an error here is
//! ignored because the fsync would report any real failure).
//!
//! Why: a PUT writes a whole object into the page cache and then fsyncs. Without a hint the
//! disk sits idle while the object is hashed and copied, and the fsync then writes everything
//! at once; starting writeback every few MiB (RocksDB's `bytes_per_sync`) overlaps the disk
//! with the CPU work. On non-Linux systems the hints are no-ops.

use std::fs::File;

/// Dirty bytes written before writeback of them is started.
pub const WRITEBACK_INTERVAL_BYTES: u64 = 8 * 1024 * 1024;

/// Asks the kernel to start writing `length_bytes` at `offset` of `file` to disk, without
/// waiting for it.
#[cfg(target_os = "linux")]
pub fn start_writeback(file: &File, offset: u64, length_bytes: u64) {
    use std::os::fd::AsRawFd;
    let (Ok(offset), Ok(length)) = (i64::try_from(offset), i64::try_from(length_bytes)) else {
        return;
    };
    // SAFETY: the descriptor is owned by `file`, which outlives the call; the call reads no
    // memory of ours and only schedules IO on that descriptor.
    unsafe {
        libc::sync_file_range(
            file.as_raw_fd(),
            offset,
            length,
            libc::SYNC_FILE_RANGE_WRITE,
        );
    }
}

#[cfg(not(target_os = "linux"))]
pub fn start_writeback(_file: &File, _offset: u64, _length_bytes: u64) {}

/// Tells the kernel `file` will be read sequentially from here on (larger read-ahead).
#[cfg(target_os = "linux")]
pub fn advise_sequential(file: &File) {
    use std::os::fd::AsRawFd;
    // SAFETY: as above; the advice covers the whole file (offset 0, length 0).
    unsafe {
        libc::posix_fadvise(file.as_raw_fd(), 0, 0, libc::POSIX_FADV_SEQUENTIAL);
    }
}

#[cfg(not(target_os = "linux"))]
pub fn advise_sequential(_file: &File) {}
