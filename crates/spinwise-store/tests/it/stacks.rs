//! Stripe stacks on emulated disks: written concurrently from one encoder, read back through the
//! decoder byte-exact, and every kind of damage (lost disk, flipped byte, lying disk, full disk)
//! either repaired with a report or refused without leaving stacks behind.

use spinwise_disk::{Disk, EmulatedConfig, EmulatedDisk, PowerState};
use spinwise_ec::{Code, DecodeError, FragmentFault, StripeDecoder, content_hash};
use spinwise_store::stacks::{StackWriteError, fetch_from_disks, stack_name, write_stacks};
use std::sync::Arc;

const FRAGMENT_BYTES: usize = 64 * 1024;

struct Rig {
    _directory: tempfile::TempDir,
    emulated: Vec<Arc<EmulatedDisk>>,
    disks: Vec<Arc<dyn Disk>>,
    code: Code,
}

fn rig(capacities: &[u64]) -> Rig {
    let directory = tempfile::tempdir().unwrap();
    let emulated: Vec<Arc<EmulatedDisk>> = capacities
        .iter()
        .enumerate()
        .map(|(index, &capacity)| {
            let path = directory.path().join(format!("disk-{index}"));
            let disk =
                EmulatedDisk::create(EmulatedConfig::new(path, index as u32, capacity)).unwrap();
            disk.spin_up().unwrap();
            Arc::new(disk)
        })
        .collect();
    let disks = emulated
        .iter()
        .map(|d| d.clone() as Arc<dyn Disk>)
        .collect();
    Rig {
        _directory: directory,
        emulated,
        disks,
        code: Code::new(4, 2, FRAGMENT_BYTES).unwrap(),
    }
}

fn blob(bytes: usize) -> Vec<u8> {
    (0..bytes).map(|i| (i * 31 % 251) as u8).collect()
}

/// The bytes read and the (column, fault) of every fragment the decoder repaired.
type ReadBack = (Vec<u8>, Vec<(usize, FragmentFault)>);

fn read_back(
    rig: &Rig,
    id: u64,
    data: &[u8],
    range: std::ops::Range<u64>,
) -> Result<ReadBack, DecodeError> {
    let mut decoder = StripeDecoder::new(&rig.code, data.len() as u64);
    let mut out = Vec::new();
    let report =
        decoder.read_range(range, fetch_from_disks(&rig.code, id, &rig.disks), &mut out)?;
    Ok((
        out,
        report
            .repaired
            .into_iter()
            .map(|r| (r.column, r.fault))
            .collect(),
    ))
}

#[test]
fn a_blob_written_to_six_disks_reads_back_byte_exact_in_any_range() {
    let rig = rig(&[1 << 30; 6]);
    let data = blob(3 * 4 * FRAGMENT_BYTES + 12_345);
    write_stacks(
        &rig.code,
        7,
        data.len() as u64,
        content_hash(&data),
        &data[..],
        &rig.disks,
    )
    .unwrap();
    for disk in &rig.disks {
        assert_eq!(disk.list_files().unwrap().len(), 1);
    }
    let whole = 0..data.len() as u64;
    let (out, repaired) = read_back(&rig, 7, &data, whole).unwrap();
    assert_eq!(out, data);
    assert!(repaired.is_empty());
    let (out, _) = read_back(&rig, 7, &data, 100_000..300_001).unwrap();
    assert_eq!(out, &data[100_000..300_001]);
}

#[test]
fn up_to_r_failed_disks_are_reconstructed_and_reported() {
    let rig = rig(&[1 << 30; 6]);
    let data = blob(2 * 4 * FRAGMENT_BYTES);
    write_stacks(
        &rig.code,
        1,
        data.len() as u64,
        content_hash(&data),
        &data[..],
        &rig.disks,
    )
    .unwrap();
    rig.emulated[0].mark_failed();
    rig.emulated[2].mark_failed();
    assert_eq!(rig.disks[0].power_state(), PowerState::Failed);
    let (out, repaired) = read_back(&rig, 1, &data, 0..data.len() as u64).unwrap();
    assert_eq!(out, data);
    let columns: std::collections::BTreeSet<usize> = repaired.iter().map(|(c, _)| *c).collect();
    assert_eq!(columns, [0, 2].into());
    rig.emulated[1].mark_failed();
    let refused = read_back(&rig, 1, &data, 0..data.len() as u64).unwrap_err();
    assert!(
        matches!(refused, DecodeError::CorruptBeyondRepair { .. }),
        "{refused}"
    );
}

#[test]
fn a_flipped_byte_in_a_stack_is_detected_and_repaired_on_read() {
    let rig = rig(&[1 << 30; 6]);
    let data = blob(4 * FRAGMENT_BYTES);
    write_stacks(
        &rig.code,
        3,
        data.len() as u64,
        content_hash(&data),
        &data[..],
        &rig.disks,
    )
    .unwrap();
    let path = rig.emulated[1].directory().join(stack_name(3, 1));
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[500] ^= 0x40;
    std::fs::write(&path, bytes).unwrap();
    let (out, repaired) = read_back(&rig, 3, &data, 0..data.len() as u64).unwrap();
    assert_eq!(out, data);
    assert_eq!(repaired.len(), 1);
    assert_eq!(repaired[0].0, 1);
}

#[test]
fn a_disk_that_returns_short_reads_is_caught_and_read_around() {
    let rig = rig(&[1 << 30; 6]);
    let data = blob(4 * FRAGMENT_BYTES);
    write_stacks(
        &rig.code,
        4,
        data.len() as u64,
        content_hash(&data),
        &data[..],
        &rig.disks,
    )
    .unwrap();
    rig.emulated[3].faults().set_short_reads(true);
    let (out, repaired) = read_back(&rig, 4, &data, 0..data.len() as u64).unwrap();
    assert_eq!(out, data);
    assert!(
        repaired.iter().any(|(column, _)| *column == 3),
        "{repaired:?}"
    );
}

#[test]
fn a_full_disk_fails_the_write_naming_its_column_and_leaves_no_stack_anywhere() {
    let mut capacities = [1u64 << 30; 6];
    capacities[4] = 1000;
    let rig = rig(&capacities);
    let data = blob(4 * FRAGMENT_BYTES);
    let error = write_stacks(
        &rig.code,
        5,
        data.len() as u64,
        content_hash(&data),
        &data[..],
        &rig.disks,
    )
    .unwrap_err();
    match error {
        StackWriteError::Columns { failures } => {
            assert_eq!(
                failures.iter().map(|(c, _)| *c).collect::<Vec<_>>(),
                vec![4]
            );
        }
        other => panic!("{other}"),
    }
    for disk in &rig.disks {
        assert!(disk.list_files().unwrap().is_empty());
    }
}

#[test]
fn a_wrong_content_hash_fails_the_write_and_leaves_nothing() {
    let rig = rig(&[1 << 30; 6]);
    let data = blob(FRAGMENT_BYTES + 1);
    let error = write_stacks(
        &rig.code,
        6,
        data.len() as u64,
        [0; 32],
        &data[..],
        &rig.disks,
    )
    .unwrap_err();
    assert!(matches!(error, StackWriteError::Encode(_)), "{error}");
    for disk in &rig.disks {
        assert!(disk.list_files().unwrap().is_empty());
    }
}
