//! Which key a request is counted under, when not its key header: a claim
//! of the JWT it carries in `Authorization: Bearer`, verified (HS256 with a
//! shared secret or RS256 with a public key; a missing, badly signed or
//! expired token is a 401 and no decision), or the first address of its
//! `X-Forwarded-For`, trusted as if a proxy of ours had set it (the
//! spoofable mode a limiter behind no such proxy must not use), else the
//! peer's address.

use axum::http::HeaderMap;
use jsonwebtoken::{Algorithm, DecodingKey, Validation};
use serde::{Deserialize, Serialize};
use std::net::SocketAddr;

/// Where a replica finds the key (`ReplicaConfig::key_from`).
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "from", rename_all = "snake_case", deny_unknown_fields)]
pub enum KeyFrom {
    /// The key header (`key_header`).
    #[default]
    Header,
    /// This claim of a verified JWT.
    JwtClaim {
        claim: String,
        alg: JwtAlg,
        /// HS256's shared secret.
        #[serde(default, skip_serializing_if = "Option::is_none")]
        secret: Option<String>,
        /// RS256's public key (PEM text).
        #[serde(default, skip_serializing_if = "Option::is_none")]
        public_key: Option<String>,
    },
    /// The first address of `X-Forwarded-For`, else the peer's.
    ForwardedFor,
}

impl KeyFrom {
    /// Where the key comes from, as a metric label says it.
    pub fn name(&self) -> &'static str {
        match self {
            KeyFrom::Header => "header",
            KeyFrom::JwtClaim { .. } => "jwt_claim",
            KeyFrom::ForwardedFor => "forwarded_for",
        }
    }
}

#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub enum JwtAlg {
    HS256,
    RS256,
}

/// Why a request has no key.
#[derive(Debug, PartialEq, Eq)]
pub enum Refused {
    /// 401: no valid token.
    Unauthorized(String),
    /// 400: nothing to key on.
    BadRequest(String),
}

/// A replica's way of finding keys, set up once.
pub(crate) enum Identity {
    Header,
    Jwt {
        claim: String,
        key: Box<DecodingKey>,
        validation: Box<Validation>,
    },
    ForwardedFor,
}

/// Why a `key_from` cannot be set up.
#[derive(Debug, thiserror::Error)]
pub enum KeyFromError {
    /// The RS256 public key is not a PEM RSA key.
    #[error("jwt public_key: {0}")]
    PublicKey(jsonwebtoken::errors::Error),
    /// Neither HS256 with a secret nor RS256 with a public key (alone).
    #[error("jwt_claim needs HS256 with a secret or RS256 with a public_key")]
    NoKey,
}

impl Identity {
    pub(crate) fn new(from: &KeyFrom) -> Result<Identity, KeyFromError> {
        Ok(match from {
            KeyFrom::Header => Identity::Header,
            KeyFrom::ForwardedFor => Identity::ForwardedFor,
            KeyFrom::JwtClaim {
                claim,
                alg,
                secret,
                public_key,
            } => {
                let (alg, key) = match (alg, secret, public_key) {
                    (JwtAlg::HS256, Some(s), None) if !s.is_empty() => {
                        (Algorithm::HS256, DecodingKey::from_secret(s.as_bytes()))
                    }
                    (JwtAlg::RS256, None, Some(pem)) => (
                        Algorithm::RS256,
                        DecodingKey::from_rsa_pem(pem.as_bytes())
                            .map_err(KeyFromError::PublicKey)?,
                    ),
                    _ => return Err(KeyFromError::NoKey),
                };
                let mut validation = Validation::new(alg);
                validation.required_spec_claims = ["exp".to_string()].into();
                validation.leeway = 0;
                Identity::Jwt {
                    claim: claim.clone(),
                    key: Box::new(key),
                    validation: Box::new(validation),
                }
            }
        })
    }

    /// The key of a request with `headers` from `peer`; `None` for the key
    /// header's mode (the caller reads it).
    pub(crate) fn key(
        &self,
        headers: &HeaderMap,
        peer: Option<SocketAddr>,
    ) -> Option<Result<String, Refused>> {
        match self {
            Identity::Header => None,
            Identity::ForwardedFor => Some(
                headers
                    .get("x-forwarded-for")
                    .and_then(|v| v.to_str().ok())
                    .and_then(|v| v.split(',').next())
                    .map(|first| first.trim().to_string())
                    .filter(|first| !first.is_empty())
                    .or_else(|| peer.map(|p| p.ip().to_string()))
                    .ok_or_else(|| Refused::BadRequest("no client address".into())),
            ),
            Identity::Jwt {
                claim,
                key,
                validation,
            } => Some(jwt_key(headers, claim, key, validation)),
        }
    }
}

