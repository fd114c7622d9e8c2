//! The admin endpoint: while `spinwise serve` owns a data directory (DATA/owner.lock), every
//! other `spinwise store` command is served by it through `DATA/admin.sock`, a Unix socket
//! guarded by file permissions (mode 0600: the store's user only), so an operator can flush,
//! scrub or rebuild a running store and budgets still hold: one process drives the disks.
//!
//! Protocol (docs/store.md, "The admin endpoint"): the client sends one request frame, a
//! big-endian u32 length then that many bytes of JSON `{"version":1,"command":{…}}` (the
//! command as `spinwise store` parsed it), at most [`MAX_REQUEST_BYTES`]. The server answers
//! with frames of a tag byte, a big-endian u32 length and the payload (at most
//! [`MAX_FRAME_BYTES`]): `o` bytes for the client's stdout, `e` bytes for its stderr, and one
//! final `x` with JSON `{"error":null|"…"}`; the connection then closes.
//!
//! Invariants: the server reads a request within [`REQUEST_TIMEOUT`] and serves at most
//! [`MAX_CONNECTIONS`] at once (one more is answered busy); a served command's output is held
//! (bounded by `output::MAX_CAPTURED_BYTES`) and sent when it ends. A socket file left by a
//! killed server blocks nobody: a client that cannot connect tries the owner lock, and a new
//! owner (holding the lock, so no server can be alive) removes the file before binding.
//! `put` and `get` are served with a file path (made absolute by the client; the server reads
//! or writes that file itself); with `-` (standard input or output) they are refused, as are
//! `init` and `upkeep` (the server runs upkeep itself).

use crate::error::{CliError, CliResult};
use crate::store::StoreCommand;
use spinwise_store::SqliteStore;
use spinwise_store::owner::{Claim, OwnerGuard, owner_lock_path, try_claim};
use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{UnixListener, UnixStream};

/// The socket's name in the data directory.
pub const ADMIN_SOCKET_FILE: &str = "admin.sock";
/// The protocol version a request carries.
pub const PROTOCOL_VERSION: u32 = 1;
/// The largest request (a command's JSON: a key, a prefix, a path).
pub const MAX_REQUEST_BYTES: u32 = 64 << 10;
/// The largest payload of one answer frame.
pub const MAX_FRAME_BYTES: u32 = 1 << 20;
/// How long the server waits for a connected client's request.
pub const REQUEST_TIMEOUT: Duration = Duration::from_secs(10);
/// Commands served at once; one more is answered busy.
pub const MAX_CONNECTIONS: usize = 16;
/// How often a waiting client tries the socket and the lock again.
const POLL_INTERVAL: Duration = Duration::from_millis(20);

const TAG_STDOUT: u8 = b'o';
const TAG_STDERR: u8 = b'e';
const TAG_EXIT: u8 = b'x';

#[derive(serde::Serialize, serde::Deserialize)]
struct Request {
    version: u32,
    command: StoreCommand,
}

#[derive(serde::Serialize, serde::Deserialize)]
struct Exit {
    error: Option<String>,
}

pub fn socket_path(data_dir: &Path) -> PathBuf {
    data_dir.join(ADMIN_SOCKET_FILE)
}

/// How a `spinwise store` command gets at the store.
pub enum Access {
    /// This process owns the directory: it opens the store itself.
    Owner(OwnerGuard),
    /// A server owns it and answers on this connection.
    Served(UnixStream),
}

/// Connects to a live server's socket; `None` when there is none (no file, or a stale one).
async fn try_connect(data_dir: &Path) -> CliResult<Option<UnixStream>> {
    let path = socket_path(data_dir);
    match UnixStream::connect(&path).await {
        Ok(stream) => Ok(Some(stream)),
        Err(error)
            if matches!(
                error.kind(),
                std::io::ErrorKind::NotFound | std::io::ErrorKind::ConnectionRefused
            ) =>
        {
            Ok(None)
        }
        Err(source) => Err(CliError::Io {
            path: path.display().to_string(),
            source,
        }),
    }
}

fn owner_name(pid: Option<u32>) -> String {
    pid.map_or("another process".to_string(), |pid| {
        format!("process {pid}")
    })
}

/// Served by a running server, or owner of `data_dir`, waiting up to `limit` for its owner (a
/// command, not a server) to finish; says once on stderr whom it waits for.
pub async fn settle(data_dir: &Path, limit: Duration) -> CliResult<Access> {
    let deadline = Instant::now() + limit;
    let mut announced = false;
    loop {
        if let Some(connection) = try_connect(data_dir).await? {
            return Ok(Access::Served(connection));
        }
        let claim = try_claim(data_dir).map_err(|e| CliError::Usage(e.to_string()))?;
        let owner_pid = match claim {
            Claim::Owned(guard) => return Ok(Access::Owner(guard)),
            Claim::Busy { owner_pid } => owner_pid,
        };
        if Instant::now() >= deadline {
            return Err(CliError::Usage(format!(
                "{} owns {} (it holds {}) and did not finish within the {:.0} s wait \
                 (--wait-s); try again when it is done",
                owner_name(owner_pid),
                data_dir.display(),
                owner_lock_path(data_dir).display(),
                limit.as_secs_f64()
            )));
        }
        if !announced {
            eprintln!(
                "waiting for the owner of {} ({}) to finish: one process drives the disks at a time",
                data_dir.display(),
                owner_name(owner_pid)
            );
            announced = true;
        }
        tokio::time::sleep(POLL_INTERVAL).await;
    }
}

