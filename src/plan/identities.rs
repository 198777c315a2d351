//! What each key is to the limiter when it is more than its name in a
//! header (`[load] key`): an address of its own its connections come from
//! (`source_ip`), an address in `X-Forwarded-For`, or a JWT minted for it
//! (HS256 or RS256, with the `jsonwebtoken` crate) sent as a bearer token.
//! Under `[load] spoof`, each principal's forged keys and, beside them,
//! its own token and an address (its own or forged). Set up once per arm,
//! before any load.

use crate::error::Error;
use crate::load::request::Beside;
use crate::load::request::Template;
use crate::scenario::spec::{JwtAlg, JwtSecret, JwtSpec, KeySpec, Spoof};
use std::collections::HashMap;
use std::net::{IpAddr, Ipv4Addr};
use std::sync::Arc;

/// Tokens minted per run, at most (minting is not free).
const MAX_TOKENS: u32 = 100_000;

/// Puts `key`'s identities for the load's `keys` into `template`.
pub(crate) fn apply(template: &mut Template, key: &KeySpec, keys: u32) -> Result<(), Error> {
    let names = crate::load::pick::key_names(keys);
    match key {
        KeySpec::InTemplate => {}
        KeySpec::SourceIp { first, .. } => {
            template.sources = Some(Arc::new(
                names
                    .iter()
                    .enumerate()
                    .map(|(i, k)| (k.clone(), IpAddr::V4(nth(*first, i))))
                    .collect(),
            ));
        }
        KeySpec::ForwardedFor => {
            let first = crate::scenario::FORWARDED_FROM;
            template.wire = Some(Arc::new(
                names
                    .iter()
                    .enumerate()
                    .map(|(i, k)| (k.clone(), nth(first, i).to_string()))
                    .collect(),
            ));
        }
        KeySpec::Jwt(spec) => {
            if keys > MAX_TOKENS {
                return Err(Error::input(format!(
                    "[load] key = {{ jwt }}: {keys} keys, at most {MAX_TOKENS} tokens are minted"
                )));
            }
            template.wire = Some(Arc::new(tokens(spec, &names)?));
        }
    }
    Ok(())
}

/// `principals` principals sending under `spoof`'s forged identities:
/// the key's place carries a forged key (`rotate_key`) or the principal's
/// name; beside it, `X-Forwarded-For` carries a forged address
/// (`forwarded_for`) or the principal's own, and `Authorization` the
/// principal's token when `key` is a JWT. A principal's bare name sends
/// its own identity throughout (the Retry-After probes use it).
pub(crate) fn spoof(
    template: &mut Template,
    key: &KeySpec,
    spoof: &Spoof,
    principals: u32,
) -> Result<(), Error> {
    let own = crate::load::pick::key_names(principals);
    let forged = crate::load::pick::forged_names(principals, spoof.forged_keys);
    let principal = |i: usize| i / spoof.forged_keys as usize;
    let first = crate::scenario::FORWARDED_FROM;
    if !spoof.rotate_key {
        template.wire = Some(Arc::new(
            forged
                .iter()
                .enumerate()
                .map(|(i, k)| (k.clone(), own[principal(i)].clone()))
                .chain(own.iter().map(|p| (p.clone(), p.clone())))
                .collect(),
        ));
    }
    // A principal's own address is its number's; forged ones follow them.
    let address = |i: usize| {
        if spoof.forwarded_for {
            nth(first, own.len() + i)
        } else {
            nth(first, principal(i))
        }
    };
    template.beside.push(Beside {
        name: hyper::header::HeaderName::from_static("x-forwarded-for"),
        prefix: String::new(),
        values: Arc::new(
            forged
                .iter()
                .enumerate()
                .map(|(i, k)| (k.clone(), address(i).to_string()))
                .chain(
                    own.iter()
                        .enumerate()
                        .map(|(p, k)| (k.clone(), nth(first, p).to_string())),
                )
                .collect(),
        ),
    });
    if let KeySpec::Jwt(spec) = key {
        if principals > MAX_TOKENS {
            return Err(Error::input(format!(
                "[load] key = {{ jwt }}: {principals} principals, at most {MAX_TOKENS} tokens are minted"
            )));
        }
        let tokens = tokens(spec, &own)?;
        template.beside.push(Beside {
            name: hyper::header::AUTHORIZATION,
            prefix: "Bearer ".into(),
            values: Arc::new(
                forged
                    .iter()
                    .enumerate()
                    .map(|(i, k)| (k.clone(), tokens[&own[principal(i)]].clone()))
                    .chain(tokens.clone())
                    .collect(),
            ),
        });
    }
    Ok(())
}

/// The address `i` after `first`.
fn nth(first: Ipv4Addr, i: usize) -> Ipv4Addr {
    Ipv4Addr::from(u32::from(first).wrapping_add(i as u32))
}

