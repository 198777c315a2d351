//! What every request of a load carries besides its target and key (the
//! [`Template`]: method, headers, body, where the key goes), and its bytes
//! for one target around the key (`Head`).

use hyper::header::{HeaderMap, HeaderName};
use hyper::{Method, Uri};
use std::collections::HashMap;
use std::sync::Arc;

/// What a limiter answers by default when it says no.
pub(crate) const DEFAULT_LIMITED: &[u16] = &[429];

/// What every request of a load carries besides its target and key.
#[derive(Clone, Debug)]
pub(crate) struct Template {
    pub method: Method,
    /// Extra headers (`--header`), sent on every request.
    pub headers: HeaderMap,
    /// The header that carries the rate-limit key; none sends no key there.
    pub key_header: Option<HeaderName>,
    /// The key header's value around the key (a `key_template` such as
    /// `"Bearer {key}"`); both empty sends the key as it is.
    pub key_affix: (String, String),
    /// Where else the key goes: the path, a query parameter, a JSON body's
    /// field (`[load] key`).
    pub key_place: KeyPlace,
    /// The request's body (`[target] body`, `--body`), with its type.
    pub body: Option<Body>,
    /// What is sent in each key's place when it is not the key itself (a
    /// JWT minted for it, an address for X-Forwarded-For).
    pub wire: Option<Arc<HashMap<String, String>>>,
    /// The local address each key's connections come from (`[load] key =
    /// { source_ip }`), when the limiter keys on the client's address.
    pub sources: Option<Arc<HashMap<String, std::net::IpAddr>>>,
    /// Statuses that mean "limited" (429 by default; nginx says 503).
    pub limited: Vec<u16>,
    /// The HTTP version spoken (settled to 1.1 or 2 before any load).
    pub http: Http,
    /// Connections kept for the next request (HTTP/1.1 keep-alive); false:
    /// each request opens its own (`connection: close`), so its set-up
    /// and handshake count in its latency (`[target] keep_alive = false`).
    pub keep_alive: bool,
    /// Headers whose values depend on the key besides the key's own
    /// (`[load] spoof`: each principal's token or address beside a
    /// forged key).
    pub beside: Vec<Beside>,
    /// Appended to each key on the wire (`customer-0003-1a2b3c`), fresh
    /// for each run and arm against a limiter rlbench did not start: what
    /// it remembers of earlier runs and arms is never this arm's keys.
    /// The trace and the reports keep the key's own name. Not for keys
    /// sent as something else (`wire`: a JWT, an address).
    pub key_tag: Option<Arc<str>>,
}

/// A header sent with a value of each key's own: `name: prefix value`.
#[derive(Clone, Debug)]
pub(crate) struct Beside {
    pub name: HeaderName,
    pub prefix: String,
    /// By key name; a key without one is not sent.
    pub values: Arc<HashMap<String, String>>,
}

/// The HTTP version a load speaks (`[target] http`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub(crate) enum Http {
    #[default]
    H1,
    /// HTTP/2: ALPN `h2` over TLS, prior knowledge in cleartext.
    H2,
    /// HTTP/2 where every `https://` target agrees to it (ALPN), else
    /// HTTP/1.1; settled before any load.
    Auto,
}

/// Where a request carries its key, besides a header.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) enum KeyPlace {
    /// Only in `key_header`, if any.
    #[default]
    Header,
    /// The URL's path replaced by `before` + key + `after`.
    Path { before: String, after: String },
    /// A query parameter of this name.
    Query(String),
    /// This field of the JSON object the body is.
    JsonBody(String),
    /// The value of a rate-limit descriptor's entry named `descriptor`, in
    /// `domain`: a `ShouldRateLimit` call to an Envoy rate-limit service
    /// (`rls.rs`); the body is the call's message.
    Rls { domain: String, descriptor: String },
}

/// A request body and its content type.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Body {
    pub bytes: Vec<u8>,
    pub content_type: String,
}

/// The content type a body is sent with when none is given: JSON when it
/// parses as JSON, else plain text.
pub(crate) fn content_type_of(bytes: &[u8]) -> &'static str {
    if serde_json::from_slice::<serde_json::Value>(bytes).is_ok() {
        "application/json"
    } else {
        "text/plain; charset=utf-8"
    }
}