/// Why `command` cannot be served by a running server, if it cannot.
fn not_served(command: &StoreCommand) -> Option<&'static str> {
    match command {
        StoreCommand::Put { path, .. } | StoreCommand::Get { path, .. }
            if path.as_os_str() == "-" =>
        {
            Some(
                "standard input and output are not carried over the admin socket: give put or \
                 get a file path, or use its S3 endpoint",
            )
        }
        StoreCommand::Upkeep { .. } => Some("it runs upkeep itself"),
        StoreCommand::Init(_) => Some("the directory already holds its store"),
        _ => None,
    }
}

fn protocol_error(what: impl std::fmt::Display) -> CliError {
    CliError::Usage(format!("the admin endpoint: {what}"))
}

/// Has the server owning the directory run `command`, printing what it printed.
pub async fn run_remote(mut connection: UnixStream, command: &StoreCommand) -> CliResult<()> {
    if let Some(reason) = not_served(command) {
        return Err(CliError::Usage(format!(
            "spinwise serve owns this data directory and drives its disks; {reason} \
             (or stop the server)"
        )));
    }
    let command = with_absolute_paths(command)?;
    let request = serde_json::to_vec(&serde_json::json!({
        "version": PROTOCOL_VERSION,
        "command": command,
    }))
    .map_err(protocol_error)?;
    let length = u32::try_from(request.len())
        .ok()
        .filter(|length| *length <= MAX_REQUEST_BYTES)
        .ok_or_else(|| protocol_error("the request is too large"))?;
    connection
        .write_all(&length.to_be_bytes())
        .await
        .map_err(protocol_error)?;
    connection
        .write_all(&request)
        .await
        .map_err(protocol_error)?;
    loop {
        let (tag, payload) = read_frame(&mut connection).await?;
        match tag {
            TAG_STDOUT => write_through(&mut std::io::stdout().lock(), &payload)?,
            TAG_STDERR => write_through(&mut std::io::stderr().lock(), &payload)?,
            TAG_EXIT => {
                let exit: Exit = serde_json::from_slice(&payload).map_err(protocol_error)?;
                return exit
                    .error
                    .map_or(Ok(()), |error| Err(CliError::Usage(error)));
            }
            other => return Err(protocol_error(format!("unknown frame tag {other}"))),
        }
    }
}

/// `command` with its file path made absolute: the server opens (put) or creates (get) the file
/// itself, and its working directory is not this process's. The socket admits only the store's
/// user (mode 0600), so the server touches no file that user could not.
fn with_absolute_paths(command: &StoreCommand) -> CliResult<StoreCommand> {
    let mut command = command.clone();
    if let StoreCommand::Put { path, .. } | StoreCommand::Get { path, .. } = &mut command {
        *path = std::path::absolute(&*path).map_err(|source| CliError::Io {
            path: path.display().to_string(),
            source,
        })?;
    }
    Ok(command)
}

/// Writes a frame's bytes on; a closed stdout ends the process quietly, as `outln!` does.
fn write_through(sink: &mut dyn Write, payload: &[u8]) -> CliResult<()> {
    match sink.write_all(payload).and_then(|()| sink.flush()) {
        Ok(()) => Ok(()),
        Err(error) if error.kind() == std::io::ErrorKind::BrokenPipe => std::process::exit(0),
        Err(source) => Err(CliError::Io {
            path: "stdout".to_string(),
            source,
        }),
    }
}

async fn read_frame(connection: &mut UnixStream) -> CliResult<(u8, Vec<u8>)> {
    let mut header = [0u8; 5];
    connection.read_exact(&mut header).await.map_err(|_| {
        protocol_error(
            "the server closed the connection before the command finished (it may have stopped)",
        )
    })?;
    let length = u32::from_be_bytes([header[1], header[2], header[3], header[4]]);
    if length > MAX_FRAME_BYTES {
        return Err(protocol_error(format!(
            "a frame of {length} bytes is over the {MAX_FRAME_BYTES}-byte limit"
        )));
    }
    let mut payload = vec![0u8; length as usize];
    connection
        .read_exact(&mut payload)
        .await
        .map_err(protocol_error)?;
    Ok((header[0], payload))
}

/// The server's side: the listener task and the socket file it removes when stopped.
pub struct AdminEndpoint {
    path: PathBuf,
    task: tokio::task::JoinHandle<()>,
}

