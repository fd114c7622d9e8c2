//! BLAKE3 of a stream of chunks, computed on a thread of its own so that hashing overlaps the
//! IO and crc32c work of the thread that feeds it (a PUT's writer, a staged GET's reader).
//!
//! Invariants: chunks are hashed in the order they are given; at most `depth` chunks wait, so
//! memory is bounded and a slow hasher slows its feeder instead of growing a queue; `finish`
//! returns only after every chunk given has been hashed.

use bytes::Bytes;
use spinwise_catalog::ContentHash;
use std::sync::mpsc::{SyncSender, sync_channel};
use std::thread::JoinHandle;

pub struct BackgroundHasher {
    chunks: SyncSender<Bytes>,
    thread: JoinHandle<ContentHash>,
}

impl BackgroundHasher {
    /// Starts the hashing thread with room for `depth` waiting chunks.
    pub fn new(depth: usize) -> BackgroundHasher {
        let (chunks, receiver) = sync_channel::<Bytes>(depth);
        let thread = std::thread::spawn(move || {
            let mut hasher = blake3::Hasher::new();
            for chunk in receiver {
                hasher.update(&chunk);
            }
            *hasher.finalize().as_bytes()
        });
        BackgroundHasher { chunks, thread }
    }

    /// Queues `chunk` (a cheap reference-counted handle); blocks while `depth` chunks wait.
    /// Call from a blocking thread, never from an async task.
    pub fn update(&self, chunk: Bytes) {
        self.chunks
            .send(chunk)
            .expect("the hashing thread lives until finish");
    }

    /// The hash of every chunk given, in order.
    pub fn finish(self) -> ContentHash {
        drop(self.chunks);
        self.thread
            .join()
            .expect("the hashing thread does not panic")
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn hashing_in_chunks_on_a_thread_equals_hashing_the_whole_at_once() {
        let data: Vec<u8> = (0..3_000_000u32).map(|i| (i * 7 + i / 13) as u8).collect();
        let hasher = BackgroundHasher::new(2);
        for piece in data.chunks(65_537) {
            hasher.update(Bytes::copy_from_slice(piece));
        }
        assert_eq!(hasher.finish(), *blake3::hash(&data).as_bytes());
        assert_eq!(
            BackgroundHasher::new(1).finish(),
            *blake3::hash(&[]).as_bytes()
        );
    }
}
