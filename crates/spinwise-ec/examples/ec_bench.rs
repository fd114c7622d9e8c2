//! ec_bench: single-thread throughput of the erasure code (15+3, 128 KiB fragments) beside
//! crc32c, BLAKE3 and memcpy of the same bytes, measured side by side in one run.
//!
//! `cargo run --release -p spinwise-ec --example ec_bench [-- --json] [--pool-stripes N]`; pin it
//! with `taskset -c 0`. Every figure is data bytes (k × F per stripe) per second, the median
//! of RUNS runs, each run passing ~1 GiB through a 60 MiB pool of stripes (bigger than any L3
//! this runs on, so the numbers include memory traffic rather than only cache hits);
//! `--pool-stripes 1` keeps one 1.9 MiB stripe in cache instead.
//!
//! Every buffer the bench hands to a codec starts `--misalign B` bytes past a 64-byte boundary
//! (default 0: aligned, as a cache line and an AVX-512 load like it; 16 is where the global
//! allocator put a plain `Vec<u8>` here before, which favoured no one fairly). Run both and
//! report both: ISA-L's assembly and our kernels do not lose the same to a misaligned buffer.
//!
//! With `--features isal-peer` it also measures Intel ISA-L (erasure-isa-l, Cauchy) on the
//! same pool with the same timing, and checks that ISA-L's parity and its rebuilt fragments
//! are byte-identical to ours (a mismatch aborts the run: the numbers would not compare).

use std::hint::black_box;
use std::time::Instant;

use spinwise_ec::{BlobEncoder, Code, DEFAULT_FRAGMENT_BYTES, Kernel, StripeDecoder, content_hash};

const DATA_COLUMNS: usize = 15;
const PARITY_COLUMNS: usize = 3;
/// Stripes in the pool (`--pool-stripes N`): 32 = 60 MiB, past the L3; 1 = 1.9 MiB, in cache.
const DEFAULT_POOL_STRIPES: usize = 32;
const RUNS: usize = 7;
const BYTES_PER_RUN: u64 = 1 << 30;
/// Cache-line size: the boundary `--misalign` is counted from.
const LINE_BYTES: usize = 64;

/// Bytes that start `misalign` bytes past a 64-byte boundary, zeroed; the bench's every
/// buffer, so a row's alignment is the run's `--misalign`, never the allocator's choice.
struct Aligned {
    storage: Vec<u8>,
    start: usize,
    len: usize,
}

impl Aligned {
    fn zeroed(len: usize, misalign: usize) -> Aligned {
        assert!(misalign < LINE_BYTES, "--misalign is 0 to 63 bytes");
        let storage = vec![0u8; len + 2 * LINE_BYTES];
        let address = storage.as_ptr() as usize;
        let start = (LINE_BYTES - address % LINE_BYTES) % LINE_BYTES + misalign;
        Aligned {
            storage,
            start,
            len,
        }
    }

    fn misalign(&self) -> usize {
        self.as_ptr() as usize % LINE_BYTES
    }
}

impl std::ops::Deref for Aligned {
    type Target = [u8];
    fn deref(&self) -> &[u8] {
        &self.storage[self.start..][..self.len]
    }
}

impl std::ops::DerefMut for Aligned {
    fn deref_mut(&mut self) -> &mut [u8] {
        &mut self.storage[self.start..][..self.len]
    }
}

impl Clone for Aligned {
    fn clone(&self) -> Aligned {
        let mut copy = Aligned::zeroed(self.len, self.misalign());
        copy.copy_from_slice(self);
        copy
    }
}

impl PartialEq for Aligned {
    fn eq(&self, other: &Aligned) -> bool {
        self[..] == other[..]
    }
}

impl Default for Aligned {
    fn default() -> Aligned {
        Aligned::zeroed(0, 0)
    }
}

struct Pool {
    code: Code,
    stripes: usize,
    /// Bytes past a 64-byte boundary every buffer starts at (`--misalign`).
    misalign: usize,
    data: Aligned,
    parity: Aligned,
    crcs: Vec<u32>,
}

