//! What a run leaves on disk, as data: the run folder's layout, the
//! records written beside the events (`run.json`, `events/<arm>.json`)
//! and summary.json's schema. The compute stages fill these types; the
//! report renders them; `rlbench report` rebuilds from them alone. Every
//! failure is a [`StoreError`] carrying its exit.

pub(crate) mod atomic;
mod error;
pub(crate) mod folder;
pub(crate) mod names;
pub(crate) mod page_json;
pub(crate) mod probes;
pub(crate) mod records;
pub(crate) mod summary;

pub(crate) use error::StoreError;
