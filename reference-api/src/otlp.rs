//! The replica's metrics sent by OTLP (gRPC) to a collector, when its
//! config names one (`otlp`): the OpenTelemetry SDK observes the same
//! snapshot `/metrics` renders (`metrics.rs`), one instrument per family,
//! every `interval_ms`, cumulative. An export that fails is the SDK's to
//! report and retry at the next interval; decisions never wait on it.

use crate::config::Otlp;
use crate::metrics::{Kind, Sample, FAMILIES};
use opentelemetry::metrics::MeterProvider as _;
use opentelemetry::KeyValue;
use opentelemetry_otlp::WithExportConfig;
use opentelemetry_sdk::metrics::{PeriodicReader, SdkMeterProvider};
use opentelemetry_sdk::Resource;
use std::sync::Arc;
use std::time::Duration;

/// How long one export may take before it is abandoned.
const EXPORT_TIMEOUT: Duration = Duration::from_secs(5);
/// How long a stopping replica waits for its last export: less than the
/// grace rlbench gives a replica to exit (`stack/child.rs`).
const LAST_EXPORT: Duration = Duration::from_millis(800);

/// Where a snapshot comes from (the replica's state, while it lives).
pub type Source = Arc<dyn Fn() -> Vec<Sample> + Send + Sync>;

/// A running exporter: call [`Exporter::shutdown`] to send the last values.
pub struct Exporter {
    provider: SdkMeterProvider,
}

/// Why the OTLP exporter could not start.
#[derive(Debug, thiserror::Error)]
pub enum OtlpError {
    /// Not `http://HOST:PORT`.
    #[error(
        "OTLP endpoint {endpoint:?}: expected http://HOST:PORT (a collector's gRPC port; this build sends no TLS)"
    )]
    Endpoint { endpoint: String },
    #[error("OTLP exporter for {endpoint}: {source}")]
    Exporter {
        endpoint: String,
        source: opentelemetry_otlp::ExporterBuildError,
    },
}

/// Starts exporting `source`'s samples to `config.endpoint`, as service
/// `reference-api` with `service.instance.id` = `replica`. Must be called
/// within the Tokio runtime, whose tasks carry the gRPC connection.
pub fn start(config: &Otlp, replica: &str, source: Source) -> Result<Exporter, OtlpError> {
    let endpoint = &config.endpoint;
    let plain = endpoint
        .strip_prefix("http://")
        .is_some_and(|rest| !rest.is_empty() && !rest.contains(char::is_whitespace));
    if !plain {
        return Err(OtlpError::Endpoint {
            endpoint: endpoint.clone(),
        });
    }
    let exporter = opentelemetry_otlp::MetricExporter::builder()
        .with_tonic()
        .with_endpoint(config.endpoint.clone())
        .with_timeout(EXPORT_TIMEOUT)
        .build()
        .map_err(|source| OtlpError::Exporter {
            endpoint: config.endpoint.clone(),
            source,
        })?;
    let reader = PeriodicReader::builder(exporter)
        .with_interval(Duration::from_millis(config.interval_ms.max(1)))
        .build();
    let resource = Resource::builder()
        .with_service_name("reference-api")
        .with_attribute(KeyValue::new("service.instance.id", replica.to_string()))
        .build();
    let provider = SdkMeterProvider::builder()
        .with_reader(reader)
        .with_resource(resource)
        .build();
    let meter = provider.meter("reference-api");
    for family in FAMILIES {
        let name = family.name;
        let source = source.clone();
        let observe = move |observer: &dyn opentelemetry::metrics::AsyncInstrument<u64>| {
            for s in source().iter().filter(|s| s.family == name) {
                let attributes: Vec<KeyValue> = s
                    .labels
                    .iter()
                    .map(|(k, v)| KeyValue::new(*k, v.clone()))
                    .collect();
                observer.observe(s.value, &attributes);
            }
        };
        // The instruments stay registered with the meter provider: their
        // handles need not be kept.
        match family.kind {
            Kind::Counter => {
                meter
                    .u64_observable_counter(name)
                    .with_description(family.help)
                    .with_callback(observe)
                    .build();
            }
            Kind::Gauge => {
                meter
                    .u64_observable_gauge(name)
                    .with_description(family.help)
                    .with_callback(observe)
                    .build();
            }
        }
    }
    Ok(Exporter { provider })
}

impl Exporter {
    /// Sends the values of now and stops, waiting at most [`LAST_EXPORT`]:
    /// on a thread of its own, since the SDK blocks until its export is
    /// done, and one a stopping process need not wait for.
    pub async fn shutdown(self) {
        let provider = self.provider;
        let (done, finished) = tokio::sync::oneshot::channel();
        std::thread::spawn(move || {
            let _ = done.send(provider.shutdown());
        });
        // Said on stderr, which rlbench keeps with the replica's logs.
        match tokio::time::timeout(LAST_EXPORT, finished).await {
            Ok(Ok(Ok(()))) => {}
            Ok(Ok(Err(e))) => eprintln!("reference-api: OTLP: the last export failed: {e}"),
            Ok(Err(_)) => eprintln!("reference-api: OTLP: the exporter stopped unasked"),
            Err(_) => eprintln!(
                "reference-api: OTLP: the last export took over {} ms: left unsent",
                LAST_EXPORT.as_millis()
            ),
        }
    }
}
