//! `completions` and `man`: the command line described for a shell and for
//! `man`.

use crate::cli::cli_command;
use crate::failure::Failure;

/// `completions SHELL`: the shell's registration of completions, which
/// asks `switchboard` for the candidates at each Tab (server and tool
/// names among them: `cli/complete.rs`).
pub(crate) fn completions(shell: clap_complete::Shell) -> Result<u8, Failure> {
    let script = crate::cli::complete::registration(shell)
        .map_err(|e| Failure::usage(anyhow::anyhow!("cannot write the completion script: {e}")))?;
    // Written whole through print!, whose failure on a closed pipe ends
    // the command quietly (exit 141), as every output does.
    print!("{script}");
    Ok(0)
}

/// `man`: the manual page (roff).
pub(crate) fn man() -> Result<u8, Failure> {
    let mut page = Vec::new();
    clap_mangen::Man::new(cli_command())
        .render(&mut page)
        .map_err(|e| Failure::usage(anyhow::anyhow!("cannot render the manual: {e}")))?;
    print!("{}", String::from_utf8_lossy(&page));
    Ok(0)
}
