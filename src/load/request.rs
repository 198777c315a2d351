//! What every request of a load carries besides its target and key (the
//! [`Template`]), and its bytes for one target around the key (`Head`).

use hyper::header::{HeaderMap, HeaderName};
use hyper::{Method, Uri};

/// What a limiter answers by default when it says no.
pub(crate) const DEFAULT_LIMITED: &[u16] = &[429];

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

/// The bytes of every request to one target around its key: the request
/// line, `Host`, the template's headers and the key header's name (and
/// affix) before the key, the rest after. Built once per connection, so a
/// request costs one copy into the connection's buffer and no allocation.
pub(super) struct Head {
    before: Vec<u8>,
    after: Vec<u8>,
    /// The key goes between the two (there is a key header).
    keyed: bool,
    /// The method's answers carry no body (HEAD).
    pub(super) head_only: bool,
}

/// Methods whose requests usually carry a body: sent with
/// `content-length: 0`, as servers that insist on a length expect.
const WITH_BODY: [Method; 3] = [Method::POST, Method::PUT, Method::PATCH];

impl Head {
    pub(super) fn new(template: &Template, uri: &Uri) -> Option<Self> {
        let path = uri.path_and_query().map_or("/", |p| p.as_str());
        let mut before = Vec::with_capacity(256);
        before.extend_from_slice(template.method.as_str().as_bytes());
        before.push(b' ');
        before.extend_from_slice(if path.is_empty() { "/" } else { path }.as_bytes());
        before.extend_from_slice(b" HTTP/1.1\r\nhost: ");
        before.extend_from_slice(uri.authority()?.as_str().as_bytes());
        before.extend_from_slice(b"\r\n");
        for (name, value) in &template.headers {
            if name == hyper::header::HOST {
                continue;
            }
            before.extend_from_slice(name.as_str().as_bytes());
            before.extend_from_slice(b": ");
            before.extend_from_slice(value.as_bytes());
            before.extend_from_slice(b"\r\n");
        }
        let mut after = Vec::with_capacity(64);
        if let Some(name) = &template.key_header {
            before.extend_from_slice(name.as_str().as_bytes());
            before.extend_from_slice(b": ");
            before.extend_from_slice(template.key_affix.0.as_bytes());
            after.extend_from_slice(template.key_affix.1.as_bytes());
            after.extend_from_slice(b"\r\n");
        }
        if WITH_BODY.contains(&template.method) {
            after.extend_from_slice(b"content-length: 0\r\n");
        }
        after.extend_from_slice(b"\r\n");
        Some(Head {
            before,
            after,
            keyed: template.key_header.is_some(),
            head_only: template.method == Method::HEAD,
        })
    }

    /// The request with `key` in the key header into `out` (cleared
    /// first); false when the key (with its affix) is no header value.
    pub(super) fn write(&self, key: &str, out: &mut Vec<u8>) -> bool {
        // Visible ASCII, spaces and tabs, as a header value allows.
        if !key
            .bytes()
            .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
        {
            return false;
        }
        out.clear();
        out.extend_from_slice(&self.before);
        if self.keyed {
            out.extend_from_slice(key.as_bytes());
        }
        out.extend_from_slice(&self.after);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn written(template: &Template, uri: &str, key: &str) -> Option<String> {
        let head = Head::new(template, &uri.parse().unwrap())?;
        let mut out = Vec::new();
        head.write(key, &mut out)
            .then(|| String::from_utf8(out).unwrap())
    }

    #[test]
    fn a_request_is_its_line_host_headers_and_key() {
        let mut t = Template::new(Method::POST, Some(HeaderName::from_static("x-customer-id")));
        t.headers.insert(
            HeaderName::from_static("accept"),
            hyper::header::HeaderValue::from_static("*/*"),
        );
        assert_eq!(
            written(&t, "http://127.0.0.1:8080/api/transfers?x=1", "customer-7").unwrap(),
            "POST /api/transfers?x=1 HTTP/1.1\r\nhost: 127.0.0.1:8080\r\naccept: */*\r\n\
             x-customer-id: customer-7\r\ncontent-length: 0\r\n\r\n"
        );
        t.key_affix = ("Bearer ".into(), ";v=1".into());
        t.method = Method::GET;
        assert!(written(&t, "http://[::1]:9/", "k")
            .unwrap()
            .ends_with("host: [::1]:9\r\naccept: */*\r\nx-customer-id: Bearer k;v=1\r\n\r\n"));
        // No key header: no key.
        let plain = Template::new(Method::GET, None);
        assert_eq!(
            written(&plain, "http://127.0.0.1:1", "ignored").unwrap(),
            "GET / HTTP/1.1\r\nhost: 127.0.0.1:1\r\n\r\n"
        );
        // A key that is no header value is refused, not sent.
        assert_eq!(written(&t, "http://127.0.0.1:1/", "a\r\nb"), None);
    }
}
