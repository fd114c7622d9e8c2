//! The real-clock driver against in-memory disks and spinwise-disk's emulated directory disks:
//! jobs run only on active groups and are timed, the budget audit never refuses a correct
//! schedule (also on random job streams, a property test) and stops an over-budget one before
//! the disks, queue limits and disk failures are typed and reported, deferred jobs ride spin-ups
//! or start at their start-by on the driver's clock, shutdown spins everything down.
//!
//! [`MemoryDisk`] is an honest test double of the `Disk` contract (IO in standby is `NotReady`,
//! a failed disk answers `Failed`), and every disk reports its *physical* power state to a
//! [`Physics`] meter that recomputes every hard domain of the rack on each change: a third
//! checker, outside both the scheduler and the audit, that sees what the disks actually did.

use crate::support::poll;

use proptest::prelude::*;
use spinwise_disk::{
    Disk, DiskError, DiskIndex, DiskTiming, EmulatedConfig, EmulatedDisk, Overwrite, PowerState,
    Space,
};
use spinwise_engine::audit::{AuditCounters, AuditRefusal, BudgetAudit, DiskPower};
use spinwise_model::{BindError, GroupIndex, Layout, Rack, parse_rack};
use spinwise_sched::scheduler::Kind;
use spinwise_store::clock::{Clock, ManualClock, SystemClock};
use spinwise_store::driver::{
    DiskEvent, Driver, DriverConfig, DriverError, GroupActivity, GroupDisks, GroupPhase, Job,
    PolicyChoice, Purpose, Rejected, SpinDownCause, UnknownDisk,
};
use std::collections::BTreeMap;
use std::io::Read;
use std::sync::atomic::{AtomicBool, AtomicU32, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, OnceLock};
use std::time::Duration;

fn preset(name: &str) -> (Rack, Layout) {
    let path = format!("{}/../../presets/{name}.toml", env!("CARGO_MANIFEST_DIR"));
    let rack = parse_rack(&path, &std::fs::read_to_string(&path).unwrap()).unwrap();
    let layout = spinwise_plan::plan(&rack).unwrap().layout;
    (rack, layout)
}

fn jbod() -> &'static (Rack, Layout) {
    static JBOD: OnceLock<(Rack, Layout)> = OnceLock::new();
    JBOD.get_or_init(|| preset("dense-jbod-60"))
}

fn pelican() -> &'static (Rack, Layout) {
    static PELICAN: OnceLock<(Rack, Layout)> = OnceLock::new();
    PELICAN.get_or_init(|| preset("pelican"))
}

/// The rack's hard domains, recomputed from the disks' physical states on every change.
#[derive(Debug)]
struct Physics {
    rack: Rack,
    spinning_up: usize,
    state_of: Mutex<Vec<usize>>,
    violations: AtomicU64,
    max_spinning_up: AtomicU32,
    max_active: AtomicU32,
}

impl Physics {
    fn new(rack: &Rack) -> Arc<Physics> {
        let path = rack.spin_up_path();
        Arc::new(Physics {
            rack: rack.clone(),
            spinning_up: path[path.len() - 2],
            state_of: Mutex::new(vec![rack.resting_state(); rack.disk_count()]),
            violations: AtomicU64::new(0),
            max_spinning_up: AtomicU32::new(0),
            max_active: AtomicU32::new(0),
        })
    }

    fn set(&self, disk: DiskIndex, state: usize) {
        let mut state_of = self.state_of.lock().unwrap();
        state_of[disk as usize] = state;
        for (_, resource) in self.rack.hard_resources() {
            let domain = &resource.domains[resource.domain_of[disk as usize] as usize];
            let load: i64 = domain
                .iter()
                .map(|d| resource.cost[state_of[*d as usize]].micros())
                .sum();
            if load > resource.budget.micros() {
                self.violations.fetch_add(1, Ordering::SeqCst);
            }
        }
        let count = |s: usize| state_of.iter().filter(|x| **x == s).count() as u32;
        self.max_spinning_up
            .fetch_max(count(self.spinning_up), Ordering::SeqCst);
        self.max_active
            .fetch_max(count(self.rack.active_state()), Ordering::SeqCst);
    }
}

/// An in-memory disk keeping the `Disk` contract's power rules.
#[derive(Debug)]
struct MemoryDisk {
    index: DiskIndex,
    state: Mutex<PowerState>,
    files: Mutex<BTreeMap<String, Vec<u8>>>,
    physics: Arc<Physics>,
    /// Real time a spin-up takes (a spin-down half of it).
    spin_up_delay: Duration,
    /// Moved forward by this much by each spin-up (exact timings with a ManualClock).
    manual: Option<(Arc<ManualClock>, u64)>,
    fail_spin_up: AtomicBool,
    /// While set, spin-ups block until it is cleared.
    hold_spin_up: Arc<AtomicBool>,
    spin_ups: AtomicU32,
    /// The driver, once started: each power command records the audit's counters at its start.
    probe: Arc<OnceLock<Driver>>,
    probes: Mutex<Vec<(DiskPower, AuditCounters)>>,
}

impl MemoryDisk {
    fn record(&self, command: DiskPower) {
        if let Some(driver) = self.probe.get() {
            let counters = driver.audit_counters();
            self.probes.lock().unwrap().push((command, counters));
        }
    }

    fn ready(&self) -> Result<(), DiskError> {
        match *self.state.lock().unwrap() {
            PowerState::Active => Ok(()),
            PowerState::Failed => Err(DiskError::Failed { disk: self.index }),
            state => Err(DiskError::NotReady {
                disk: self.index,
                state,
            }),
        }
    }
}

