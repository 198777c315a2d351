//! Reading a limiter's own counters: scraping its `/metrics` (each
//! replica's, or the URLs given) or asking a Prometheus server that
//! scrapes it (its HTTP API, `GET /api/v1/query`). A reading is each
//! matching series' value by a name that tells the series apart (where it
//! was read, then its labels). Every answer is someone else's bytes: its
//! size is bounded, its text parsed strictly, its numbers checked.
//!
//! Prometheus answers from its last scrape, so a reading that must follow
//! a moment (the load's end) waits for a scrape that began after it: on
//! Prometheus' own clock, it asks `time()` first, then waits until
//! `timestamp(selector)` of every matching series is later.

use super::error::{AnswerError, ReadError};
use super::exposition;
use super::selector::Selector;
use super::{MetricsSource, MetricsSpec};
use bytes::Bytes;
use http_body_util::{BodyExt, Empty, Limited};
use hyper::Uri;
use hyper_util::client::legacy::connect::HttpConnector;
use hyper_util::client::legacy::Client;
use hyper_util::rt::TokioExecutor;
use std::collections::BTreeMap;
use std::time::Duration;

/// The most an answer may weigh.
const MAX_ANSWER_BYTES: usize = 32 << 20;
/// How long one request may take.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a reading waits for Prometheus to scrape after the moment it
/// must follow.
pub(crate) const FRESH_WITHIN: Duration = Duration::from_secs(60);

/// Each matching series' value.
pub(crate) type Values = BTreeMap<String, f64>;

/// One reading: the admitted selector's series and the rejected one's.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) struct Reading {
    pub admitted: Values,
    pub rejected: Values,
}

pub(crate) struct Reader {
    from: From,
    /// Where, in words.
    source: String,
    admitted: Option<Selector>,
    rejected: Option<Selector>,
    client: Client<HttpConnector, Empty<Bytes>>,
}

enum From {
    Scrape(Vec<Uri>),
    Prometheus(String),
}

impl Reader {
    /// `replicas`: the base URLs of the replicas rlbench started, for
    /// `MetricsSource::Replicas`.
    pub(crate) fn new(spec: &MetricsSpec, replicas: &[String]) -> Result<Reader, ReadError> {
        let from = match &spec.source {
            MetricsSource::Replicas => From::Scrape(
                replicas
                    .iter()
                    .map(|r| format!("{r}/metrics").parse::<Uri>())
                    .collect::<Result<_, _>>()
                    .map_err(ReadError::ReplicaAddress)?,
            ),
            MetricsSource::Scrape(urls) => From::Scrape(urls.clone()),
            MetricsSource::Prometheus(base) => {
                From::Prometheus(base.to_string().trim_end_matches('/').to_string())
            }
        };
        let source = match (&spec.source, &from) {
            (MetricsSource::Replicas, _) if replicas.len() == 1 => "the replica's /metrics".into(),
            (MetricsSource::Replicas, _) => format!("the {} replicas' /metrics", replicas.len()),
            (_, From::Scrape(urls)) if urls.len() == 1 => urls[0].to_string(),
            (_, From::Scrape(urls)) => format!("{} and {} more", urls[0], urls.len() - 1),
            (_, From::Prometheus(base)) => format!("Prometheus at {base}"),
        };
        let mut connector = HttpConnector::new();
        connector.set_connect_timeout(Some(REQUEST_TIMEOUT));
        Ok(Reader {
            source,
            from,
            admitted: spec.admitted.clone(),
            rejected: spec.rejected.clone(),
            client: Client::builder(TokioExecutor::new()).build(connector),
        })
    }

    /// Where the counts come from, in words.
    pub(crate) fn source(&self) -> String {
        self.source.clone()
    }

    pub(crate) fn selectors(&self) -> (Option<String>, Option<String>) {
        (
            self.admitted.as_ref().map(ToString::to_string),
            self.rejected.as_ref().map(ToString::to_string),
        )
    }

    /// A reading of the counters as they are now, or (Prometheus) as last
    /// scraped.
    pub(crate) async fn read(&self) -> Result<Reading, ReadError> {
        match &self.from {
            From::Scrape(urls) => self.scrape(urls).await,
            From::Prometheus(base) => {
                let mut r = Reading::default();
                if let Some(s) = &self.admitted {
                    r.admitted = self.query(base, &s.to_string(), None).await?.1;
                }
                if let Some(s) = &self.rejected {
                    r.rejected = self.query(base, &s.to_string(), None).await?.1;
                }
                Ok(r)
            }
        }
    }

