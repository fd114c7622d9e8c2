//! The conformance suite: the crate contract as test bodies, generic over any [`Disk`], so every
//! implementation (and any other crate's disk double) is checked by the same code.
//!
//! Each body takes a factory `make` that returns a **fresh, empty disk in standby with at least
//! [`MIN_CAPACITY_BYTES`] of capacity**; a body may call it more than once. Bodies panic (assert)
//! on a violation, so they are meant to be called from `#[test]` functions;
//! [`conformance_tests!`](crate::conformance_tests) writes one `#[test]` per body.

use std::io::{self, Read};

use crate::{Disk, DiskError, Overwrite, PowerState};

/// The capacity a factory's disks need for the large round trip.
pub const MIN_CAPACITY_BYTES: u64 = 64 << 20;
/// The large file: several MiB, not a multiple of any chunk size, streamed in and out.
const LARGE_BYTES: u64 = (6 << 20) + 7;

/// The byte at `position` of the test pattern (varies with the position, repeats rarely).
pub fn pattern_byte(position: u64) -> u8 {
    ((position % 251) as u8) ^ ((position / 251) as u8).rotate_left(3)
}

/// A streamed source of the test pattern: `len` bytes without holding them, failing with an IO
/// error once `fail_after` bytes were read (when set).
pub struct PatternReader {
    position: u64,
    len: u64,
    fail_after: Option<u64>,
}

impl PatternReader {
    pub fn new(len: u64) -> PatternReader {
        PatternReader {
            position: 0,
            len,
            fail_after: None,
        }
    }

    /// A source that breaks after `bytes` (a client hanging up mid-upload).
    pub fn failing_after(len: u64, bytes: u64) -> PatternReader {
        PatternReader {
            fail_after: Some(bytes),
            ..PatternReader::new(len)
        }
    }
}

impl Read for PatternReader {
    fn read(&mut self, buffer: &mut [u8]) -> io::Result<usize> {
        let limit = self.fail_after.unwrap_or(self.len).min(self.len);
        if self.fail_after.is_some_and(|at| self.position >= at) {
            return Err(io::Error::other("the source broke (conformance test)"));
        }
        let count = (buffer.len() as u64).min(limit - self.position) as usize;
        for (offset, byte) in buffer[..count].iter_mut().enumerate() {
            *byte = pattern_byte(self.position + offset as u64);
        }
        self.position += count as u64;
        Ok(count)
    }
}

fn write_pattern(disk: &impl Disk, name: &str, len: u64, overwrite: Overwrite) {
    disk.write_file(name, len, &mut PatternReader::new(len), overwrite)
        .unwrap_or_else(|e| panic!("writing {name} ({len} bytes): {e}"));
}

fn write_bytes(disk: &impl Disk, name: &str, bytes: &[u8], overwrite: Overwrite) {
    disk.write_file(name, bytes.len() as u64, &mut &bytes[..], overwrite)
        .unwrap_or_else(|e| panic!("writing {name}: {e}"));
}

fn read_all(disk: &impl Disk, name: &str) -> Vec<u8> {
    let len = disk.file_len(name).expect("file_len");
    let mut buffer = vec![0u8; len as usize];
    let read = disk.read_at(name, 0, &mut buffer).expect("read_at");
    assert_eq!(
        read as u64, len,
        "a whole-file read of {name} came back short"
    );
    buffer
}

/// Reads the file back in 1 MiB chunks and checks every byte against the pattern.
fn assert_pattern(disk: &impl Disk, name: &str, len: u64) {
    assert_eq!(disk.file_len(name).expect("file_len"), len);
    let mut buffer = vec![0u8; 1 << 20];
    let mut offset = 0u64;
    while offset < len {
        let read = disk.read_at(name, offset, &mut buffer).expect("read_at");
        let expected = (len - offset).min(buffer.len() as u64) as usize;
        assert_eq!(
            read, expected,
            "short read of {name} at {offset} before EOF"
        );
        for (i, byte) in buffer[..read].iter().enumerate() {
            let position = offset + i as u64;
            assert_eq!(
                *byte,
                pattern_byte(position),
                "{name} differs at {position}"
            );
        }
        offset += read as u64;
    }
    assert_eq!(
        disk.read_at(name, len, &mut buffer).expect("read at EOF"),
        0
    );
}

