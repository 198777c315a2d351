//! Reading a replica's `/metrics` (Prometheus text): the decisions it took
//! without Redis because Redis did not answer in time.

use crate::store::records::Fallbacks;
use reference_api::server::REDIS_ERRORS;

pub(crate) fn fallbacks(text: &str) -> Fallbacks {
    let mut f = Fallbacks::default();
    for line in text.lines().filter(|l| l.starts_with(REDIS_ERRORS)) {
        let Some(value) = line.rsplit(' ').next().and_then(|v| v.parse::<u64>().ok()) else {
            continue;
        };
        if line.contains("decision=\"admitted\"") {
            f.failed_open += value;
        } else if line.contains("decision=\"rejected\"") {
            f.failed_closed += value;
        }
    }
    f
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_both_counters_and_ignores_the_rest() {
        let text = "# TYPE rlbench_requests_total counter\n\
            rlbench_requests_total{replica=\"r0\",decision=\"admitted\"} 99\n\
            rlbench_redis_errors_total{replica=\"r0\",decision=\"admitted\"} 7\n\
            rlbench_redis_errors_total{replica=\"r0\",decision=\"rejected\"} 3\n";
        assert_eq!(
            fallbacks(text),
            Fallbacks {
                failed_open: 7,
                failed_closed: 3
            }
        );
        assert_eq!(fallbacks("garbage"), Fallbacks::default());
    }
}
