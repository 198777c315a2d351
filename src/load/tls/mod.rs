//! TLS for `https://` targets, through rustls (ring; no OpenSSL): the
//! client set up once per run from a [`TlsSpec`] — the system's
//! authorities or a CA file (its own certificates pinned, as curl takes a
//! self-signed one: [`pinned`]), a client certificate, or, only when asked
//! (`insecure`), no check of the server at all — and a connection's
//! [`Stream`], plain or TLS, which the answer reader reads in place either
//! way. The server's name (SNI, and the name checked) is the URL's host.

use rustls::client::danger::{HandshakeSignatureValid, ServerCertVerified, ServerCertVerifier};
use rustls::pki_types::pem::PemObject;
use rustls::pki_types::{CertificateDer, PrivateKeyDer, ServerName, UnixTime};
use rustls::{ClientConfig, DigitallySignedStruct, RootCertStore, SignatureScheme};
use std::io;
use std::path::{Path, PathBuf};
use std::pin::Pin;
use std::sync::Arc;
use std::task::{Context, Poll};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpStream;
use tokio_rustls::client::TlsStream;
use tokio_rustls::TlsConnector;

mod error;
mod pinned;

pub(crate) use crate::load::request::Http;
pub(crate) use error::{HandshakeError, TlsError};

/// How to speak TLS to `https://` targets, as the user said it.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub(crate) struct TlsSpec {
    /// Authorities to trust (PEM); `None`: the system's.
    pub ca: Option<PathBuf>,
    /// A client certificate chain (PEM) and its key, for servers that ask.
    pub cert: Option<PathBuf>,
    pub key: Option<PathBuf>,
    /// Check nothing of the server's certificate (said in the report).
    pub insecure: bool,
}

/// A TLS client for a run's connections (cheap to clone).
#[derive(Clone)]
pub(crate) struct Client {
    connector: TlsConnector,
    /// The same, offering HTTP/2 only (ALPN `h2`).
    h2: TlsConnector,
    /// The same, offering HTTP/2 then HTTP/1.1 (`http = "auto"`).
    either: TlsConnector,
}

impl std::fmt::Debug for Client {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("tls::Client")
    }
}

impl Client {
    /// The client `spec` describes, its files read now: one line naming
    /// the file when one cannot be read or holds nothing usable.
    pub(crate) fn new(spec: &TlsSpec) -> Result<Client, TlsError> {
        let provider = Arc::new(rustls::crypto::ring::default_provider());
        let builder = ClientConfig::builder_with_provider(provider.clone())
            .with_safe_default_protocol_versions()
            .map_err(TlsError::Protocols)?;
        let builder = match (&spec.ca, spec.insecure) {
            (_, true) => builder
                .dangerous()
                .with_custom_certificate_verifier(Arc::new(NoCheck(provider))),
            // A CA file: its authorities, and its own certificates pinned.
            (Some(ca), false) => {
                let pinned = pinned::Pinned::new(roots(Some(ca))?, certificates(ca)?, provider)
                    .map_err(|source| TlsError::Authority {
                        path: ca.clone(),
                        source,
                    })?;
                builder
                    .dangerous()
                    .with_custom_certificate_verifier(Arc::new(pinned))
            }
            (None, false) => builder.with_root_certificates(roots(None)?),
        };
        let config = match (&spec.cert, &spec.key) {
            (None, None) => builder.with_no_client_auth(),
            (Some(cert), Some(key)) => {
                let chain = certificates(cert)?;
                let key = PrivateKeyDer::from_pem_slice(&pem(key)?).map_err(|source| {
                    TlsError::NoKey {
                        path: key.clone(),
                        source,
                    }
                })?;
                builder
                    .with_client_auth_cert(chain, key)
                    .map_err(|source| TlsError::ClientCert {
                        path: cert.clone(),
                        source,
                    })?
            }
            (Some(_), None) => return Err(TlsError::CertWithoutKey),
            (None, Some(_)) => return Err(TlsError::KeyWithoutCert),
        };
        let with = |alpn: &[&[u8]]| {
            let mut c = config.clone();
            c.alpn_protocols = alpn.iter().map(|p| p.to_vec()).collect();
            TlsConnector::from(Arc::new(c))
        };
        Ok(Client {
            connector: with(&[b"http/1.1"]),
            h2: with(&[b"h2"]),
            either: with(&[b"h2", b"http/1.1"]),
        })
    }