impl Template {
    /// `method`, no extra headers, the key in `key_header` as it is, 429 limited.
    pub(crate) fn new(method: Method, key_header: Option<HeaderName>) -> Self {
        Template {
            method,
            headers: HeaderMap::new(),
            key_header,
            key_affix: Default::default(),
            key_place: KeyPlace::Header,
            body: None,
            wire: None,
            sources: None,
            limited: DEFAULT_LIMITED.to_vec(),
            http: Http::H1,
            keep_alive: true,
            beside: Vec::new(),
            key_tag: None,
        }
    }

    /// Where the key goes besides a header, in words (`None`: only there).
    pub(crate) fn key_in(&self) -> Option<String> {
        if self.sources.is_some() {
            return Some("the client address (one per key)".into());
        }
        match &self.key_place {
            KeyPlace::Header => self.wire.as_ref().and_then(|_| {
                self.key_header
                    .as_ref()
                    .map(|h| format!("{h}, a value minted per key"))
            }),
            KeyPlace::Path { before, after } => Some(format!("the path {before}{{key}}{after}")),
            KeyPlace::Query(name) => Some(format!("the query parameter {name}")),
            KeyPlace::JsonBody(field) => Some(format!("the JSON body's field {field}")),
            KeyPlace::Rls { domain, descriptor } => Some(format!(
                "the rate-limit descriptor {descriptor} (domain {domain}) of a ShouldRateLimit call"
            )),
        }
    }

    /// Whether requests carry a key at all (else every request is one key).
    pub(crate) fn sends_key(&self) -> bool {
        self.key_header.is_some() || self.key_place != KeyPlace::Header || self.sources.is_some()
    }
}

