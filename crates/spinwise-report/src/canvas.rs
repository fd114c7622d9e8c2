//! Writing one drawn figure to a PNG or an SVG file, and the ink every figure kind shares: the
//! file handling lives once, so their error behaviour cannot drift apart.
//!
//! Invariants: a PNG's file is created before plotters touches it, so the common failures (a
//! missing directory, a read-only file) are [`ReportError::Io`] naming the path rather than an
//! opaque image error; an SVG is drawn in memory first, so a drawing failure leaves no file.
//! The caller validates its data before calling (nothing here inspects it).

use std::path::Path;

use plotters::coord::Shift;
use plotters::prelude::*;

use crate::ReportError;
use crate::font::{FAMILY, ensure_registered};

/// Text and axes: near-black, softer than pure black on white.
pub(crate) const INK: RGBColor = RGBColor(0x22, 0x22, 0x22);
/// Grid lines: light enough that data always reads above them.
pub(crate) const GRID: RGBColor = RGBColor(0xe3, 0xe3, 0xe3);

/// Text of `size` pixels in the embedded font, in [`INK`].
pub(crate) fn text_style(size: f64) -> TextStyle<'static> {
    TextStyle::from((FAMILY, size).into_font()).color(&INK)
}

/// What a figure's generic `draw` returns for backend `DB`.
pub(crate) type DrawResult<DB> =
    Result<(), DrawingAreaErrorKind<<DB as DrawingBackend>::ErrorType>>;

/// Draws a `size_px` PNG at `path` (created or truncated) with `draw`.
pub(crate) fn write_png(
    path: &Path,
    size_px: (u32, u32),
    draw: impl for<'a> FnOnce(&DrawingArea<BitMapBackend<'a>, Shift>) -> DrawResult<BitMapBackend<'a>>,
) -> Result<(), ReportError> {
    ensure_registered();
    std::fs::File::create(path).map_err(|source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    })?;
    let root = BitMapBackend::new(path, size_px).into_drawing_area();
    draw(&root).map_err(|e| drawing_error(path, e))?;
    root.present().map_err(|e| drawing_error(path, e))
}

/// Draws a `size_px` SVG with `draw` and writes it at `path` (created or truncated); text stays
/// text, so titles and labels are searchable.
pub(crate) fn write_svg(
    path: &Path,
    size_px: (u32, u32),
    draw: impl for<'a> FnOnce(&DrawingArea<SVGBackend<'a>, Shift>) -> DrawResult<SVGBackend<'a>>,
) -> Result<(), ReportError> {
    ensure_registered();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, size_px).into_drawing_area();
        draw(&root).map_err(|e| drawing_error(path, e))?;
        root.present().map_err(|e| drawing_error(path, e))?;
    }
    std::fs::write(path, svg).map_err(|source| ReportError::Io {
        path: path.to_path_buf(),
        source,
    })
}

fn drawing_error<E>(path: &Path, error: DrawingAreaErrorKind<E>) -> ReportError
where
    E: std::error::Error + Send + Sync,
{
    ReportError::Drawing {
        path: path.to_path_buf(),
        message: error.to_string(),
    }
}
