//! The TLS flags `attack` and `probe` share, for `https://` targets.

use clap::Args;
use std::path::PathBuf;

#[derive(Debug, Args)]
pub(crate) struct TlsArgs {
    /// https:// targets: trust the certificate authorities in this PEM
    /// file (default: the system's); a self-signed server certificate
    /// given here is trusted as itself.
    #[arg(long, value_name = "FILE", conflicts_with = "insecure")]
    pub cacert: Option<PathBuf>,
    /// https:// targets: a client certificate chain (PEM), with --key.
    #[arg(long, value_name = "FILE", requires = "key")]
    pub cert: Option<PathBuf>,
    /// The client certificate's private key (PEM).
    #[arg(long, value_name = "FILE", requires = "cert")]
    pub key: Option<PathBuf>,
    /// https:// targets: check nothing of the server's certificate (the
    /// report says so).
    #[arg(long, short = 'k')]
    pub insecure: bool,
}

impl TlsArgs {
    /// As the load takes them.
    pub(crate) fn spec(&self) -> crate::load::tls::TlsSpec {
        crate::load::tls::TlsSpec {
            ca: self.cacert.clone(),
            cert: self.cert.clone(),
            key: self.key.clone(),
            insecure: self.insecure,
        }
    }
}
