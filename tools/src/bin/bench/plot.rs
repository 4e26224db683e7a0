//! SVG plots of a run: the latency histogram and bandwidth against copy size.

use crate::bandwidth::{gbps, Series};
use crate::stats::{format_bytes, format_ns, Samples};
use plotters::prelude::*;
use std::path::Path;

type PlotResult = Result<(), String>;

fn err(e: impl std::fmt::Display) -> String {
    e.to_string()
}

type Canvas<'a> = DrawingArea<SVGBackend<'a>, plotters::coord::Shift>;

/// A white SVG canvas of `size` pixels at `path`.
fn canvas(path: &Path, size: (u32, u32)) -> Result<Canvas<'_>, String> {
    let root = SVGBackend::new(path, size).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    Ok(root)
}

/// Both plots' frame: the title, margins and room for the axis labels.
fn framed<'a, 'b>(root: &'a Canvas<'b>, title: &str) -> ChartBuilder<'a, 'b, SVGBackend<'b>> {
    let mut b = ChartBuilder::on(root);
    b.caption(title, ("sans-serif", 18))
        .margin(12)
        .x_label_area_size(48)
        .y_label_area_size(56);
    b
}

/// The empty-kernel round trips as a histogram over quarter-octave buckets.
pub fn latency(path: &Path, samples: &Samples, title: &str) -> PlotResult {
    let buckets = samples.log2_histogram();
    let most = buckets.iter().map(|&(_, c)| c).max().unwrap_or(1) as u32;
    let root = canvas(path, (800, 420))?;
    let mut chart = framed(&root, title)
        .build_cartesian_2d(
            (0..buckets.len() as u32).into_segmented(),
            0u32..most + most / 10 + 1,
        )
        .map_err(err)?;
    let labels: Vec<String> = buckets.iter().map(|&(from, _)| format_ns(from)).collect();
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_desc("round trip (bucket from)")
        .y_desc("dispatches")
        .x_label_formatter(&|v| match v {
            SegmentValue::CenterOf(i) | SegmentValue::Exact(i) => {
                labels.get(*i as usize).cloned().unwrap_or_default()
            }
            SegmentValue::Last => String::new(),
        })
        .draw()
        .map_err(err)?;
    chart
        .draw_series(
            Histogram::vertical(&chart)
                .style(BLUE.mix(0.6).filled())
                .margin(4)
                .data(
                    buckets
                        .iter()
                        .enumerate()
                        .map(|(i, &(_, c))| (i as u32, c as u32)),
                ),
        )
        .map_err(err)?;
    root.present().map_err(err)
}

/// GB/s against copy size (log scale), a line per engine and direction.
pub fn bandwidth(path: &Path, series: &[Series], title: &str) -> PlotResult {
    let points: Vec<Vec<(f64, f64)>> = series
        .iter()
        .map(|s| {
            s.points
                .iter()
                .map(|&(b, t)| ((b as f64).log2(), gbps(b, t)))
                .collect()
        })
        .collect();
    let all = || points.iter().flatten();
    let (x0, x1) = all().fold((f64::MAX, f64::MIN), |(a, b), p| (a.min(p.0), b.max(p.0)));
    let top = all().map(|p| p.1).fold(0.0f64, f64::max) * 1.1 + 1e-3;
    if x0 > x1 {
        return Err("no bandwidth to plot".into());
    }
    let root = canvas(path, (800, 480))?;
    let mut chart = framed(&root, title)
        .build_cartesian_2d(x0..x1, 0.0..top)
        .map_err(err)?;
    chart
        .configure_mesh()
        .x_desc("copy size")
        .y_desc("GB/s")
        .x_labels(((x1 - x0) / 2.0) as usize + 1)
        .x_label_formatter(&|v| format_bytes(2f64.powf(*v).round() as u64))
        .draw()
        .map_err(err)?;
    let colours = [&BLUE, &RED, &GREEN, &MAGENTA, &CYAN, &BLACK];
    for (i, (s, pts)) in series.iter().zip(&points).enumerate() {
        let colour = colours[i % colours.len()];
        chart
            .draw_series(LineSeries::new(pts.iter().copied(), colour.stroke_width(2)))
            .map_err(err)?
            .label(s.label())
            .legend(move |(x, y)| PathElement::new([(x, y), (x + 18, y)], colour.stroke_width(2)));
        chart
            .draw_series(pts.iter().map(|&p| Circle::new(p, 3, colour.filled())))
            .map_err(err)?;
    }
    chart
        .configure_series_labels()
        .background_style(WHITE.mix(0.8))
        .border_style(BLACK)
        .position(SeriesLabelPosition::UpperLeft)
        .draw()
        .map_err(err)?;
    root.present().map_err(err)
}
