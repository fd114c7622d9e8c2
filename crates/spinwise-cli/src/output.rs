//! Writing to stdout without panicking when the reader goes away (`spinwise plan | head -3`):
//! `println!` panics on a closed pipe; here a closed pipe ends the process quietly with status 0,
//! as the reader asked for no more, and any other write error is reported with status 1.
//! A command served for another process (crate::admin) runs inside [`capture`], which takes
//! its lines instead, bounded by [`MAX_CAPTURED_BYTES`].

use std::io::Write;

pub fn emit(text: std::fmt::Arguments) {
    if try_capture(text, false) {
        return;
    }
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

/// The most bytes one captured command may print (each of stdout and stderr), so a served
/// command's output held for its client stays bounded; past it, lines are dropped and one
/// `[output truncated]` line says so.
pub const MAX_CAPTURED_BYTES: usize = 64 << 20;

/// What a command served for another process printed (crate::admin): while a task runs inside
/// [`capture`], [`emit`] and [`emit_err`] append here instead of writing the server's own
/// stdout and stderr.
#[derive(Debug, Default)]
pub struct Captured {
    pub stdout: Vec<u8>,
    pub stderr: Vec<u8>,
}

tokio::task_local! {
    static CAPTURE: std::cell::RefCell<Captured>;
}

/// Runs `command` with its output captured; returns its result and what it printed.
pub async fn capture<T>(command: impl std::future::Future<Output = T>) -> (T, Captured) {
    CAPTURE
        .scope(std::cell::RefCell::new(Captured::default()), async move {
            let result = command.await;
            let printed = CAPTURE.with(|captured| captured.take());
            (result, printed)
        })
        .await
}

/// True while the current task's output is captured (a served command: no progress bars).
pub fn captured() -> bool {
    CAPTURE.try_with(|_| ()).is_ok()
}

/// Whether progress bars may draw: stderr is this process's terminal and not captured.
pub fn stderr_is_terminal() -> bool {
    !captured() && std::io::IsTerminal::is_terminal(&std::io::stderr())
}

fn append_bounded(buffer: &mut Vec<u8>, text: std::fmt::Arguments) {
    const TRUNCATED: &[u8] = b"[output truncated]\n";
    if buffer.len() >= MAX_CAPTURED_BYTES {
        return;
    }
    let line = format!("{text}\n");
    if buffer.len() + line.len() > MAX_CAPTURED_BYTES {
        buffer.extend_from_slice(TRUNCATED);
        buffer.resize(MAX_CAPTURED_BYTES, b'\n');
        return;
    }
    buffer.extend_from_slice(line.as_bytes());
}

/// Appends to the capture if one is active; true if it did.
fn try_capture(text: std::fmt::Arguments, to_stderr: bool) -> bool {
    CAPTURE
        .try_with(|captured| {
            let mut captured = captured.borrow_mut();
            let buffer = match to_stderr {
                true => &mut captured.stderr,
                false => &mut captured.stdout,
            };
            append_bounded(buffer, text);
        })
        .is_ok()
}

/// `eprintln!` that a served command's capture takes.
pub fn emit_err(text: std::fmt::Arguments) {
    if !try_capture(text, true) {
        eprintln!("{text}");
    }
}

/// `eprintln!` through [`emit_err`].
macro_rules! errln {
    ($($arg:tt)*) => {
        $crate::output::emit_err(format_args!($($arg)*))
    };
}
pub(crate) use errln;
