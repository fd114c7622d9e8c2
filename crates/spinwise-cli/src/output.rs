//! Writing to stdout without panicking when the reader goes away (`spinwise plan | head -3`):
//! `println!` panics on a closed pipe; here a closed pipe ends the process quietly with status 0,
//! as the reader asked for no more, and any other write error is reported with status 1.

use std::io::Write;

pub fn emit(text: std::fmt::Arguments) {
    let mut stdout = std::io::stdout().lock();
    let written = stdout
        .write_fmt(text)
        .and_then(|()| stdout.write_all(b"\n"))
        .and_then(|()| stdout.flush());
    if let Err(error) = written {
        if error.kind() == std::io::ErrorKind::BrokenPipe {
            std::process::exit(0);
        }
        let _ = writeln!(std::io::stderr(), "error: writing to stdout: {error}");
        std::process::exit(1);
    }
}

/// `println!` that survives a closed stdout.
macro_rules! outln {
    ($($arg:tt)*) => {
        $crate::output::emit(format_args!($($arg)*))
    };
}
pub(crate) use outln;