    /// Connects to `uri` and shakes hands, within 2 s, offering `http`:
    /// the protocol the server chose (HTTP/2 or HTTP/1.1), or why not, in
    /// one line, when it cannot (an untrusted certificate, a plain-HTTP
    /// port, no HTTP/2 where only it was offered).
    pub(crate) async fn handshake(
        &self,
        uri: &hyper::Uri,
        http: Http,
    ) -> Result<Http, HandshakeError> {
        let host = uri.host().unwrap_or_default();
        let host = host.trim_start_matches('[').trim_end_matches(']');
        let connector = match http {
            Http::H1 => &self.connector,
            Http::H2 => &self.h2,
            Http::Auto => &self.either,
        };
        let shake = async {
            let tcp = TcpStream::connect((host, crate::target::port(uri))).await?;
            let name = ServerName::try_from(host.to_string())
                .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
            connector.connect(name, tcp).await
        };
        match tokio::time::timeout(std::time::Duration::from_secs(2), shake).await {
            Ok(Ok(tls)) => match (tls.get_ref().1.alpn_protocol(), http) {
                (Some(b"h2"), _) => Ok(Http::H2),
                (_, Http::H2) => Err(HandshakeError::NoH2 { uri: uri.clone() }),
                _ => Ok(Http::H1),
            },
            Ok(Err(e)) => Err(HandshakeError::failed(uri.clone(), http == Http::H2, e)),
            Err(_) => Err(HandshakeError::Timeout { uri: uri.clone() }),
        }
    }

    /// The TLS handshake on `tcp` with the server named `host`, offering
    /// HTTP/2 only.
    pub(crate) async fn connect_h2(&self, host: &str, tcp: TcpStream) -> io::Result<Stream> {
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let tls = self.h2.connect(name, tcp).await?;
        Ok(Stream::Tls(Box::new(tls)))
    }

    /// The TLS handshake on `tcp` with the server named `host`.
    pub(crate) async fn connect(&self, host: &str, tcp: TcpStream) -> io::Result<Stream> {
        let name = ServerName::try_from(host.to_string())
            .map_err(|e| io::Error::new(io::ErrorKind::InvalidInput, e))?;
        let tls = self.connector.connect(name, tcp).await?;
        Ok(Stream::Tls(Box::new(tls)))
    }
}

/// The client for `targets` when one is `https://` (else `None`): one
/// line when `spec`'s files cannot be used.
pub(crate) fn for_targets(
    targets: &[hyper::Uri],
    spec: &TlsSpec,
) -> Result<Option<Client>, TlsError> {
    if targets.iter().any(|t| t.scheme_str() == Some("https")) {
        if spec.insecure {
            tracing::warn!(
                "TLS: the https:// targets' certificates are not checked (insecure): nothing \
                 proves who answers"
            );
        }
        Client::new(spec).map(Some)
    } else {
        Ok(None)
    }
}

/// Every `https://` target shakes hands ([`Client::handshake`]): the
/// protocol the load speaks — `http` itself, or for `auto` HTTP/2 when
/// every `https://` target chose it (cleartext: HTTP/1.1).
pub(crate) async fn handshakes(
    targets: &[hyper::Uri],
    tls: Option<&Client>,
    http: Http,
) -> Result<Http, HandshakeError> {
    let secure: Vec<&hyper::Uri> = targets
        .iter()
        .filter(|t| t.scheme_str() == Some("https"))
        .collect();
    let mut chosen = Vec::new();
    if let Some(tls) = tls {
        for t in &secure {
            chosen.push(tls.handshake(t, http).await?);
        }
    }
    Ok(match http {
        Http::Auto if !chosen.is_empty() && chosen.iter().all(|c| *c == Http::H2) => Http::H2,
        Http::Auto => Http::H1,
        other => other,
    })
}

/// The authorities in `ca`, or the system's.
fn roots(ca: Option<&Path>) -> Result<RootCertStore, TlsError> {
    let mut roots = RootCertStore::empty();
    match ca {
        Some(path) => {
            for cert in certificates(path)? {
                roots.add(cert).map_err(|source| TlsError::Authority {
                    path: path.into(),
                    source,
                })?;
            }
        }
        None => {
            let found = rustls_native_certs::load_native_certs();
            let (added, _) = roots.add_parsable_certificates(found.certs);
            if added == 0 {
                return Err(TlsError::NoSystemAuthorities);
            }
        }
    }
    Ok(roots)
}

