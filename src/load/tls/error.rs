//! What can go wrong with TLS, each naming the file or the target:
//! setting the client up from the files the user gave ([`TlsError`],
//! exit 2: the user's files or flags) and shaking hands with a target
//! ([`HandshakeError`], exit 3: the target or the network refusing).

use crate::error::{Exit, Kind};
use rustls::pki_types::pem;
use std::io;
use std::path::PathBuf;

/// Why the client could not be set up from a [`super::TlsSpec`].
#[derive(Debug, thiserror::Error)]
pub(crate) enum TlsError {
    /// rustls offers no protocol version (never with its defaults).
    #[error("TLS: {0}")]
    Protocols(#[source] rustls::Error),
    /// A PEM file that cannot be read (missing, not a regular file, over 1 MiB).
    #[error("cannot read the TLS file {} (a certificate or key, PEM): {source}", path.display())]
    File {
        path: PathBuf,
        #[source]
        source: io::Error,
    },
    #[error("{}: {source}", path.display())]
    Pem {
        path: PathBuf,
        #[source]
        source: pem::Error,
    },
    #[error("{}: no PEM certificate in it", path.display())]
    NoCertificate { path: PathBuf },
    /// A certificate of the CA file rustls will not take as an authority.
    #[error("{}: {source}", path.display())]
    Authority {
        path: PathBuf,
        #[source]
        source: rustls::Error,
    },
    #[error(
        "no certificate authorities found on this system: give one (--cacert, \
         [target] ca)"
    )]
    NoSystemAuthorities,
    #[error("{}: no private key read ({source})", path.display())]
    NoKey {
        path: PathBuf,
        #[source]
        source: pem::Error,
    },
    /// The client certificate and key rustls will not use together.
    #[error("{}: {source}", path.display())]
    ClientCert {
        path: PathBuf,
        #[source]
        source: rustls::Error,
    },
    #[error("a client certificate needs its key")]
    CertWithoutKey,
    #[error("a client key needs its certificate")]
    KeyWithoutCert,
}

impl Kind for TlsError {
    fn exit(&self) -> Exit {
        Exit::BadInput
    }
}

/// Why a target's handshake failed.
#[derive(Debug, thiserror::Error)]
pub(crate) enum HandshakeError {
    /// Only HTTP/2 was offered and the server would not take it.
    #[error("{uri} does not speak HTTP/2 over TLS (ALPN h2): give http = \"1.1\" or \"auto\"")]
    NoH2 { uri: hyper::Uri },
    /// The server's certificate is not signed by an authority trusted.
    #[error(
        "cannot speak TLS with {uri}: {why}: give the authority that signed it (--cacert, \
         [target] ca), or --insecure to check nothing"
    )]
    Untrusted { uri: hyper::Uri, why: String },
    /// The server's certificate, trusted or not, is not one for it now.
    #[error("cannot speak TLS with {uri}: {why}")]
    Refused { uri: hyper::Uri, why: String },
    #[error("cannot speak TLS with {uri}: {source}")]
    Failed {
        uri: hyper::Uri,
        #[source]
        source: io::Error,
    },
    #[error("cannot speak TLS with {uri}: no handshake within 2 s")]
    Timeout { uri: hyper::Uri },
}

impl HandshakeError {
    /// A handshake with `uri` that failed with `e`, told apart by rustls'
    /// cause: no HTTP/2 where only it was offered (`only_h2`), a
    /// certificate not trusted, or anything else.
    pub(crate) fn failed(uri: hyper::Uri, only_h2: bool, e: io::Error) -> HandshakeError {
        let cause = e.get_ref().and_then(|e| e.downcast_ref::<rustls::Error>());
        match cause {
            Some(
                rustls::Error::NoApplicationProtocol
                | rustls::Error::AlertReceived(rustls::AlertDescription::NoApplicationProtocol),
            ) if only_h2 => HandshakeError::NoH2 { uri },
            Some(rustls::Error::InvalidCertificate(c)) => {
                let why = in_words(c);
                match c {
                    rustls::CertificateError::UnknownIssuer
                    | rustls::CertificateError::BadSignature
                    | rustls::CertificateError::Other(_) => HandshakeError::Untrusted { uri, why },
                    _ => HandshakeError::Refused { uri, why },
                }
            }
            _ => HandshakeError::Failed { uri, source: e },
        }
    }
}

/// Why the server's certificate was refused, in words (never rustls'
/// Debug print).
pub(crate) fn in_words(c: &rustls::CertificateError) -> String {
    use rustls::CertificateError as C;
    let date = |t: &rustls::pki_types::UnixTime| {
        let at = std::time::UNIX_EPOCH + std::time::Duration::from_secs(t.as_secs());
        humantime::format_rfc3339_seconds(at).to_string()
    };
    match c {
        C::Other(o)
            if o.0.downcast_ref::<webpki::Error>() == Some(&webpki::Error::CaUsedAsEndEntity) =>
        {
            "the server's certificate is itself a certificate authority (CA:TRUE), and not one \
             of the certificates given: give that very certificate to pin it"
                .into()
        }
        C::UnknownIssuer => {
            "the server's certificate is signed by no authority trusted here".into()
        }
        C::BadSignature => "the server's certificate's signature does not verify".into(),
        C::Expired => "the server's certificate has expired".into(),
        C::ExpiredContext { not_after, .. } => {
            format!("the server's certificate expired on {}", date(not_after))
        }
        C::NotValidYet => "the server's certificate is not valid yet".into(),
        C::NotValidYetContext { not_before, .. } => {
            format!(
                "the server's certificate is not valid before {}",
                date(not_before)
            )
        }
        C::NotValidForName => "the server's certificate does not name the host in the URL".into(),
        C::NotValidForNameContext {
            expected,
            presented,
        } => format!(
            "the server's certificate names {}, not {}",
            if presented.is_empty() {
                "nothing".to_string()
            } else {
                presented
                    .iter()
                    .map(|p| bare_name(p))
                    .collect::<Vec<_>>()
                    .join(", ")
            },
            expected.to_str()
        ),
        C::Revoked => "the server's certificate has been revoked".into(),
        C::InvalidPurpose | C::InvalidPurposeContext { .. } => {
            "the server's certificate is not one for a server (its extended key usage)".into()
        }
        C::BadEncoding => "the server's certificate cannot be read (bad DER)".into(),
        other => format!("the server's certificate is refused ({other})"),
    }
}

/// A name as rustls presents it (`IpAddress(127.0.0.2)`,
/// `DnsName("api.test")`), bare.
fn bare_name(presented: &str) -> &str {
    ["IpAddress(", "DnsName("]
        .iter()
        .find_map(|p| presented.strip_prefix(p)?.strip_suffix(')'))
        .map_or(presented, |inner| inner.trim_matches('"'))
}

impl Kind for HandshakeError {
    fn exit(&self) -> Exit {
        Exit::Environment
    }
}
