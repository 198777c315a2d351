//! What can go wrong writing a run folder's views, each naming its file: a
//! chart plotters could not draw or png could not encode, junit.xml that
//! quick-junit could not write, a chart report.html could not read back,
//! or a file `store` could not write (its own error). The exit each means
//! is said where the views are written (`app/pipeline/finish.rs`): report/ reads
//! nothing but what is stored (tests/it/house_plan.rs).

use crate::store::StoreError;
use plotters::backend::{BitMapBackend, DrawingBackend};
use plotters::drawing::DrawingAreaErrorKind;
use std::path::PathBuf;

/// A failure of plotters on the bitmap every chart is drawn on.
pub(crate) type DrawError =
    DrawingAreaErrorKind<<BitMapBackend<'static> as DrawingBackend>::ErrorType>;

#[derive(Debug, thiserror::Error)]
pub(crate) enum ReportError {
    #[error("chart: {0}")]
    Chart(#[from] DrawError),
    #[error("cannot encode {}: {source}", path.display())]
    Encode {
        path: PathBuf,
        source: png::EncodingError,
    },
    #[error("page.json: {0}")]
    Json(String),
    #[error("junit.xml: {0}")]
    Junit(#[source] quick_junit::SerializeError),
    /// A chart report.html embeds.
    #[error("cannot read {}: {source}", path.display())]
    Read {
        path: PathBuf,
        source: std::io::Error,
    },
    /// A file of the run folder that could not be written (`store::atomic`,
    /// summary.json).
    #[error(transparent)]
    Store(#[from] StoreError),
}
