//! What each key is to the limiter when it is more than its name in a
//! header (`[load] key`): an address of its own its connections come from
//! (`source_ip`), an address in `X-Forwarded-For`, or a JWT minted for it
//! (HS256 or RS256, with the `jsonwebtoken` crate) sent as a bearer token.
//! Set up once per arm, before any load.

use crate::error::Error;
use crate::load::request::Template;
use crate::scenario::spec::{JwtAlg, JwtSecret, JwtSpec, KeySpec};
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