    /// A reading of the counters as they were after this call began: a
    /// scrape is that at once; Prometheus is waited for (at most
    /// [`FRESH_WITHIN`]).
    pub(crate) async fn read_fresh(&self) -> Result<Reading, ReadError> {
        let From::Prometheus(base) = &self.from else {
            return self.read().await;
        };
        let (since, _) = self.query(base, "time()", None).await?;
        let selectors: Vec<&Selector> = self.admitted.iter().chain(&self.rejected).collect();
        let deadline = tokio::time::Instant::now() + FRESH_WITHIN;
        loop {
            let mut at = None;
            let mut fresh = true;
            let mut any = false;
            for s in &selectors {
                let (eval, stamps) = self.query(base, &format!("timestamp({s})"), at).await?;
                at = Some(eval);
                any |= !stamps.is_empty();
                fresh &= stamps.values().all(|&t| t > since);
            }
            let past = tokio::time::Instant::now() >= deadline;
            if (fresh && any) || past {
                if !fresh {
                    return Err(ReadError::NotScraped {
                        base: base.clone(),
                        within_s: FRESH_WITHIN.as_secs(),
                    });
                }
                // The values as of the same instant the timestamps were.
                let mut r = Reading::default();
                if let Some(s) = &self.admitted {
                    r.admitted = self.query(base, &s.to_string(), at).await?.1;
                }
                if let Some(s) = &self.rejected {
                    r.rejected = self.query(base, &s.to_string(), at).await?.1;
                }
                return Ok(r);
            }
            tokio::time::sleep(Duration::from_millis(250)).await;
        }
    }

    async fn scrape(&self, urls: &[Uri]) -> Result<Reading, ReadError> {
        let mut r = Reading::default();
        for (i, url) in urls.iter().enumerate() {
            let text = self.get(url).await?;
            let samples = exposition::parse(&text).map_err(|source| ReadError::Exposition {
                url: url.to_string(),
                source,
            })?;
            for s in samples {
                for (selector, into) in [
                    (&self.admitted, &mut r.admitted),
                    (&self.rejected, &mut r.rejected),
                ] {
                    if selector
                        .as_ref()
                        .is_some_and(|sel| sel.matches(&s.name, &s.labels))
                    {
                        let id = format!("{i} {}", series_id(&s.name, s.labels.clone()));
                        if into.insert(id.clone(), s.value).is_some() {
                            return Err(ReadError::TwiceScraped {
                                url: url.to_string(),
                                id,
                            });
                        }
                    }
                }
            }
        }
        Ok(r)
    }

    /// `GET {base}/api/v1/query`: the evaluation time and each series'
    /// value (a scalar is one series named "").
    async fn query(
        &self,
        base: &str,
        promql: &str,
        at: Option<f64>,
    ) -> Result<(f64, Values), ReadError> {
        let mut url = url::Url::parse(&format!("{base}/api/v1/query")).map_err(|source| {
            ReadError::PrometheusUrl {
                base: base.into(),
                source,
            }
        })?;
        url.query_pairs_mut().append_pair("query", promql);
        if let Some(t) = at {
            url.query_pairs_mut()
                .append_pair("time", &format!("{t:.3}"));
        }
        let uri: Uri = url
            .as_str()
            .parse()
            .map_err(|source| ReadError::PrometheusUri {
                base: base.into(),
                source,
            })?;
        let text = self.get(&uri).await?;
        answer(&text).map_err(|source| ReadError::Answer {
            base: base.into(),
            promql: promql.into(),
            source,
        })
    }

    async fn get(&self, url: &Uri) -> Result<String, ReadError> {
        let request = hyper::Request::get(url)
            .body(Empty::new())
            .map_err(|source| ReadError::Request {
                url: url.to_string(),
                source,
            })?;
        let exchange = async {
            let response =
                self.client
                    .request(request)
                    .await
                    .map_err(|source| ReadError::Unanswered {
                        url: url.to_string(),
                        source,
                    })?;
            let status = response.status();
            let body = Limited::new(response.into_body(), MAX_ANSWER_BYTES)
                .collect()
                .await
                .map_err(|source| ReadError::Body {
                    url: url.to_string(),
                    source,
                })?
                .to_bytes();
            let text = String::from_utf8(body.to_vec()).map_err(|e| ReadError::NotUtf8 {
                url: url.to_string(),
                source: e.utf8_error(),
            })?;
            if !status.is_success() {
                let said: String = text.chars().take(200).collect();
                return Err(ReadError::Status {
                    url: url.to_string(),
                    status,
                    said: said.trim().to_string(),
                });
            }
            Ok(text)
        };
        tokio::time::timeout(REQUEST_TIMEOUT, exchange)
            .await
            .unwrap_or_else(|_| {
                Err(ReadError::Timeout {
                    url: url.to_string(),
                    within_s: REQUEST_TIMEOUT.as_secs(),
                })
            })
    }
}