impl Disk for MemoryDisk {
    fn index(&self) -> DiskIndex {
        self.index
    }
    fn power_state(&self) -> PowerState {
        *self.state.lock().unwrap()
    }
    fn spin_up(&self) -> Result<(), DiskError> {
        if self.power_state() == PowerState::Failed {
            return Err(DiskError::Failed { disk: self.index });
        }
        self.spin_ups.fetch_add(1, Ordering::SeqCst);
        self.record(DiskPower::SpinningUp);
        self.physics.set(self.index, self.physics.spinning_up);
        while self.hold_spin_up.load(Ordering::SeqCst) {
            // wall-clock: a fixture: the disk's spin-up is held until the test lets it go.
            std::thread::sleep(Duration::from_millis(1));
        }
        // wall-clock: a fixture: the disk takes this long to spin up.
        std::thread::sleep(self.spin_up_delay);
        if let Some((clock, latency_us)) = &self.manual {
            clock.advance_us(*latency_us);
        }
        if self.fail_spin_up.load(Ordering::SeqCst) {
            // It drew spin-up current, then died: count it resting again.
            self.physics
                .set(self.index, self.physics.rack.resting_state());
            return Err(DiskError::Io {
                disk: self.index,
                context: "spin-up".into(),
                source: std::io::Error::other("motor stalled"),
            });
        }
        self.physics
            .set(self.index, self.physics.rack.active_state());
        *self.state.lock().unwrap() = PowerState::Active;
        Ok(())
    }
    fn spin_down(&self) -> Result<(), DiskError> {
        if self.power_state() == PowerState::Failed {
            return Err(DiskError::Failed { disk: self.index });
        }
        self.record(DiskPower::Resting);
        // wall-clock: a fixture: unmounting and stopping take time too; the disk draws meanwhile.
        std::thread::sleep(self.spin_up_delay / 2);
        *self.state.lock().unwrap() = PowerState::Standby;
        self.physics
            .set(self.index, self.physics.rack.resting_state());
        Ok(())
    }
    fn mark_failed(&self) {
        *self.state.lock().unwrap() = PowerState::Failed;
    }
    fn write_file(
        &self,
        name: &str,
        len_bytes: u64,
        data: &mut dyn Read,
        overwrite: Overwrite,
    ) -> Result<(), DiskError> {
        self.ready()?;
        spinwise_disk::check_name(name)?;
        let mut bytes = Vec::new();
        data.take(len_bytes)
            .read_to_end(&mut bytes)
            .map_err(|source| DiskError::Io {
                disk: self.index,
                context: "write".into(),
                source,
            })?;
        let mut files = self.files.lock().unwrap();
        if overwrite == Overwrite::Refuse && files.contains_key(name) {
            return Err(DiskError::AlreadyExists {
                disk: self.index,
                name: name.into(),
            });
        }
        files.insert(name.into(), bytes);
        Ok(())
    }
    fn read_at(&self, name: &str, offset: u64, buffer: &mut [u8]) -> Result<usize, DiskError> {
        self.ready()?;
        let files = self.files.lock().unwrap();
        let file = files.get(name).ok_or_else(|| DiskError::NotFound {
            disk: self.index,
            name: name.into(),
        })?;
        let start = (offset as usize).min(file.len());
        let count = buffer.len().min(file.len() - start);
        buffer[..count].copy_from_slice(&file[start..start + count]);
        Ok(count)
    }
    fn file_len(&self, name: &str) -> Result<u64, DiskError> {
        self.ready()?;
        let files = self.files.lock().unwrap();
        files
            .get(name)
            .map(|f| f.len() as u64)
            .ok_or_else(|| DiskError::NotFound {
                disk: self.index,
                name: name.into(),
            })
    }
    fn remove_file(&self, name: &str) -> Result<(), DiskError> {
        self.ready()?;
        let mut files = self.files.lock().unwrap();
        files
            .remove(name)
            .map(|_| ())
            .ok_or_else(|| DiskError::NotFound {
                disk: self.index,
                name: name.into(),
            })
    }
    fn list_files(&self) -> Result<Vec<String>, DiskError> {
        self.ready()?;
        Ok(self.files.lock().unwrap().keys().cloned().collect())
    }
    fn space(&self) -> Result<Space, DiskError> {
        self.ready()?;
        Ok(Space {
            capacity_bytes: 1 << 30,
            free_bytes: 1 << 30,
        })
    }
}

impl MemoryDisk {
    fn new(index: DiskIndex, physics: &Arc<Physics>, hold_spin_up: &Arc<AtomicBool>) -> MemoryDisk {
        MemoryDisk {
            index,
            state: Mutex::new(PowerState::Standby),
            files: Mutex::new(BTreeMap::new()),
            physics: physics.clone(),
            spin_up_delay: Duration::ZERO,
            manual: None,
            fail_spin_up: AtomicBool::new(false),
            hold_spin_up: hold_spin_up.clone(),
            spin_ups: AtomicU32::new(0),
            probe: Arc::new(OnceLock::new()),
            probes: Mutex::new(Vec::new()),
        }
    }
}

/// A rack of memory disks with their physics, and the driver over them.
struct Bench {
    disks: Vec<Arc<MemoryDisk>>,
    physics: Arc<Physics>,
    hold_spin_up: Arc<AtomicBool>,
    driver: Driver,
}

struct BenchOptions {
    spin_up_delay: Duration,
    /// The driver's clock, and a disk whose spin-up advances it by so many µs.
    manual: Option<(Arc<ManualClock>, DiskIndex, u64)>,
    config: DriverConfig,
}

impl Default for BenchOptions {
    fn default() -> BenchOptions {
        BenchOptions {
            spin_up_delay: Duration::ZERO,
            manual: None,
            config: DriverConfig::default(),
        }
    }
}

fn bench(rack: &Rack, layout: &Layout, options: BenchOptions) -> Bench {
    let physics = Physics::new(rack);
    let hold_spin_up = Arc::new(AtomicBool::new(false));
    let probe = Arc::new(OnceLock::new());
    let disks: Vec<Arc<MemoryDisk>> = (0..rack.disk_count() as DiskIndex)
        .map(|index| {
            let mut disk = MemoryDisk::new(index, &physics, &hold_spin_up);
            disk.spin_up_delay = options.spin_up_delay;
            disk.probe = probe.clone();
            if let Some((clock, slow, latency_us)) = &options.manual {
                disk.manual = (index == *slow).then(|| (clock.clone(), *latency_us));
            }
            Arc::new(disk)
        })
        .collect();
    let clock: Arc<dyn Clock> = match &options.manual {
        Some((clock, _, _)) => clock.clone(),
        None => Arc::new(SystemClock::new()),
    };
    let handles: Vec<Arc<dyn Disk>> = disks.iter().map(|d| d.clone() as Arc<dyn Disk>).collect();
    let driver = Driver::start(rack, layout, handles, clock, options.config).unwrap();
    probe.set(driver.clone()).unwrap();
    Bench {
        disks,
        physics,
        hold_spin_up,
        driver,
    }
}

/// Holds every spin-up until dropped, so a failing assertion cannot leave blocking threads
/// spinning (the runtime waits for them).
struct HeldSpinUps(Arc<AtomicBool>);

impl HeldSpinUps {
    fn new(hold: &Arc<AtomicBool>) -> HeldSpinUps {
        hold.store(true, Ordering::SeqCst);
        HeldSpinUps(hold.clone())
    }
}

impl Drop for HeldSpinUps {
    fn drop(&mut self) {
        self.0.store(false, Ordering::SeqCst);
    }
}

/// The work every test job does: checks that every usable disk of its group is active, then
/// writes and reads back one file on each. Returns the usable disks' indices.
fn touch_every_disk(disks: &GroupDisks, name: &str) -> Result<Vec<DiskIndex>, String> {
    let mut touched = Vec::new();
    for disk in disks.usable() {
        if disk.power_state() != PowerState::Active {
            return Err(format!("disk {} is {:?}", disk.index(), disk.power_state()));
        }
        let payload = name.as_bytes();
        disk.write_file(
            name,
            payload.len() as u64,
            &mut &payload[..],
            Overwrite::Replace,
        )
        .map_err(|e| e.to_string())?;
        let mut back = vec![0; payload.len()];
        disk.read_at(name, 0, &mut back)
            .map_err(|e| e.to_string())?;
        if back != payload {
            return Err(format!("disk {} read back other bytes", disk.index()));
        }
        touched.push(disk.index());
    }
    Ok(touched)
}

/// Disks of `rack` that may be spinning up at once, and active at once, by its hard budgets
/// alone (Flamingo eq. 1 per domain, summed over domains; the tightest resource wins).
fn budget_limits(rack: &Rack) -> (u32, u32) {
    let spinning_up = {
        let path = rack.spin_up_path();
        path[path.len() - 2]
    };
    let limit = |state: usize| {
        rack.hard_resources()
            .filter_map(|(_, resource)| {
                let step = resource.cost[state].micros() - resource.cost_lowest().micros();
                (step > 0).then(|| {
                    let per_domain = (resource.headroom().micros() / step)
                        .clamp(0, resource.domain_size() as i64);
                    per_domain as u32 * resource.domains.len() as u32
                })
            })
            .min()
            .unwrap_or(rack.disk_count() as u32)
    };
    (limit(spinning_up), limit(rack.active_state()))
}