impl AdminEndpoint {
    /// Binds `DATA/admin.sock` (mode 0600), replacing a stale one: the caller owns the
    /// directory, so no other server can be listening there.
    pub fn start(data_dir: &Path, store: Arc<SqliteStore>) -> CliResult<AdminEndpoint> {
        let path = socket_path(data_dir);
        let io_error = |source| CliError::Io {
            path: path.display().to_string(),
            source,
        };
        match std::fs::remove_file(&path) {
            Ok(()) => tracing::info!(socket = %path.display(), "removed a stale admin socket"),
            Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
            Err(error) => return Err(io_error(error)),
        }
        let listener = UnixListener::bind(&path).map_err(io_error)?;
        std::fs::set_permissions(&path, std::fs::Permissions::from_mode(0o600))
            .map_err(io_error)?;
        let task = tokio::spawn(accept_loop(listener, store));
        Ok(AdminEndpoint { path, task })
    }

    /// Stops serving and removes the socket file.
    pub fn stop(self) {
        self.task.abort();
        let _ = std::fs::remove_file(&self.path);
    }
}

async fn accept_loop(listener: UnixListener, store: Arc<SqliteStore>) {
    let slots = Arc::new(tokio::sync::Semaphore::new(MAX_CONNECTIONS));
    loop {
        let connection = match listener.accept().await {
            Ok((connection, _)) => connection,
            Err(error) => {
                tracing::warn!(%error, "accepting an admin connection");
                tokio::time::sleep(POLL_INTERVAL).await;
                continue;
            }
        };
        let store = Arc::clone(&store);
        match Arc::clone(&slots).try_acquire_owned() {
            Ok(slot) => {
                tokio::spawn(async move {
                    serve_connection(connection, &store).await;
                    drop(slot);
                });
            }
            Err(_) => {
                tokio::spawn(async move {
                    let busy = format!(
                        "the server is already serving {MAX_CONNECTIONS} admin commands; try again"
                    );
                    let _ = send_exit(&mut { connection }, Some(busy)).await;
                });
            }
        }
    }
}

async fn read_request(connection: &mut UnixStream) -> Result<StoreCommand, String> {
    let mut length = [0u8; 4];
    connection
        .read_exact(&mut length)
        .await
        .map_err(|e| format!("reading the request: {e}"))?;
    let length = u32::from_be_bytes(length);
    if length > MAX_REQUEST_BYTES {
        return Err(format!(
            "a request of {length} bytes is over the {MAX_REQUEST_BYTES}-byte limit"
        ));
    }
    let mut body = vec![0u8; length as usize];
    connection
        .read_exact(&mut body)
        .await
        .map_err(|e| format!("reading the request: {e}"))?;
    let request: Request =
        serde_json::from_slice(&body).map_err(|e| format!("a malformed request: {e}"))?;
    if request.version != PROTOCOL_VERSION {
        return Err(format!(
            "protocol version {} is not {PROTOCOL_VERSION}: use the spinwise binary the server runs",
            request.version
        ));
    }
    Ok(request.command)
}

async fn serve_connection(mut connection: UnixStream, store: &SqliteStore) {
    let command = match tokio::time::timeout(REQUEST_TIMEOUT, read_request(&mut connection)).await {
        Ok(Ok(command)) => command,
        Ok(Err(error)) => return drop(send_exit(&mut connection, Some(error)).await),
        Err(_) => return,
    };
    if let Some(reason) = not_served(&command) {
        let refusal = format!("spinwise serve does not serve this command: {reason}");
        return drop(send_exit(&mut connection, Some(refusal)).await);
    }
    tracing::info!(command = ?command, "serving an admin command");
    let (result, printed) = crate::output::capture(crate::store::execute(store, &command)).await;
    let sent = async {
        send_frames(&mut connection, TAG_STDOUT, &printed.stdout).await?;
        send_frames(&mut connection, TAG_STDERR, &printed.stderr).await?;
        send_exit(&mut connection, result.err().map(|e| e.to_string())).await
    };
    if let Err(error) = sent.await {
        tracing::warn!(%error, "answering an admin command");
    }
}

async fn send_frames(connection: &mut UnixStream, tag: u8, bytes: &[u8]) -> std::io::Result<()> {
    for chunk in bytes.chunks(MAX_FRAME_BYTES as usize) {
        connection.write_all(&[tag]).await?;
        connection
            .write_all(&(chunk.len() as u32).to_be_bytes())
            .await?;
        connection.write_all(chunk).await?;
    }
    Ok(())
}

async fn send_exit(connection: &mut UnixStream, error: Option<String>) -> std::io::Result<()> {
    // One frame holds the whole exit; an error message is far shorter, but bound it anyway.
    let error = error.map(|mut message| {
        let mut end = message.len().min(MAX_REQUEST_BYTES as usize);
        while !message.is_char_boundary(end) {
            end -= 1;
        }
        message.truncate(end);
        message
    });
    let exit = serde_json::to_vec(&Exit { error }).map_err(std::io::Error::other)?;
    send_frames(connection, TAG_EXIT, &exit).await?;
    connection.shutdown().await
}