/// A PEM file's bytes: a regular file of at most 1 MiB (a FIFO or a
/// device is refused at once, never read until memory runs out).
fn pem(path: &Path) -> Result<Vec<u8>, TlsError> {
    crate::files::read(path, 1024 * 1024).map_err(|source| TlsError::File {
        path: path.into(),
        source,
    })
}

/// The certificates of a PEM file, at least one.
fn certificates(path: &Path) -> Result<Vec<CertificateDer<'static>>, TlsError> {
    let certs = CertificateDer::pem_slice_iter(&pem(path)?)
        .collect::<Result<Vec<_>, _>>()
        .map_err(|source| TlsError::Pem {
            path: path.into(),
            source,
        })?;
    if certs.is_empty() {
        return Err(TlsError::NoCertificate { path: path.into() });
    }
    Ok(certs)
}

/// `insecure`: any certificate is taken, its signatures still checked to
/// be well formed (nothing is proven of who answers).
#[derive(Debug)]
struct NoCheck(Arc<rustls::crypto::CryptoProvider>);

impl ServerCertVerifier for NoCheck {
    fn verify_server_cert(
        &self,
        _end_entity: &CertificateDer<'_>,
        _intermediates: &[CertificateDer<'_>],
        _server_name: &ServerName<'_>,
        _ocsp_response: &[u8],
        _now: UnixTime,
    ) -> Result<ServerCertVerified, rustls::Error> {
        Ok(ServerCertVerified::assertion())
    }

    fn verify_tls12_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls12_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn verify_tls13_signature(
        &self,
        message: &[u8],
        cert: &CertificateDer<'_>,
        dss: &DigitallySignedStruct,
    ) -> Result<HandshakeSignatureValid, rustls::Error> {
        rustls::crypto::verify_tls13_signature(
            message,
            cert,
            dss,
            &self.0.signature_verification_algorithms,
        )
    }

    fn supported_verify_schemes(&self) -> Vec<SignatureScheme> {
        self.0.signature_verification_algorithms.supported_schemes()
    }
}

/// A connection to a target: plain TCP or TLS over it.
pub(crate) enum Stream {
    Plain(TcpStream),
    Tls(Box<TlsStream<TcpStream>>),
}

impl Stream {
    /// The TCP connection underneath.
    pub(crate) fn tcp(&self) -> &TcpStream {
        match self {
            Stream::Plain(s) => s,
            Stream::Tls(s) => s.get_ref().0,
        }
    }

    /// Whether the server closed this idle connection meanwhile (a
    /// restarted replica): its socket turned readable while nothing was
    /// asked, with an end or data nobody asked for. Costs no system call
    /// while it did not. Over TLS, what the server may send unasked (a
    /// TLS 1.3 session ticket) is taken in by rustls and leaves the
    /// connection usable.
    pub(crate) async fn closed_while_idle(&mut self) -> bool {
        let tcp = self.tcp();
        let readable =
            std::future::poll_fn(|cx| Poll::Ready(tcp.poll_read_ready(cx).is_ready())).await;
        if !readable {
            return false;
        }
        let mut byte = [0u8; 1];
        match self {
            Stream::Plain(s) => !matches!(
                s.try_read(&mut byte),
                Err(e) if e.kind() == io::ErrorKind::WouldBlock
            ),
            Stream::Tls(s) => {
                let mut buf = ReadBuf::new(&mut byte);
                let polled = std::future::poll_fn(|cx| {
                    Poll::Ready(Pin::new(s.as_mut()).poll_read(cx, &mut buf))
                })
                .await;
                // Pending: only TLS's own messages came.
                polled.is_ready()
            }
        }
    }
}

impl AsyncRead for Stream {
    fn poll_read(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_read(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_read(cx, buf),
        }
    }
}

impl AsyncWrite for Stream {
    fn poll_write(
        self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &[u8],
    ) -> Poll<io::Result<usize>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_write(cx, buf),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_write(cx, buf),
        }
    }

    fn poll_flush(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_flush(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_flush(cx),
        }
    }

    fn poll_shutdown(self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<io::Result<()>> {
        match self.get_mut() {
            Stream::Plain(s) => Pin::new(s).poll_shutdown(cx),
            Stream::Tls(s) => Pin::new(s.as_mut()).poll_shutdown(cx),
        }
    }
}

#[cfg(test)]
mod tests;