/// `name{a="1",b="2"}`, labels sorted: one series however its labels were ordered.
fn series_id(name: &str, mut labels: Vec<(String, String)>) -> String {
    labels.sort();
    let inner: Vec<String> = labels.iter().map(|(k, v)| format!("{k}={v:?}")).collect();
    format!("{name}{{{}}}", inner.join(","))
}

/// A Prometheus query answer: its evaluation time and the series' values.
fn answer(text: &str) -> Result<(f64, Values), AnswerError> {
    #[derive(serde::Deserialize)]
    struct Answer {
        status: String,
        #[serde(default)]
        error: Option<String>,
        #[serde(default)]
        data: Option<Data>,
    }
    #[derive(serde::Deserialize)]
    #[serde(rename_all = "camelCase")]
    struct Data {
        result_type: String,
        result: serde_json::Value,
    }
    #[derive(serde::Deserialize)]
    struct Series {
        #[serde(default)]
        metric: BTreeMap<String, String>,
        value: (f64, String),
    }
    let a: Answer = serde_json::from_str(text).map_err(AnswerError::NotAnswer)?;
    if a.status != "success" {
        let why: String = a.error.unwrap_or_default().chars().take(200).collect();
        return Err(AnswerError::Status {
            status: a.status,
            why,
        });
    }
    let data = a.data.ok_or(AnswerError::NoData)?;
    let number = |v: &str| {
        v.parse::<f64>()
            .map_err(|_| AnswerError::NotNumber(v.into()))
    };
    match data.result_type.as_str() {
        "scalar" => {
            let (t, v): (f64, String) =
                serde_json::from_value(data.result).map_err(AnswerError::BadScalar)?;
            Ok((t, Values::from([(String::new(), number(&v)?)])))
        }
        "vector" => {
            let series: Vec<Series> =
                serde_json::from_value(data.result).map_err(AnswerError::BadVector)?;
            if series.len() > exposition::MAX_SAMPLES {
                return Err(AnswerError::TooMany {
                    max: exposition::MAX_SAMPLES,
                });
            }
            let mut out = Values::new();
            let mut at = f64::NAN;
            for s in series {
                at = s.value.0;
                let labels = s
                    .metric
                    .into_iter()
                    .filter(|(k, _)| k != "__name__")
                    .collect();
                let id = series_id("", labels);
                if out.insert(id.clone(), number(&s.value.1)?).is_some() {
                    return Err(AnswerError::Twice(id));
                }
            }
            Ok((at, out))
        }
        other => Err(AnswerError::ResultType(other.into())),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_prometheus_answer_gives_its_time_and_series_apart_from_the_name() {
        let vector = r#"{"status":"success","data":{"resultType":"vector","result":[
            {"metric":{"__name__":"x","replica":"r0"},"value":[1700000000.5,"12"]},
            {"metric":{"replica":"r1"},"value":[1700000000.5,"3"]}]}}"#;
        let (t, v) = answer(vector).unwrap();
        assert_eq!(t, 1700000000.5);
        assert_eq!(v[r#"{replica="r0"}"#], 12.0);
        assert_eq!(v.values().sum::<f64>(), 15.0);
        let scalar =
            r#"{"status":"success","data":{"resultType":"scalar","result":[17.25,"17.25"]}}"#;
        assert_eq!(
            answer(scalar).unwrap(),
            (17.25, Values::from([(String::new(), 17.25)]))
        );
    }

    #[test]
    fn a_bad_prometheus_answer_is_named() {
        for (text, says) in [
            ("<html>", "not a query answer"),
            (r#"{"status":"error","error":"parse error"}"#, "parse error"),
            (r#"{"status":"success"}"#, "without data"),
            (
                r#"{"status":"success","data":{"resultType":"matrix","result":[]}}"#,
                "a matrix",
            ),
            (
                r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"x"]}]}}"#,
                "not a number",
            ),
            (
                r#"{"status":"success","data":{"resultType":"vector","result":[{"metric":{},"value":[1,"1"]},{"metric":{},"value":[1,"2"]}]}}"#,
                "twice",
            ),
            (
                r#"{"status":"success","data":{"resultType":"vector","result":{}}}"#,
                "a bad vector",
            ),
        ] {
            let e = answer(text).unwrap_err().to_string();
            assert!(e.contains(says), "{text}: {e}");
        }
    }

    #[test]
    fn series_are_one_whatever_their_labels_order() {
        let a = series_id(
            "x",
            vec![("b".into(), "2".into()), ("a".into(), "1".into())],
        );
        let b = series_id(
            "x",
            vec![("a".into(), "1".into()), ("b".into(), "2".into())],
        );
        assert_eq!(a, b);
        assert_eq!(a, r#"x{a="1",b="2"}"#);
    }

    proptest::proptest! {
        #[test]
        fn any_prometheus_answer_is_read_or_refused(text in "\\PC{0,200}") {
            let _ = answer(&text);
        }
    }
}