/// One piece of a request's bytes.
#[derive(Debug)]
enum Piece {
    Bytes(Vec<u8>),
    /// The key (or what is sent in its place), written as `Escape` says.
    Key(Escape),
    /// The key's value of `beside[i]`, as a header value.
    Beside(usize),
    /// A `ShouldRateLimit` message with the key in its descriptor.
    Rls {
        domain: String,
        descriptor: String,
    },
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Escape {
    /// As it is: a header value (checked to be one).
    Header,
    /// Percent-encoded, for a path segment or a query value.
    Url,
    /// Inside a JSON string.
    Json,
}

/// The bytes of every request to one target around its key: the request
/// line, `Host`, the template's headers, the key where it goes and the
/// body. Built once per connection, so a request costs a few copies into
/// the connection's buffer and no allocation.
pub(super) struct Head {
    head: Vec<Piece>,
    /// The body's pieces, when there is one.
    body: Option<Vec<Piece>>,
    /// The method's answers carry no body (HEAD).
    pub(super) head_only: bool,
    wire: Option<Arc<HashMap<String, String>>>,
    beside: Vec<Arc<HashMap<String, String>>>,
    /// [`Template::key_tag`].
    tag: Option<Arc<str>>,
}

/// Keys this long and their tag are joined on the stack; longer ones go
/// untagged (key names are `customer-0003`, `customer-0003~0001`).
const JOINED: usize = 128;

/// Methods whose requests usually carry a body: sent with
/// `content-length: 0`, as servers that insist on a length expect.
const WITH_BODY: [Method; 3] = [Method::POST, Method::PUT, Method::PATCH];

/// Where a JSON body's key goes before it is split around it.
const MARK: &str = "\u{0}rlbench-key\u{0}";

impl Head {
    pub(super) fn new(template: &Template, uri: &Uri) -> Option<Self> {
        let mut head = Vec::new();
        let mut bytes = Vec::with_capacity(256);
        bytes.extend_from_slice(template.method.as_str().as_bytes());
        bytes.push(b' ');
        let path = uri.path();
        let query = uri.query();
        match &template.key_place {
            KeyPlace::Rls { .. } => bytes.extend_from_slice(super::rls::PATH.as_bytes()),
            KeyPlace::Path { before, after } => {
                bytes.extend_from_slice(before.as_bytes());
                head.push(Piece::Bytes(std::mem::take(&mut bytes)));
                head.push(Piece::Key(Escape::Url));
                bytes.extend_from_slice(after.as_bytes());
            }
            _ => bytes.extend_from_slice(if path.is_empty() { "/" } else { path }.as_bytes()),
        }
        if let Some(q) = query.filter(|_| !matches!(template.key_place, KeyPlace::Rls { .. })) {
            bytes.push(b'?');
            bytes.extend_from_slice(q.as_bytes());
        }
        if let KeyPlace::Query(name) = &template.key_place {
            bytes.push(if query.is_some() { b'&' } else { b'?' });
            bytes.extend_from_slice(name.as_bytes());
            bytes.push(b'=');
            head.push(Piece::Bytes(std::mem::take(&mut bytes)));
            head.push(Piece::Key(Escape::Url));
        }
        bytes.extend_from_slice(b" HTTP/1.1\r\nhost: ");
        bytes.extend_from_slice(uri.authority()?.as_str().as_bytes());
        bytes.extend_from_slice(b"\r\n");
        if !template.keep_alive {
            bytes.extend_from_slice(b"connection: close\r\n");
        }
        for (name, value) in &template.headers {
            if name == hyper::header::HOST
                || (template.body.is_some() && name == hyper::header::CONTENT_TYPE)
            {
                continue;
            }
            bytes.extend_from_slice(name.as_str().as_bytes());
            bytes.extend_from_slice(b": ");
            bytes.extend_from_slice(value.as_bytes());
            bytes.extend_from_slice(b"\r\n");
        }
        if let Some(name) = &template.key_header {
            bytes.extend_from_slice(name.as_str().as_bytes());
            bytes.extend_from_slice(b": ");
            bytes.extend_from_slice(template.key_affix.0.as_bytes());
            head.push(Piece::Bytes(std::mem::take(&mut bytes)));
            head.push(Piece::Key(Escape::Header));
            bytes.extend_from_slice(template.key_affix.1.as_bytes());
            bytes.extend_from_slice(b"\r\n");
        }
        for (i, b) in template.beside.iter().enumerate() {
            bytes.extend_from_slice(b.name.as_str().as_bytes());
            bytes.extend_from_slice(b": ");
            bytes.extend_from_slice(b.prefix.as_bytes());
            head.push(Piece::Bytes(std::mem::take(&mut bytes)));
            head.push(Piece::Beside(i));
            bytes.extend_from_slice(b"\r\n");
        }
        let body = match (&template.body, &template.key_place) {
            (_, KeyPlace::Rls { domain, descriptor }) => Some(vec![Piece::Rls {
                domain: domain.clone(),
                descriptor: descriptor.clone(),
            }]),
            (None, KeyPlace::JsonBody(_)) => Some(json_body(b"{}", &template.key_place)?),
            (Some(b), KeyPlace::JsonBody(_)) => Some(json_body(&b.bytes, &template.key_place)?),
            (Some(b), _) => Some(vec![Piece::Bytes(b.bytes.clone())]),
            (None, _) => None,
        };
        match (&body, &template.body) {
            (Some(_), _) if matches!(template.key_place, KeyPlace::Rls { .. }) => {
                bytes.extend_from_slice(
                    b"content-type: application/grpc\r\nte: trailers\r\ncontent-length: ",
                );
            }
            (Some(_), b) => {
                let content_type = b.as_ref().map_or("application/json", |b| &b.content_type);
                bytes.extend_from_slice(b"content-type: ");
                bytes.extend_from_slice(content_type.as_bytes());
                bytes.extend_from_slice(b"\r\ncontent-length: ");
            }
            (None, _) if WITH_BODY.contains(&template.method) => {
                bytes.extend_from_slice(b"content-length: 0\r\n\r\n");
            }
            (None, _) => bytes.extend_from_slice(b"\r\n"),
        }
        head.push(Piece::Bytes(bytes));
        Some(Head {
            head,
            body,
            head_only: template.method == Method::HEAD,
            wire: template.wire.clone(),
            beside: template.beside.iter().map(|b| b.values.clone()).collect(),
            tag: template.key_tag.clone(),
        })
    }