impl Pool {
    fn new(stripes: usize, misalign: usize) -> Pool {
        let code = Code::new(DATA_COLUMNS, PARITY_COLUMNS, DEFAULT_FRAGMENT_BYTES).unwrap();
        let fragment = code.fragment_bytes();
        let mut data = Aligned::zeroed(stripes * DATA_COLUMNS * fragment, misalign);
        // xorshift fill: incompressible, deterministic, fast.
        let mut state = 0x9e37_79b9_7f4a_7c15u64;
        for chunk in data.chunks_exact_mut(8) {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            chunk.copy_from_slice(&state.to_le_bytes());
        }
        let mut parity = Aligned::zeroed(stripes * PARITY_COLUMNS * fragment, misalign);
        let stripe_bytes = DATA_COLUMNS * fragment;
        for (stripe_data, stripe_parity) in data
            .chunks_exact(stripe_bytes)
            .zip(parity.chunks_exact_mut(PARITY_COLUMNS * fragment))
        {
            code.encode_stripe(stripe_data, stripe_parity).unwrap();
        }
        let mut crcs = Vec::new();
        for stripe in 0..stripes {
            for column in 0..code.columns() {
                crcs.push(spinwise_ec::checksum::crc32c(fragment_of(
                    &code, &data, &parity, stripe, column,
                )));
            }
        }
        Pool {
            code,
            stripes,
            misalign,
            data,
            parity,
            crcs,
        }
    }

    fn stripe_bytes(&self) -> usize {
        DATA_COLUMNS * self.code.fragment_bytes()
    }

    fn stripes_per_run(&self) -> usize {
        (BYTES_PER_RUN / self.stripe_bytes() as u64) as usize
    }
}

fn fragment_of<'a>(
    code: &Code,
    data: &'a [u8],
    parity: &'a [u8],
    stripe: usize,
    column: usize,
) -> &'a [u8] {
    let fragment = code.fragment_bytes();
    if column < DATA_COLUMNS {
        &data[(stripe * DATA_COLUMNS + column) * fragment..][..fragment]
    } else {
        &parity[(stripe * PARITY_COLUMNS + column - DATA_COLUMNS) * fragment..][..fragment]
    }
}

/// Median GB/s (10^9 bytes) of `RUNS` runs of `run`, which processes `bytes` per run, by
/// wall clock and by this thread's on-CPU time (from /proc/thread-self/schedstat, in ns): on a
/// shared machine the second is the per-core rate, the first also counts time the core was
/// given to other processes.
#[derive(Clone, Copy)]
struct Rate {
    wall_gb_per_s: f64,
    cpu_gb_per_s: f64,
}

fn thread_cpu_ns() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/thread-self/schedstat").ok()?;
    text.split_whitespace().next()?.parse().ok()
}

fn measure(bytes: u64, mut run: impl FnMut()) -> Rate {
    run(); // warm-up: page faults, tables, inversion cache
    let mut wall = Vec::new();
    let mut cpu = Vec::new();
    for _ in 0..RUNS {
        let cpu_start = thread_cpu_ns();
        let start = Instant::now();
        run();
        let elapsed_s = start.elapsed().as_secs_f64();
        wall.push(bytes as f64 / elapsed_s / 1e9);
        if let (Some(from), Some(to)) = (cpu_start, thread_cpu_ns()) {
            cpu.push(bytes as f64 / (to.saturating_sub(from).max(1) as f64));
        }
    }
    Rate {
        wall_gb_per_s: median(&mut wall),
        cpu_gb_per_s: median(&mut cpu),
    }
}

fn median(values: &mut [f64]) -> f64 {
    if values.is_empty() {
        return f64::NAN;
    }
    values.sort_by(f64::total_cmp);
    values[values.len() / 2]
}

fn encode_parity(pool: &mut Pool) -> Rate {
    let stripes = pool.stripes_per_run();
    let pool_stripes = pool.stripes;
    let stripe_bytes = pool.stripe_bytes();
    let parity_bytes = PARITY_COLUMNS * pool.code.fragment_bytes();
    let Pool {
        code, data, parity, ..
    } = pool;
    measure((stripes * stripe_bytes) as u64, || {
        for index in 0..stripes {
            let stripe = index % pool_stripes;
            code.encode_stripe(
                &data[stripe * stripe_bytes..][..stripe_bytes],
                &mut parity[stripe * parity_bytes..][..parity_bytes],
            )
            .unwrap();
        }
        black_box(&parity);
    })
}

