//! Operation streams and the files they are written as: the simulator's own parser accepts the
//! trace; writes come in batches, in order, before the reads; reads are seeded, uniform or
//! Zipf-skewed; the limits copied from the simulator agree with it.

use spinwise_workload::{
    FileSet, FileSizeModel, GenerateError, MANIFEST_HEADER, MAX_FILE_BYTES, MAX_FILES,
    MAX_TRACE_RECORDS, MAX_TRACE_SECONDS, OperationKind, Popularity, Shape, StreamOptions,
    TRACE_HEADER, Variable, generate_file_set, key, operations, write_manifest, write_trace,
};

fn small_set() -> FileSet {
    let model = FileSizeModel::new(
        Shape::LogNormal {
            mu: 14.0,
            sigma: 2.0,
        },
        Variable::Bytes,
    );
    generate_file_set(&model, 20_000_000_000, 9).unwrap()
}

fn options(reads: u64, popularity: Popularity) -> StreamOptions {
    StreamOptions {
        batch_bytes: 1 << 30,
        batch_interval_s: 60.0,
        reads,
        read_rate_per_s: 2.0,
        popularity,
    }
}

#[test]
fn the_simulator_parses_the_trace_written_here_record_for_record() {
    let set = small_set();
    let stream = operations(&set, &options(5_000, Popularity::Zipf { exponent: 1.1 }), 4).unwrap();
    let mut text = Vec::new();
    write_trace(&set, &stream, &mut text).unwrap();
    let records = spinwise_sim::parse_trace(std::str::from_utf8(&text).unwrap()).unwrap();
    assert_eq!(records.len(), set.len() + 5_000);
    for (record, operation) in records.iter().zip(&stream.operations) {
        assert_eq!(record.key, key(operation.file_index));
        assert_eq!(record.size_bytes, set.sizes_bytes[operation.file_index]);
        let expected = match operation.kind {
            OperationKind::Write => spinwise_sim::Operation::Write,
            OperationKind::Read => spinwise_sim::Operation::Read,
        };
        assert_eq!(record.operation, expected);
        assert_eq!(record.time_us, (operation.time_s * 1e6).round() as u64);
    }
}

#[test]
fn the_manifest_lists_every_file_once_in_write_order() {
    let set = small_set();
    let mut text = Vec::new();
    write_manifest(&set, &mut text).unwrap();
    let text = String::from_utf8(text).unwrap();
    let mut lines = text.lines();
    assert_eq!(lines.next(), Some(MANIFEST_HEADER));
    let rows: Vec<(String, u64)> = lines
        .map(|line| {
            let (key, size) = line.split_once(',').unwrap();
            (key.to_string(), size.parse().unwrap())
        })
        .collect();
    assert_eq!(rows.len(), set.len());
    for (index, (row_key, size_bytes)) in rows.iter().enumerate() {
        assert_eq!(row_key, &key(index));
        assert_eq!(*size_bytes, set.sizes_bytes[index]);
    }
}

#[test]
fn writes_arrive_in_batches_of_at_most_the_batch_size_before_any_read() {
    let set = small_set();
    let stream = operations(&set, &options(100, Popularity::Uniform), 1).unwrap();
    let writes: Vec<_> = stream
        .operations
        .iter()
        .filter(|o| o.kind == OperationKind::Write)
        .collect();
    assert_eq!(writes.len(), set.len());
    assert!(writes.iter().enumerate().all(|(i, o)| o.file_index == i));
    // Per batch (arrival time): files and bytes.
    let mut batches = std::collections::BTreeMap::<u64, (u64, u64)>::new();
    for write in &writes {
        let batch = batches.entry(write.time_s as u64).or_default();
        batch.0 += 1;
        batch.1 += set.sizes_bytes[write.file_index];
    }
    assert_eq!(batches.len(), stream.batches);
    assert!(stream.batches > 10);
    for (time_s, (files, bytes)) in &batches {
        assert_eq!(time_s % 60, 0);
        // Only a single file larger than the batch size makes a batch larger.
        assert!(
            *bytes <= 1 << 30 || *files == 1,
            "batch at {time_s} s holds {files} files, {bytes} bytes"
        );
    }
    let last_write_s = writes.last().unwrap().time_s;
    let first_read = stream
        .operations
        .iter()
        .find(|o| o.kind == OperationKind::Read)
        .unwrap();
    assert!(first_read.time_s > last_write_s);
    assert!(
        stream
            .operations
            .windows(2)
            .all(|pair| pair[0].time_s <= pair[1].time_s)
    );
}

