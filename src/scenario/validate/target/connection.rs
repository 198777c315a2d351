//! How an external target is reached, whatever it is asked: its URLs,
//! TLS, and whether it keeps this machine's wall clock.

use crate::scenario::raw::RawTarget;
use crate::scenario::validate::source::{Result, Source};
use hyper::Uri;
use toml::Spanned;

/// `wall_clock`: whether the limiter reads this machine's wall clock.
pub(super) fn wall_clock(src: &Source, t: &RawTarget) -> Result<bool> {
    Ok(match &t.wall_clock {
        None => false,
        Some(w) => match w.get_ref().as_str() {
            "this_machine" => true,
            "other" => false,
            other => {
                return Err(src.at(
                    w,
                    format!(
                        "unknown wall_clock {other:?}, expected this_machine (the limiter, or \
                         the store it reads the time from, runs on this machine) or other"
                    ),
                ))
            }
        },
    })
}

/// `ca`, `cert`, `key` and `insecure`, the paths relative to the
/// scenario file's folder (the files are read when the load is set up).
pub(super) fn tls(src: &Source, t: &RawTarget) -> Result<crate::load::tls::TlsSpec> {
    let folder = std::path::Path::new(src.file)
        .parent()
        .unwrap_or(std::path::Path::new(""));
    let path = |v: &Option<Spanned<String>>, what: &str| -> Result<Option<std::path::PathBuf>> {
        match v {
            None => Ok(None),
            Some(p) if p.get_ref().trim().is_empty() => {
                Err(src.at(p, format!("{what}: expected the path of a PEM file")))
            }
            Some(p) => Ok(Some(folder.join(p.get_ref()))),
        }
    };
    let spec = crate::load::tls::TlsSpec {
        ca: path(&t.ca, "ca")?,
        cert: path(&t.cert, "cert")?,
        key: path(&t.key, "key")?,
        insecure: t.insecure.as_ref().is_some_and(|v| *v.get_ref()),
    };
    match (&t.cert, &t.key) {
        (Some(c), None) => return Err(src.at(c, "cert needs key (the client certificate's key)")),
        (None, Some(k)) => return Err(src.at(k, "key needs cert (the client certificate)")),
        _ => {}
    }
    if let (Some(ca), true) = (&t.ca, spec.insecure) {
        return Err(src.at(
            ca,
            "ca and insecure = true contradict each other: insecure checks no certificate",
        ));
    }
    Ok(spec)
}

/// `http://` URLs, loopback ones unless `remote`, with `path` (when
/// given) in place of theirs.
pub(crate) fn urls(
    src: &Source,
    list: &Spanned<Vec<Spanned<String>>>,
    path: Option<&str>,
    remote: bool,
) -> Result<Vec<Uri>> {
    if list.get_ref().is_empty() {
        return Err(src.at(list, "urls needs at least one URL"));
    }
    list.get_ref()
        .iter()
        .map(|u| {
            let uri = crate::target::target_url(u.get_ref(), remote)
                .map_err(|e| src.at(u, e.to_string()))?;
            match path {
                None => Ok(uri),
                Some(p) => {
                    if uri.path() != "/" {
                        return Err(src.at(
                            u,
                            format!(
                                "{:?} has a path of its own and [target] gives path {p:?}: give one",
                                u.get_ref()
                            ),
                        ));
                    }
                    let authority = uri.authority().map(|a| a.as_str()).unwrap_or_default();
                    let scheme = uri.scheme_str().unwrap_or("http");
                    format!("{scheme}://{authority}{p}")
                        .parse()
                        .map_err(|e| src.at(u, format!("{:?} with path {p:?}: {e}", u.get_ref())))
                }
            }
        })
        .collect()
}