fn jwt_key(
    headers: &HeaderMap,
    claim: &str,
    key: &DecodingKey,
    validation: &Validation,
) -> Result<String, Refused> {
    let token = headers
        .get(axum::http::header::AUTHORIZATION)
        .and_then(|v| v.to_str().ok())
        .and_then(|v| v.strip_prefix("Bearer "))
        .ok_or_else(|| Refused::Unauthorized("missing bearer token".into()))?;
    let data = jsonwebtoken::decode::<serde_json::Value>(token.trim(), key, validation)
        .map_err(|e| Refused::Unauthorized(format!("invalid token: {e}")))?;
    match data.claims.get(claim) {
        Some(serde_json::Value::String(s)) if !s.is_empty() => Ok(s.clone()),
        Some(serde_json::Value::Number(n)) => Ok(n.to_string()),
        _ => Err(Refused::Unauthorized(format!(
            "token without claim {claim:?}"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use axum::http::HeaderValue;

    const SECRET: &str = "a shared secret of the test";

    fn token(claims: serde_json::Value, secret: &str) -> String {
        jsonwebtoken::encode(
            &jsonwebtoken::Header::new(Algorithm::HS256),
            &claims,
            &jsonwebtoken::EncodingKey::from_secret(secret.as_bytes()),
        )
        .unwrap()
    }

    fn now() -> u64 {
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
    }

    fn bearer(t: &str) -> HeaderMap {
        let mut h = HeaderMap::new();
        h.insert(
            "authorization",
            HeaderValue::from_str(&format!("Bearer {t}")).unwrap(),
        );
        h
    }

    #[test]
    fn a_verified_claim_is_the_key_and_anything_else_is_401() {
        let id = Identity::new(&KeyFrom::JwtClaim {
            claim: "sub".into(),
            alg: JwtAlg::HS256,
            secret: Some(SECRET.into()),
            public_key: None,
        })
        .unwrap();
        let good = token(
            serde_json::json!({"sub": "customer-1", "exp": now() + 60}),
            SECRET,
        );
        assert_eq!(id.key(&bearer(&good), None), Some(Ok("customer-1".into())));
        let refused =
            |h: &HeaderMap| matches!(id.key(h, None), Some(Err(Refused::Unauthorized(_))));
        assert!(refused(&HeaderMap::new()), "no token");
        let forged = token(
            serde_json::json!({"sub": "customer-1", "exp": now() + 60}),
            "another secret",
        );
        assert!(refused(&bearer(&forged)), "badly signed");
        let expired = token(
            serde_json::json!({"sub": "customer-1", "exp": now() - 10}),
            SECRET,
        );
        assert!(refused(&bearer(&expired)), "expired");
        let no_exp = token(serde_json::json!({"sub": "customer-1"}), SECRET);
        assert!(refused(&bearer(&no_exp)), "no expiry");
        let no_claim = token(
            serde_json::json!({"uid": "customer-1", "exp": now() + 60}),
            SECRET,
        );
        assert!(refused(&bearer(&no_claim)), "no claim");
        assert!(refused(&bearer("not.a.token")));
        assert!(Identity::new(&KeyFrom::JwtClaim {
            claim: "sub".into(),
            alg: JwtAlg::HS256,
            secret: None,
            public_key: None,
        })
        .is_err());
    }

    #[test]
    fn forwarded_for_trusts_the_first_address_else_the_peer() {
        let id = Identity::new(&KeyFrom::ForwardedFor).unwrap();
        let mut h = HeaderMap::new();
        h.insert(
            "x-forwarded-for",
            HeaderValue::from_static("10.0.0.7, 127.0.0.1"),
        );
        let peer: SocketAddr = "127.0.0.9:4000".parse().unwrap();
        assert_eq!(id.key(&h, Some(peer)), Some(Ok("10.0.0.7".into())));
        assert_eq!(
            id.key(&HeaderMap::new(), Some(peer)),
            Some(Ok("127.0.0.9".into()))
        );
        assert_eq!(
            Identity::new(&KeyFrom::Header).unwrap().key(&h, Some(peer)),
            None
        );
    }
}