#[test]
fn zipf_reads_concentrate_on_few_files_and_uniform_reads_do_not() {
    let set = small_set();
    let reads = 20_000;
    let count_top_share = |popularity| {
        let stream = operations(&set, &options(reads, popularity), 2).unwrap();
        let mut per_file = vec![0u64; set.len()];
        for operation in &stream.operations {
            if operation.kind == OperationKind::Read {
                per_file[operation.file_index] += 1;
            }
        }
        per_file.sort_unstable_by(|a, b| b.cmp(a));
        let top = set.len() / 100;
        per_file[..top].iter().sum::<u64>() as f64 / reads as f64
    };
    let uniform = count_top_share(Popularity::Uniform);
    let zipf = count_top_share(Popularity::Zipf { exponent: 1.0 });
    println!("reads to the busiest 1% of files: uniform {uniform:.3}, zipf(1) {zipf:.3}");
    assert!(uniform < 0.05, "uniform {uniform}");
    assert!(zipf > 0.4, "zipf {zipf}");
}

#[test]
fn the_same_seed_gives_the_same_stream() {
    let set = small_set();
    let zipf = options(1_000, Popularity::Zipf { exponent: 0.8 });
    assert_eq!(
        operations(&set, &zipf, 5).unwrap(),
        operations(&set, &zipf, 5).unwrap()
    );
    assert_ne!(
        operations(&set, &zipf, 5).unwrap(),
        operations(&set, &zipf, 6).unwrap()
    );
}

#[test]
fn bad_stream_options_are_refused() {
    let set = small_set();
    let refused = |options: StreamOptions| operations(&set, &options, 1).unwrap_err();
    let base = options(10, Popularity::Uniform);
    assert!(matches!(
        refused(StreamOptions {
            batch_bytes: 0,
            ..base
        }),
        GenerateError::OutOfRange { .. }
    ));
    assert!(matches!(
        refused(StreamOptions {
            read_rate_per_s: 0.0,
            ..base
        }),
        GenerateError::OutOfRange { .. }
    ));
    assert!(matches!(
        refused(StreamOptions {
            popularity: Popularity::Zipf { exponent: f64::NAN },
            ..base
        }),
        GenerateError::OutOfRange { .. }
    ));
    assert!(matches!(
        refused(StreamOptions {
            reads: MAX_TRACE_RECORDS as u64,
            ..base
        }),
        GenerateError::TooManyRecords { .. }
    ));
    assert!(matches!(
        refused(StreamOptions {
            batch_interval_s: 1e9,
            ..base
        }),
        GenerateError::TooLong { .. }
    ));
}

#[test]
fn the_limits_copied_from_the_simulator_agree_with_it() {
    assert_eq!(MAX_TRACE_RECORDS, spinwise_sim::workload::MAX_TRACE_RECORDS);
    assert_eq!(MAX_FILES, spinwise_sim::workload::MAX_TRACE_RECORDS);
    assert_eq!(MAX_FILE_BYTES, spinwise_sim::MAX_BLOB_BYTES);
    assert_eq!(MAX_TRACE_SECONDS, spinwise_sim::MAX_HOURS * 3600.0);
    assert_eq!(TRACE_HEADER, spinwise_sim::workload::TRACE_HEADER);
}
