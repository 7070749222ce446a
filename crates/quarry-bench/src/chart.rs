//! PNG bar charts of the report tables (plotters, bitmap backend, DejaVu Sans).

use plotters::prelude::*;
use std::path::Path;
use std::sync::OnceLock;

const FONT_PATHS: [&str; 2] = [
    "/usr/share/fonts/truetype/dejavu/DejaVuSans.ttf",
    "/usr/share/fonts/TTF/DejaVuSans.ttf",
];

/// plotters needs a registered font for text; without one the charts are skipped.
fn font_ready() -> bool {
    static READY: OnceLock<bool> = OnceLock::new();
    *READY.get_or_init(|| {
        for p in FONT_PATHS {
            if let Ok(bytes) = std::fs::read(p) {
                let bytes: &'static [u8] = Box::leak(bytes.into_boxed_slice());
                if plotters::style::register_font("sans-serif", FontStyle::Normal, bytes).is_ok() {
                    return true;
                }
            }
        }
        false
    })
}

const COLORS: [RGBColor; 6] = [
    RGBColor(0x4c, 0x72, 0xb0),
    RGBColor(0xdd, 0x84, 0x52),
    RGBColor(0x55, 0xa8, 0x68),
    RGBColor(0xc4, 0x4e, 0x52),
    RGBColor(0x81, 0x72, 0xb3),
    RGBColor(0x93, 0x78, 0x60),
];

/// Grouped horizontal bars: one group per category, one bar per series.
/// `None` values are left out. With `log`, the x axis is logarithmic.
pub fn grouped_bars(
    path: &Path,
    title: &str,
    x_label: &str,
    categories: &[String],
    series: &[(String, Vec<Option<f64>>)],
    log: bool,
) -> Result<(), String> {
    if !font_ready() {
        return Err("no DejaVuSans.ttf found (apt-get install fonts-dejavu-core)".into());
    }
    let values: Vec<f64> = series
        .iter()
        .flat_map(|(_, v)| v.iter().flatten().copied())
        .filter(|v| v.is_finite() && *v > 0.0)
        .collect();
    if values.is_empty() || categories.is_empty() {
        return Ok(());
    }
    let max = values.iter().cloned().fold(f64::MIN, f64::max) * 1.15;
    let min = values.iter().cloned().fold(f64::MAX, f64::min) / 2.0;
    let nser = series.len().max(1);
    let group_h = (nser as u32 * 14 + 10).max(24);
    let height = 120 + group_h * categories.len() as u32;
    let root = BitMapBackend::new(path, (1100, height)).into_drawing_area();
    root.fill(&WHITE).map_err(|e| e.to_string())?;
    let err = |e: &dyn std::fmt::Display| e.to_string();
    let cats = categories.len() as f64;
    let draw = |x_range_log: bool| -> Result<(), String> {
        macro_rules! body {
            ($chart:expr) => {{
                let mut chart = $chart;
                let base = if x_range_log { min } else { 0.0 };
                chart
                    .configure_mesh()
                    .disable_y_mesh()
                    .y_labels(categories.len())
                    .y_label_formatter(&|y: &f64| {
                        let i = (cats - 1.0 - y.floor()) as isize;
                        if i >= 0 && (i as usize) < categories.len() && y.fract() == 0.0 {
                            categories[i as usize].clone()
                        } else {
                            String::new()
                        }
                    })
                    .x_desc(x_label)
                    .label_style(("sans-serif", 12))
                    .draw()
                    .map_err(|e| err(&e))?;
                for (si, (name, vals)) in series.iter().enumerate() {
                    let color = COLORS[si % COLORS.len()];
                    let bar_h = 0.8 / nser as f64;
                    let bars = vals.iter().enumerate().filter_map(|(ci, v)| {
                        let v = (*v)?;
                        if !v.is_finite() || v <= 0.0 {
                            return None;
                        }
                        let top = cats - 1.0 - ci as f64 + 0.4 - si as f64 * bar_h;
                        Some(Rectangle::new(
                            [(base, top - bar_h), (v, top)],
                            color.filled(),
                        ))
                    });
                    chart
                        .draw_series(bars)
                        .map_err(|e| err(&e))?
                        .label(name.as_str())
                        .legend(move |(x, y)| {
                            Rectangle::new([(x, y - 5), (x + 12, y + 5)], color.filled())
                        });
                }
                chart
                    .configure_series_labels()
                    .position(SeriesLabelPosition::LowerRight)
                    .background_style(WHITE.mix(0.85))
                    .border_style(BLACK)
                    .label_font(("sans-serif", 13))
                    .draw()
                    .map_err(|e| err(&e))?;
            }};
        }
        let mut builder = ChartBuilder::on(&root);
        builder
            .caption(title, ("sans-serif", 18))
            .margin(12)
            .x_label_area_size(40)
            .y_label_area_size(300);
        if x_range_log {
            body!(builder
                .build_cartesian_2d((min..max).log_scale(), -0.5f64..cats - 0.5)
                .map_err(|e| err(&e))?);
        } else {
            body!(builder
                .build_cartesian_2d(0f64..max, -0.5f64..cats - 0.5)
                .map_err(|e| err(&e))?);
        }
        Ok(())
    };
    draw(log)?;
    root.present().map_err(|e| e.to_string())?;
    Ok(())
}
