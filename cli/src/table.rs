//! Human-readable figures: sizes in binary units, durations, counts, and plain text tables.

use serde_json::{Map, Value};

/// Bytes in binary units with three significant digits: `512 B`, `1.50 KiB`, `1.06 TiB`.
pub fn format_bytes(bytes: u64) -> String {
    const UNITS: [&str; 6] = ["KiB", "MiB", "GiB", "TiB", "PiB", "EiB"];
    if bytes < 1024 {
        return format!("{bytes} B");
    }
    let mut v = bytes as f64 / 1024.0;
    let mut unit = 0;
    while v >= 1024.0 && unit + 1 < UNITS.len() {
        v /= 1024.0;
        unit += 1;
    }
    format!("{} {}", three_digits(v), UNITS[unit])
}

fn three_digits(v: f64) -> String {
    if v < 9.995 {
        format!("{v:.2}")
    } else if v < 99.95 {
        format!("{v:.1}")
    } else {
        format!("{v:.0}")
    }
}

/// Seconds as `850 µs`, `12.5 ms` or `3.21 s`.
pub fn format_seconds(seconds: f64) -> String {
    if !seconds.is_finite() {
        format!("{seconds} s")
    } else if seconds.abs() < 1e-3 {
        format!("{} µs", three_digits(seconds * 1e6))
    } else if seconds.abs() < 1.0 {
        format!("{} ms", three_digits(seconds * 1e3))
    } else {
        format!("{seconds:.2} s")
    }
}

/// A count with thousands separators: `1,234,567`.
pub fn format_count(n: u64) -> String {
    let digits = n.to_string();
    let mut out = String::with_capacity(digits.len() + digits.len() / 3);
    for (i, c) in digits.chars().enumerate() {
        if i > 0 && (digits.len() - i) % 3 == 0 {
            out.push(',');
        }
        out.push(c);
    }
    out
}

/// A rate with an SI prefix: `12.3 M`, `850 k`, `42.0`.
pub fn format_rate(per_second: f64) -> String {
    let v = per_second.abs();
    if v >= 1e9 {
        format!("{} G", three_digits(per_second / 1e9))
    } else if v >= 1e6 {
        format!("{} M", three_digits(per_second / 1e6))
    } else if v >= 1e3 {
        format!("{} k", three_digits(per_second / 1e3))
    } else {
        three_digits(per_second)
    }
}

/// A JSON value formatted by what its key says it holds: `*bytes` as sizes, `*seconds` as
/// durations, integers as counts.
pub fn format_field(key: &str, value: &Value) -> String {
    match value {
        Value::Number(n) if key.contains("bytes") => match n.as_u64() {
            Some(b) => format_bytes(b),
            None => n.to_string(),
        },
        Value::Number(n) if key.ends_with("seconds") => {
            format_seconds(n.as_f64().unwrap_or(f64::NAN))
        }
        Value::Number(n) => match (n.as_u64(), n.as_f64()) {
            (Some(c), _) => format_count(c),
            (None, Some(f)) => format!("{f:.6}"),
            _ => n.to_string(),
        },
        Value::Bool(b) => if *b { "yes" } else { "no" }.to_owned(),
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

/// A two-column table of every field of a JSON object, in its order.
pub fn object_table(object: &Map<String, Value>) -> Table {
    let mut t = Table::new(&["", ""]);
    for (k, v) in object {
        t.row(vec![k.replace('_', " "), format_field(k, v)]);
    }
    t
}

/// A plain text table: the first column left-aligned, the others right-aligned.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Table {
    headers: Vec<String>,
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers (all empty: no header line).
    pub fn new(headers: &[&str]) -> Table {
        Table {
            headers: headers.iter().map(|h| h.to_string()).collect(),
            rows: Vec::new(),
        }
    }

    /// Append a row.
    pub fn row(&mut self, cells: Vec<String>) {
        self.rows.push(cells);
    }

    /// The table as text, one line per row, each line ending in a newline.
    pub fn render(&self) -> String {
        let cols = self
            .rows
            .iter()
            .map(Vec::len)
            .chain([self.headers.len()])
            .max()
            .unwrap_or(0);
        let mut widths = vec![0usize; cols];
        let show_headers = self.headers.iter().any(|h| !h.is_empty());
        let all = self
            .rows
            .iter()
            .chain(show_headers.then_some(&self.headers));
        for r in all {
            for (w, c) in widths.iter_mut().zip(r) {
                *w = (*w).max(c.chars().count());
            }
        }
        let line = |r: &[String]| {
            let cells: Vec<String> = (0..cols)
                .map(|i| {
                    let c = r.get(i).map_or("", String::as_str);
                    let pad = " ".repeat(widths[i].saturating_sub(c.chars().count()));
                    if i == 0 {
                        format!("{c}{pad}")
                    } else {
                        format!("{pad}{c}")
                    }
                })
                .collect();
            cells.join("  ").trim_end().to_owned() + "\n"
        };
        let mut out = String::new();
        if show_headers {
            out += &line(&self.headers);
            out += &(widths
                .iter()
                .map(|w| "-".repeat(*w))
                .collect::<Vec<_>>()
                .join("  ")
                + "\n");
        }
        for r in &self.rows {
            out += &line(r);
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn sizes_use_binary_units_and_three_digits() {
        assert_eq!(format_bytes(0), "0 B");
        assert_eq!(format_bytes(1023), "1023 B");
        assert_eq!(format_bytes(1024), "1.00 KiB");
        assert_eq!(format_bytes(1536), "1.50 KiB");
        assert_eq!(format_bytes(64 << 20), "64.0 MiB");
        assert_eq!(format_bytes(256 << 20), "256 MiB");
        assert_eq!(format_bytes(1088 << 30), "1.06 TiB");
        assert_eq!(format_bytes(u64::MAX), "16.0 EiB");
    }

    #[test]
    fn durations_counts_and_rates() {
        assert_eq!(format_seconds(0.000_85), "850 µs");
        assert_eq!(format_seconds(0.0125), "12.5 ms");
        assert_eq!(format_seconds(3.214), "3.21 s");
        assert_eq!(format_count(0), "0");
        assert_eq!(format_count(999), "999");
        assert_eq!(format_count(1_234_567), "1,234,567");
        assert_eq!(format_rate(12_345_678.0), "12.3 M");
        assert_eq!(format_rate(850.0), "850");
    }

    #[test]
    fn fields_are_formatted_by_key() {
        assert_eq!(format_field("resident_bytes", &json!(2048)), "2.00 KiB");
        assert_eq!(format_field("fill_seconds", &json!(0.5)), "500 ms");
        assert_eq!(format_field("launches", &json!(12345)), "12,345");
        assert_eq!(format_field("converged", &json!(true)), "yes");
    }

    #[test]
    fn tables_align_columns() {
        let mut t = Table::new(&["case", "value"]);
        t.row(vec!["a".into(), "1".into()]);
        t.row(vec!["longer".into(), "100".into()]);
        assert_eq!(
            t.render(),
            "case    value\n------  -----\na           1\nlonger    100\n"
        );
        let obj = json!({"tiles_filled": 3, "bytes_read": 1024});
        let s = object_table(obj.as_object().unwrap()).render();
        assert!(s.contains("tiles filled") && s.contains("1.00 KiB"), "{s}");
    }
}