    /// The request with `key` (or what is sent in its place) where it goes
    /// into `out` (cleared first); false when it cannot be sent there (a
    /// key that is no header value).
    pub(super) fn write(&self, key: &str, out: &mut Vec<u8>) -> bool {
        let mut joined = [0u8; JOINED];
        let value = match (&self.wire, &self.tag) {
            (Some(wire), _) => match wire.get(key) {
                Some(v) => v.as_str(),
                None => return false,
            },
            (None, Some(tag)) => tagged(key, tag, &mut joined),
            (None, None) => key,
        };
        out.clear();
        for piece in &self.head {
            let value = match piece {
                Piece::Beside(i) => match self.beside[*i].get(key) {
                    Some(v) => v.as_str(),
                    None => return false,
                },
                _ => value,
            };
            if !put(piece, value, out) {
                return false;
            }
        }
        if let Some(body) = &self.body {
            let length_at = out.len();
            out.extend_from_slice(b"\r\n\r\n");
            let start = out.len();
            for piece in body {
                if !put(piece, value, out) {
                    return false;
                }
            }
            let length = out.len() - start;
            let mut digits = itoa::Buffer::new();
            let digits = digits.format(length).as_bytes();
            out.splice(length_at..length_at, digits.iter().copied());
        }
        true
    }
}

/// The tag of one run's arm ([`Template::key_tag`]): six hex digits of a
/// digest of both, the same wherever it is computed (a controller and its
/// agents send the same keys).
pub(crate) fn key_tag(run_id: &str, arm: &str) -> Arc<str> {
    use sha2::Digest;
    let digest = sha2::Sha256::new()
        .chain_update(run_id.as_bytes())
        .chain_update([0u8])
        .chain_update(arm.as_bytes())
        .finalize();
    digest[..3]
        .iter()
        .map(|b| format!("{b:02x}"))
        .collect::<String>()
        .into()
}

/// `key-tag`, written into `buf` (the key alone when they do not fit).
fn tagged<'a>(key: &'a str, tag: &str, buf: &'a mut [u8; JOINED]) -> &'a str {
    let n = key.len() + 1 + tag.len();
    if n > JOINED {
        return key;
    }
    buf[..key.len()].copy_from_slice(key.as_bytes());
    buf[key.len()] = b'-';
    buf[key.len() + 1..n].copy_from_slice(tag.as_bytes());
    std::str::from_utf8(&buf[..n]).unwrap_or(key)
}

/// One piece of a request into `out`.
fn put(piece: &Piece, value: &str, out: &mut Vec<u8>) -> bool {
    match piece {
        Piece::Bytes(b) => out.extend_from_slice(b),
        // Visible ASCII, spaces and tabs, as a header value allows.
        Piece::Key(Escape::Header) | Piece::Beside(_) => {
            if !value
                .bytes()
                .all(|b| b == b'\t' || (b' '..=b'~').contains(&b))
            {
                return false;
            }
            out.extend_from_slice(value.as_bytes());
        }
        Piece::Key(Escape::Url) => {
            for b in value.bytes() {
                if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                    out.push(b);
                } else {
                    out.extend_from_slice(format!("%{b:02X}").as_bytes());
                }
            }
        }
        Piece::Key(Escape::Json) => {
            let quoted = serde_json::to_string(value).unwrap_or_default();
            out.extend_from_slice(&quoted.as_bytes()[1..quoted.len().saturating_sub(1)]);
        }
        Piece::Rls { domain, descriptor } => {
            super::rls::write_request(domain, descriptor, value, out)
        }
    }
    true
}

/// A JSON object body with its key field split out: `None` when the body
/// is no JSON object.
fn json_body(bytes: &[u8], place: &KeyPlace) -> Option<Vec<Piece>> {
    let KeyPlace::JsonBody(field) = place else {
        return None;
    };
    let mut object: serde_json::Map<String, serde_json::Value> =
        serde_json::from_slice(bytes).ok()?;
    object.insert(field.clone(), serde_json::Value::String(MARK.to_string()));
    let text = serde_json::to_string(&object).ok()?;
    let marked = serde_json::to_string(MARK).ok()?;
    let inner = &marked[1..marked.len() - 1];
    let (before, after) = text.split_once(inner)?;
    Some(vec![
        Piece::Bytes(before.as_bytes().to_vec()),
        Piece::Key(Escape::Json),
        Piece::Bytes(after.as_bytes().to_vec()),
    ])
}

#[cfg(test)]
mod tests;
