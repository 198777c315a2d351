//! `[target] metrics = { ... }`: where the limiter's own counters are read
//! (`url`/`urls` to scrape, or a `prometheus` server that scrapes them;
//! for the reference API, its replicas' `/metrics` unless told) and the
//! series that count its admits and its rejects. Every URL is `http://`
//! on this machine unless the target allows remote ones.

use super::source::{Result, Source};
use crate::metrics::selector::{self, Selector};
use crate::scenario::raw::RawMetrics;
use crate::scenario::spec::{MetricsSource, MetricsSpec};
use hyper::Uri;
use toml::Spanned;

/// The reference API's counters.
pub(crate) const REFERENCE_ADMITTED: &str = r#"rlbench_requests_total{decision="admitted"}"#;
pub(crate) const REFERENCE_REJECTED: &str = r#"rlbench_requests_total{decision="rejected"}"#;

/// `reference`: the target is the reference API.
pub(super) fn metrics(
    src: &Source,
    raw: &Spanned<RawMetrics>,
    reference: bool,
    allow_remote: bool,
) -> Result<MetricsSpec> {
    let m = raw.get_ref();
    let given = [
        m.url.as_ref().map(|v| v.span()),
        m.urls.as_ref().map(|v| v.span()),
        m.prometheus.as_ref().map(|v| v.span()),
    ];
    if given.iter().flatten().count() > 1 {
        let second = given.into_iter().flatten().nth(1);
        return Err(src.error(
            second,
            "metrics takes one of url, urls and prometheus: where the counters are read",
        ));
    }
    let url = |v: &Spanned<String>| -> Result<Uri> {
        let uri = crate::target::target_url(v.get_ref(), allow_remote)
            .map_err(|e| src.at(v, format!("metrics: {e}")))?;
        if uri.scheme_str() != Some("http") {
            return Err(src.at(
                v,
                "metrics are read over http:// (an exporter or Prometheus behind TLS is not read yet)",
            ));
        }
        Ok(uri)
    };
    let source = if let Some(u) = &m.url {
        MetricsSource::Scrape(vec![url(u)?])
    } else if let Some(list) = &m.urls {
        if list.get_ref().is_empty() {
            return Err(src.at(list, "metrics urls needs at least one URL"));
        }
        MetricsSource::Scrape(list.get_ref().iter().map(url).collect::<Result<_>>()?)
    } else if let Some(p) = &m.prometheus {
        let uri = url(p)?;
        if uri.path() != "/" || uri.query().is_some() {
            return Err(src.at(
                p,
                "prometheus is the server's base URL, like \"http://127.0.0.1:9090\" (its query API is found from it)",
            ));
        }
        MetricsSource::Prometheus(uri)
    } else if reference {
        MetricsSource::Replicas
    } else {
        return Err(src.at(
            raw,
            "metrics needs url, urls or prometheus: where the limiter's counters are read",
        ));
    };
    let read = |v: &Option<Spanned<String>>| -> Result<Option<Selector>> {
        v.as_ref()
            .map(|s| selector::parse(s.get_ref()).map_err(|e| src.at(s, e.to_string())))
            .transpose()
    };
    let (mut admitted, mut rejected) = (read(&m.admitted)?, read(&m.rejected)?);
    if admitted.is_none() && rejected.is_none() {
        if !reference {
            return Err(src.at(
                raw,
                "metrics needs admitted or rejected (or both): the series that count the limiter's decisions, e.g. admitted = 'requests_total{code=\"200\"}'",
            ));
        }
        admitted = selector::parse(REFERENCE_ADMITTED).ok();
        rejected = selector::parse(REFERENCE_REJECTED).ok();
    }
    Ok(MetricsSpec {
        source,
        admitted,
        rejected,
    })
}
