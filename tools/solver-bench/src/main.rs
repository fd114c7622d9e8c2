//! The measurement behind spinwise-design's choice of solver (docs/BENCHMARKS.md, "Cost-optimal
//! design"): good_lp's backends (microlp, HiGHS, CBC) on seeded random instances of the design
//! program *without* the design's dominance pruning and with a separate read-rate row, checked
//! against each other and against brute force. Its own workspace, like fuzz/: HiGHS needs cmake
//! and libclang, CBC needs Debian's coinor-libcbc-dev, and neither is built by CI.
use good_lp::{
    constraint, variable, Expression, ProblemVariables, ResolutionError, Solution, SolutionStatus,
    Solver, SolverModel, Variable, WithTimeLimit,
};
use rand::{Rng, SeedableRng};
use rand_chacha::ChaCha8Rng;
use std::time::Instant;

#[derive(Clone, Debug)]
pub struct Block {
    pub tco: u64,
    pub capex: u64,
    pub capacity_tb: u64,
    pub read_mb_s: u64,
    pub power_w: u64,
}

#[derive(Clone, Debug)]
pub struct Instance {
    pub blocks: Vec<Block>,
    pub capacity_needed: u64,
    pub read_needed: u64,
    pub power_max: u64,
    pub budget: u64,
    pub upper: Vec<u64>, // U_b
    pub mode: &'static str,
}

#[derive(Debug, Clone)]
pub struct Design {
    pub objective: f64,
    pub counts: Vec<u64>,
    pub status: &'static str,
}

// ---------------------------------------------------------------------------
// Generic model builder: written once, used for every backend.
pub fn solve_design<S>(inst: &Instance, solver: S, time_limit_s: f64) -> Result<Design, ResolutionError>
where
    S: Solver,
    S::Model: SolverModel<Error = ResolutionError> + WithTimeLimit,
{
    let mut vars = ProblemVariables::new();
    let n = inst.blocks.len();
    let x: Vec<Variable> = (0..n)
        .map(|b| vars.add(variable().integer().min(0).max(inst.upper[b] as f64)))
        .collect();
    let y: Vec<Variable> = (0..n).map(|_| vars.add(variable().binary())).collect();
    let lin = |f: &dyn Fn(&Block) -> u64| -> Expression {
        inst.blocks.iter().zip(&x).map(|(blk, &xb)| f(blk) as f64 * xb).sum()
    };
    let objective = lin(&|b| b.tco);
    let mut model = vars
        .minimise(objective.clone())
        .using(solver)
        .with_time_limit(time_limit_s)
        .with(constraint!(lin(&|b| b.capacity_tb) >= inst.capacity_needed as f64))
        .with(constraint!(lin(&|b| b.read_mb_s) >= inst.read_needed as f64))
        .with(constraint!(lin(&|b| b.power_w) <= inst.power_max as f64))
        .with(constraint!(lin(&|b| b.capex) <= inst.budget as f64))
        .with(constraint!(y.iter().copied().sum::<Expression>() <= 2.0));
    for b in 0..n {
        model = model.with(constraint!(x[b] - inst.upper[b] as f64 * y[b] <= 0.0));
    }
    let sol = model.solve()?;
    let status = match sol.status() {
        SolutionStatus::Optimal => "optimal",
        SolutionStatus::TimeLimit => "time_limit",
        SolutionStatus::GapLimit => "gap_limit",
    };
    let counts: Vec<u64> = x.iter().map(|&v| sol.value(v).round().max(0.0) as u64).collect();
    Ok(Design { objective: sol.eval(&objective), counts, status })
}
// ---------------------------------------------------------------------------

fn clampf(v: f64, lo: f64, hi: f64) -> u64 {
    v.clamp(lo, hi).round() as u64
}

