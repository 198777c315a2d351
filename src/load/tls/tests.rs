//! TLS against a server of the test's own (tokio-rustls, certificates
//! made here with rcgen): trusted through a CA file, refused without it,
//! taken unchecked only when asked, a client certificate when the server
//! asks for one, and one connection kept across requests (TLS 1.3 session
//! tickets arriving unasked do not make it look closed).

mod pinned;

use super::*;
use crate::events::{ErrorKind, Outcome};
use crate::load::connection::Dedicated;
use crate::load::request::Template;
use hyper::Method;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Duration;
use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// An authority, and a server certificate for 127.0.0.1 it signed, and
/// a client certificate it signed: written as PEM files into `dir`.
struct Authority {
    ca: PathBuf,
    server: (CertificateDer<'static>, PrivateKeyDer<'static>),
    client_cert: PathBuf,
    client_key: PathBuf,
}

fn authority(dir: &Path) -> Authority {
    let ca_key = rcgen::KeyPair::generate().unwrap();
    let mut params = rcgen::CertificateParams::new(Vec::<String>::new()).unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    params
        .distinguished_name
        .push(rcgen::DnType::CommonName, "rlbench test authority");
    let ca = params.self_signed(&ca_key).unwrap();
    let issuer = rcgen::Issuer::from_params(&params, &ca_key);
    let server_key = rcgen::KeyPair::generate().unwrap();
    let server = rcgen::CertificateParams::new(vec!["127.0.0.1".to_string()])
        .unwrap()
        .signed_by(&server_key, &issuer)
        .unwrap();
    let client_key = rcgen::KeyPair::generate().unwrap();
    let client = rcgen::CertificateParams::new(vec!["client.test".to_string()])
        .unwrap()
        .signed_by(&client_key, &issuer)
        .unwrap();
    let write = |name: &str, text: String| {
        let path = dir.join(name);
        std::fs::write(&path, text).unwrap();
        path
    };
    Authority {
        ca: write("ca.pem", ca.pem()),
        server: (
            server.der().clone(),
            PrivateKeyDer::try_from(server_key.serialize_der()).unwrap(),
        ),
        client_cert: write("client.pem", client.pem()),
        client_key: write("client.key", client_key.serialize_pem()),
    }
}

/// A TLS server on loopback answering 200 to every request on every
/// connection, asking for a client certificate signed by `ca` when given;
/// its address and how many connections it accepted.
async fn server(a: &Authority, ca: Option<&Path>) -> (String, Arc<AtomicUsize>) {
    serve(&a.server, ca).await
}

/// [`server`] presenting `cert` (the server's certificate and its key).
async fn serve(
    cert: &(CertificateDer<'static>, PrivateKeyDer<'static>),
    ca: Option<&Path>,
) -> (String, Arc<AtomicUsize>) {
    let provider = Arc::new(rustls::crypto::ring::default_provider());
    let builder = rustls::ServerConfig::builder_with_provider(provider.clone())
        .with_safe_default_protocol_versions()
        .unwrap();
    let builder = match ca {
        None => builder.with_no_client_auth(),
        Some(ca) => {
            let verifier = rustls::server::WebPkiClientVerifier::builder_with_provider(
                Arc::new(roots(Some(ca)).unwrap()),
                provider,
            )
            .build()
            .unwrap();
            builder.with_client_cert_verifier(verifier)
        }
    };
    let config = builder
        .with_single_cert(vec![cert.0.clone()], cert.1.clone_key())
        .unwrap();
    let acceptor = tokio_rustls::TlsAcceptor::from(Arc::new(config));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    let accepted = Arc::new(AtomicUsize::new(0));
    let count = accepted.clone();
    tokio::spawn(async move {
        while let Ok((tcp, _)) = listener.accept().await {
            count.fetch_add(1, Ordering::Relaxed);
            let acceptor = acceptor.clone();
            tokio::spawn(async move {
                let Ok(mut s) = acceptor.accept(tcp).await else {
                    return;
                };
                let mut buf = [0u8; 4096];
                while let Ok(n) = s.read(&mut buf).await {
                    if n == 0 {
                        return;
                    }
                    let ok = b"HTTP/1.1 200 OK\r\ncontent-length: 2\r\n\r\nok";
                    if s.write_all(ok).await.is_err() || s.flush().await.is_err() {
                        return;
                    }
                }
            });
        }
    });
    (format!("https://127.0.0.1:{}/x", addr.port()), accepted)
}

