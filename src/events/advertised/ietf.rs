//! The IETF draft's two structured fields, as
//! draft-ietf-httpapi-ratelimit-headers-10 defines them: `RateLimit-Policy`,
//! a List of quota policies (`"name";q=..;qu=..;w=..;pk=:..:`), and
//! `RateLimit`, a List of service limits naming their policy
//! (`"name";r=..;t=..;pk=:..:`); plus the older drafts' dictionary
//! `RateLimit: limit=10, remaining=3, reset=12`.
//!
//! A field with any member that breaks the draft's rules is malformed and
//! ignored whole (the draft: "Malformed RateLimit header fields MUST be
//! ignored"); unknown parameters are comments. Only quotas counted in
//! requests are held against the trace: a policy in `content-bytes` or
//! `concurrent-requests` (or a unit rlbench does not know) is skipped, and
//! so is a service limit naming one. Of the service limits left, the one
//! with the least remaining is read: the policy that binds first, so the
//! remaining check never expects more than the limiter promised.

use sfv::{BareItem, Item, ListEntry, Parser};

/// A quota policy item, checked.
struct QuotaPolicy<'a> {
    name: &'a BareItem,
    quota: u64,
    window_s: Option<u64>,
    /// `qu` absent or `"requests"`: comparable with the trace's requests.
    in_requests: bool,
}

/// A service limit item, checked.
struct ServiceLimit<'a> {
    name: &'a BareItem,
    remaining: u64,
    reset_s: Option<u64>,
}

/// What the two fields said; `None` where they said nothing usable.
#[derive(Debug, Default)]
pub(super) struct Figures {
    pub(super) limit: Option<u64>,
    pub(super) window_s: Option<u64>,
    pub(super) remaining: Option<u64>,
    pub(super) reset_ms: Option<u64>,
}

/// Reads both fields (each the members of all its lines), and whether
/// every field present is well-formed; what is malformed is not used.
pub(super) fn read(policy: Option<&[u8]>, state: Option<&[u8]>) -> (Figures, bool) {
    let mut ok = true;
    let mut a = Figures::default();
    let policy_list = policy.map(|p| Parser::new(p).parse::<sfv::List>());
    let policies = match &policy_list {
        Some(Ok(list)) => all(list, quota_policy),
        _ => None,
    };
    ok &= policy.is_none() || policies.is_some();
    let policies = policies.unwrap_or_default();
    let named = |name: &BareItem| policies.iter().find(|p| p.name == name);

    let state_list = state.map(|s| Parser::new(s).parse::<sfv::List>());
    let limits = match &state_list {
        Some(Ok(list)) => all(list, service_limit),
        _ => None,
    };
    let chosen = limits.as_ref().and_then(|limits| {
        limits
            .iter()
            .filter(|l| named(l.name).map_or(true, |p| p.in_requests))
            .min_by_key(|l| l.remaining)
    });
    let quota = match chosen {
        Some(l) => named(l.name),
        None => policies.iter().find(|p| p.in_requests),
    };
    if let Some(p) = quota {
        a.limit = Some(p.quota);
        a.window_s = p.window_s;
    }
    if let Some(l) = chosen {
        a.remaining = Some(l.remaining);
        a.reset_ms = l.reset_s.map(|t| t.saturating_mul(1000));
    }
    if let (Some(s), None) = (state, &limits) {
        ok &= older_dictionary(s, &mut a);
    }
    (a, ok)
}

/// Every member checked by `check`; `None` when the list is empty or any
/// member is not an item or fails its check (the field is malformed).
fn all<'a, T>(list: &'a [ListEntry], check: fn(&'a Item) -> Option<T>) -> Option<Vec<T>> {
    if list.is_empty() {
        return None;
    }
    list.iter()
        .map(|e| match e {
            ListEntry::Item(i) => check(i),
            ListEntry::InnerList(_) => None,
        })
        .collect()
}

/// A policy's or service limit's identifier: a String (draft-10), or a
/// Token as draft-08 and -09 allowed.
fn identifier(item: &Item) -> Option<&BareItem> {
    let b = &item.bare_item;
    (b.as_string().is_some() || b.as_token().is_some()).then_some(b)
}

/// A parameter's value, checked by `kind` when present: `Some(None)` when
/// absent, `None` when present and of the wrong kind.
fn param<'a, T>(
    item: &'a Item,
    name: &str,
    kind: fn(&'a BareItem) -> Option<T>,
) -> Option<Option<T>> {
    match item.params.get(name) {
        None => Some(None),
        Some(v) => kind(v).map(Some),
    }
}

fn non_negative(v: &BareItem) -> Option<u64> {
    v.as_integer()
        .and_then(|i| u64::try_from(i64::from(i)).ok())
}

fn positive(v: &BareItem) -> Option<u64> {
    non_negative(v).filter(|&n| n > 0)
}

/// `pk` is a Byte Sequence; rlbench checks its type, not its bytes (the
/// server's partition is opaque to a client).
fn partition_key_ok(item: &Item) -> bool {
    param(item, "pk", |v| v.as_byte_sequence().map(|_| ())).is_some()
}

fn quota_policy(item: &Item) -> Option<QuotaPolicy<'_>> {
    let name = identifier(item)?;
    let quota = param(item, "q", non_negative)??;
    let window_s = param(item, "w", positive)?;
    let unit = param(item, "qu", |v| v.as_string().map(|s| s.as_str()))?;
    if !partition_key_ok(item) {
        return None;
    }
    Some(QuotaPolicy {
        name,
        quota,
        window_s,
        in_requests: unit.map_or(true, |u| u == "requests"),
    })
}

fn service_limit(item: &Item) -> Option<ServiceLimit<'_>> {
    let name = identifier(item)?;
    let remaining = param(item, "r", non_negative)??;
    let reset_s = param(item, "t", non_negative)?;
    if !partition_key_ok(item) {
        return None;
    }
    Some(ServiceLimit {
        name,
        remaining,
        reset_s,
    })
}

/// Draft-04 to -07's `RateLimit: limit=10, remaining=3, reset=12`:
/// `remaining` required, each of the three a non-negative Integer.
fn older_dictionary(state: &[u8], a: &mut Figures) -> bool {
    let Ok(dict) = Parser::new(state).parse::<sfv::Dictionary>() else {
        return false;
    };
    let int = |name: &str| match dict.get(name) {
        None => Some(None),
        Some(ListEntry::Item(i)) => non_negative(&i.bare_item).map(Some),
        Some(ListEntry::InnerList(_)) => None,
    };
    let (Some(limit), Some(Some(remaining)), Some(reset)) =
        (int("limit"), int("remaining"), int("reset"))
    else {
        return false;
    };
    a.remaining = Some(remaining);
    a.limit = a.limit.or(limit);
    a.reset_ms = reset.map(|t| t.saturating_mul(1000));
    true
}
