//! Samples of a duration and what a reader wants of them: percentiles, a histogram, JSON.

use serde_json::{json, Value};
use std::time::Duration;

/// Measured durations, in nanoseconds, sorted.
#[derive(Clone, Debug)]
pub struct Samples {
    ns: Vec<f64>,
}

impl Samples {
    pub fn new(mut ns: Vec<f64>) -> Samples {
        ns.retain(|v| v.is_finite());
        ns.sort_by(f64::total_cmp);
        Samples { ns }
    }

    pub fn of(durations: &[Duration]) -> Samples {
        Samples::new(durations.iter().map(|d| d.as_nanos() as f64).collect())
    }

    /// The samples, smallest first.
    pub fn values(&self) -> &[f64] {
        &self.ns
    }

    pub fn len(&self) -> usize {
        self.ns.len()
    }

    /// The `p`-th percentile (nearest rank), 0 when empty.
    pub fn percentile(&self, p: f64) -> f64 {
        if self.ns.is_empty() {
            return 0.0;
        }
        let rank = ((p / 100.0) * self.ns.len() as f64).ceil() as usize;
        self.ns[rank.clamp(1, self.ns.len()) - 1]
    }

    pub fn mean(&self) -> f64 {
        if self.ns.is_empty() {
            0.0
        } else {
            self.ns.iter().sum::<f64>() / self.ns.len() as f64
        }
    }

    pub fn min(&self) -> f64 {
        self.ns.first().copied().unwrap_or(0.0)
    }

    pub fn max(&self) -> f64 {
        self.ns.last().copied().unwrap_or(0.0)
    }

    /// Counts per quarter-octave bucket of nanoseconds (bounds `2^(k/4)`): `(bucket lower
    /// bound, count)`, from the smallest non-empty bucket to the largest.
    pub fn log2_histogram(&self) -> Vec<(f64, usize)> {
        let bucket = |v: f64| (v.max(1.0).log2() * STEPS_PER_OCTAVE).floor() as i32;
        let (Some(&lo), Some(&hi)) = (self.ns.first(), self.ns.last()) else {
            return Vec::new();
        };
        let (lo, hi) = (bucket(lo), bucket(hi));
        let mut counts = vec![0usize; (hi - lo + 1) as usize];
        for &v in &self.ns {
            counts[(bucket(v) - lo) as usize] += 1;
        }
        counts
            .into_iter()
            .enumerate()
            .map(|(i, c)| (bound(lo + i as i32), c))
            .collect()
    }

    /// One table row: `p50 p90 p99 p99.9 max` in the unit that suits them.
    pub fn row(&self) -> String {
        let cells: Vec<String> = [50.0, 90.0, 99.0, 99.9]
            .iter()
            .map(|&p| format_ns(self.percentile(p)))
            .chain([format_ns(self.max())])
            .collect();
        cells
            .iter()
            .map(|c| format!("{c:>10}"))
            .collect::<Vec<_>>()
            .join("")
    }

    pub fn json(&self) -> Value {
        json!({
            "samples": self.len(),
            "min_ns": self.min(),
            "mean_ns": self.mean(),
            "p50_ns": self.percentile(50.0),
            "p90_ns": self.percentile(90.0),
            "p99_ns": self.percentile(99.0),
            "p99_9_ns": self.percentile(99.9),
            "max_ns": self.max(),
            "histogram_quarter_octaves_ns": self
                .log2_histogram()
                .iter()
                .map(|(from, n)| json!({"from_ns": from, "count": n}))
                .collect::<Vec<_>>(),
        })
    }

    /// The histogram drawn in text, one line per bucket.
    pub fn text_histogram(&self) -> String {
        let h = self.log2_histogram();
        let most = h.iter().map(|&(_, c)| c).max().unwrap_or(0).max(1);
        h.iter()
            .map(|&(from, c)| {
                let bar = "#".repeat((c * 40).div_ceil(most));
                format!(
                    "    {:>9} - {:<9} {c:>6} {bar}\n",
                    format_ns(from),
                    format_ns(from * 2f64.powf(1.0 / STEPS_PER_OCTAVE))
                )
            })
            .collect()
    }
}

/// Histogram buckets per doubling of the duration.
const STEPS_PER_OCTAVE: f64 = 4.0;

/// The lower bound of histogram bucket `k`.
fn bound(k: i32) -> f64 {
    2f64.powf(f64::from(k) / STEPS_PER_OCTAVE)
}

/// A duration in ns, µs, ms or s, three significant digits.
pub fn format_ns(ns: f64) -> String {
    let (v, unit) = if ns < 1e3 {
        (ns, "ns")
    } else if ns < 1e6 {
        (ns / 1e3, "µs")
    } else if ns < 1e9 {
        (ns / 1e6, "ms")
    } else {
        (ns / 1e9, "s")
    };
    let digits = if v < 10.0 {
        2
    } else if v < 100.0 {
        1
    } else {
        0
    };
    format!("{v:.digits$} {unit}")
}

/// Bytes as B, KiB, MiB or GiB.
pub fn format_bytes(b: u64) -> String {
    match b {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn percentiles_and_buckets() {
        let s = Samples::new((1..=100).map(f64::from).rev().collect());
        assert_eq!(s.percentile(50.0), 50.0);
        assert_eq!(s.percentile(99.0), 99.0);
        assert_eq!(s.percentile(100.0), 100.0);
        assert_eq!((s.min(), s.max()), (1.0, 100.0));
        let h = s.log2_histogram();
        // Quarter octaves from [1, 1.19) to [90.5, 107.6): 27 buckets.
        assert_eq!(h.len(), 27);
        assert_eq!(h[0], (1.0, 1));
        assert_eq!(h[4], (2.0, 1));
        // [90.5, 107.6) holds 91..=100.
        assert_eq!(h[26].1, 10);
        assert_eq!(h.iter().map(|&(_, c)| c).sum::<usize>(), 100);
        assert_eq!(format_ns(1234.0), "1.23 µs");
        assert_eq!(format_ns(56_700_000.0), "56.7 ms");
        assert_eq!(format_bytes(64 << 20), "64 MiB");
    }
}
