//! The per-request CSV: one row per client read, for analyses a run's summaries cannot answer
//! (which class waited, how reads overlapped on a NIC). `spinwise sim --requests-out FILE`
//! streams the simulator's reads into one; `experiment pelican-fig4` writes one per burst with
//! the simulator's and the store's reads of the same trace side by side. The columns are in
//! docs/simulator.md, "Per-request records".
//!
//! Invariants: a row's times are seconds from the run's start, with µs resolution, and
//! `arrival_s ≤ serve_s < first_byte_s < last_byte_s` for the simulator's rows (the store's
//! rows are measured: the same order holds up to its clock, with `submitted_s` between
//! arrival and serve). A file is written under a temporary
//! name and renamed into place once complete, so a failed run never leaves a partial file under
//! the name asked for.

use crate::error::{ExperimentError, ExperimentResult, io_error};
use serde::Serialize;
use spinwise_sim::RequestRecord;
use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::{Path, PathBuf};

/// One client read, as a CSV row.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct RequestRow {
    /// `simulator` or `store`.
    pub system: &'static str,
    /// The request's id in its system (the simulator's request id; the store replay's trace
    /// index).
    pub id: u64,
    /// `standard`, `expedited` or `bulk`.
    pub tier: &'static str,
    /// The group (or, for the random layout, the placement set) it read from.
    pub target: u32,
    /// The scheduler class of its group; empty when the layout has none.
    pub class: Option<u32>,
    pub bytes: u64,
    pub arrival_s: f64,
    /// When it reached the scheduler: its arrival in the simulator; in the store, after the
    /// catalog lookup and the submission to the driver.
    pub submitted_s: f64,
    /// When the scheduler dispatched it on its spun-up group.
    pub serve_s: f64,
    pub first_byte_s: f64,
    pub last_byte_s: f64,
}

impl RequestRow {
    pub fn simulated(record: &RequestRecord) -> RequestRow {
        RequestRow {
            system: "simulator",
            id: record.id,
            tier: record.tier.name(),
            target: record.target,
            class: record.class,
            bytes: record.bytes,
            arrival_s: seconds(record.arrival_us),
            submitted_s: seconds(record.arrival_us),
            serve_s: seconds(record.serve_us),
            first_byte_s: seconds(record.first_byte_us),
            last_byte_s: seconds(record.last_byte_us),
        }
    }
}

fn seconds(us: u64) -> f64 {
    us as f64 / 1e6
}

/// Streams rows into a CSV file that appears under its name only when [`RowWriter::finish`]
/// succeeds. The first write error is kept (later rows are dropped) and returned by `finish`, so
/// a caller writing from a callback that cannot fail still learns of it.
pub struct RowWriter {
    path: PathBuf,
    temporary: PathBuf,
    writer: csv::Writer<BufWriter<File>>,
    error: Option<csv::Error>,
}

/// Creates `PATH.partial`, the temporary file a write renamed into place at `path` goes
/// through, and returns its name and the file. Refuses a `path` that exists and is not a regular
/// file: the rename would replace it, and `--requests-out /dev/null` run as root replaced the
/// device node with a regular file (found 2026-12-01). The temporary file is created anew
/// (`O_EXCL`, which never follows a symbolic link); a stale one left by an interrupted run, or a
/// link in its place, is removed first (the link itself, not what it points to).
pub fn create_partial(path: &Path) -> std::io::Result<(PathBuf, File)> {
    use std::io::{Error, ErrorKind};
    if let Ok(metadata) = std::fs::symlink_metadata(path)
        && !metadata.file_type().is_file()
    {
        return Err(Error::new(
            ErrorKind::AlreadyExists,
            "exists and is not a regular file (a device, directory, link or pipe): name a file to write",
        ));
    }
    let mut name = path.file_name().unwrap_or_default().to_os_string();
    name.push(".partial");
    let temporary = path.with_file_name(name);
    let create = || {
        std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .open(&temporary)
    };
    let file = match create() {
        Err(error) if error.kind() == ErrorKind::AlreadyExists => {
            let stale = std::fs::symlink_metadata(&temporary)?.file_type();
            if !(stale.is_file() || stale.is_symlink()) {
                return Err(error);
            }
            std::fs::remove_file(&temporary)?;
            create()?
        }
        created => created?,
    };
    Ok((temporary, file))
}

impl RowWriter {
    pub fn create(path: &Path) -> ExperimentResult<RowWriter> {
        let (temporary, file) = create_partial(path).map_err(io_error(path))?;
        Ok(RowWriter {
            path: path.to_path_buf(),
            temporary,
            writer: csv::Writer::from_writer(BufWriter::new(file)),
            error: None,
        })
    }

    pub fn write(&mut self, row: &RequestRow) {
        if self.error.is_none()
            && let Err(error) = self.writer.serialize(row)
        {
            self.error = Some(error);
        }
    }

    /// Flushes, syncs and renames the file into place; on any error removes the temporary
    /// file and reports the error against the name asked for.
    pub fn finish(self) -> ExperimentResult<()> {
        let RowWriter {
            path,
            temporary,
            writer,
            error,
        } = self;
        let written = match error {
            Some(error) => Err(csv_error(error)),
            None => writer
                .into_inner()
                .map_err(|error| std::io::Error::other(error.to_string()))
                .and_then(|mut buffered| {
                    buffered.flush()?;
                    buffered.get_ref().sync_all()
                })
                .and_then(|()| std::fs::rename(&temporary, &path)),
        };
        written.map_err(|source| {
            let _ = std::fs::remove_file(&temporary);
            ExperimentError::Io {
                path: path.display().to_string(),
                source,
            }
        })
    }
}

fn csv_error(error: csv::Error) -> std::io::Error {
    match error.into_kind() {
        csv::ErrorKind::Io(io) => io,
        other => std::io::Error::other(format!("{other:?}")),
    }
}
