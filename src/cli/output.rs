//! What a command prints on stdout (`--format`), shared by every command
//! that can print a JSON document.

/// What a command prints on stdout (`--format`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub(crate) enum OutputFormat {
    /// Text for a person.
    #[default]
    Text,
    /// One JSON document (summary.json's schema for run and attack).
    Json,
}
