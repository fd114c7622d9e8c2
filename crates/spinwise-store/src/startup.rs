//! The start-up check (Pelican §3): once the store controls the disks it mounts and checks
//! every one. Doing that disk by disk keeps the budgets but takes hours on a 1,152-disk rack;
//! Pelican brings whole groups up concurrently instead, as many as the budgets allow. Here every
//! group gets one job at once and the scheduler decides how many groups spin together, so the
//! check is as parallel as the rack allows and never breaks a budget (the driver's audit sees
//! every spin-up).
//!
//! A disk passes when it spins up, mounts, lists its files and reports its space. The check
//! reports failures; a disk that answers `Failed` (unreadable or removed, not merely withheld
//! or in standby) is recorded failed and its stacks queued for rebuild (crate::heal);
//! running the rebuild is the operator's call.

use crate::driver::{Job, Purpose};
use crate::error::{StoreError, StoreResult};
use crate::store::Store;
use serde::Serialize;
use spinwise_catalog::Catalog;
use spinwise_disk::DiskIndex;
use spinwise_model::GroupIndex;
use spinwise_sched::scheduler::Kind;

/// One disk that failed the check, and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct DiskProblem {
    pub disk: DiskIndex,
    pub group: GroupIndex,
    pub reason: String,
}

#[derive(Clone, Debug, Default, PartialEq, Serialize)]
pub struct StartupReport {
    pub groups_checked: u32,
    pub disks_ok: u32,
    pub files: u64,
    pub problems: Vec<DiskProblem>,
    /// Wall time of the whole check, from the driver's clock.
    pub elapsed_s: f64,
    /// Disks this check found failed that the catalog listed healthy: now recorded failed.
    pub disks_marked_failed: Vec<DiskIndex>,
    /// Rebuild tasks queued for them.
    pub rebuild_tasks_queued: u64,
}

/// Checks every disk of the group handed to the job.
fn check_group(disks: &crate::driver::GroupDisks) -> (u32, u64, Vec<DiskProblem>) {
    let mut passed = 0;
    let mut files = 0;
    let mut problems = Vec::new();
    for disk in disks.disks() {
        let problem = |reason: String| DiskProblem {
            disk: disk.index(),
            group: disks.group(),
            reason,
        };
        if disks.missing().contains(&disk.index()) {
            problems.push(problem("did not spin up (failed or withheld)".to_string()));
            continue;
        }
        match disk
            .list_files()
            .and_then(|names| disk.space().map(|_| names))
        {
            Ok(names) => {
                passed += 1;
                files += names.len() as u64;
            }
            Err(error) => problems.push(problem(error.to_string())),
        }
    }
    (passed, files, problems)
}

impl<C: Catalog> Store<C> {
    /// Spins every group up (as many at once as the budgets allow), checks its disks and spins
    /// it down again; `progress(done, groups)` after each group.
    pub async fn check_disks(&self, progress: impl Fn(u32, u32)) -> StoreResult<StartupReport> {
        let driver = &self.rack_io().driver;
        let groups = self.layout().groups.len() as u32;
        let started_us = driver
            .state()
            .await
            .map_err(|_| StoreError::Driver("stopped".into()))?
            .now_us;
        let mut handles = Vec::with_capacity(groups as usize);
        for group in 0..groups {
            let job = Job::new(group, 1, Kind::Client, check_group).for_purpose(Purpose::Check);
            let handle = driver
                .submit(job)
                .await
                .map_err(|refusal| StoreError::Driver(format!("group {group}: {refusal}")))?;
            handles.push(handle);
        }
        let mut report = StartupReport::default();
        let mut finished_us = started_us;
        for handle in handles {
            let done = handle
                .wait()
                .await
                .map_err(|lost| StoreError::Driver(lost.to_string()))?;
            let (passed, files, problems) = done.output;
            report.groups_checked += 1;
            report.disks_ok += passed;
            report.files += files;
            report.problems.extend(problems);
            finished_us = finished_us.max(done.timing.finished_us);
            progress(report.groups_checked, groups);
        }
        report.elapsed_s = (finished_us - started_us) as f64 / 1e6;
        for problem in &report.problems {
            let disk = &self.rack_io().disks[problem.disk as usize];
            if disk.power_state() == spinwise_disk::PowerState::Failed {
                self.heal_state().found_failed(problem.disk);
            }
        }
        for failed in self.record_failed_disks().await? {
            report.disks_marked_failed.push(failed.disk);
            report.rebuild_tasks_queued += failed.tasks_queued;
        }
        Ok(report)
    }
}