/// A token per key, its claim the key's name, valid from now for
/// `expires_in`.
fn tokens(spec: &JwtSpec, names: &[String]) -> Result<HashMap<String, String>, Error> {
    use jsonwebtoken::{Algorithm, EncodingKey, Header};
    let (alg, key) = match (&spec.alg, &spec.secret) {
        (JwtAlg::Hs256, JwtSecret::Shared(secret)) => (
            Algorithm::HS256,
            EncodingKey::from_secret(secret.as_bytes()),
        ),
        (JwtAlg::Rs256, JwtSecret::PrivateKey(path)) => {
            let pem = crate::files::read(path, 1024 * 1024)
                .map_err(|e| Error::input(format!("[load] key jwt key {}: {e}", path.display())))?;
            let key = EncodingKey::from_rsa_pem(&pem).map_err(|e| {
                Error::input(format!(
                    "[load] key jwt key {}: not an RSA private key in PEM ({e})",
                    path.display()
                ))
            })?;
            (Algorithm::RS256, key)
        }
        _ => {
            return Err(Error::input(
                "[load] key jwt: the algorithm and its secret differ",
            ))
        }
    };
    let now = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs());
    let header = Header::new(alg);
    names
        .iter()
        .map(|name| {
            let mut claims = serde_json::Map::new();
            claims.insert(spec.claim.clone(), name.clone().into());
            claims.insert("iat".into(), now.into());
            claims.insert("exp".into(), (now + spec.expires_in.as_secs()).into());
            jsonwebtoken::encode(&header, &claims, &key)
                .map(|token| (name.clone(), token))
                .map_err(|e| Error::input(format!("[load] key jwt: cannot mint a token: {e}")))
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::scenario::spec::JwtSpec;
    use std::time::Duration;

    fn template() -> Template {
        Template::new(hyper::Method::GET, None)
    }

    #[test]
    fn each_key_gets_an_address_of_its_own() {
        let mut t = template();
        let first = Ipv4Addr::new(127, 0, 0, 1);
        apply(&mut t, &KeySpec::SourceIp { first, count: 300 }, 300).unwrap();
        let sources = t.sources.unwrap();
        assert_eq!(sources["customer-0000"], IpAddr::V4(first));
        assert_eq!(
            sources["customer-0299"],
            IpAddr::V4(Ipv4Addr::new(127, 0, 1, 44))
        );
        let mut values: Vec<_> = sources.values().collect();
        values.sort();
        values.dedup();
        assert_eq!(values.len(), 300, "one address per key");
        let mut t = template();
        apply(&mut t, &KeySpec::ForwardedFor, 2).unwrap();
        assert_eq!(t.wire.unwrap()["customer-0001"], "10.0.0.2");
    }

    #[test]
    fn spoofing_principals_forge_the_key_and_address_but_keep_their_token() {
        let secret = "the test's secret";
        let jwt = KeySpec::Jwt(JwtSpec {
            claim: "sub".into(),
            alg: JwtAlg::Hs256,
            secret: JwtSecret::Shared(secret.into()),
            expires_in: Duration::from_secs(60),
        });
        let both = Spoof {
            forged_keys: 3,
            rotate_key: true,
            forwarded_for: true,
        };
        let mut t = template();
        spoof(&mut t, &jwt, &both, 2).unwrap();
        assert!(t.wire.is_none(), "a forged key is sent as it is");
        let (xff, auth) = (&t.beside[0].values, &t.beside[1].values);
        // Six forged addresses after the principals' own two, all apart.
        assert_eq!(xff["customer-0000"], "10.0.0.1");
        assert_eq!(xff["customer-0001~0002"], "10.0.0.8");
        let mut forged: Vec<&String> = xff
            .iter()
            .filter(|(k, _)| k.contains('~'))
            .map(|(_, v)| v)
            .collect();
        forged.sort();
        forged.dedup();
        assert_eq!(forged.len(), 6);
        // Every forged key of a principal carries that principal's token.
        assert_eq!(auth["customer-0001~0000"], auth["customer-0001~0002"]);
        assert_eq!(auth["customer-0001~0000"], auth["customer-0001"]);
        assert_ne!(auth["customer-0000~0000"], auth["customer-0001~0000"]);
        // Spoofing only the address: the key header says who it is.
        let mut t = template();
        let address_only = Spoof {
            rotate_key: false,
            ..both
        };
        spoof(&mut t, &KeySpec::InTemplate, &address_only, 2).unwrap();
        assert_eq!(
            t.wire.as_ref().unwrap()["customer-0001~0002"],
            "customer-0001"
        );
        assert_eq!(t.beside.len(), 1, "no token without a jwt key");
        // Spoofing only the key: the principal's own address.
        let mut t = template();
        let key_only = Spoof {
            forwarded_for: false,
            ..both
        };
        spoof(&mut t, &KeySpec::InTemplate, &key_only, 2).unwrap();
        assert_eq!(t.beside[0].values["customer-0001~0002"], "10.0.0.2");
    }

    #[test]
    fn tokens_carry_the_key_in_their_claim_and_verify_with_the_secret() {
        let secret = "a shared secret of the test";
        let spec = JwtSpec {
            claim: "sub".into(),
            alg: JwtAlg::Hs256,
            secret: JwtSecret::Shared(secret.into()),
            expires_in: Duration::from_secs(600),
        };
        let mut t = template();
        apply(&mut t, &KeySpec::Jwt(spec), 3).unwrap();
        let wire = t.wire.unwrap();
        let mut validation = jsonwebtoken::Validation::new(jsonwebtoken::Algorithm::HS256);
        validation.required_spec_claims = ["exp".to_string()].into();
        let claims = jsonwebtoken::decode::<serde_json::Value>(
            &wire["customer-0002"],
            &jsonwebtoken::DecodingKey::from_secret(secret.as_bytes()),
            &validation,
        )
        .unwrap()
        .claims;
        assert_eq!(claims["sub"], "customer-0002");
        let left = claims["exp"].as_u64().unwrap() - claims["iat"].as_u64().unwrap();
        assert_eq!(left, 600);
        // Another secret does not verify it.
        assert!(jsonwebtoken::decode::<serde_json::Value>(
            &wire["customer-0002"],
            &jsonwebtoken::DecodingKey::from_secret(b"another secret entirely"),
            &validation,
        )
        .is_err());
    }
}