fn active<D: Disk>(make: &dyn Fn() -> D) -> D {
    let disk = make();
    disk.spin_up().expect("spin_up");
    disk
}

fn free_bytes(disk: &impl Disk) -> u64 {
    disk.space().expect("space").free_bytes
}

/// Every file operation, each expected to fail with `expected` (compared by variant).
fn assert_every_file_op_fails(disk: &impl Disk, expected: fn(&DiskError) -> bool, why: &str) {
    let mut buffer = [0u8; 4];
    let results = [
        (
            "write_file",
            disk.write_file("x", 1, &mut &b"x"[..], Overwrite::Replace)
                .err(),
        ),
        ("read_at", disk.read_at("a", 0, &mut buffer).err()),
        ("file_len", disk.file_len("a").err()),
        ("remove_file", disk.remove_file("a").err()),
        ("list_files", disk.list_files().err()),
        ("space", disk.space().err()),
    ];
    for (op, error) in results {
        match error {
            Some(error) if expected(&error) => {}
            other => panic!("{op} {why}: expected the contract's error, got {other:?}"),
        }
    }
}

fn is_not_ready(error: &DiskError) -> bool {
    matches!(error, DiskError::NotReady { .. })
}

fn is_failed(error: &DiskError) -> bool {
    matches!(error, DiskError::Failed { .. })
}

pub fn new_disk_is_in_standby<D: Disk>(make: &dyn Fn() -> D) {
    let disk = make();
    assert_eq!(disk.power_state(), PowerState::Standby);
}

pub fn standby_refuses_every_file_operation_with_not_ready<D: Disk>(make: &dyn Fn() -> D) {
    let disk = make();
    assert_every_file_op_fails(&disk, is_not_ready, "in standby");
    disk.spin_up().expect("spin_up");
    assert_eq!(disk.list_files().expect("list"), Vec::<String>::new());
    assert_eq!(
        free_bytes(&disk),
        disk.space().expect("space").capacity_bytes,
        "the refused write left bytes behind"
    );
}

pub fn spin_up_makes_the_disk_active_and_both_transitions_are_idempotent<D: Disk>(
    make: &dyn Fn() -> D,
) {
    let disk = make();
    disk.spin_down().expect("spin_down in standby is a no-op");
    assert_eq!(disk.power_state(), PowerState::Standby);
    disk.spin_up().expect("spin_up");
    assert_eq!(disk.power_state(), PowerState::Active);
    disk.spin_up().expect("a second spin_up");
    assert_eq!(disk.power_state(), PowerState::Active);
    disk.spin_down().expect("spin_down");
    disk.spin_down().expect("a second spin_down");
    assert_eq!(disk.power_state(), PowerState::Standby);
}

pub fn empty_small_and_large_files_round_trip<D: Disk>(make: &dyn Fn() -> D) {
    let disk = active(make);
    let before = free_bytes(&disk);
    for (name, len) in [("empty", 0), ("one", 1), ("large", LARGE_BYTES)] {
        write_pattern(&disk, name, len, Overwrite::Refuse);
        assert_pattern(&disk, name, len);
    }
    assert_eq!(before - free_bytes(&disk), 1 + LARGE_BYTES);
}

pub fn read_at_returns_the_bytes_at_an_offset_and_is_short_only_at_end_of_file<D: Disk>(
    make: &dyn Fn() -> D,
) {
    let disk = active(make);
    write_pattern(&disk, "f", 1000, Overwrite::Refuse);
    let cases: [(u64, usize, usize); 5] = [
        (0, 10, 10),
        (500, 100, 100),
        (990, 20, 10),
        (1000, 8, 0),
        (5000, 8, 0),
    ];
    for (offset, want, expected) in cases {
        let mut buffer = vec![0u8; want];
        let read = disk.read_at("f", offset, &mut buffer).expect("read_at");
        assert_eq!(read, expected, "read of {want} at {offset}");
        for (i, byte) in buffer[..read].iter().enumerate() {
            assert_eq!(*byte, pattern_byte(offset + i as u64));
        }
    }
    assert!(matches!(
        disk.read_at("missing", 0, &mut [0u8; 1]),
        Err(DiskError::NotFound { .. })
    ));
    assert!(matches!(
        disk.file_len("missing"),
        Err(DiskError::NotFound { .. })
    ));
}

