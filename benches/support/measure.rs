//! Timing two sides of a comparison in one run, interleaved: the scale bench's small and large
//! ledgers, or the engines bench's SQLite and PostgreSQL. Each iteration runs once on each side,
//! the side that goes first alternating, so that the machine's drift falls on both alike.

use std::time::{Duration, Instant};

use super::percentile;

/// Timed iterations, and untimed ones before them.
#[derive(Debug, Clone, Copy)]
pub struct Iterations {
    pub timed: usize,
    pub warmup: usize,
}

/// Times `once(side)` on both sides, `warmup` untimed then `timed` timed iterations each, one
/// side after the other in every iteration, side 0 first in even iterations and side 1 first in
/// odd ones. `once` does its setup, then returns the time of the part it measures.
pub fn interleaved(n: Iterations, mut once: impl FnMut(usize) -> Duration) -> [Vec<Duration>; 2] {
    let mut times = [Vec::with_capacity(n.timed), Vec::with_capacity(n.timed)];
    for i in 0..n.warmup + n.timed {
        let order = if i % 2 == 0 { [0, 1] } else { [1, 0] };
        for side in order {
            let took = once(side);
            if i >= n.warmup {
                times[side].push(took);
            }
        }
    }
    times
}

/// Runs `call` and returns how long it took, with its result.
pub fn timed<T>(call: impl FnOnce() -> T) -> (Duration, T) {
    let started = Instant::now();
    let out = call();
    (started.elapsed(), out)
}

/// What one measurement gives: its name, what it was timed over, and the times per side.
pub struct Measured {
    pub name: &'static str,
    /// Printed after the name, before the times: `sessions=111`.
    pub note: String,
    pub times: [Vec<Duration>; 2],
    /// Milliseconds (`_ms`) rather than microseconds (`_us`).
    pub millis: bool,
}

impl Measured {
    pub fn new(name: &'static str, times: [Vec<Duration>; 2]) -> Measured {
        Measured {
            name,
            note: String::new(),
            times,
            millis: false,
        }
    }

    pub fn in_ms(mut self) -> Measured {
        self.millis = true;
        self
    }

    pub fn note(mut self, note: String) -> Measured {
        self.note = note;
        self
    }

    /// `ms` or `us`.
    pub fn unit(&self) -> &'static str {
        if self.millis {
            "ms"
        } else {
            "us"
        }
    }

    fn values(&self, side: usize) -> Vec<f64> {
        let scale = if self.millis { 1e3 } else { 1e6 };
        self.times[side]
            .iter()
            .map(|d| d.as_secs_f64() * scale)
            .collect()
    }

    /// The nearest-rank `p`-th percentile of side `side`, in [`Measured::unit`].
    pub fn p(&self, side: usize, p: f64) -> f64 {
        percentile(&self.values(side), p)
    }

    /// Side 1's median over side 0's.
    pub fn ratio(&self) -> f64 {
        self.p(1, 50.0) / self.p(0, 50.0)
    }

    /// `NAME n=.. [note] S0_p50_UNIT=.. S0_p99_UNIT=.. S1_p50_UNIT=.. S1_p99_UNIT=.. ratio=..`,
    /// with the sides named `sides`.
    pub fn fields(&self, sides: [&str; 2]) -> String {
        let unit = self.unit();
        let mut text = format!("{} n={}", self.name, self.times[0].len());
        if !self.note.is_empty() {
            text += &format!(" {}", self.note);
        }
        for (side, name) in sides.iter().enumerate() {
            text += &format!(
                " {name}_p50_{unit}={:.2} {name}_p99_{unit}={:.2}",
                self.p(side, 50.0),
                self.p(side, 99.0)
            );
        }
        text += &format!(" ratio={:.2}", self.ratio());
        text
    }
}
