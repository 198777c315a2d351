//! `[load]`: the schedule, the keys and where each request carries its
//! key, and principals sending under forged identities.

use crate::load::pick::KeyDistribution;
use std::time::Duration;

#[derive(Clone, Debug)]
pub(crate) struct LoadSpec {
    /// When requests leave (constant, Poisson, stages, bursts), summed over
    /// all keys and replicas.
    pub shape: crate::load::schedule::Shape,
    /// Number of distinct keys.
    pub keys: u32,
    pub key_distribution: KeyDistribution,
    pub timeout: Duration,
    /// Requests allowed in flight at once; past it the schedule waits (and
    /// the lag shows in the figures) rather than memory growing.
    pub max_in_flight: usize,
    /// `retry = { ... }`: callers retry limited answers; `None`: never.
    pub retry: Option<crate::load::retry::Retry>,
    /// `[load] key`: where the key goes when more than a header says it
    /// (an external target's header, path, query or body place is in its
    /// request template already).
    pub key: KeySpec,
    /// `[load] principals` with `spoof`: `keys` is then the principals'
    /// count, and each sends under forged identities.
    pub spoof: Option<Spoof>,
}

/// Where each request carries its key, as the limiter finds it.
#[derive(Clone, Debug, Default, PartialEq)]
pub(crate) enum KeySpec {
    /// A header, a path segment, a query parameter, a body field: all in
    /// the request template as it is.
    #[default]
    InTemplate,
    /// Each key's connections come from an address of its own, the
    /// `count` from `first` on (what nginx `$binary_remote_addr` and
    /// HAProxy `src` key on).
    SourceIp {
        first: std::net::Ipv4Addr,
        count: u32,
    },
    /// `X-Forwarded-For` with an address of each key's own.
    ForwardedFor,
    /// `Authorization: Bearer` with a token minted for each key.
    Jwt(JwtSpec),
}

/// Where `X-Forwarded-For` addresses start: 10.0.0.1, one per key.
pub(crate) const FORWARDED_FROM: std::net::Ipv4Addr = std::net::Ipv4Addr::new(10, 0, 0, 1);

/// How to mint each key's token.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct JwtSpec {
    /// The claim that holds the key ("sub").
    pub claim: String,
    pub alg: JwtAlg,
    /// HS256's shared secret, or RS256's private key (PEM file, relative
    /// to the scenario's folder).
    pub secret: JwtSecret,
    /// Tokens expire this long after they are minted.
    pub expires_in: Duration,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum JwtAlg {
    Hs256,
    Rs256,
}

#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum JwtSecret {
    Shared(String),
    PrivateKey(std::path::PathBuf),
}

/// True callers (principals) sending under forged identities, each with
/// its own real one too (its JWT, when `[load] key = { jwt }`): what a
/// limiter keyed on something a client can forge lets through.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct Spoof {
    /// Forged identities per principal; a request takes one of them.
    pub forged_keys: u32,
    /// The key header carries a forged key (`<principal>~<n>`).
    pub rotate_key: bool,
    /// `X-Forwarded-For` carries a forged address (else the principal's own).
    pub forwarded_for: bool,
}

/// The most principals × forged keys a load names.
pub(crate) const MAX_FORGED: u32 = 1_000_000;
