//! `completions` and `man`: the command line described for a shell and for
//! `man`.

use crate::cli::cli_command;
use crate::failure::Failure;

/// `completions SHELL`: the shell's completion script.
pub(crate) fn completions(shell: clap_complete::Shell) -> Result<u8, Failure> {
    // Written whole through print!, whose failure on a closed pipe
    // ends the command quietly (exit 141), as every output does.
    let mut script = Vec::new();
    clap_complete::generate(shell, &mut cli_command(), "switchboard", &mut script);
    print!("{}", String::from_utf8_lossy(&script));
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
