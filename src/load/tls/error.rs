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
    #[error("{}: {source}", path.display())]
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
        "cannot speak TLS with {uri}: {source}: give the authority that signed it (--cacert, \
         [target] ca), or --insecure to check nothing"
    )]
    Untrusted {
        uri: hyper::Uri,
        #[source]
        source: io::Error,
    },
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
            Some(rustls::Error::InvalidCertificate(_)) => {
                HandshakeError::Untrusted { uri, source: e }
            }
            _ => HandshakeError::Failed { uri, source: e },
        }
    }
}

impl Kind for HandshakeError {
    fn exit(&self) -> Exit {
        Exit::Environment
    }
}
