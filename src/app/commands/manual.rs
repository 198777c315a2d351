//! `rlbench completions SHELL` and `rlbench man`: what clap knows of the
//! command line, as a shell's completions or a manual page.

use super::ending::Ending;
use crate::error::Error;

pub(super) fn completions(shell: clap_complete::Shell, out: &mut dyn std::io::Write) -> Ending {
    let mut cmd = <crate::cli::Cli as clap::CommandFactory>::command();
    clap_complete::generate(shell, &mut cmd, "rlbench", out);
    Ending::passed()
}

pub(super) fn man(out: &mut dyn std::io::Write) -> Result<Ending, Error> {
    let cmd = <crate::cli::Cli as clap::CommandFactory>::command();
    clap_mangen::Man::new(cmd)
        .render(out)
        .map_err(|e| Error::environment(format!("cannot write the manual page: {e}")))?;
    Ok(Ending::passed())
}