pub fn generate(n: usize, seed: u64, cap_upper: Option<u64>) -> Instance {
    let mut rng = ChaCha8Rng::seed_from_u64(seed.wrapping_mul(1_000_003) ^ (n as u64));
    let blocks: Vec<Block> = (0..n)
        .map(|_| {
            // "fast" (NVMe-ish) vs "dense" (HDD-ish) blocks, plus noise: capacity and
            // throughput anti-correlated, cost grows with both.
            let f: f64 = rng.gen();
            let capf = (1.0 - f) * 0.7 + 0.3 * rng.gen::<f64>();
            let readf = f * 0.7 + 0.3 * rng.gen::<f64>();
            let cap = clampf(200.0 + capf * 2800.0, 200.0, 3000.0);
            let read = clampf(100.0 + readf * 4900.0, 100.0, 5000.0);
            let capex = clampf(
                (5000.0 + 35.0 * cap as f64 + 12.0 * read as f64) * rng.gen_range(0.75..1.25),
                10_000.0,
                200_000.0,
            );
            let power = clampf(
                (200.0 + 0.5 * cap as f64 + 0.25 * read as f64) * rng.gen_range(0.8..1.2),
                300.0,
                3000.0,
            );
            let tco = clampf(
                (capex as f64 * 1.4 + power as f64 * 25.0) * rng.gen_range(0.8..1.2),
                20_000.0,
                400_000.0,
            );
            Block { tco, capex, capacity_tb: cap, read_mb_s: read, power_w: power }
        })
        .collect();
    let c: u64 = 10_000;
    let r: u64 = rng.gen_range(2_000..=40_000);
    let upper: Vec<u64> = blocks
        .iter()
        .map(|b| {
            let u = c.div_ceil(b.capacity_tb) + r.div_ceil(b.read_mb_s);
            cap_upper.map_or(u, |m| u.min(m))
        })
        .collect();
    // single-type reference designs
    let single = |b: &Block| (c.div_ceil(b.capacity_tb)).max(r.div_ceil(b.read_mb_s));
    let min_single_power = blocks.iter().map(|b| single(b) * b.power_w).min().unwrap();
    let min_single_capex = blocks.iter().map(|b| single(b) * b.capex).min().unwrap();
    let max_single_power = blocks.iter().map(|b| single(b) * b.power_w).max().unwrap();
    let max_single_capex = blocks.iter().map(|b| single(b) * b.capex).max().unwrap();
    // valid lower bounds (LP relaxation of the covering constraints)
    let minratio = |f: &dyn Fn(&Block) -> f64| blocks.iter().map(f).fold(f64::INFINITY, f64::min);
    let p_lb = (c as f64 * minratio(&|b| b.power_w as f64 / b.capacity_tb as f64))
        .max(r as f64 * minratio(&|b| b.power_w as f64 / b.read_mb_s as f64));
    let b_lb = (c as f64 * minratio(&|b| b.capex as f64 / b.capacity_tb as f64))
        .max(r as f64 * minratio(&|b| b.capex as f64 / b.read_mb_s as f64));
    let (mode, p, budget) = match seed % 5 {
        0 => ("generous", 10 * max_single_power, 10 * max_single_capex),
        1 => ("power_tight", (min_single_power as f64 * rng.gen_range(0.95..1.15)) as u64, 10 * max_single_capex),
        2 => ("budget_tight", 10 * max_single_power, (min_single_capex as f64 * rng.gen_range(0.95..1.15)) as u64),
        3 => (
            "both_tight",
            (min_single_power as f64 * rng.gen_range(1.0..1.3)) as u64,
            (min_single_capex as f64 * rng.gen_range(1.0..1.3)) as u64,
        ),
        _ => {
            if (seed / 5) % 2 == 0 {
                ("infeasible_power", (p_lb * 0.95) as u64, 10 * max_single_capex)
            } else {
                ("infeasible_budget", 10 * max_single_power, (b_lb * 0.95) as u64)
            }
        }
    };
    Instance { blocks, capacity_needed: c, read_needed: r, power_max: p, budget, upper, mode }
}

/// Exact integer brute force over all x with at most two nonzero types.
pub fn brute_force(inst: &Instance) -> Option<(u64, Vec<u64>)> {
    let n = inst.blocks.len();
    let mut best: Option<(u64, Vec<u64>)> = None;
    for i in 0..n {
        for j in i..n {
            let (bi, bj) = (&inst.blocks[i], &inst.blocks[j]);
            let uj = if j == i { 0 } else { inst.upper[j] };
            for xi in 0..=inst.upper[i] {
                for xj in 0..=uj {
                    let cap = bi.capacity_tb * xi + bj.capacity_tb * xj;
                    let rd = bi.read_mb_s * xi + bj.read_mb_s * xj;
                    let pw = bi.power_w * xi + bj.power_w * xj;
                    let cx = bi.capex * xi + bj.capex * xj;
                    if cap >= inst.capacity_needed && rd >= inst.read_needed && pw <= inst.power_max && cx <= inst.budget {
                        let obj = bi.tco * xi + bj.tco * xj;
                        if best.as_ref().map_or(true, |(b, _)| obj < *b) {
                            let mut v = vec![0; n];
                            v[i] += xi;
                            v[j] += xj;
                            best = Some((obj, v));
                        }
                    }
                }
            }
        }
    }
    best
}

/// Independent check of a returned design; returns (integer objective, problems).
fn check(inst: &Instance, counts: &[u64]) -> (u64, Vec<String>) {
    let mut errs = vec![];
    let s = |f: &dyn Fn(&Block) -> u64| inst.blocks.iter().zip(counts).map(|(b, &x)| f(b) * x).sum::<u64>();
    if s(&|b| b.capacity_tb) < inst.capacity_needed { errs.push("capacity".into()) }
    if s(&|b| b.read_mb_s) < inst.read_needed { errs.push("read".into()) }
    if s(&|b| b.power_w) > inst.power_max { errs.push("power".into()) }
    if s(&|b| b.capex) > inst.budget { errs.push("budget".into()) }
    if counts.iter().filter(|&&x| x > 0).count() > 2 { errs.push("types>2".into()) }
    for (b, &x) in counts.iter().enumerate() {
        if x > inst.upper[b] { errs.push(format!("x{b}>U")) }
    }
    (s(&|b| b.tco), errs)
}