fn group_of_class(layout: &Layout) -> BTreeMap<u32, Vec<GroupIndex>> {
    let mut classes: BTreeMap<u32, Vec<GroupIndex>> = BTreeMap::new();
    for group in 0..layout.groups.len() as GroupIndex {
        let class = layout.classes.as_ref().map_or(group, |c| c[group as usize]);
        classes.entry(class).or_default().push(group);
    }
    classes
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_runs_after_its_group_spun_up_with_every_disk_active_and_its_wait_is_timed() {
    let (rack, layout) = jbod();
    let clock = Arc::new(ManualClock::new());
    // Only the group's second disk "takes" 20 s: the group is up when its slowest disk is.
    let slow = rack
        .disks
        .iter()
        .position(|d| d.id == layout.groups[3][1])
        .unwrap() as DiskIndex;
    let bench = bench(
        rack,
        layout,
        BenchOptions {
            manual: Some((clock.clone(), slow, 20_000_000)),
            ..BenchOptions::default()
        },
    );
    assert!(
        bench
            .disks
            .iter()
            .all(|d| d.power_state() == PowerState::Standby)
    );
    let driver = bench.driver.clone();
    let work_clock = clock.clone();
    let handle = driver
        .submit(Job::new(3, 1 << 20, Kind::Client, move |disks| {
            let touched = touch_every_disk(disks, "blob-3");
            work_clock.advance_us(5_000);
            touched
        }))
        .await
        .unwrap();
    let done = handle.wait().await.unwrap();
    let touched = done.output.unwrap();
    assert_eq!(touched.len(), layout.group_size as usize);
    assert_eq!(done.timing.submitted_us, 0);
    assert_eq!(done.timing.spin_up_wait_us, 20_000_000);
    assert_eq!(done.timing.queued_us, 20_000_000);
    assert_eq!(done.timing.service_us, 5_000);
    let state = driver.state().await.unwrap();
    assert_eq!(state.groups[3].phase, GroupPhase::Active);
    assert_eq!(state.groups[3].active_disks, layout.group_size as usize);
    // The caller hears first; the loop counts the job served when its thread reports back.
    assert_eq!(state.jobs_served + state.serving_jobs as u64, 1);
    assert_eq!(driver.shutdown().await.unwrap().jobs_served, 1);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_job_queued_while_its_group_is_down_waits_for_the_spin_up_then_runs() {
    let (rack, layout) = jbod();
    let clock = Arc::new(ManualClock::new());
    let options = BenchOptions {
        manual: Some((clock.clone(), 0, 0)),
        ..BenchOptions::default()
    };
    let bench = bench(rack, layout, options);
    let held = HeldSpinUps::new(&bench.hold_spin_up);
    let handle = bench
        .driver
        .submit(Job::new(5, 1000, Kind::Client, |disks| {
            touch_every_disk(disks, "waited")
        }))
        .await
        .unwrap();
    // The driver takes commands in order: this snapshot comes after the submit.
    let state = bench.driver.state().await.unwrap();
    assert_eq!(state.groups[5].phase, GroupPhase::SpinningUp);
    assert_eq!(state.groups[5].queued_jobs, 1);
    assert_eq!(state.groups[5].active_disks, 0);
    assert_eq!(state.audit.spinning_up_now, layout.group_size);
    // The spin-up is held for 50 ms of the driver's clock.
    clock.advance(Duration::from_millis(50));
    drop(held);
    let done = handle.wait().await.unwrap();
    assert_eq!(done.output.unwrap().len(), layout.group_size as usize);
    assert!(done.timing.spin_up_wait_us >= 50_000, "{:?}", done.timing);
    assert!(done.timing.queued_us >= done.timing.spin_up_wait_us);
    bench.driver.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_spin_up_is_announced_when_it_starts_and_ends_with_the_work_waiting_for_it() {
    let (rack, layout) = jbod();
    let clock = Arc::new(ManualClock::new());
    let options = BenchOptions {
        manual: Some((clock.clone(), 0, 0)),
        ..BenchOptions::default()
    };
    let bench = bench(rack, layout, options);
    let mut activity = bench.driver.subscribe_activity();
    let held = HeldSpinUps::new(&bench.hold_spin_up);
    let first = bench
        .driver
        .submit(Job::new(5, 1000, Kind::Client, |_: &GroupDisks| ()))
        .await
        .unwrap();
    let started = within("the spin-up's start", activity.recv())
        .await
        .unwrap();
    let GroupActivity::SpinningUp { group, work, .. } = started else {
        panic!("the first announcement is the spin-up's start: {started:?}");
    };
    assert_eq!(group, 5);
    assert_eq!(work.jobs(Purpose::Read), 1);
    assert_eq!(work.total_jobs(), 1);
    assert_eq!(work.to_string().split(", ").next(), Some("1 read"));
    let mut later = Vec::new();
    for purpose in [Purpose::Read, Purpose::Read, Purpose::Migration] {
        let job = Job::new(5, 1000, Kind::Client, |_: &GroupDisks| ()).for_purpose(purpose);
        later.push(bench.driver.submit(job).await.unwrap());
    }
    // Each submit was answered, so the jobs are queued before the spin-up ends, which is held
    // for 50 ms of the driver's clock.
    clock.advance(Duration::from_millis(50));
    drop(held);
    let up = within("the spin-up's end", activity.recv()).await.unwrap();
    let GroupActivity::Up {
        group,
        took_us,
        work,
        ..
    } = up
    else {
        panic!("the spin-up's end follows its start: {up:?}");
    };
    assert_eq!(group, 5);
    assert!(
        took_us >= 50_000,
        "the spin-up was held 50 ms: {took_us} µs"
    );
    assert_eq!(work.jobs(Purpose::Read), 3, "{work}");
    assert_eq!(work.jobs(Purpose::Migration), 1, "{work}");
    assert!(work.oldest_wait_us(Purpose::Read) >= took_us, "{work}");
    assert!(
        work.to_string().starts_with("3 reads, oldest waited ")
            && work.to_string().contains("; 1 migration, waited "),
        "{work}"
    );
    first.wait().await.unwrap();
    for handle in later {
        handle.wait().await.unwrap();
    }
    bench.driver.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_queue_limit_rejects_with_a_typed_error() {
    let (rack, layout) = jbod();
    let mut layout = layout.clone();
    layout.scheduler.max_queue_depth = 2;
    let bench = bench(rack, &layout, BenchOptions::default());
    let held = HeldSpinUps::new(&bench.hold_spin_up);
    let classes = group_of_class(&layout);
    let (class, groups) = classes.iter().next().unwrap();
    let group = groups[0];
    let mut handles = Vec::new();
    for _ in 0..2 {
        let job = Job::new(group, 10, Kind::Client, |_: &GroupDisks| ());
        handles.push(bench.driver.submit(job).await.unwrap());
    }
    let refused = bench
        .driver
        .submit(Job::new(group, 10, Kind::Rebuild, |_: &GroupDisks| ()))
        .await
        .unwrap_err();
    assert_eq!(
        refused,
        Rejected::QueueFull {
            class: *class,
            depth: 2
        }
    );
    let unknown = bench
        .driver
        .submit(Job::new(99, 10, Kind::Client, |_: &GroupDisks| ()))
        .await
        .unwrap_err();
    assert_eq!(
        unknown,
        Rejected::UnknownGroup {
            group: 99,
            groups: layout.groups.len() as u32
        }
    );
    drop(held);
    for handle in handles {
        handle.wait().await.unwrap();
    }
    bench.driver.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_failing_its_spin_up_leaves_the_group_usable_and_is_reported_and_not_retried() {
    // Pelican's classes hold 12 groups each: a class switching groups spins the old one down.
    let (rack, layout) = pelican();
    let bench = bench(rack, layout, BenchOptions::default());
    let mut events = bench.driver.subscribe_disk_events();
    let classes = group_of_class(layout);
    let (_, groups) = classes.iter().find(|(_, g)| g.len() >= 2).unwrap();
    let (group, other) = (groups[0], groups[1]);
    let broken = rack
        .disks
        .iter()
        .position(|d| d.id == layout.groups[group as usize][1])
        .unwrap() as DiskIndex;
    bench.disks[broken as usize]
        .fail_spin_up
        .store(true, Ordering::SeqCst);
    let job = |name: &'static str| {
        move |disks: &GroupDisks| (disks.missing().clone(), touch_every_disk(disks, name))
    };
    let done = bench
        .driver
        .submit(Job::new(group, 100, Kind::Client, job("first")))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    let (missing, touched) = done.output;
    assert_eq!(missing.into_iter().collect::<Vec<_>>(), vec![broken]);
    assert_eq!(touched.unwrap().len(), layout.group_size as usize - 1);
    match events.recv().await.unwrap() {
        DiskEvent::SpinUpFailed { disk, group: g, .. } => assert_eq!((disk, g), (broken, group)),
        other => panic!("expected a spin-up failure, got {other:?}"),
    }
    assert_eq!(
        bench.disks[broken as usize].power_state(),
        PowerState::Failed
    );
    // Switch the class away and back: the failed disk is not commanded again.
    for target in [other, group] {
        bench
            .driver
            .submit(Job::new(target, 100, Kind::Client, job("again")))
            .await
            .unwrap()
            .wait()
            .await
            .unwrap()
            .output
            .1
            .unwrap();
    }
    assert_eq!(
        bench.disks[broken as usize].spin_ups.load(Ordering::SeqCst),
        1
    );
    let state = bench.driver.state().await.unwrap();
    assert_eq!(state.failed_disks, vec![broken]);
    assert_eq!(state.groups[group as usize].missing_disks, vec![broken]);
    let report = bench.driver.shutdown().await.unwrap();
    assert_eq!(report.audit.refusals, 0);
    assert_eq!(report.audit.active_now + report.audit.spinning_up_now, 0);
}

#[test]
fn the_audit_refuses_an_over_budget_sequence_and_counts_it() {
    let (rack, _) = jbod();
    let mut audit = BudgetAudit::new(rack).unwrap();
    // Row 0 holds disks 0..12; vibration allows 3 spin-ups per row.
    for disk in 0..3 {
        audit.change(disk, DiskPower::SpinningUp).unwrap();
    }
    let refusal = audit.change(3, DiskPower::SpinningUp).unwrap_err();
    match &refusal {
        AuditRefusal::OverBudget {
            disk,
            resource,
            budget_micros,
            ..
        } => {
            assert_eq!(*disk, 3);
            assert_eq!(resource, "vibration");
            assert_eq!(*budget_micros, 3_000_000);
        }
        other => panic!("expected an over-budget refusal, got {other:?}"),
    }
    assert_eq!(audit.power(3), Some(DiskPower::Resting));
    // Cooling: two disks of column 0 (disks 0 and 12) may spin, not a third (disk 24).
    audit.change(0, DiskPower::Active).unwrap();
    audit.change(12, DiskPower::SpinningUp).unwrap();
    assert!(matches!(
        audit.change(24, DiskPower::SpinningUp),
        Err(AuditRefusal::OverBudget { ref resource, .. }) if resource == "cooling"
    ));
    // Skipping the spin-up draw is not a step of the cycle.
    assert_eq!(
        audit.change(30, DiskPower::Active),
        Err(AuditRefusal::Transition {
            disk: 30,
            from: DiskPower::Resting,
            to: DiskPower::Active
        })
    );
    assert!(matches!(
        audit.change(60, DiskPower::SpinningUp),
        Err(AuditRefusal::UnknownDisk { disk: 60, .. })
    ));
    // Once row 0 has a spin-up slot free again, disk 3 may go.
    audit.change(1, DiskPower::Active).unwrap();
    audit.change(3, DiskPower::SpinningUp).unwrap();
    let counters = audit.counters();
    assert_eq!(counters.refusals, 4);
    assert_eq!(counters.changes, 7);
    assert_eq!(counters.max_spinning_up, 3);
    assert_eq!(counters.spinning_up_now, 3);
    assert_eq!(counters.active_now, 2);
    let vibration = counters
        .peaks
        .iter()
        .find(|p| p.resource == "vibration")
        .unwrap();
    assert_eq!(vibration.peak_micros, vibration.budget_micros);
}

#[test]
fn the_audit_grants_the_whole_spin_up_cycle_and_returns_to_resting_books() {
    let (rack, _) = pelican();
    let mut audit = BudgetAudit::new(rack).unwrap();
    let resting_peaks = audit.counters().peaks.clone();
    for disk in [0, 500, 1151] {
        audit.change(disk, DiskPower::SpinningUp).unwrap();
        audit.change(disk, DiskPower::Active).unwrap();
    }
    audit.change(500, DiskPower::Resting).unwrap();
    audit.change(0, DiskPower::Resting).unwrap();
    audit.change(1151, DiskPower::Resting).unwrap();
    let counters = audit.counters();
    assert_eq!((counters.changes, counters.refusals), (9, 0));
    assert_eq!((counters.active_now, counters.spinning_up_now), (0, 0));
    assert_eq!(counters.max_active, 3);
    for (peak, resting) in counters.peaks.iter().zip(&resting_peaks) {
        assert!(peak.peak_micros >= resting.peak_micros);
        assert!(peak.peak_micros <= peak.budget_micros);
    }
}

/// Hundreds of jobs for every group from concurrent callers, on `rack`: all served on active
/// disks, the audit never refuses, the disks' physics never exceeds a hard budget.
async fn many_concurrent_jobs(rack: &Rack, layout: &Layout, jobs: u32, callers: u32) {
    let bench = bench(
        rack,
        layout,
        BenchOptions {
            spin_up_delay: Duration::from_millis(2),
            ..BenchOptions::default()
        },
    );
    let groups = layout.groups.len() as u32;
    let mut tasks = Vec::new();
    for caller in 0..callers {
        let driver = bench.driver.clone();
        tasks.push(tokio::spawn(async move {
            let mut handles = Vec::new();
            for n in (caller..jobs).step_by(callers as usize) {
                // A scattered but fixed group sequence.
                let group = (n * 7 + n / groups) % groups;
                let kind = if n % 5 == 0 {
                    Kind::Rebuild
                } else {
                    Kind::Client
                };
                let job = Job::new(group, 1 << 20, kind, move |disks: &GroupDisks| {
                    // wall-clock: a fixture: the job's disk work takes 300 µs.
                    std::thread::sleep(Duration::from_micros(300));
                    (disks.group(), touch_every_disk(disks, &format!("job-{n}")))
                });
                handles.push((group, driver.submit(job).await.unwrap()));
            }
            for (group, handle) in handles {
                let done = handle.wait().await.unwrap();
                assert_eq!(done.output.0, group);
                done.output.1.unwrap();
                assert!(done.timing.queued_us >= done.timing.spin_up_wait_us);
            }
        }));
    }
    for task in tasks {
        task.await.unwrap();
    }
    let report = bench.driver.shutdown().await.unwrap();
    assert_eq!(report.jobs_served, u64::from(jobs));
    let audit = &report.audit;
    assert_eq!(audit.refusals, 0);
    let (spinning_up_limit, active_limit) = budget_limits(rack);
    assert!(audit.max_spinning_up >= layout.group_size);
    // Several groups were up at once: the callers kept more than one class busy.
    assert!(audit.max_not_resting > layout.group_size, "{audit:?}");
    assert!(audit.max_spinning_up <= spinning_up_limit, "{audit:?}");
    assert!(audit.max_active <= active_limit, "{audit:?}");
    for peak in &audit.peaks {
        assert!(peak.peak_micros <= peak.budget_micros, "{peak:?}");
    }
    assert_eq!(audit.active_now + audit.spinning_up_now, 0);
    let physics = &bench.physics;
    assert_eq!(physics.violations.load(Ordering::SeqCst), 0);
    assert!(physics.max_spinning_up.load(Ordering::SeqCst) <= spinning_up_limit);
    assert!(physics.max_active.load(Ordering::SeqCst) <= active_limit);
    assert!(
        bench
            .disks
            .iter()
            .all(|d| d.power_state() == PowerState::Standby)
    );
    // Every disk of every group was spun up (none failed here).
    assert!(
        bench
            .disks
            .iter()
            .all(|d| d.spin_ups.load(Ordering::SeqCst) >= 1)
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundreds_of_concurrent_jobs_on_every_group_of_the_jbod_never_exceed_a_hard_budget() {
    let (rack, layout) = jbod();
    many_concurrent_jobs(rack, layout, 600, 12).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hundreds_of_concurrent_jobs_on_every_group_of_pelican_never_exceed_a_hard_budget() {
    let (rack, layout) = pelican();
    many_concurrent_jobs(rack, layout, 400, 16).await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_policy_that_would_break_the_budgets_is_stopped_by_the_audit_before_the_disks() {
    // The fully provisioned policy spins every group up at once: on the right-provisioned JBOD
    // that is 60 spin-ups against power for 12. The audit must withhold the excess disks.
    let (rack, layout) = jbod();
    let bench = bench(
        rack,
        layout,
        BenchOptions {
            config: DriverConfig {
                policy: PolicyChoice::FullyProvisioned,
                ..DriverConfig::default()
            },
            ..BenchOptions::default()
        },
    );
    let mut events = bench.driver.subscribe_disk_events();
    let done = bench
        .driver
        .submit(Job::new(0, 1, Kind::Client, |disks: &GroupDisks| {
            touch_every_disk(disks, "fp")
        }))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    done.output.unwrap();
    let report = bench.driver.shutdown().await.unwrap();
    assert!(report.audit.refusals > 0);
    assert!(report.audit.max_spinning_up <= budget_limits(rack).0);
    assert_eq!(bench.physics.violations.load(Ordering::SeqCst), 0);
    let withheld = std::iter::from_fn(|| events.try_recv().ok())
        .filter(|e| matches!(e, DiskEvent::Withheld { .. }))
        .count() as u64;
    assert_eq!(withheld, report.audit.refusals);
    let spun: u32 = bench
        .disks
        .iter()
        .map(|d| d.spin_ups.load(Ordering::SeqCst))
        .sum();
    assert_eq!(u64::from(spun) + withheld, rack.disk_count() as u64);
}

/// `future`'s output, or a panic naming `stage` after 60 s: this test hung once (2026-11-23,
/// under load, cause not found); a hang must fail with where it stuck, not stall the suite.
async fn within<T>(stage: &str, future: impl std::future::Future<Output = T>) -> T {
    tokio::time::timeout(std::time::Duration::from_secs(60), future)
        .await
        .unwrap_or_else(|_| panic!("stuck for 60 s at {stage}"))
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn shutdown_serves_what_was_accepted_then_spins_every_group_down() {
    let (rack, layout) = jbod();
    let bench = bench(rack, layout, BenchOptions::default());
    let mut activity = bench.driver.subscribe_activity();
    let mut handles = Vec::new();
    for group in 0..layout.groups.len() as GroupIndex {
        let job = Job::new(group, 1, Kind::Client, |disks: &GroupDisks| {
            touch_every_disk(disks, "last")
        });
        handles.push(bench.driver.submit(job).await.unwrap());
    }
    let report = within("shutdown", bench.driver.shutdown()).await.unwrap();
    assert_eq!(report.jobs_served, layout.groups.len() as u64);
    for handle in handles {
        within("a job's result", handle.wait())
            .await
            .unwrap()
            .output
            .unwrap();
    }
    assert!(
        bench
            .disks
            .iter()
            .all(|d| d.power_state() == PowerState::Standby)
    );
    assert_eq!(report.audit.active_now + report.audit.spinning_up_now, 0);
    assert_eq!(report.audit.refusals, 0);
    let events: Vec<GroupActivity> = std::iter::from_fn(|| activity.try_recv().ok()).collect();
    for group in 0..layout.groups.len() as GroupIndex {
        let up = events
            .iter()
            .position(|e| matches!(e, GroupActivity::Up { group: g, .. } if *g == group));
        let down = events
            .iter()
            .rposition(|e| matches!(e, GroupActivity::Down { group: g, .. } if *g == group));
        assert!(up < down, "group {group}: {events:?}");
    }
    assert_eq!(
        within(
            "a submit after shutdown",
            bench
                .driver
                .submit(Job::new(0, 1, Kind::Client, |_: &GroupDisks| ()))
        )
        .await
        .unwrap_err(),
        Rejected::Stopped
    );
    assert!(
        within("state after shutdown", bench.driver.state())
            .await
            .is_err()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_deferred_job_rides_a_spin_up_for_other_work_or_starts_at_its_start_by_on_the_drivers_clock()
 {
    let (rack, layout) = jbod();
    let clock = Arc::new(ManualClock::new());
    let options = BenchOptions {
        manual: Some((clock.clone(), 0, 0)),
        ..BenchOptions::default()
    };
    let bench = bench(rack, layout, options);
    let driver = &bench.driver;
    let start_us = clock.now_us();
    let hour_us = 3_600_000_000;
    let deferred = |group: GroupIndex| Job::new(group, 1, Kind::Client, |_: &GroupDisks| ());

    // Deferred for an hour: nothing spins up for it.
    let rider = driver
        .submit_deferred(deferred(5), start_us + hour_us)
        .await
        .unwrap();
    let state = driver.state().await.unwrap();
    assert_eq!(state.deferred_jobs, 1);
    assert_eq!(state.groups[5].phase, GroupPhase::Resting);
    // Another job spins group 5 up: the deferred one rides it, long before its start-by.
    let other = driver.submit(deferred(5)).await.unwrap();
    within("the job that spun the group up", other.wait())
        .await
        .unwrap();
    let rode = within("the rider", rider.wait()).await.unwrap();
    assert!(rode.timing.started_us < start_us + hour_us);
    assert_eq!(rode.timing.submitted_us, start_us);

    // No other work for group 7: it starts when the driver's clock reaches its start-by.
    let late = driver
        .submit_deferred(deferred(7), start_us + 20_000_000)
        .await
        .unwrap();
    clock.advance(Duration::from_secs(19));
    let state = driver.state().await.unwrap();
    assert_eq!(
        (state.deferred_jobs, state.groups[7].phase),
        (1, GroupPhase::Resting)
    );
    clock.advance(Duration::from_secs(1));
    let done = within("the job at its start-by", late.wait())
        .await
        .unwrap();
    assert!(done.timing.started_us >= start_us + 20_000_000);

    // A shutdown withdraws a job still deferred: its caller hears it was lost.
    let withdrawn = driver
        .submit_deferred(deferred(9), clock.now_us() + hour_us)
        .await
        .unwrap();
    let report = within("shutdown", driver.shutdown()).await.unwrap();
    assert_eq!(report.jobs_served, 3);
    assert!(within("the withdrawn job", withdrawn.wait()).await.is_err());
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_panicking_job_is_lost_to_its_caller_and_the_group_keeps_serving() {
    let (rack, layout) = jbod();
    let bench = bench(rack, layout, BenchOptions::default());
    let lost = bench
        .driver
        .submit(Job::new(2, 1, Kind::Client, |_: &GroupDisks| -> u32 {
            panic!("work failed on purpose")
        }))
        .await
        .unwrap();
    let id = lost.id();
    assert_eq!(lost.wait().await.unwrap_err().id, id);
    let after = bench
        .driver
        .submit(Job::new(2, 1, Kind::Client, |disks: &GroupDisks| {
            touch_every_disk(disks, "after")
        }))
        .await
        .unwrap();
    after.wait().await.unwrap().output.unwrap();
    bench.driver.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_driver_refuses_disks_or_a_layout_that_do_not_match_the_rack() {
    let (rack, layout) = jbod();
    let physics = Physics::new(rack);
    let hold = Arc::new(AtomicBool::new(false));
    let disk =
        |index: DiskIndex| -> Arc<dyn Disk> { Arc::new(MemoryDisk::new(index, &physics, &hold)) };
    let clock: Arc<dyn Clock> = Arc::new(SystemClock::new());
    let few: Vec<Arc<dyn Disk>> = (0..10).map(disk).collect();
    assert!(matches!(
        Driver::start(rack, layout, few, clock.clone(), DriverConfig::default()),
        Err(DriverError::DiskCount {
            expected: 60,
            found: 10
        })
    ));
    let reversed: Vec<Arc<dyn Disk>> = (0..60).rev().map(disk).collect();
    assert!(matches!(
        Driver::start(
            rack,
            layout,
            reversed,
            clock.clone(),
            DriverConfig::default()
        ),
        Err(DriverError::DiskOrder {
            position: 0,
            index: 59
        })
    ));
    let (pelican_rack, _) = pelican();
    let all: Vec<Arc<dyn Disk>> = (0..60).map(disk).collect();
    assert!(matches!(
        Driver::start(pelican_rack, layout, all, clock, DriverConfig::default()),
        Err(DriverError::Layout(BindError::RackMismatch { .. }))
    ));
}

#[test]
fn the_driver_needs_a_tokio_runtime() {
    let (rack, layout) = jbod();
    let physics = Physics::new(rack);
    let disks: Vec<Arc<dyn Disk>> = (0..60)
        .map(|index| -> Arc<dyn Disk> {
            Arc::new(MemoryDisk::new(
                index,
                &physics,
                &Arc::new(AtomicBool::new(false)),
            ))
        })
        .collect();
    let started = Driver::start(
        rack,
        layout,
        disks,
        Arc::new(SystemClock::new()),
        DriverConfig::default(),
    );
    assert!(matches!(started, Err(DriverError::NoRuntime)));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_audit_books_a_disk_before_its_spin_up_and_until_after_its_spin_down() {
    let (rack, layout) = jbod();
    let bench = bench(
        rack,
        layout,
        BenchOptions {
            spin_up_delay: Duration::from_millis(2),
            ..BenchOptions::default()
        },
    );
    for group in [0, 4, 7] {
        let job = Job::new(group, 1, Kind::Client, |disks: &GroupDisks| {
            touch_every_disk(disks, "probe")
        });
        let handle = bench.driver.submit(job).await.unwrap();
        handle.wait().await.unwrap().output.unwrap();
    }
    bench.driver.shutdown().await.unwrap();
    let mut commands = 0;
    for disk in &bench.disks {
        for (command, counters) in disk.probes.lock().unwrap().iter() {
            commands += 1;
            match command {
                // This disk is among those booked spinning up when its spin-up starts …
                DiskPower::SpinningUp => assert!(counters.spinning_up_now >= 1, "{counters:?}"),
                // … and still booked up when its spin-down starts.
                _ => assert!(
                    counters.spinning_up_now + counters.active_now >= 1,
                    "{counters:?}"
                ),
            }
        }
    }
    assert_eq!(commands, 2 * 3 * layout.group_size);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_disk_marked_failed_is_never_spun_up_and_its_group_serves_without_it() {
    let (rack, layout) = jbod();
    let bench = bench(rack, layout, BenchOptions::default());
    let group = 6;
    let failed = rack
        .disks
        .iter()
        .position(|d| d.id == layout.groups[group][0])
        .unwrap() as DiskIndex;
    bench.driver.mark_failed(failed).await.unwrap().unwrap();
    assert_eq!(
        bench.driver.mark_failed(60).await.unwrap(),
        Err(UnknownDisk {
            disk: 60,
            disks: 60
        })
    );
    let done = bench
        .driver
        .submit(Job::new(
            group as GroupIndex,
            1,
            Kind::Client,
            |disks: &GroupDisks| (disks.missing().clone(), touch_every_disk(disks, "without")),
        ))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    let (missing, touched) = done.output;
    assert_eq!(missing.into_iter().collect::<Vec<_>>(), vec![failed]);
    assert_eq!(touched.unwrap().len(), layout.group_size as usize - 1);
    assert_eq!(
        bench.disks[failed as usize].spin_ups.load(Ordering::SeqCst),
        0
    );
    assert_eq!(
        bench.disks[failed as usize].power_state(),
        PowerState::Failed
    );
    let report = bench.driver.shutdown().await.unwrap();
    assert_eq!(report.audit.refusals, 0);
    assert_eq!(report.audit.active_now + report.audit.spinning_up_now, 0);
}

proptest! {
    #![proptest_config(ProptestConfig { cases: 12, failure_persistence: None, rng_seed: proptest::test_runner::RngSeed::Fixed(0x5eed), .. ProptestConfig::default() })]

    /// Random streams of client and rebuild jobs over Pelican's 48 groups (4 classes), submitted
    /// at once and awaited: every job runs on active disks, the audit never refuses, and the
    /// disks' own physics never exceeds a hard budget.
    #[test]
    fn random_job_streams_never_make_the_audit_refuse_or_the_disks_exceed_a_budget(
        jobs in prop::collection::vec((0u32..48, 1u64..(1 << 34), any::<bool>()), 1..150)
    ) {
        let (rack, layout) = pelican();
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .enable_all()
            .build()
            .unwrap();
        let (report, physics, outputs) = runtime.block_on(async {
            let bench = bench(rack, layout, BenchOptions::default());
            let mut handles = Vec::new();
            for (n, (group, bytes, rebuild)) in jobs.iter().enumerate() {
                let kind = if *rebuild { Kind::Rebuild } else { Kind::Client };
                let job = Job::new(*group, *bytes, kind, move |disks: &GroupDisks| {
                    touch_every_disk(disks, &format!("stack-{n}"))
                });
                handles.push(bench.driver.submit(job).await.unwrap());
            }
            let mut outputs = Vec::new();
            for handle in handles {
                outputs.push(handle.wait().await.unwrap().output);
            }
            (bench.driver.shutdown().await.unwrap(), bench.physics, outputs)
        });
        for output in outputs {
            prop_assert_eq!(output.map(|d| d.len()), Ok(layout.group_size as usize));
        }
        prop_assert_eq!(report.jobs_served, jobs.len() as u64);
        prop_assert_eq!(report.audit.refusals, 0);
        prop_assert_eq!(physics.violations.load(Ordering::SeqCst), 0);
        prop_assert_eq!(report.audit.active_now + report.audit.spinning_up_now, 0);
    }
}

/// The driver over spinwise-disk's emulated directory disks at a thousandth of the JBOD's real
/// latencies (spin-up 15–30 s, mount 1–4 s → 16–34 ms): real files, real sleeps, the same audit.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn jobs_run_on_emulated_disks_after_their_scaled_spin_up_and_never_break_a_budget() {
    let (rack, layout) = jbod();
    let root = tempfile::tempdir().unwrap();
    let time_factor = 0.001;
    let emulated: Vec<Arc<EmulatedDisk>> = (0..rack.disk_count() as DiskIndex)
        .map(|index| {
            let mut config =
                EmulatedConfig::new(root.path().join(format!("disk-{index:02}")), index, 1 << 30);
            config.timing = DiskTiming::from_model(&rack.disk_model);
            config.time_factor = time_factor;
            config.seed = 7;
            Arc::new(EmulatedDisk::create(config).unwrap())
        })
        .collect();
    let disks: Vec<Arc<dyn Disk>> = emulated
        .iter()
        .map(|d| d.clone() as Arc<dyn Disk>)
        .collect();
    let driver = Driver::start(
        rack,
        layout,
        disks,
        Arc::new(SystemClock::new()),
        DriverConfig::default(),
    )
    .unwrap();
    // One job alone: it waits at least the fastest spin-up plus the fastest mount.
    let first = driver
        .submit(Job::new(0, 1 << 20, Kind::Client, |disks: &GroupDisks| {
            touch_every_disk(disks, "first")
        }))
        .await
        .unwrap()
        .wait()
        .await
        .unwrap();
    assert_eq!(first.output.unwrap().len(), layout.group_size as usize);
    let fastest_us = ((rack.disk_model.spin_up_latency_s.min()
        + rack.disk_model.mount_latency_s.min())
        * time_factor
        * 1e6) as u64;
    assert!(
        first.timing.spin_up_wait_us >= fastest_us,
        "{:?} < {fastest_us} µs",
        first.timing
    );
    // Then every group at once, a few jobs each, from concurrent callers.
    let mut callers = Vec::new();
    for group in 0..layout.groups.len() as GroupIndex {
        let driver = driver.clone();
        callers.push(tokio::spawn(async move {
            let mut handles = Vec::new();
            for n in 0..4 {
                let job = Job::new(group, 1 << 20, Kind::Client, move |disks: &GroupDisks| {
                    touch_every_disk(disks, &format!("g{group}-{n}"))
                });
                handles.push(driver.submit(job).await.unwrap());
            }
            for handle in handles {
                handle.wait().await.unwrap().output.unwrap();
            }
        }));
    }
    for caller in callers {
        caller.await.unwrap();
    }
    let report = driver.shutdown().await.unwrap();
    assert_eq!(report.jobs_served, 1 + 4 * layout.groups.len() as u64);
    assert_eq!(report.audit.refusals, 0);
    let (spinning_up_limit, active_limit) = budget_limits(rack);
    assert!(report.audit.max_spinning_up <= spinning_up_limit);
    assert!(report.audit.max_active <= active_limit);
    assert!(
        emulated
            .iter()
            .all(|d| d.power_state() == PowerState::Standby)
    );
    // The work really wrote to the directories, and standby disks refuse IO.
    let mut buffer = [0u8; 5];
    assert!(matches!(
        emulated[0].read_at("first", 0, &mut buffer),
        Err(DiskError::NotReady { .. })
    ));
}

/// Jobs of one group that run at once, at most and in all, counted by the jobs themselves.
#[derive(Default)]
struct Overlap {
    running: AtomicU32,
    most: AtomicU32,
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_class_runs_up_to_its_layout_s_concurrent_requests_on_its_group_at_once() {
    // Pelican serves four requests per class at once: eight jobs for one group run four at a
    // time (each holds its thread 100 ms), never more, and all complete.
    let (rack, layout) = pelican();
    let concurrent = layout.scheduler.concurrent_requests_per_class;
    assert_eq!(concurrent, 4, "the pelican preset serves four per class");
    let bench = bench(rack, layout, BenchOptions::default());
    let overlap = Arc::new(Overlap::default());
    let mut handles = Vec::new();
    for n in 0..8u32 {
        let overlap = overlap.clone();
        let job = Job::new(5, 1 << 20, Kind::Client, move |disks: &GroupDisks| {
            let now = overlap.running.fetch_add(1, Ordering::SeqCst) + 1;
            overlap.most.fetch_max(now, Ordering::SeqCst);
            // wall-clock: a fixture: the job's disk work takes 100 ms, so jobs overlap.
            std::thread::sleep(Duration::from_millis(100));
            overlap.running.fetch_sub(1, Ordering::SeqCst);
            (n, disks.group())
        });
        handles.push(bench.driver.submit(job).await.unwrap());
    }
    for handle in handles {
        assert_eq!(within("job", handle.wait()).await.unwrap().output.1, 5);
    }
    assert_eq!(overlap.most.load(Ordering::SeqCst), concurrent);
    let report = bench.driver.shutdown().await.unwrap();
    assert_eq!(report.jobs_served, 8);
    assert_eq!(report.audit.refusals, 0);
}

/// Groups x1 and x2 of one pelican class, and y0 and y1 of another, all four reading through
/// the same server's NIC (the layout's `group_read_servers`): partners for staggered switches.
fn partner_groups(rack: &Rack, layout: &Layout) -> [GroupIndex; 4] {
    let server_of = layout.group_read_servers(rack).unwrap();
    let classes = group_of_class(layout);
    let x1 = classes[&0][0];
    let on_x1s_server = |groups: &Vec<GroupIndex>| -> Vec<GroupIndex> {
        (groups.iter().copied())
            .filter(|g| server_of[*g as usize] == server_of[x1 as usize])
            .collect()
    };
    let x2 = on_x1s_server(&classes[&0])[1];
    let y = (classes.iter().filter(|(class, _)| **class != 0))
        .map(|(_, groups)| on_x1s_server(groups))
        .find(|groups| groups.len() >= 2)
        .expect("another class has two groups reading through x1's server");
    [x1, x2, y[0], y[1]]
}

/// Until `flag` is set (at most 10 s, so a broken driver fails the test instead of hanging it).
fn wait_for(flag: &AtomicBool) {
    for _ in 0..10_000 {
        if flag.load(Ordering::SeqCst) {
            return;
        }
        // wall-clock: a fixture: the job holds its group until the test releases it.
        std::thread::sleep(Duration::from_millis(1));
    }
    panic!("the test never released the job");
}

/// Polls the driver's state until `group` is in `phase` (the disks' power changes take real
/// time).
async fn until_phase(driver: &Driver, group: GroupIndex, phase: GroupPhase) {
    let what = format!("group {group} reached {phase:?}");
    poll::eventually(&what, async || {
        driver.state().await.unwrap().groups[group as usize].phase == phase
    })
    .await;
}

/// Partner Y serves a job on y0 for as long as class X takes to bring x1 up (so Y's batch
/// covers X's switch), then switches to y1, whose spin-up is held; X serves a job on x1 with
/// one for x2 queued and finishes while y1 is still spinning up. Returns x1's phase 200 ms
/// after that, and the order in which y1 came up and x1 went down.
async fn x_finishes_while_y_spins_up(stagger: Option<u32>) -> (GroupPhase, Vec<GroupActivity>) {
    let (rack, pelican_layout) = pelican();
    let mut layout = pelican_layout.clone();
    layout.scheduler.stagger_switches_min_queue = stagger;
    let [x1, x2, y0, y1] = partner_groups(rack, &layout);
    let bench = bench(rack, &layout, BenchOptions::default());
    let driver = bench.driver.clone();
    let mut activity = driver.subscribe_activity();
    let held_until = |group, release: &Arc<AtomicBool>| {
        let released = release.clone();
        Job::new(group, 1 << 20, Kind::Client, move |_: &GroupDisks| {
            wait_for(&released)
        })
    };
    let (release_y, release_x) = (
        Arc::new(AtomicBool::new(false)),
        Arc::new(AtomicBool::new(false)),
    );
    let y_batch = driver.submit(held_until(y0, &release_y)).await.unwrap();
    until_phase(&driver, y0, GroupPhase::Active).await;
    let first = driver.submit(held_until(x1, &release_x)).await.unwrap();
    until_phase(&driver, x1, GroupPhase::Active).await;
    let touch = |group, name: &'static str| {
        Job::new(group, 1 << 20, Kind::Client, move |disks: &GroupDisks| {
            touch_every_disk(disks, name)
        })
    };
    let second = driver.submit(touch(x2, "second")).await.unwrap();
    let held = HeldSpinUps::new(&bench.hold_spin_up);
    let third = driver.submit(touch(y1, "third")).await.unwrap();
    release_y.store(true, Ordering::SeqCst);
    within("y0's job", y_batch.wait()).await.unwrap();
    until_phase(&driver, y1, GroupPhase::SpinningUp).await;
    release_x.store(true, Ordering::SeqCst);
    within("x1's job", first.wait()).await.unwrap();
    // The engine decides what x1 does next as it takes the job's completion.
    poll::eventually("the driver took x1's completion", async || {
        !driver.state().await.unwrap().groups[x1 as usize].serving
    })
    .await;
    let x1_phase = driver.state().await.unwrap().groups[x1 as usize].phase;
    drop(held);
    for job in [second, third] {
        within("a touch job", job.wait())
            .await
            .unwrap()
            .output
            .unwrap();
    }
    let report = driver.shutdown().await.unwrap();
    assert_eq!(report.audit.refusals, 0);
    assert_eq!(bench.physics.violations.load(Ordering::SeqCst), 0);
    let mut order = Vec::new();
    while let Ok(event) = activity.try_recv() {
        match event {
            GroupActivity::Up { group, .. } if group == y1 => order.push(event),
            GroupActivity::GoingDown { group, .. } if group == x1 => order.push(event),
            _ => {}
        }
    }
    (x1_phase, order)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn with_staggered_switches_a_class_holds_its_group_until_a_partner_on_its_nic_is_up() {
    let (x1_phase, order) = x_finishes_while_y_spins_up(Some(1)).await;
    assert_eq!(x1_phase, GroupPhase::Active, "X waits while Y spins up");
    assert!(
        matches!(
            order[..],
            [
                GroupActivity::Up { .. },
                GroupActivity::GoingDown { .. },
                ..
            ]
        ),
        "y1 up, then x1 down: {order:?}"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_staggered_switches_a_class_switches_while_its_partner_spins_up() {
    let (x1_phase, order) = x_finishes_while_y_spins_up(None).await;
    assert_ne!(x1_phase, GroupPhase::Active, "X switches at once");
    assert!(
        matches!(
            order[..],
            [
                GroupActivity::GoingDown { .. },
                GroupActivity::Up { .. },
                ..
            ]
        ),
        "x1 down, then y1 up: {order:?}"
    );
}

/// Runs one job on group 5 of the JBOD with the driver's idle spin-down at `idle_us`; returns
/// once the job is done, with the bench and the group activity announced since the start.
/// One job served on group 5 at time 0 of `clock`, the driver's, which the test then moves.
async fn one_job_then_idle(
    idle_us: Option<u64>,
    clock: &Arc<ManualClock>,
) -> (Bench, tokio::sync::broadcast::Receiver<GroupActivity>) {
    let (rack, layout) = jbod();
    let config = DriverConfig {
        idle_spin_down_us: idle_us,
        ..DriverConfig::default()
    };
    let bench = bench(
        rack,
        layout,
        BenchOptions {
            config,
            manual: Some((clock.clone(), 0, 0)),
            ..BenchOptions::default()
        },
    );
    let activity = bench.driver.subscribe_activity();
    let handle = bench
        .driver
        .submit(Job::new(5, 1000, Kind::Client, |_: &GroupDisks| ()))
        .await
        .unwrap();
    handle.wait().await.unwrap();
    // The caller hears the job's output before the engine hears it was served (the completion
    // crosses the driver's channel after): the idle time starts there, so no clock advance may
    // come first.
    let driver = &bench.driver;
    poll::eventually("the engine heard the job served", async || {
        driver.state().await.unwrap().jobs_served == 1
    })
    .await;
    (bench, activity)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn under_no_load_a_group_spins_down_after_the_idle_time_and_not_before_saying_why() {
    let idle = Duration::from_secs(1);
    let clock = Arc::new(ManualClock::new());
    let (bench, mut activity) = one_job_then_idle(Some(idle.as_micros() as u64), &clock).await;
    let state = bench.driver.state().await.unwrap();
    assert_eq!(state.groups[5].phase, GroupPhase::Active);
    assert_eq!(state.idle_spin_down_us, Some(1_000_000));
    // A microsecond short of the idle time on the driver's clock: still up.
    clock.advance(idle - Duration::from_micros(1));
    let state = bench.driver.state().await.unwrap();
    assert_eq!(state.groups[5].phase, GroupPhase::Active, "spun down early");
    clock.advance(Duration::from_micros(1));
    until_phase(&bench.driver, 5, GroupPhase::Resting).await;
    let state = bench.driver.state().await.unwrap();
    assert_eq!(state.idle_spin_downs, 1);
    assert_eq!(state.audit.active_now, 0, "every disk rests");
    let cause = std::iter::from_fn(|| activity.try_recv().ok())
        .find_map(|event| match event {
            GroupActivity::GoingDown {
                group: 5, cause, ..
            } => Some(cause),
            _ => None,
        })
        .expect("the spin-down was announced");
    assert_eq!(cause, SpinDownCause::Idle);
    assert_eq!(bench.physics.violations.load(Ordering::SeqCst), 0);
    bench.driver.shutdown().await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn without_idle_spin_down_an_idle_group_stays_up_until_shutdown() {
    let clock = Arc::new(ManualClock::new());
    let (bench, _) = one_job_then_idle(None, &clock).await;
    clock.advance(Duration::from_millis(1500));
    let state = bench.driver.state().await.unwrap();
    assert_eq!(state.groups[5].phase, GroupPhase::Active);
    assert_eq!(state.idle_spin_downs, 0);
    // Set while running, it applies to the group already idle: down an idle time later.
    bench
        .driver
        .set_idle_spin_down_us(Some(1_000_000))
        .await
        .unwrap();
    clock.advance(Duration::from_secs(1));
    until_phase(&bench.driver, 5, GroupPhase::Resting).await;
    bench.driver.shutdown().await.unwrap();
}
