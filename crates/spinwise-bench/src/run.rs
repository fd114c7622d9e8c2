//! The timed driver: for each step, write its batch (in file order, `concurrency` requests in
//! flight), migrate where the target has such a step, then make the step's reads; at the end
//! remove what the run wrote unless asked to keep it.
//!
//! Invariants:
//! - Requests are issued in plan order: worker tasks take the next index from one counter, so
//!   with concurrency 1 the batch is strictly sequential and with more it is a sliding window.
//! - A step's throughput is its bytes over the wall time from its first request's issue to its
//!   last request's completion; each request's latency is from its issue to its last byte
//!   checked (a restore's wait included, and also reported on its own).
//! - The first error stops the run: no number is reported for a step that did not finish.

use crate::payload::Payload;
use crate::plan::{BenchPlan, Step};
use crate::results::{BenchReport, OperationStats, RequestRecord, StepRow};
use crate::target::{Placement, Target};
use crate::{BenchError, BenchResult};
use bytes::Bytes;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Where a run is, for a progress bar.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Progress {
    pub step: u32,
    pub steps: u32,
    /// `write`, `migrate`, `wait`, `read` or `clean up`.
    pub phase: &'static str,
    pub done: u64,
    pub total: u64,
}

/// How a run treats its target beyond the plan.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct RunOptions {
    /// Prepended to every file's key (a run's objects share it, and another run's do not).
    pub prefix: String,
    /// Leave the objects in place at the end.
    pub keep: bool,
    /// Migrate after each batch, where the target has such a step (a store directory), and
    /// how (`None`: leave the batch staged).
    pub migrate: Option<Placement>,
    /// Pause between a step's writes (and migration) and its reads, so an archive that moves
    /// objects offline on its own schedule (a lifecycle rule, a migration after N seconds) has
    /// done so before they are read back.
    pub read_after: Duration,
}

type ProgressFn = Arc<dyn Fn(Progress) + Send + Sync>;

/// When the run started: request times in its trace are measured from here.
#[derive(Clone, Copy)]
struct RunClock(Instant);

/// One request of a batch: the file's index, and for a read the bytes expected.
#[derive(Clone)]
struct Job {
    key: String,
    body: Bytes,
}

/// One request done.
#[derive(Clone, Copy)]
struct Done {
    /// Its job's index in the batch.
    index: usize,
    /// When it was issued, from the run's start.
    issued: Duration,
    latency: Duration,
    restore_wait: Option<Duration>,
}

/// What a batch measured.
struct Batch {
    done: Vec<Done>,
    wall: Duration,
    bytes: u64,
}

impl Batch {
    fn stats(&self) -> OperationStats {
        let latencies: Vec<Duration> = self.done.iter().map(|d| d.latency).collect();
        OperationStats::of(&latencies, self.bytes, self.wall)
    }

    fn restore_waits(&self) -> Vec<Duration> {
        self.done.iter().filter_map(|d| d.restore_wait).collect()
    }

    /// Its requests as records of step `step`.
    fn records(&self, step: u32, operation: &'static str, jobs: &[Job]) -> Vec<RequestRecord> {
        self.done
            .iter()
            .map(|done| RequestRecord {
                step,
                time_s: done.issued.as_secs_f64(),
                operation,
                key: jobs[done.index].key.clone(),
                size_bytes: jobs[done.index].body.len() as u64,
                latency_s: done.latency.as_secs_f64(),
                restore_wait_s: done.restore_wait.map(|w| w.as_secs_f64()),
            })
            .collect()
    }
}

/// Runs `plan` against `target`, reporting progress as it goes.
pub async fn run(
    target: Arc<Target>,
    plan: &BenchPlan,
    options: &RunOptions,
    progress: ProgressFn,
) -> BenchResult<BenchReport> {
    plan.validate()?;
    let payload = Payload::new(plan.largest_file_bytes(), plan.seed);
    let steps = plan.steps();
    let mut rows = Vec::with_capacity(steps.len());
    let mut requests = Vec::new();
    let clock = RunClock(Instant::now());
    for step in &steps {
        let (row, done) =
            run_step(&target, plan, options, &payload, step, &progress, clock).await?;
        rows.push(row);
        requests.extend(done);
    }
    if !options.keep {
        clean_up(&target, plan, options, &progress, clock).await?;
    }
    requests.sort_by(|a, b| a.time_s.total_cmp(&b.time_s));
    Ok(BenchReport::new(target.describe(), plan, rows, requests))
}