pub fn refuse_keeps_the_old_file_and_replace_swaps_it<D: Disk>(make: &dyn Fn() -> D) {
    let disk = active(make);
    let capacity = disk.space().expect("space").capacity_bytes;
    write_bytes(&disk, "f", b"old bytes", Overwrite::Refuse);
    let refused = disk.write_file("f", 3, &mut &b"new"[..], Overwrite::Refuse);
    assert!(
        matches!(refused, Err(DiskError::AlreadyExists { .. })),
        "{refused:?}"
    );
    assert_eq!(read_all(&disk, "f"), b"old bytes");
    write_bytes(&disk, "f", b"new", Overwrite::Replace);
    assert_eq!(read_all(&disk, "f"), b"new");
    assert_eq!(
        free_bytes(&disk),
        capacity - 3,
        "the old file's bytes were freed"
    );
    assert_eq!(disk.list_files().expect("list"), vec!["f".to_string()]);
}

pub fn a_write_whose_source_fails_leaves_no_file_and_no_space_used<D: Disk>(make: &dyn Fn() -> D) {
    let disk = active(make);
    write_bytes(&disk, "kept", b"previous", Overwrite::Refuse);
    let before = free_bytes(&disk);
    let len = 3 << 20;
    let broken = disk.write_file(
        "new",
        len,
        &mut PatternReader::failing_after(len, 300 << 10),
        Overwrite::Refuse,
    );
    assert!(matches!(broken, Err(DiskError::Io { .. })), "{broken:?}");
    let short = disk.write_file("new", len, &mut PatternReader::new(17), Overwrite::Refuse);
    assert!(
        matches!(short, Err(DiskError::Io { .. })),
        "a source shorter than len_bytes: {short:?}"
    );
    let replacing = disk.write_file(
        "kept",
        len,
        &mut PatternReader::failing_after(len, 1 << 20),
        Overwrite::Replace,
    );
    assert!(replacing.is_err());
    assert_eq!(disk.list_files().expect("list"), vec!["kept".to_string()]);
    assert_eq!(read_all(&disk, "kept"), b"previous");
    assert_eq!(free_bytes(&disk), before);
}

pub fn a_write_that_does_not_fit_is_no_space_and_leaves_nothing<D: Disk>(make: &dyn Fn() -> D) {
    let disk = active(make);
    write_pattern(&disk, "a", 1000, Overwrite::Refuse);
    let free = free_bytes(&disk);
    let result = disk.write_file(
        "b",
        free + 1,
        &mut PatternReader::new(free + 1),
        Overwrite::Refuse,
    );
    match result {
        Err(DiskError::NoSpace {
            needed_bytes,
            free_bytes,
            ..
        }) => assert_eq!((needed_bytes, free_bytes), (free + 1, free)),
        other => panic!("expected NoSpace, got {other:?}"),
    }
    assert_eq!(disk.list_files().expect("list"), vec!["a".to_string()]);
    assert_eq!(free_bytes(&disk), free);
}

pub fn names_outside_the_alphabet_are_refused<D: Disk>(make: &dyn Fn() -> D) {
    let disk = active(make);
    let long = "x".repeat(201);
    for name in [
        "",
        ".hidden",
        ".",
        "..",
        "a/b",
        "../up",
        "a b",
        "é",
        long.as_str(),
    ] {
        let write = disk.write_file(name, 1, &mut &b"x"[..], Overwrite::Replace);
        assert!(
            matches!(write, Err(DiskError::BadName { .. })),
            "{name:?}: {write:?}"
        );
        let read = disk.read_at(name, 0, &mut [0u8; 1]);
        assert!(
            matches!(read, Err(DiskError::BadName { .. })),
            "{name:?}: {read:?}"
        );
    }
    assert!(disk.list_files().expect("list").is_empty());
    write_bytes(&disk, &"y".repeat(200), b"ok", Overwrite::Refuse);
    write_bytes(&disk, "stack-7_blob.0", b"ok", Overwrite::Refuse);
}