async fn send(url: &str, tls: &Client) -> crate::load::outcome::Answer {
    Dedicated::new(url.parse().unwrap(), Some(tls))
        .send(
            &Template::new(Method::GET, None),
            "k",
            Duration::from_secs(2),
        )
        .await
}

#[tokio::test]
async fn a_server_signed_by_the_given_authority_is_spoken_to_on_one_connection() {
    let dir = tempfile::tempdir().unwrap();
    let a = authority(dir.path());
    let (url, accepted) = server(&a, None).await;
    let tls = Client::new(&TlsSpec {
        ca: Some(a.ca.clone()),
        ..Default::default()
    })
    .unwrap();
    tls.handshake(&url.parse().unwrap(), Http::H1)
        .await
        .unwrap();
    let mut c = Dedicated::new(url.parse().unwrap(), Some(&tls));
    // Opened ahead of its first request, as the load does: the server's
    // session tickets arrive while it is idle.
    c.open().await;
    tokio::time::sleep(Duration::from_millis(50)).await;
    let template = Template::new(Method::GET, None);
    for _ in 0..3 {
        let answer = c.send(&template, "k", Duration::from_secs(2)).await;
        assert_eq!(
            (answer.status, answer.outcome, answer.error),
            (200, Outcome::Admitted, None)
        );
        // Idle meanwhile: the session tickets came, the connection stays.
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert_eq!(
        accepted.load(Ordering::Relaxed),
        2,
        "the handshake's, and one for the three requests"
    );
}

#[tokio::test]
async fn an_unknown_authority_is_refused_unless_nothing_is_to_be_checked() {
    let dir = tempfile::tempdir().unwrap();
    let a = authority(dir.path());
    let (url, _) = server(&a, None).await;
    let system = Client::new(&TlsSpec::default()).unwrap();
    let answer = send(&url, &system).await;
    assert_eq!(
        (answer.outcome, answer.error),
        (Outcome::Error, Some(ErrorKind::Tls))
    );
    let why = system
        .handshake(&url.parse().unwrap(), Http::H1)
        .await
        .unwrap_err()
        .to_string();
    assert!(why.contains("--cacert") && why.contains(&url), "{why}");
    let insecure = Client::new(&TlsSpec {
        insecure: true,
        ..Default::default()
    })
    .unwrap();
    assert_eq!(send(&url, &insecure).await.status, 200);
}

#[tokio::test]
async fn a_server_that_asks_for_a_client_certificate_gets_the_one_given() {
    let dir = tempfile::tempdir().unwrap();
    let a = authority(dir.path());
    let (url, _) = server(&a, Some(&a.ca)).await;
    let without = Client::new(&TlsSpec {
        ca: Some(a.ca.clone()),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(send(&url, &without).await.outcome, Outcome::Error);
    let with = Client::new(&TlsSpec {
        ca: Some(a.ca.clone()),
        cert: Some(a.client_cert.clone()),
        key: Some(a.client_key.clone()),
        insecure: false,
    })
    .unwrap();
    assert_eq!(send(&url, &with).await.status, 200);
}

#[test]
fn files_that_cannot_be_used_are_named() {
    let dir = tempfile::tempdir().unwrap();
    let a = authority(dir.path());
    let missing = dir.path().join("nope.pem");
    let e = Client::new(&TlsSpec {
        ca: Some(missing.clone()),
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("nope.pem"), "{e}");
    // A key where the authority should be: no certificate in it.
    let e = Client::new(&TlsSpec {
        ca: Some(a.client_key.clone()),
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(
        e.contains("client.key") && e.contains("no PEM certificate"),
        "{e}"
    );
    let e = Client::new(&TlsSpec {
        cert: Some(a.client_cert.clone()),
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("needs its key"), "{e}");
    let e = Client::new(&TlsSpec {
        cert: Some(a.client_cert.clone()),
        key: Some(a.ca.clone()),
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("ca.pem"), "{e}");
    // Not a regular file: refused at once, not read until memory runs out.
    let e = Client::new(&TlsSpec {
        ca: Some("/dev/zero".into()),
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("/dev/zero"), "{e}");
    let fifo = dir.path().join("fifo.pem");
    assert!(std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap()
        .success());
    let e = Client::new(&TlsSpec {
        ca: Some(fifo),
        ..Default::default()
    })
    .unwrap_err()
    .to_string();
    assert!(e.contains("fifo.pem"), "{e}");
    // Plain http:// targets need no client at all.
    let plain: Vec<hyper::Uri> = vec!["http://127.0.0.1:1/".parse().unwrap()];
    assert!(for_targets(&plain, &TlsSpec::default()).unwrap().is_none());
}
