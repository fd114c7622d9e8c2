//! Flat CSV tables of experiment results, for spreadsheets and plotting scripts.
//!
//! Invariants: the whole table is serialised in memory before the file is touched, so a row the
//! CSV format cannot represent leaves no partial file behind, and the header always matches the
//! rows below it (it is taken from the first row's field names by the csv crate).

use std::path::Path;

use serde::Serialize;

use crate::ReportError;

/// Writes `rows` to `path` as CSV, with a header line made of the field names of `T`.
///
/// Rows must be *flat*: a struct (or tuple) of scalars, strings and `Option`s of those. The csv
/// crate cannot serialise nested structs, maps or sequences inside a row; such a row yields
/// [`ReportError::Csv`]. Flatten them first (e.g. `power_fraction`, `cooling_fraction` rather than
/// a nested `provisioning` struct); `#[serde(flatten)]` does not help, as it goes through a map.
///
/// An empty `rows` is [`ReportError::BadInput`]: the header comes from the first row, so an empty
/// table would be an empty file that no reader can tell apart from a failed run.
///
/// The file is created or truncated; its parent directory must exist.
pub fn write_csv<T: Serialize>(rows: &[T], path: &Path) -> Result<(), ReportError> {
    if rows.is_empty() {
        return Err(ReportError::bad_input(format!(
            "no rows to write to {} (the CSV header is taken from the first row)",
            path.display()
        )));
    }
    let csv_error = |source| ReportError::Csv {
        path: path.to_path_buf(),
        source,
    };
    let mut writer = csv::Writer::from_writer(Vec::new());
    for row in rows {
        writer.serialize(row).map_err(csv_error)?;
    }
    finish(writer, path)
}

/// Writes a table whose columns are only known at run time (one column per resource of a rack,
/// say): `header` names the columns and every row must have exactly as many cells.
pub fn write_table(
    header: &[String],
    rows: &[Vec<String>],
    path: &Path,
) -> Result<(), ReportError> {
    if let Some((index, row)) = rows
        .iter()
        .enumerate()
        .find(|(_, row)| row.len() != header.len())
    {
        return Err(ReportError::bad_input(format!(
            "row {index} has {} cells for {} columns",
            row.len(),
            header.len()
        )));
    }
    let csv_error = |source| ReportError::Csv {
        path: path.to_path_buf(),
        source,
    };
    let mut writer = csv::Writer::from_writer(Vec::new());
    writer.write_record(header).map_err(csv_error)?;
    for row in rows {
        writer.write_record(row).map_err(csv_error)?;
    }
    finish(writer, path)
}

/// Flushes a fully built in-memory CSV to `path`: nothing is written unless every row encoded.
fn finish(writer: csv::Writer<Vec<u8>>, path: &Path) -> Result<(), ReportError> {
    let bytes = writer.into_inner().map_err(|e| ReportError::Csv {
        path: path.to_path_buf(),
        source: csv::Error::from(e.into_error()),
    })?;
    std::fs::write(path, bytes).map_err(|source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    })
}
