//! BLAKE3 of a stream of chunks, computed on a thread of its own so that hashing overlaps the
//! IO and crc32c work of the thread that feeds it (a PUT's writer, a staged GET's reader).
//!
//! Invariants: chunks are hashed in the order they are given; at most `depth` chunks wait (plus
//! the first, held until a second arrives), so memory is bounded and a slow hasher slows its
//! feeder instead of growing a queue; `finish` returns only after every chunk given has been
//! hashed. The thread starts only at the second chunk: a one-chunk stream (most small objects)
//! is hashed on the caller's thread, since nothing could overlap with it and starting a thread
//! costs more than hashing a small chunk.

use bytes::Bytes;
use spinwise_catalog::ContentHash;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

/// Hashes chunks on a background thread once there are two of them; see the module comment.
pub struct BackgroundHasher {
    depth: usize,
    state: HasherState,
}

enum HasherState {
    /// No chunk yet.
    Empty,
    /// One chunk, not hashed yet.
    First(Bytes),
    /// The thread runs and has been given every chunk so far.
    Running {
        chunks: SyncSender<Bytes>,
        thread: JoinHandle<ContentHash>,
    },
}

impl BackgroundHasher {
    /// A hasher whose thread, once started, has room for `depth` waiting chunks.
    pub fn new(depth: usize) -> BackgroundHasher {
        BackgroundHasher {
            depth,
            state: HasherState::Empty,
        }
    }

    /// Queues `chunk` (a cheap reference-counted handle); blocks while `depth` chunks wait.
    /// Call from a blocking thread, never from an async task.
    pub fn update(&mut self, chunk: Bytes) {
        match std::mem::replace(&mut self.state, HasherState::Empty) {
            HasherState::Empty => self.state = HasherState::First(chunk),
            HasherState::First(first) => {
                let (chunks, receiver) = sync_channel::<Bytes>(self.depth);
                let thread = std::thread::spawn(move || {
                    let mut hasher = blake3::Hasher::new();
                    for chunk in receiver {
                        hasher.update(&chunk);
                    }
                    *hasher.finalize().as_bytes()
                });
                send(&chunks, first);
                send(&chunks, chunk);
                self.state = HasherState::Running { chunks, thread };
            }
            HasherState::Running { chunks, thread } => {
                send(&chunks, chunk);
                self.state = HasherState::Running { chunks, thread };
            }
        }
    }

    /// The hash of every chunk given, in order.
    pub fn finish(self) -> ContentHash {
        match self.state {
            HasherState::Empty => *blake3::hash(&[]).as_bytes(),
            HasherState::First(first) => *blake3::hash(&first).as_bytes(),
            HasherState::Running { chunks, thread } => {
                drop(chunks);
                thread.join().expect("the hashing thread does not panic")
            }
        }
    }
}

fn send(chunks: &SyncSender<Bytes>, chunk: Bytes) {
    chunks
        .send(chunk)
        .expect("the hashing thread lives until finish");
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashing_in_chunks_on_a_thread_equals_hashing_the_whole_at_once() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        let mut hasher = BackgroundHasher::new(2);
        for piece in data.chunks(65_537) {
            hasher.update(Bytes::copy_from_slice(piece));
        }
        assert_eq!(hasher.finish(), *blake3::hash(&data).as_bytes());
        assert_eq!(
            BackgroundHasher::new(1).finish(),
            *blake3::hash(&[]).as_bytes()
        );
    }

    #[test]
    fn a_single_chunk_is_hashed_without_starting_the_thread() {
        let mut hasher = BackgroundHasher::new(1);
        hasher.update(Bytes::from_static(b"one small object"));
        assert!(matches!(hasher.state, HasherState::First(_)));
        assert_eq!(
            hasher.finish(),
            *blake3::hash(b"one small object").as_bytes()
        );
    }
}
