// SPDX-License-Identifier: GPL-2.0

//! The timing harness the benches share (`harness = false`: no criterion
//! crate is available offline).
//!
//! Each case is a closure timed in batches of a fixed iteration count:
//! doubling batches until one lasts a sample's time calibrate the count and
//! warm caches and branch predictors, then further batches warm up for at
//! least [`WARMUP`], then [`Bench::samples`] batches are timed. A case
//! prints one line:
//!
//! ```text
//! <name, 56 columns> <median> ns/op  [<min> - <max>]  (<samples> x <iters>, >= <ms> ms)
//! ```
//!
//! where median, min and max are over the samples, in nanoseconds of wall
//! time per call of the closure (the loop and `black_box` included), and
//! the last figure is the shortest sample. Other lines start with `#`.
//!
//! Environment: `BENCH_SAMPLES` (default 15), `BENCH_SAMPLE_MS` (the least
//! time of one sample, default 20). Arguments that do not start with `-`
//! (`cargo bench -- chunks`) select the cases whose name contains one of
//! them.

use std::hint::black_box;
use std::time::{Duration, Instant};

/// Least time spent running a case before its samples are taken.
const WARMUP: Duration = Duration::from_millis(100);

/// Width of the name column.
const NAME_WIDTH: usize = 56;

/// A group of cases: one bench binary.
pub struct Bench {
    samples: usize,
    sample_time: Duration,
    filters: Vec<String>,
}

fn env_num(name: &str, default: u64) -> u64 {
    std::env::var(name)
        .ok()
        .and_then(|v| v.parse().ok())
        .filter(|&v| v > 0)
        .unwrap_or(default)
}

impl Bench {
    /// Reads the settings and prints the group's title line.
    pub fn new(group: &str) -> Self {
        let samples = usize::try_from(env_num("BENCH_SAMPLES", 15)).unwrap_or(15);
        let sample_time = Duration::from_millis(env_num("BENCH_SAMPLE_MS", 20));
        let filters = std::env::args()
            .skip(1)
            .filter(|a| !a.starts_with('-'))
            .collect();
        println!("# {group}");
        Self {
            samples,
            sample_time,
            filters,
        }
    }

    /// Prints a comment line (what a group's cases are built from).
    pub fn note(&self, text: &str) {
        println!("# {text}");
    }

    fn selected(&self, name: &str) -> bool {
        self.filters.is_empty() || self.filters.iter().any(|f| name.contains(f.as_str()))
    }

    /// Times `f` and prints the case's line.
    pub fn run<R>(&self, name: &str, mut f: impl FnMut() -> R) {
        if !self.selected(name) {
            return;
        }
        // Aim a quarter above the least sample time, so that a batch that
        // runs a little faster than the calibration's still lasts it.
        let target = self.sample_time + self.sample_time / 4;
        let started = Instant::now();
        let mut iters: u64 = 1;
        loop {
            let took = batch(iters, &mut f);
            if took >= target {
                break;
            }
            // Grow by the ratio still missing (at most 100 times, at least
            // twice), so the calibration is a handful of batches.
            let ratio = target.as_nanos() / took.as_nanos().max(1);
            let grow = u64::try_from(ratio.clamp(2, 100)).unwrap_or(2);
            iters = iters.saturating_mul(grow);
        }
        while started.elapsed() < WARMUP {
            batch(iters, &mut f);
        }
        // A sample shorter than the least time (the CPU sped up since the
        // calibration): measure again with twice the iterations.
        let mut times: Vec<Duration>;
        let mut tries = 0;
        loop {
            times = (0..self.samples).map(|_| batch(iters, &mut f)).collect();
            times.sort();
            tries += 1;
            if times[0] >= self.sample_time || tries == 4 {
                break;
            }
            iters = iters.saturating_mul(2);
        }
        let per_op = |d: Duration| d.as_nanos() as f64 / iters as f64;
        let mid = times.len() / 2;
        let median = if times.len() % 2 == 1 {
            per_op(times[mid])
        } else {
            (per_op(times[mid - 1]) + per_op(times[mid])) / 2.0
        };
        let (min, max) = (times[0], times[times.len() - 1]);
        println!(
            "{name:<NAME_WIDTH$} {median:>9.1} ns/op  [{:.1} - {:.1}]  ({} x {iters}, >= {:.1} ms)",
            per_op(min),
            per_op(max),
            times.len(),
            min.as_secs_f64() * 1e3,
        );
    }
}

/// Runs `f` `iters` times; the time it took.
fn batch<R>(iters: u64, f: &mut impl FnMut() -> R) -> Duration {
    let start = Instant::now();
    for _ in 0..iters {
        black_box(f());
    }
    start.elapsed()
}
