//! A small pool of byte buffers handed out as [`Bytes`] that come back to the pool when the
//! last handle is dropped, so a long stream reuses a few buffers instead of allocating (and
//! page-faulting in) a fresh megabyte per chunk.
//!
//! Invariants: the pool keeps at most `capacity` idle buffers (extras are freed); a buffer
//! returns only when every `Bytes` slice of it is gone, so no two users ever share one.

use bytes::Bytes;
use std::sync::{Arc, Mutex};

#[derive(Clone)]
pub struct BufferPool {
    idle: Arc<Mutex<Vec<Vec<u8>>>>,
    capacity: usize,
}

/// The owner behind a pooled [`Bytes`]: gives its buffer back on drop.
struct Pooled {
    buffer: Vec<u8>,
    pool: BufferPool,
}

impl AsRef<[u8]> for Pooled {
    fn as_ref(&self) -> &[u8] {
        &self.buffer
    }
}

impl Drop for Pooled {
    fn drop(&mut self) {
        // Kept at its length: its bytes are initialized, so `take_initialized` can hand it
        // out again without zeroing it.
        let buffer = std::mem::take(&mut self.buffer);
        let mut idle = self.pool.idle.lock().expect("buffer pool lock");
        if idle.len() < self.pool.capacity {
            idle.push(buffer);
        }
    }
}

impl BufferPool {
    /// A pool keeping up to `capacity` idle buffers.
    pub fn new(capacity: usize) -> BufferPool {
        BufferPool {
            idle: Arc::new(Mutex::new(Vec::new())),
            capacity,
        }
    }

    /// An empty buffer with room for at least `bytes`, reused when one is idle.
    pub fn take(&self, bytes: usize) -> Vec<u8> {
        let reused = self.idle.lock().expect("buffer pool lock").pop();
        let mut buffer = reused.unwrap_or_default();
        buffer.clear();
        buffer.reserve(bytes);
        buffer
    }

    /// A buffer of exactly `bytes` initialized bytes (stale contents of an earlier use, or
    /// zeros where it grew), for APIs that fill a `&mut [u8]`.
    pub fn take_initialized(&self, bytes: usize) -> Vec<u8> {
        let reused = self.idle.lock().expect("buffer pool lock").pop();
        let mut buffer = reused.unwrap_or_default();
        buffer.resize(bytes, 0);
        buffer
    }

    /// Freezes `buffer` into `Bytes` that return it to this pool when dropped.
    pub fn freeze(&self, buffer: Vec<u8>) -> Bytes {
        Bytes::from_owner(Pooled {
            buffer,
            pool: self.clone(),
        })
    }

    #[cfg(test)]
    fn idle_count(&self) -> usize {
        self.idle.lock().expect("buffer pool lock").len()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_buffer_returns_only_after_its_last_slice_is_dropped_and_is_reused() {
        let pool = BufferPool::new(2);
        let mut buffer = pool.take(16);
        buffer.extend_from_slice(b"0123456789abcdef");
        let address = buffer.as_ptr();
        let whole = pool.freeze(buffer);
        let tail = whole.slice(10..);
        drop(whole);
        assert_eq!(pool.idle_count(), 0, "a slice still holds the buffer");
        assert_eq!(&tail[..], b"abcdef");
        drop(tail);
        assert_eq!(pool.idle_count(), 1);
        let again = pool.take(16);
        assert!(again.is_empty());
        assert_eq!(again.as_ptr(), address, "the same allocation is reused");
    }

    #[test]
    fn take_initialized_gives_exactly_the_length_asked_and_reuses_the_allocation() {
        let pool = BufferPool::new(1);
        let first = pool.take_initialized(32);
        assert_eq!(first, vec![0u8; 32]);
        let address = first.as_ptr();
        drop(pool.freeze(first));
        let shorter = pool.take_initialized(8);
        assert_eq!(shorter.len(), 8);
        assert_eq!(shorter.as_ptr(), address);
        drop(pool.freeze(shorter));
        assert!(
            pool.take(8).is_empty(),
            "take still hands out an empty buffer"
        );
    }

    #[test]
    fn the_pool_keeps_no_more_idle_buffers_than_its_capacity() {
        let pool = BufferPool::new(1);
        let first = pool.freeze(pool.take(8));
        let second = pool.freeze(pool.take(8));
        drop(first);
        drop(second);
        assert_eq!(pool.idle_count(), 1);
    }
}
