//! A certificate authority's certificate served as the server's own (as
//! `openssl req -x509 -newkey …` makes a self-signed one: `CA:TRUE`):
//! taken when it is the very certificate given, its name still checked;
//! refused otherwise, and every refusal in words.

use super::super::*;
use super::serve;

/// A self-signed certificate with `CA:TRUE` naming `names`, valid from
/// `from` to `to` days from now; its PEM written to `dir/file`.
fn self_signed(
    dir: &Path,
    file: &str,
    names: &[&str],
    days: (i64, i64),
) -> ((CertificateDer<'static>, PrivateKeyDer<'static>), PathBuf) {
    let key = rcgen::KeyPair::generate().unwrap();
    let mut params =
        rcgen::CertificateParams::new(names.iter().map(|n| n.to_string()).collect::<Vec<_>>())
            .unwrap();
    params.is_ca = rcgen::IsCa::Ca(rcgen::BasicConstraints::Unconstrained);
    let on = |d: i64| {
        use chrono::Datelike;
        let secs = std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs() as i64;
        let at = chrono::DateTime::from_timestamp(secs + d * 86_400, 0).unwrap();
        rcgen::date_time_ymd(at.year(), at.month() as u8, at.day() as u8)
    };
    params.not_before = on(days.0);
    params.not_after = on(days.1);
    let cert = params.self_signed(&key).unwrap();
    let path = dir.join(file);
    std::fs::write(&path, cert.pem()).unwrap();
    (
        (
            cert.der().clone(),
            PrivateKeyDer::try_from(key.serialize_der()).unwrap(),
        ),
        path,
    )
}

async fn handshake(url: &str, ca: &Path) -> Result<Http, HandshakeError> {
    let tls = Client::new(&TlsSpec {
        ca: Some(ca.to_path_buf()),
        ..Default::default()
    })
    .unwrap();
    tls.handshake(&url.parse().unwrap(), Http::H1).await
}

#[tokio::test]
async fn the_very_certificate_given_is_pinned_and_its_name_still_checked() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, pem) = self_signed(dir.path(), "own.pem", &["127.0.0.1"], (-1, 30));
    let (url, _) = serve(&cert, None).await;
    assert_eq!(handshake(&url, &pem).await.unwrap(), Http::H1);
    let tls = Client::new(&TlsSpec {
        ca: Some(pem.clone()),
        ..Default::default()
    })
    .unwrap();
    assert_eq!(super::send(&url, &tls).await.status, 200);
    // The same kind of certificate naming another address: refused, and
    // said so.
    let (other, other_pem) = self_signed(dir.path(), "other.pem", &["127.0.0.2"], (-1, 30));
    let (url, _) = serve(&other, None).await;
    let why = handshake(&url, &other_pem).await.unwrap_err().to_string();
    assert!(why.contains("names 127.0.0.2, not 127.0.0.1"), "{why}");
}

#[tokio::test]
async fn an_authority_served_as_its_own_but_not_given_is_refused_in_words() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, _) = self_signed(dir.path(), "served.pem", &["127.0.0.1"], (-1, 30));
    let (_, given) = self_signed(dir.path(), "given.pem", &["127.0.0.1"], (-1, 30));
    let (url, _) = serve(&cert, None).await;
    let why = handshake(&url, &given).await.unwrap_err().to_string();
    assert!(
        why.contains(
            "is itself a certificate authority (CA:TRUE), and not one of the certificates given"
        ),
        "{why}"
    );
    assert!(
        !why.contains("OtherError") && !why.contains("CaUsedAsEndEntity"),
        "{why}"
    );
}

#[tokio::test]
async fn an_expired_certificate_says_when() {
    let dir = tempfile::tempdir().unwrap();
    let (cert, pem) = self_signed(dir.path(), "old.pem", &["127.0.0.1"], (-30, -2));
    let (url, _) = serve(&cert, None).await;
    let why = handshake(&url, &pem).await.unwrap_err().to_string();
    assert!(
        why.contains("the server's certificate expired on "),
        "{why}"
    );
    assert!(!why.contains("Context"), "{why}");
}
