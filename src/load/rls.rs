//! Envoy's rate-limit service (`[target] kind = "envoy_rls"`): each request
//! is one `envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit`
//! call over HTTP/2 — a gRPC frame holding a `RateLimitRequest` whose one
//! descriptor carries the key — and its answer's `overall_code` is the
//! decision: `OK` an admit, `OVER_LIMIT` a limit. The messages are
//! written here with prost's derive (only the fields rlbench sends and
//! reads; prost skips the rest of an answer), so no `.proto` compiler is
//! needed; the call goes through the load's own HTTP/2 links (`h2.rs`),
//! which keep the open loop's schedule, rather than a gRPC channel of
//! its own.
//!
//! In the trace an answer's status says what the service said, as HTTP
//! would: 200 `OK`, 429 `OVER_LIMIT`, 502 an answer that says neither
//! (`UNKNOWN`, or no readable message) and 503 a gRPC error status.

use prost::Message;

/// The method's path.
pub(crate) const PATH: &str = "/envoy.service.ratelimit.v3.RateLimitService/ShouldRateLimit";

/// The most of an answer's body read (a `RateLimitResponse` is a few
/// bytes; a larger one is no answer of this service's).
pub(crate) const MAX_ANSWER: usize = 64 * 1024;

/// `envoy.service.ratelimit.v3.RateLimitRequest`: what rlbench sends of it.
#[derive(Clone, PartialEq, Message)]
struct RateLimitRequest {
    #[prost(string, tag = "1")]
    domain: String,
    #[prost(message, repeated, tag = "2")]
    descriptors: Vec<RateLimitDescriptor>,
    #[prost(uint32, tag = "3")]
    hits_addend: u32,
}

/// `envoy.extensions.common.ratelimit.v3.RateLimitDescriptor`.
#[derive(Clone, PartialEq, Message)]
struct RateLimitDescriptor {
    #[prost(message, repeated, tag = "1")]
    entries: Vec<Entry>,
}

/// `RateLimitDescriptor.Entry`.
#[derive(Clone, PartialEq, Message)]
struct Entry {
    #[prost(string, tag = "1")]
    key: String,
    #[prost(string, tag = "2")]
    value: String,
}

/// `envoy.service.ratelimit.v3.RateLimitResponse`: its overall code only.
#[derive(Clone, PartialEq, Message)]
struct RateLimitResponse {
    #[prost(int32, tag = "1")]
    overall_code: i32,
}

const OK: i32 = 1;
const OVER_LIMIT: i32 = 2;

/// Appends the gRPC message asking for one hit of `value` under the
/// descriptor entry `descriptor` in `domain`: the 5-byte frame head (not
/// compressed, the length) and the encoded request.
pub(crate) fn write_request(domain: &str, descriptor: &str, value: &str, out: &mut Vec<u8>) {
    let request = RateLimitRequest {
        domain: domain.to_string(),
        descriptors: vec![RateLimitDescriptor {
            entries: vec![Entry {
                key: descriptor.to_string(),
                value: value.to_string(),
            }],
        }],
        hits_addend: 1,
    };
    let length = request.encoded_len();
    out.push(0);
    out.extend_from_slice(&(length as u32).to_be_bytes());
    // Encoding into a Vec cannot run out of room.
    let _ = request.encode(out);
}

/// The status an answer stands for (see the module's words): `grpc_status`
/// from its trailers (or its headers, for an answer of trailers only),
/// `body` its data as read (at most [`MAX_ANSWER`] bytes).
pub(crate) fn status(grpc_status: Option<&[u8]>, body: &[u8]) -> u16 {
    match grpc_status {
        Some(b"0") => {}
        Some(_) => return 503,
        None => return 502,
    }
    // One uncompressed message, whole.
    let Some((&0, rest)) = body.split_first() else {
        return 502;
    };
    let Some((length, message)) = rest.split_first_chunk::<4>() else {
        return 502;
    };
    if u32::from_be_bytes(*length) as usize != message.len() {
        return 502;
    }
    match RateLimitResponse::decode(message).map(|r| r.overall_code) {
        Ok(OK) => 200,
        Ok(OVER_LIMIT) => 429,
        _ => 502,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn answer(code: i32) -> Vec<u8> {
        let message = RateLimitResponse { overall_code: code }.encode_to_vec();
        let mut framed = vec![0];
        framed.extend_from_slice(&(message.len() as u32).to_be_bytes());
        framed.extend_from_slice(&message);
        framed
    }

    #[test]
    fn a_request_is_one_framed_message_with_the_key_in_its_descriptor() {
        let mut out = Vec::new();
        write_request("rlbench", "customer_id", "customer-0003", &mut out);
        assert_eq!(out[0], 0, "not compressed");
        let length = u32::from_be_bytes(out[1..5].try_into().unwrap()) as usize;
        assert_eq!(length, out.len() - 5);
        let back = RateLimitRequest::decode(&out[5..]).unwrap();
        assert_eq!(back.domain, "rlbench");
        assert_eq!(back.hits_addend, 1);
        assert_eq!(back.descriptors.len(), 1);
        let entry = &back.descriptors[0].entries[0];
        assert_eq!(
            (entry.key.as_str(), entry.value.as_str()),
            ("customer_id", "customer-0003")
        );
        // The same bytes protoc's encoding gives: field 1 (domain) first.
        assert_eq!(&out[5..7], &[0x0a, 7]);
        assert_eq!(&out[7..14], b"rlbench");
    }

    #[test]
    fn the_overall_code_is_the_decision_and_anything_else_an_error() {
        let ok = Some(&b"0"[..]);
        assert_eq!(status(ok, &answer(OK)), 200);
        assert_eq!(status(ok, &answer(OVER_LIMIT)), 429);
        assert_eq!(status(ok, &answer(0)), 502, "UNKNOWN decides nothing");
        assert_eq!(status(ok, &answer(7)), 502);
        // A gRPC error, or no status at all.
        assert_eq!(status(Some(b"14"), &answer(OK)), 503);
        assert_eq!(status(None, &answer(OK)), 502);
        // Hostile or broken bodies: never a decision.
        assert_eq!(status(ok, &[]), 502);
        assert_eq!(status(ok, &[0, 0, 0]), 502);
        let mut compressed = answer(OK);
        compressed[0] = 1;
        assert_eq!(status(ok, &compressed), 502);
        let mut short = answer(OK);
        short.pop();
        assert_eq!(status(ok, &short), 502);
        let mut long = answer(OK);
        long.push(0);
        assert_eq!(status(ok, &long), 502);
        assert_eq!(status(ok, &[0, 0, 0, 0, 2, 0xff, 0xff]), 502);
    }
}