/// The same encode on another kernel (`Code::with_kernel`), into a parity pool of its own that
/// must come out equal to ours: each kernel's rate is a same-run figure.
fn encode_on(pool: &Pool, kernel: Kernel) -> Rate {
    let code = Code::with_kernel(DATA_COLUMNS, PARITY_COLUMNS, DEFAULT_FRAGMENT_BYTES, kernel)
        .expect("only available kernels are measured");
    let stripes = pool.stripes_per_run();
    let stripe_bytes = pool.stripe_bytes();
    let parity_bytes = PARITY_COLUMNS * code.fragment_bytes();
    let mut parity = Aligned::zeroed(pool.parity.len(), pool.misalign);
    let rate = measure((stripes * stripe_bytes) as u64, || {
        for index in 0..stripes {
            let stripe = index % pool.stripes;
            code.encode_stripe(
                &pool.data[stripe * stripe_bytes..][..stripe_bytes],
                &mut parity[stripe * parity_bytes..][..parity_bytes],
            )
            .unwrap();
        }
        black_box(&parity);
    });
    assert!(
        parity == pool.parity,
        "the {} kernel's parity differs from ours: the rows would not compare",
        kernel.name()
    );
    rate
}

/// The same rebuild of data fragments 0–2 on another kernel; the rebuilt bytes must equal the
/// pool's.
fn decode_on(pool: &Pool, kernel: Kernel) -> Rate {
    let code = Code::with_kernel(DATA_COLUMNS, PARITY_COLUMNS, DEFAULT_FRAGMENT_BYTES, kernel)
        .expect("only available kernels are measured");
    let mut data = pool.data.clone();
    let mut parity = pool.parity.clone();
    let fragment = code.fragment_bytes();
    let mut lost = Aligned::zeroed(3 * fragment, pool.misalign);
    let rate = rebuild_three_lost(&code, pool, &mut data, &mut parity, &mut lost);
    assert!(
        lost[..]
            == pool.data[(pool.stripes_per_run() - 1) % pool.stripes * pool.stripe_bytes()..]
                [..3 * fragment],
        "the {} kernel rebuilt other bytes: the rows would not compare",
        kernel.name()
    );
    rate
}

fn decode_three_lost(pool: &mut Pool) -> Rate {
    let mut data = std::mem::take(&mut pool.data);
    let mut parity = std::mem::take(&mut pool.parity);
    let mut lost = Aligned::zeroed(3 * pool.code.fragment_bytes(), pool.misalign);
    let rate = rebuild_three_lost(&pool.code, pool, &mut data, &mut parity, &mut lost);
    (pool.data, pool.parity) = (data, parity);
    rate
}

/// Rebuilds data fragments 0–2 of stripe after stripe of `data` and `parity` (laid out as the
/// pool's) into `lost`, which ends holding the last stripe's.
fn rebuild_three_lost(
    code: &Code,
    pool: &Pool,
    data: &mut [u8],
    parity: &mut [u8],
    lost: &mut [u8],
) -> Rate {
    let stripes = pool.stripes_per_run();
    let stripe_bytes = pool.stripe_bytes();
    let fragment = code.fragment_bytes();
    let parity_bytes = PARITY_COLUMNS * fragment;
    let mut present = [true; DATA_COLUMNS + PARITY_COLUMNS];
    present[..3].fill(false);
    measure((stripes * stripe_bytes) as u64, || {
        for index in 0..stripes {
            let stripe = index % pool.stripes;
            let stripe_data = &mut data[stripe * stripe_bytes..][..stripe_bytes];
            let stripe_parity = &mut parity[stripe * parity_bytes..][..parity_bytes];
            let (_, kept) = stripe_data.split_at_mut(3 * fragment);
            let mut fragments: Vec<&mut [u8]> = lost
                .chunks_exact_mut(fragment)
                .chain(kept.chunks_exact_mut(fragment))
                .chain(stripe_parity.chunks_exact_mut(fragment))
                .collect();
            code.reconstruct(&mut fragments, &present, true).unwrap();
        }
        black_box(&lost);
    })
}

