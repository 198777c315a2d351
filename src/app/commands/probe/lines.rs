//! The probe's standard output: each line written whole and flushed,
//! folded at the terminal's width but for the `best:` line.

use crate::error::Error;
use std::io::Write;

pub(super) fn line(out: &mut dyn Write, text: &str) -> Result<(), Error> {
    writeln!(out, "{text}")
        .and_then(|()| out.flush())
        .map_err(|e| Error::environment(format!("cannot write to standard output: {e}")))
}

/// Standard output with the probe's lines folded at `columns` (each line
/// is written whole, then flushed), but for the `best:` line: it is to be
/// copied as it is.
pub(super) struct Folded<'a> {
    pub out: &'a mut dyn Write,
    pub columns: Option<usize>,
    pub pending: Vec<u8>,
}

impl Write for Folded<'_> {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.pending.extend_from_slice(buf);
        Ok(buf.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        let text = String::from_utf8_lossy(&self.pending).into_owned();
        self.pending.clear();
        let text = match self.columns {
            Some(w) if !text.starts_with("best: ") => crate::report::fold::fold(&text, w),
            _ => text,
        };
        self.out.write_all(text.as_bytes())?;
        self.out.flush()
    }
}