pub fn list_files_is_sorted<D: Disk>(make: &dyn Fn() -> D) {
    let disk = active(make);
    for name in ["b", "a", "c-1", "C", "a.2"] {
        write_bytes(&disk, name, name.as_bytes(), Overwrite::Refuse);
    }
    assert_eq!(
        disk.list_files().expect("list"),
        vec!["C", "a", "a.2", "b", "c-1"]
    );
}

pub fn remove_deletes_the_file_and_frees_its_space<D: Disk>(make: &dyn Fn() -> D) {
    let disk = active(make);
    let before = free_bytes(&disk);
    write_pattern(&disk, "gone", 4096, Overwrite::Refuse);
    write_pattern(&disk, "kept", 10, Overwrite::Refuse);
    disk.remove_file("gone").expect("remove");
    assert_eq!(disk.list_files().expect("list"), vec!["kept".to_string()]);
    assert_eq!(free_bytes(&disk), before - 10);
    let again = disk.remove_file("gone");
    assert!(
        matches!(again, Err(DiskError::NotFound { .. })),
        "{again:?}"
    );
    assert_pattern(&disk, "kept", 10);
}

pub fn spin_down_refuses_io_and_the_data_is_there_after_spin_up<D: Disk>(make: &dyn Fn() -> D) {
    let disk = active(make);
    write_pattern(&disk, "f", 70_000, Overwrite::Refuse);
    let free = free_bytes(&disk);
    disk.spin_down().expect("spin_down");
    assert_eq!(disk.power_state(), PowerState::Standby);
    assert_every_file_op_fails(&disk, is_not_ready, "after spin_down");
    disk.spin_up().expect("spin_up");
    assert_eq!(disk.list_files().expect("list"), vec!["f".to_string()]);
    assert_pattern(&disk, "f", 70_000);
    assert_eq!(free_bytes(&disk), free);
}

pub fn a_failed_disk_answers_failed_to_everything<D: Disk>(make: &dyn Fn() -> D) {
    for spun_up in [false, true] {
        let disk = make();
        if spun_up {
            disk.spin_up().expect("spin_up");
            write_pattern(&disk, "a", 10, Overwrite::Refuse);
        }
        disk.mark_failed();
        assert_eq!(disk.power_state(), PowerState::Failed);
        assert!(is_failed(
            &disk.spin_up().expect_err("spin_up of a failed disk")
        ));
        assert!(is_failed(
            &disk.spin_down().expect_err("spin_down of a failed disk")
        ));
        assert_eq!(disk.power_state(), PowerState::Failed);
        assert_every_file_op_fails(&disk, is_failed, "on a failed disk");
    }
}

/// Writes one `#[test]` per conformance body into a module named `$module`, each calling
/// `$make` (an expression of type `impl Fn() -> D`) as the factory.
#[macro_export]
macro_rules! conformance_tests {
    ($module:ident, $make:expr) => {
        mod $module {
            #[allow(unused_imports)]
            use super::*;
            $crate::conformance_tests!(@bodies $make;
                new_disk_is_in_standby,
                standby_refuses_every_file_operation_with_not_ready,
                spin_up_makes_the_disk_active_and_both_transitions_are_idempotent,
                empty_small_and_large_files_round_trip,
                read_at_returns_the_bytes_at_an_offset_and_is_short_only_at_end_of_file,
                refuse_keeps_the_old_file_and_replace_swaps_it,
                a_write_whose_source_fails_leaves_no_file_and_no_space_used,
                a_write_that_does_not_fit_is_no_space_and_leaves_nothing,
                names_outside_the_alphabet_are_refused,
                list_files_is_sorted,
                remove_deletes_the_file_and_frees_its_space,
                spin_down_refuses_io_and_the_data_is_there_after_spin_up,
                a_failed_disk_answers_failed_to_everything
            );
        }
    };
    (@bodies $make:expr; $($body:ident),+) => {
        $(
            #[test]
            fn $body() {
                $crate::conformance::$body(&$make);
            }
        )+
    };
}