/// Intel ISA-L (erasure-isa-l 0.3, ISA-L 2.32, `gf_gen_cauchy1_matrix`) as the measured peer:
/// encode into a separate parity pool, rebuild 3 lost data fragments with a decode table made
/// once (our codec caches its inverted matrix too), and compare both with our bytes.
#[cfg(feature = "isal-peer")]
mod isal_peer {
    use super::{Aligned, DATA_COLUMNS, PARITY_COLUMNS, Pool, Rate, black_box, measure};
    use erasure_isa_l::erasure::ErasureCode;
    use std::num::NonZeroUsize;

    fn code() -> ErasureCode {
        ErasureCode::with_cauchy(
            NonZeroUsize::new(DATA_COLUMNS).unwrap(),
            NonZeroUsize::new(PARITY_COLUMNS).unwrap(),
        )
        .expect("ISA-L accepts 15+3")
    }

    fn encode_stripe(isal: &ErasureCode, data: &[u8], parity: &mut [u8], fragment: usize) {
        let sources: Vec<&[u8]> = data.chunks_exact(fragment).collect();
        let mut outputs: Vec<&mut [u8]> = parity.chunks_exact_mut(fragment).collect();
        isal.encode(&sources, &mut outputs).unwrap();
    }

    /// Encode rate, and whether ISA-L's parity for the whole pool equals ours.
    pub fn encode(pool: &Pool) -> (Rate, bool) {
        let isal = code();
        let stripes = pool.stripes_per_run();
        let stripe_bytes = pool.stripe_bytes();
        let fragment = pool.code.fragment_bytes();
        let parity_bytes = PARITY_COLUMNS * fragment;
        let mut parity = Aligned::zeroed(pool.parity.len(), pool.misalign);
        let rate = measure((stripes * stripe_bytes) as u64, || {
            for index in 0..stripes {
                let stripe = index % pool.stripes;
                encode_stripe(
                    &isal,
                    &pool.data[stripe * stripe_bytes..][..stripe_bytes],
                    &mut parity[stripe * parity_bytes..][..parity_bytes],
                    fragment,
                );
            }
            black_box(&parity);
        });
        (rate, parity == pool.parity)
    }

    /// Decode rate with data fragments 0..3 lost, and whether every rebuilt fragment of the
    /// pool equals the original data.
    pub fn decode_three_lost(pool: &Pool) -> (Rate, bool) {
        let isal = code();
        let erasures = vec![0, 1, 2];
        let table = isal.make_decode_table(erasures.clone()).unwrap();
        let stripes = pool.stripes_per_run();
        let stripe_bytes = pool.stripe_bytes();
        let fragment = pool.code.fragment_bytes();
        let parity_bytes = PARITY_COLUMNS * fragment;
        let mut data = pool.data.clone();
        let mut parity = pool.parity.clone();
        let mut lost = Aligned::zeroed(3 * fragment, pool.misalign);
        let mut decode_stripe = |stripe: usize, lost: &mut [u8]| {
            let stripe_data = &mut data[stripe * stripe_bytes..][..stripe_bytes];
            let (_, kept) = stripe_data.split_at_mut(3 * fragment);
            let mut sources: Vec<&mut [u8]> = lost
                .chunks_exact_mut(fragment)
                .chain(kept.chunks_exact_mut(fragment))
                .collect();
            let mut outputs: Vec<&mut [u8]> = parity[stripe * parity_bytes..][..parity_bytes]
                .chunks_exact_mut(fragment)
                .collect();
            isal.decode_with_table(&mut sources, &mut outputs, &table, erasures.clone())
                .unwrap();
        };
        let rate = measure((stripes * stripe_bytes) as u64, || {
            for index in 0..stripes {
                decode_stripe(index % pool.stripes, &mut lost);
            }
            black_box(&lost);
        });
        let identical = (0..pool.stripes).all(|stripe| {
            lost.fill(0);
            decode_stripe(stripe, &mut lost);
            lost[..] == pool.data[stripe * stripe_bytes..][..3 * fragment]
        });
        (rate, identical)
    }
}