fn run<S, F>(backend: &str, mk: F, sets: &[(&str, usize, Option<u64>)], seeds: u64, reps: usize, tl: f64, brute: bool)
where
    F: Fn() -> S,
    S: Solver,
    S::Model: SolverModel<Error = ResolutionError> + WithTimeLimit,
{
    // warm-up (first call into a C++ library may page in code)
    let _ = solve_design(&generate(10, 999, None), mk(), tl);
    for &(set, n, capu) in sets {
        for seed in 0..seeds {
            let inst = generate(n, seed, capu);
            let mut times = vec![];
            let mut res = None;
            for _ in 0..reps {
                let t = Instant::now();
                let r = solve_design(&inst, mk(), tl);
                times.push(t.elapsed().as_secs_f64() * 1e3);
                res = Some(r);
            }
            let tmin = times.iter().cloned().fold(f64::INFINITY, f64::min);
            let (status, obj, sol, chk) = match res.unwrap() {
                Ok(d) => {
                    let (iobj, errs) = check(&inst, &d.counts);
                    let rel = (iobj as f64 - d.objective).abs() / d.objective.abs().max(1.0);
                    let mut chk = errs.join("|");
                    if rel > 1e-9 { chk.push_str(&format!("|obj_mismatch({iobj})")) }
                    let sol: Vec<String> = d.counts.iter().enumerate().filter(|(_, &x)| x > 0).map(|(b, x)| format!("{b}x{x}")).collect();
                    let used = |f: &dyn Fn(&Block) -> u64| inst.blocks.iter().zip(&d.counts).map(|(b, &x)| f(b) * x).sum::<u64>();
                    let bind = format!(
                        "cap{}/read{}/pw{}/bud{}",
                        (used(&|b| b.capacity_tb) as f64 / inst.capacity_needed as f64 * 100.0).round(),
                        (used(&|b| b.read_mb_s) as f64 / inst.read_needed as f64 * 100.0).round(),
                        (used(&|b| b.power_w) as f64 / inst.power_max as f64 * 100.0).round(),
                        (used(&|b| b.capex) as f64 / inst.budget as f64 * 100.0).round()
                    );
                    (d.status.to_string(), format!("{:.3}", d.objective), format!("{} {}", sol.join(" "), bind), if chk.is_empty() { "ok".to_string() } else { chk })
                }
                Err(ResolutionError::Infeasible) => ("infeasible".into(), "".into(), "".into(), "ok".into()),
                Err(e) => (format!("error:{e}").replace(',', ";"), "".into(), "".into(), "".into()),
            };
            let bf = if brute && n <= 10 {
                let t = Instant::now();
                let b = brute_force(&inst);
                let bt = t.elapsed().as_secs_f64() * 1e3;
                let agree = match (&b, obj.parse::<f64>().ok()) {
                    (None, None) if status == "infeasible" => "agree".to_string(),
                    (Some((bo, _)), Some(o)) => if ((*bo as f64 - o).abs() / (*bo as f64)) <= 1e-6 { "agree".into() } else { format!("DISAGREE(bf={bo})") },
                    (b, _) => format!("DISAGREE(bf={:?})", b.as_ref().map(|x| x.0)),
                };
                format!("{};{:.0}ms", agree, bt)
            } else { "-".into() };
            let all: Vec<String> = times.iter().map(|t| format!("{t:.2}")).collect();
            println!(
                "ROW,{backend},{set},{n},{seed},{},{status},{obj},{tmin:.3},{},{sol},{chk},{bf}",
                inst.mode,
                all.join(";")
            );
        }
    }
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let backend = args.get(1).map(String::as_str).unwrap_or("microlp");
    let reps: usize = args.get(2).and_then(|s| s.parse().ok()).unwrap_or(3);
    let only: Option<usize> = args.get(3).and_then(|s| s.parse().ok());
    let tl: f64 = args.get(4).and_then(|s| s.parse().ok()).unwrap_or(60.0);
    let all_sets: Vec<(&str, usize, Option<u64>)> = vec![
        ("bf_cap6", 10, Some(6)),
        ("main", 10, None),
        ("main", 50, None),
        ("main", 200, None),
        ("main", 1000, None),
    ];
    let sets: Vec<_> = all_sets.into_iter().filter(|s| only.map_or(true, |n| s.1 == n)).collect();
    println!("ROW,backend,set,B,seed,mode,status,objective,ms_min,ms_all,solution,check,bruteforce");
    match backend {
        #[cfg(feature = "microlp")]
        "microlp" => run("microlp", || good_lp::microlp, &sets, 10, reps, tl, true),
        #[cfg(feature = "highs")]
        "highs" => run("highs", || good_lp::highs, &sets, 10, reps, tl, true),
        #[cfg(feature = "highs")]
        "highs_gap0" => run("highs_gap0", || |p| good_lp::highs(p).set_mip_rel_gap(0.0).unwrap(), &sets, 10, reps, tl, true),
        #[cfg(feature = "coin_cbc")]
        "coin_cbc" => run("coin_cbc", || good_lp::coin_cbc, &sets, 10, reps, tl, true),
        other => panic!("backend {other} not compiled in"),
    }
}