async fn run_step(
    target: &Arc<Target>,
    plan: &BenchPlan,
    options: &RunOptions,
    payload: &Payload,
    step: &Step,
    progress: &ProgressFn,
    clock: RunClock,
) -> BenchResult<(StepRow, Vec<RequestRecord>)> {
    let job = |index: usize| Job {
        key: format!("{}{}", options.prefix, plan.files[index].key),
        body: payload.file(index, plan.files[index].size_bytes),
    };
    let report = |phase| {
        let progress = progress.clone();
        let (number, steps) = (step.number, plan.steps);
        move |done, total| {
            progress(Progress {
                step: number,
                steps,
                phase,
                done,
                total,
            })
        }
    };
    let writes: Vec<Job> = step.writes.clone().map(job).collect();
    let concurrency = plan.concurrency;
    let written = run_batch(
        target,
        &writes,
        Operation::Write,
        concurrency,
        clock,
        report("write"),
    )
    .await?;
    let migrate = if let Some(placement) = options.migrate {
        report("migrate")(0, 1);
        let started = Instant::now();
        let moved = target.migrate(placement).await?;
        moved.map(|bytes| (bytes, started.elapsed()))
    } else {
        None
    };
    if !options.read_after.is_zero() {
        report("wait")(0, 1);
        tokio::time::sleep(options.read_after).await;
    }
    let reads: Vec<Job> = step.reads.iter().map(|&index| job(index)).collect();
    let read = run_batch(
        target,
        &reads,
        Operation::Read,
        concurrency,
        clock,
        report("read"),
    )
    .await?;
    let mut requests = written.records(step.number, "write", &writes);
    requests.extend(read.records(step.number, "read", &reads));
    let row = StepRow::new(
        step,
        plan,
        written.stats(),
        migrate,
        read.stats(),
        &read.restore_waits(),
    );
    Ok((row, requests))
}

#[derive(Clone, Copy, PartialEq, Eq)]
enum Operation {
    Write,
    Read,
    Delete,
}

/// Runs `jobs` in order with `concurrency` in flight; the first error stops the others.
async fn run_batch(
    target: &Arc<Target>,
    jobs: &[Job],
    operation: Operation,
    concurrency: u32,
    clock: RunClock,
    report: impl Fn(u64, u64) + Send + Sync + 'static,
) -> BenchResult<Batch> {
    let total = jobs.len() as u64;
    let bytes = jobs.iter().map(|j| j.body.len() as u64).sum();
    let jobs: Arc<Vec<Job>> = Arc::new(jobs.to_vec());
    let next = Arc::new(AtomicUsize::new(0));
    let stop = Arc::new(AtomicBool::new(false));
    let report = Arc::new(report);
    report(0, total);
    let started = Instant::now();
    let mut workers = tokio::task::JoinSet::new();
    for _ in 0..concurrency.min(total.max(1) as u32) {
        let (target, jobs, next, stop, report) = (
            target.clone(),
            jobs.clone(),
            next.clone(),
            stop.clone(),
            report.clone(),
        );
        workers.spawn(async move {
            let mut measured = Vec::new();
            while !stop.load(Ordering::Relaxed) {
                let index = next.fetch_add(1, Ordering::Relaxed);
                let Some(job) = jobs.get(index) else { break };
                let issued = Instant::now();
                let done = perform(&target, operation, job).await;
                let restore_wait = done.inspect_err(|_| stop.store(true, Ordering::Relaxed))?;
                measured.push(Done {
                    index,
                    issued: issued - clock.0,
                    latency: issued.elapsed(),
                    restore_wait,
                });
                report(next.load(Ordering::Relaxed).min(jobs.len()) as u64, total);
            }
            Ok::<_, BenchError>(measured)
        });
    }
    let mut batch = Batch {
        done: Vec::with_capacity(total as usize),
        wall: Duration::ZERO,
        bytes,
    };
    let mut first_error = None;
    while let Some(joined) = workers.join_next().await {
        match joined.map_err(|e| BenchError::Target(format!("a benchmark task failed: {e}")))? {
            Ok(done) => batch.done.extend(done),
            Err(error) => {
                first_error.get_or_insert(error);
            }
        }
    }
    batch.wall = started.elapsed();
    first_error.map_or(Ok(batch), Err)
}

/// One request; a read's restore wait if it had one.
async fn perform(
    target: &Target,
    operation: Operation,
    job: &Job,
) -> BenchResult<Option<Duration>> {
    match operation {
        Operation::Write => target.put(&job.key, job.body.clone()).await.map(|()| None),
        Operation::Read => Ok(target.get(&job.key, &job.body).await?.restore_wait),
        Operation::Delete => target.delete(&job.key).await.map(|()| None),
    }
}

/// Deletes every file of the plan.
async fn clean_up(
    target: &Arc<Target>,
    plan: &BenchPlan,
    options: &RunOptions,
    progress: &ProgressFn,
    clock: RunClock,
) -> BenchResult<()> {
    let jobs: Vec<Job> = plan
        .files
        .iter()
        .map(|file| Job {
            key: format!("{}{}", options.prefix, file.key),
            body: Bytes::new(),
        })
        .collect();
    let progress = progress.clone();
    let steps = plan.steps;
    let report = move |done, total| {
        progress(Progress {
            step: steps,
            steps,
            phase: "clean up",
            done,
            total,
        })
    };
    run_batch(
        target,
        &jobs,
        Operation::Delete,
        plan.concurrency,
        clock,
        report,
    )
    .await?;
    Ok(())
}