/// The whole read path on one stripe at a time: copy framed fragments in (as from a disk),
/// verify 15 crcs, reconstruct 3 lost data fragments, write the stripe out.
fn read_path_three_lost(pool: &Pool) -> Rate {
    let stripes = pool.stripes_per_run();
    let pool_stripes = pool.stripes;
    let stripe_bytes = pool.stripe_bytes() as u64;
    let blob_bytes = pool.stripes as u64 * stripe_bytes;
    let code = &pool.code;
    let mut decoder = StripeDecoder::new(code, blob_bytes);
    let mut sink = Aligned::zeroed(stripe_bytes as usize, pool.misalign);
    measure(stripes as u64 * stripe_bytes, || {
        for index in 0..stripes {
            let stripe = (index % pool_stripes) as u64;
            let range = stripe * stripe_bytes..(stripe + 1) * stripe_bytes;
            let mut cursor = std::io::Cursor::new(&mut sink[..]);
            decoder
                .read_range(
                    range,
                    |column, stripe, buffer: &mut [u8]| {
                        if column < 3 {
                            return Err(spinwise_ec::FetchError("lost".into()));
                        }
                        let stripe = stripe as usize;
                        let fragment = fragment_of(code, &pool.data, &pool.parity, stripe, column);
                        let crc = pool.crcs[stripe * code.columns() + column];
                        buffer[..fragment.len()].copy_from_slice(fragment);
                        buffer[fragment.len()..].copy_from_slice(&crc.to_le_bytes());
                        Ok(buffer.len())
                    },
                    &mut cursor,
                )
                .unwrap();
        }
        black_box(&sink);
    })
}

/// The write path: BlobEncoder pulling 1 GiB from a reader (copy in, BLAKE3 check, parity,
/// 18 crcs per stripe).
fn write_path(pool: &Pool) -> Rate {
    let blob = &pool.data;
    let repeats = (BYTES_PER_RUN / blob.len() as u64) as usize;
    let hash = content_hash(blob);
    measure((repeats * blob.len()) as u64, || {
        for _ in 0..repeats {
            let mut encoder = BlobEncoder::new(&pool.code, 1, blob.len() as u64, hash, &blob[..]);
            while let Some(stripe) = encoder.next_stripe().unwrap() {
                black_box(stripe.crc32c(17));
            }
        }
    })
}

fn crc_rate(pool: &Pool) -> Rate {
    let repeats = (BYTES_PER_RUN / pool.data.len() as u64) as usize;
    let fragment = pool.code.fragment_bytes();
    measure((repeats * pool.data.len()) as u64, || {
        for _ in 0..repeats {
            for chunk in pool.data.chunks_exact(fragment) {
                black_box(spinwise_ec::checksum::crc32c(chunk));
            }
        }
    })
}

fn blake3_rate(pool: &Pool) -> Rate {
    let repeats = (BYTES_PER_RUN / pool.data.len() as u64) as usize;
    measure((repeats * pool.data.len()) as u64, || {
        for _ in 0..repeats {
            black_box(blake3::hash(&pool.data));
        }
    })
}

fn memcpy_rate(pool: &Pool) -> Rate {
    let repeats = (BYTES_PER_RUN / pool.data.len() as u64) as usize;
    let mut target = Aligned::zeroed(pool.data.len(), pool.misalign);
    let fragment = pool.code.fragment_bytes();
    measure((repeats * pool.data.len()) as u64, || {
        for _ in 0..repeats {
            for (to, from) in target
                .chunks_exact_mut(fragment)
                .zip(pool.data.chunks_exact(fragment))
            {
                to.copy_from_slice(from);
            }
            black_box(&target);
        }
    })
}

