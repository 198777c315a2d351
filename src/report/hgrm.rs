//! HdrHistogram's percentile-distribution text (`*.hgrm`), as wrk2 and
//! HdrHistogram's own tools print it, so existing plotters read ours; and
//! the V2 binary encoding (base64) that lets runs be merged later without
//! averaging percentiles.

use base64::Engine;
use hdrhistogram::serialization::{Serializer, V2Serializer};
use hdrhistogram::Histogram;
use std::fmt::Write;

/// Values recorded in µs, printed in ms.
const SCALE: f64 = 1_000.0;

pub(crate) fn percentile_distribution(h: &Histogram<u64>) -> String {
    let mut out = String::new();
    let _ = writeln!(
        out,
        "{:>12} {:>14} {:>10} {:>14}\n",
        "Value", "Percentile", "TotalCount", "1/(1-Percentile)"
    );
    if !h.is_empty() {
        let mut total = 0u64;
        for v in h.iter_quantiles(5) {
            total += v.count_since_last_iteration();
            let value = v.value_iterated_to() as f64 / SCALE;
            let q = v.quantile_iterated_to();
            if q < 1.0 {
                let _ = writeln!(
                    out,
                    "{value:>12.3} {q:>2.12} {total:>10} {:>14.2}",
                    1.0 / (1.0 - q)
                );
            } else {
                let _ = writeln!(out, "{value:>12.3} {q:>2.12} {total:>10}");
            }
        }
    }
    let _ = writeln!(
        out,
        "#[Mean    = {:>12.3}, StdDeviation   = {:>12.3}]",
        h.mean() / SCALE,
        h.stdev() / SCALE
    );
    let _ = writeln!(
        out,
        "#[Max     = {:>12.3}, Total count    = {:>12}]",
        h.max() as f64 / SCALE,
        h.len()
    );
    let _ = writeln!(
        out,
        "#[Buckets = {:>12}, SubBuckets     = {:>12}]",
        h.buckets(),
        h.distinct_values()
    );
    out
}

/// HdrHistogram V2 encoding, base64 (values in µs).
pub(crate) fn encode(h: &Histogram<u64>) -> String {
    let mut bytes = Vec::new();
    match V2Serializer::new().serialize(h, &mut bytes) {
        Ok(_) => base64::engine::general_purpose::STANDARD.encode(bytes),
        Err(_) => String::new(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hdrhistogram::serialization::Deserializer;

    fn sample() -> Histogram<u64> {
        let mut h = Histogram::<u64>::new_with_bounds(1, 3_600_000_000, 3).unwrap();
        for us in 1..=1_000u64 {
            h.record(us * 10).unwrap(); // 10 µs .. 10 ms
        }
        h
    }

    #[test]
    fn the_text_has_the_hdrhistogram_layout() {
        let text = percentile_distribution(&sample());
        let lines: Vec<&str> = text.lines().collect();
        assert!(lines[0].trim_start().starts_with("Value"), "{}", lines[0]);
        assert_eq!(lines[1], "");
        let rows: Vec<Vec<&str>> = lines[2..]
            .iter()
            .take_while(|l| !l.starts_with('#'))
            .map(|l| l.split_whitespace().collect())
            .collect();
        assert!(rows.len() > 20);
        let values: Vec<f64> = rows.iter().map(|r| r[0].parse().unwrap()).collect();
        assert!(values.windows(2).all(|w| w[0] <= w[1]), "values ascend");
        let last = rows.last().unwrap();
        assert_eq!(last.len(), 3, "the 100% line has no 1/(1-p)");
        assert_eq!(last[1], "1.000000000000");
        assert_eq!(last[2], "1000");
        assert!(
            (values.last().unwrap() - 10.0).abs() < 0.01,
            "max 10 ms: {values:?}"
        );
        assert!(text.contains("Total count    =         1000]"), "{text}");
    }

    #[test]
    fn the_encoding_round_trips() {
        let h = sample();
        let bytes = base64::engine::general_purpose::STANDARD
            .decode(encode(&h))
            .unwrap();
        let back: Histogram<u64> = Deserializer::new()
            .deserialize(&mut bytes.as_slice())
            .unwrap();
        assert_eq!(back.len(), 1_000);
        assert_eq!(back.value_at_quantile(0.5), h.value_at_quantile(0.5));
        assert_eq!(back.max(), h.max());
    }
}
