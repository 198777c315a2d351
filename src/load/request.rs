//! What every request of a load carries besides its target and key (the
//! [`Template`]), and the request built from it for one target and key.

use bytes::Bytes;
use http_body_util::Empty;
use hyper::header::{HeaderMap, HeaderName};
use hyper::{Method, Request, Uri};

/// What a limiter answers by default when it says no.
pub const DEFAULT_LIMITED: &[u16] = &[429];

/// What every request of a load carries besides its target and key.
#[derive(Clone, Debug)]
pub struct Template {
    pub method: Method,
    /// Extra headers (`--header`), sent on every request.
    pub headers: HeaderMap,
    /// The header that carries the rate-limit key; none sends no key.
    pub key_header: Option<HeaderName>,
    /// The key header's value around the key (a `key_template` such as
    /// `"Bearer {key}"`); both empty sends the key as it is.
    pub key_affix: (String, String),
    /// Statuses that mean "limited" (429 by default; nginx says 503).
    pub limited: Vec<u16>,
}

impl Template {
    /// `method`, no extra headers, the key in `key_header` as it is, 429 limited.
    pub fn new(method: Method, key_header: Option<HeaderName>) -> Self {
        Template {
            method,
            headers: HeaderMap::new(),
            key_header,
            key_affix: Default::default(),
            limited: DEFAULT_LIMITED.to_vec(),
        }
    }
}

/// What every request to one target shares: the path for the request
/// line, and `Host` plus the template's headers. Built once per connection.
pub(super) struct Prepared {
    origin: Uri,
    headers: HeaderMap,
}

impl Prepared {
    pub(super) fn new(template: &Template, uri: &Uri) -> Option<Self> {
        let origin = uri
            .path_and_query()
            .map_or("/", |p| p.as_str())
            .parse()
            .ok()?;
        let mut headers = template.headers.clone();
        let host = hyper::header::HeaderValue::from_str(uri.authority()?.as_str()).ok()?;
        headers.insert(hyper::header::HOST, host);
        Some(Prepared { origin, headers })
    }

    /// The request, with `key` in the template's key header.
    pub(super) fn request(&self, template: &Template, key: &str) -> Option<Request<Empty<Bytes>>> {
        let mut request = Request::new(Empty::new());
        *request.method_mut() = template.method.clone();
        *request.uri_mut() = self.origin.clone();
        *request.headers_mut() = self.headers.clone();
        if let Some(name) = &template.key_header {
            let (before, after) = &template.key_affix;
            let value = if before.is_empty() && after.is_empty() {
                hyper::header::HeaderValue::from_str(key).ok()?
            } else {
                hyper::header::HeaderValue::from_str(&format!("{before}{key}{after}")).ok()?
            };
            request.headers_mut().insert(name.clone(), value);
        }
        Some(request)
    }
}