fn main() {
    let arguments: Vec<String> = std::env::args().collect();
    let json = arguments.iter().any(|argument| argument == "--json");
    let pool_stripes = arguments
        .iter()
        .position(|argument| argument == "--pool-stripes")
        .and_then(|index| arguments.get(index + 1))
        .map(|value| {
            value
                .parse::<usize>()
                .expect("--pool-stripes takes a count ≥ 1")
        })
        .unwrap_or(DEFAULT_POOL_STRIPES)
        .max(1);
    let misalign = arguments
        .iter()
        .position(|argument| argument == "--misalign")
        .and_then(|index| arguments.get(index + 1))
        .map(|value| match value.parse::<usize>() {
            Ok(bytes) if bytes < LINE_BYTES => bytes,
            _ => panic!("--misalign takes 0 to 63 bytes past a 64-byte boundary"),
        })
        .unwrap_or(0);
    let mut pool = Pool::new(pool_stripes, misalign);
    let ours = pool.code.kernel();
    let mut rows: Vec<(String, Rate)> = vec![
        (
            "encode 15+3 (parity from data)".into(),
            encode_parity(&mut pool),
        ),
        (
            "decode 15+3, 3 data lost (codec)".into(),
            decode_three_lost(&mut pool),
        ),
    ];
    for kernel in Kernel::ALL {
        if kernel != ours && kernel.is_available() {
            rows.push((
                format!("encode 15+3, {} kernel", kernel.name()),
                encode_on(&pool, kernel),
            ));
            rows.push((
                format!("decode 15+3, 3 data lost, {} kernel", kernel.name()),
                decode_on(&pool, kernel),
            ));
        }
    }
    #[cfg(feature = "isal-peer")]
    {
        let (encode, parity_identical) = isal_peer::encode(&pool);
        let (decode, rebuild_identical) = isal_peer::decode_three_lost(&pool);
        eprintln!(
            "ISA-L parity byte-identical to ours on the {:.1} MiB pool: {parity_identical}; \
             ISA-L rebuilt data byte-identical: {rebuild_identical}",
            pool.data.len() as f64 / (1u64 << 20) as f64
        );
        assert!(
            parity_identical && rebuild_identical,
            "ISA-L and our codec disagree: the rows would not compare"
        );
        rows.push(("ISA-L encode 15+3 (peer)".into(), encode));
        rows.push(("ISA-L decode 15+3, 3 data lost (peer)".into(), decode));
    }
    let others: [(&str, Rate); 5] = [
        (
            "read path, 3 data lost (crc + decode + copies)",
            read_path_three_lost(&pool),
        ),
        (
            "write path (BlobEncoder: copy + BLAKE3 + parity + crc)",
            write_path(&pool),
        ),
        ("crc32c", crc_rate(&pool)),
        ("blake3", blake3_rate(&pool)),
        ("memcpy", memcpy_rate(&pool)),
    ];
    rows.extend(others.map(|(name, rate)| (name.to_string(), rate)));
    if json {
        let fields: Vec<String> = rows
            .iter()
            .map(|(name, rate)| {
                format!(
                    "\"{name}\": {{\"wall_gb_per_s\": {:.3}, \"cpu_gb_per_s\": {:.3}}}",
                    rate.wall_gb_per_s, rate.cpu_gb_per_s
                )
            })
            .collect();
        println!(
            "{{\"unit\": \"GB/s data bytes, 1 thread, median of {RUNS}\", \"kernel\": \"{}\", \"misalign_bytes\": {}, \"pool_bytes\": {}, {}}}",
            ours.name(),
            pool.data.misalign(),
            pool.data.len(),
            fields.join(", ")
        );
        return;
    }
    println!(
        "15+3, {} KiB fragments, pool {:.1} MiB, buffers {} B past a 64-byte boundary, ~1 GiB per \
         run, median of {RUNS} runs, 1 thread, parity by {}",
        DEFAULT_FRAGMENT_BYTES / 1024,
        pool.data.len() as f64 / (1u64 << 20) as f64,
        pool.data.misalign(),
        ours.name()
    );
    println!("{:<56} {:>10} {:>10}", "operation", "GB/s wall", "GB/s CPU");
    for (name, rate) in rows {
        println!(
            "{name:<56} {:>10.2} {:>10.2}",
            rate.wall_gb_per_s, rate.cpu_gb_per_s
        );
    }
}
