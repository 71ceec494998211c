//! The Markdown table `bench --peer` prints: medians, peer ÷ codemode ratios, goals met or
//! missed.

/// The nearest-rank `q`th percentile (0 < q ≤ 100) of `samples`; NaN when there are none.
pub(crate) fn percentile(samples: &[f64], q: f64) -> f64 {
    if samples.is_empty() {
        return f64::NAN;
    }
    let mut sorted = samples.to_vec();
    sorted.sort_by(f64::total_cmp);
    let rank = ((q / 100.0) * sorted.len() as f64).ceil() as usize;
    sorted[rank.clamp(1, sorted.len()) - 1]
}

/// The median of `samples` (the mean of the middle two for an even count); `samples` non-empty.
pub(crate) fn median(mut samples: Vec<f64>) -> f64 {
    samples.sort_by(f64::total_cmp);
    let n = samples.len();
    if n % 2 == 1 {
        samples[n / 2]
    } else {
        (samples[n / 2 - 1] + samples[n / 2]) / 2.0
    }
}

/// The unit of a row's figures.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Unit {
    /// Wall milliseconds per program (lower is better).
    Ms,
    /// Execs per second (higher is better).
    PerSec,
}

/// A row's goal for codemode's figure.
#[derive(Debug, Clone, Copy, PartialEq)]
pub(crate) enum Goal {
    /// No goal (the reference the next row's goal is relative to).
    None,
    /// At most this many milliseconds.
    AtMostMs(f64),
    /// At least this many per second.
    AtLeastPerSec(f64),
    /// At most `factor` × `of` milliseconds (the 10-tool time).
    AtMostTimes {
        /// The allowed factor.
        factor: f64,
        /// The reference figure in milliseconds.
        of: f64,
    },
}

impl Goal {
    /// The goal as the table shows it.
    pub(super) fn describe(self) -> String {
        match self {
            Goal::None => "—".to_owned(),
            Goal::AtMostMs(ms) => format!("≤ {}", format_value(ms, Unit::Ms)),
            Goal::AtLeastPerSec(n) => format!("≥ {}", format_value(n, Unit::PerSec)),
            Goal::AtMostTimes { factor, of } => format!(
                "≤ {factor}× the 10-tool time ({})",
                format_value(factor * of, Unit::Ms)
            ),
        }
    }

    /// Whether `value` meets the goal; `None` without one.
    pub(super) fn met(self, value: f64) -> Option<bool> {
        match self {
            Goal::None => None,
            Goal::AtMostMs(ms) => Some(value <= ms),
            Goal::AtLeastPerSec(n) => Some(value >= n),
            Goal::AtMostTimes { factor, of } => Some(value <= factor * of),
        }
    }
}

/// One row of the printed table.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct Row {
    /// What ran.
    pub program: String,
    /// OpenClaw's node executor (`None`: not measured).
    pub node: Option<f64>,
    /// OpenClaw's quickjs executor.
    pub quickjs: Option<f64>,
    /// codemode.
    pub codemode: f64,
    /// The figures' unit.
    pub unit: Unit,
    /// codemode's goal.
    pub goal: Goal,
}

impl Row {
    pub(super) fn time(
        program: &str,
        node: Option<f64>,
        quickjs: Option<f64>,
        codemode: Option<f64>,
        goal: Goal,
    ) -> Row {
        Row {
            program: program.to_owned(),
            node,
            quickjs,
            codemode: codemode.expect("codemode is measured on every row"),
            unit: Unit::Ms,
            goal,
        }
    }

    /// How many times faster codemode is than `peer` (`peer / codemode` for times,
    /// `codemode / peer` for rates).
    pub(super) fn ratio(&self, peer: Option<f64>) -> String {
        match (peer, self.unit) {
            (None, _) => "—".to_owned(),
            (Some(p), Unit::Ms) => format!("{:.1}×", p / self.codemode),
            (Some(p), Unit::PerSec) => format!("{:.1}×", self.codemode / p),
        }
    }
}

/// `1234567.8` → `1,234,568`.
pub(crate) fn thousands(value: f64) -> String {
    let digits = format!("{:.0}", value.abs());
    let mut out = String::new();
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    if value < 0.0 && digits != "0" {
        out.insert(0, '-');
    }
    out
}

/// A figure with its unit: three significant-ish digits for small times, thousands
/// separators for large ones (`0.812 ms`, `4.19 ms`, `86.0 ms`, `2,274 ms`, `2,250/s`).
pub(crate) fn format_value(value: f64, unit: Unit) -> String {
    match unit {
        Unit::PerSec => format!("{}/s", thousands(value)),
        Unit::Ms if value < 1.0 => format!("{value:.3} ms"),
        Unit::Ms if value < 10.0 => format!("{value:.2} ms"),
        Unit::Ms if value < 1_000.0 => format!("{value:.1} ms"),
        Unit::Ms => format!("{} ms", thousands(value)),
    }
}

/// The Markdown table: figures, ratios (how many times faster codemode is than each OpenClaw
/// executor), the goal and whether codemode meets it.
pub(crate) fn render_table(rows: &[Row]) -> String {
    let mut out = String::from(
        "| program | OpenClaw node executor | OpenClaw quickjs executor | codemode | codemode faster (node / quickjs) | goal | goal met? |\n\
         |---|---|---|---|---|---|---|\n",
    );
    let cell = |v: Option<f64>, unit| v.map_or("—".to_owned(), |v| format_value(v, unit));
    for row in rows {
        let verdict = match row.goal.met(row.codemode) {
            None => "—",
            Some(true) => "met",
            Some(false) => "missed",
        };
        out.push_str(&format!(
            "| {} | {} | {} | {} | {} / {} | {} | {} |\n",
            row.program,
            cell(row.node, row.unit),
            cell(row.quickjs, row.unit),
            format_value(row.codemode, row.unit),
            row.ratio(row.node),
            row.ratio(row.quickjs),
            row.goal.describe(),
            verdict
        ));
    }
    out
}
