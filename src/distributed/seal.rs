//! Signed messages. The coordinator is a shared place: anyone who can
//! write to it could hand an agent work, forge an agent, or stream a
//! correct limiter's old trace in a broken one's place. So every message
//! between a controller and its agents is signed with the token both were
//! given (HMAC-SHA256 over its whole context — the protocol version, the
//! run, the arm, the sender, the addressee, the key it is written at, a
//! sequence number, the coordinator's time, the entry before it in its
//! stream — and the body), and a receiver takes only what names its run,
//! its arm and the place it read it from, comes from whom it expects, and
//! counts up: a message of another run or arm, moved to another key, or
//! seen before, is refused (`chain` for the streams' entries).

use hmac::{Hmac, Mac};
use sha2::Sha256;

/// The protocol's version: an agent and a controller of another one do
/// not understand each other, and say so.
pub(crate) const VERSION: u32 = 3;
/// The shortest token taken: 16 characters (`openssl rand -hex 16` gives 32).
pub(crate) const MIN_TOKEN: usize = 16;

/// The environment variable a coordinator token is best given in.
pub(crate) const TOKEN_ENV: &str = "RLBENCH_COORDINATOR_TOKEN";

/// The coordinator token: `flag` (`--token`), else [`TOKEN_ENV`];
/// required. Never echoed.
pub(crate) fn token_from(flag: Option<&str>) -> Result<Token, crate::error::Error> {
    let env = std::env::var(TOKEN_ENV).ok().filter(|v| !v.is_empty());
    let text = flag.map(str::to_string).or(env).ok_or_else(|| {
        crate::error::Error::input(format!(
            "a distributed run needs a token its controller and agents share: set {TOKEN_ENV} \
             (e.g. to the output of `openssl rand -hex 16`) on both sides, or give --token"
        ))
    })?;
    Ok(Token::new(&text)?)
}

/// Why a coordinator token is refused (never its text).
#[derive(Debug, PartialEq, Eq, thiserror::Error)]
pub(crate) enum TokenError {
    #[error(
        "the coordinator token must have at least {MIN_TOKEN} characters \
         (e.g. `openssl rand -hex 16`); it has {length}"
    )]
    TooShort { length: usize },
}

impl crate::error::Kind for TokenError {
    fn exit(&self) -> crate::error::Exit {
        // The token is the user's to give.
        crate::error::Exit::BadInput
    }
}

/// The shared secret. Never shown: its `Debug` says only its length.
#[derive(Clone)]
pub(crate) struct Token(Vec<u8>);

impl std::fmt::Debug for Token {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(f, "Token({} bytes)", self.0.len())
    }
}

/// What a signature covers besides the body.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Header<'a> {
    pub run: &'a str,
    /// The arm it is about ("" for what outlives an arm: a registration,
    /// a beat, a lease, the run's end).
    pub arm: &'a str,
    pub from: &'a str,
    pub to: &'a str,
    /// The coordinator key it is written at (a stream, an inbox, a beat's
    /// key): moved to another, it is refused.
    pub place: &'a str,
    pub seq: u64,
    /// The coordinator's clock when it was sent (µs), for freshness.
    pub at_us: i64,
    pub kind: &'a str,
    /// The signature of the entry before it in its stream ("" for the
    /// first, and for messages that are not a stream's).
    pub prev: &'a str,
}

/// The name the controller signs as.
pub(crate) const CONTROLLER: &str = "controller";

impl<'a> Header<'a> {
    /// What a controller signs that is not an arm's stream entry: a beat,
    /// a lease, a message to `to` (arm "" for what outlives an arm).
    pub(crate) fn of_controller(
        run: &'a str,
        arm: &'a str,
        to: &'a str,
        place: &'a str,
        seq: u64,
        at_us: i64,
        kind: &'a str,
    ) -> Header<'a> {
        Header {
            run,
            arm,
            from: CONTROLLER,
            to,
            place,
            seq,
            at_us,
            kind,
            prev: "",
        }
    }
}

impl Token {
    /// A token from its text, or why not (one line, without the text).
    pub(crate) fn new(text: &str) -> Result<Token, TokenError> {
        let text = text.trim();
        if text.len() < MIN_TOKEN {
            return Err(TokenError::TooShort { length: text.len() });
        }
        Ok(Token(text.as_bytes().to_vec()))
    }

    fn mac(&self, h: &Header<'_>, body: &[u8]) -> Hmac<Sha256> {
        let mut mac =
            <Hmac<Sha256> as Mac>::new_from_slice(&self.0).expect("HMAC takes a key of any length");
        // Each part with its length first: no two messages sign alike.
        let mut part = |bytes: &[u8]| {
            mac.update(&(bytes.len() as u64).to_le_bytes());
            mac.update(bytes);
        };
        part(b"rlbench");
        part(&VERSION.to_le_bytes());
        part(h.run.as_bytes());
        part(h.arm.as_bytes());
        part(h.from.as_bytes());
        part(h.to.as_bytes());
        part(h.place.as_bytes());
        part(&h.seq.to_le_bytes());
        part(&h.at_us.to_le_bytes());
        part(h.kind.as_bytes());
        part(h.prev.as_bytes());
        part(body);
        mac
    }

    /// The signature of `body` under `h`, in hex.
    pub(crate) fn sign(&self, h: &Header<'_>, body: &[u8]) -> String {
        hex::encode(self.mac(h, body).finalize().into_bytes())
    }

    /// Whether `mac` (hex) is the signature of `body` under `h`, compared
    /// in constant time.
    pub(crate) fn verify(&self, h: &Header<'_>, body: &[u8], mac: &str) -> bool {
        match hex::decode(mac) {
            Ok(bytes) => self.mac(h, body).verify_slice(&bytes).is_ok(),
            Err(_) => false,
        }
    }
}

/// A fresh random mark (a process's, a lease's, a work's).
pub(crate) fn nonce() -> Result<String, crate::error::Error> {
    let mut bytes = [0u8; 16];
    getrandom::fill(&mut bytes).map_err(|e| {
        crate::error::Error::environment(format!("no randomness from the system: {e}"))
    })?;
    Ok(hex::encode(bytes))
}

/// Sequence numbers from one sender: each must be above the last taken.
#[derive(Clone, Debug, Default)]
pub(crate) struct Sequence {
    last: Option<u64>,
}

impl Sequence {
    /// Takes `seq` when it counts up; false for a replay or a reordering.
    pub(crate) fn take(&mut self, seq: u64) -> bool {
        if self.last.is_some_and(|l| seq <= l) {
            return false;
        }
        self.last = Some(seq);
        true
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(seq: u64) -> Header<'static> {
        Header {
            run: "run-1",
            arm: "arm-1",
            from: "controller",
            to: "agent-0",
            place: "inbox",
            seq,
            at_us: 1_700_000_000_000_000,
            kind: "work",
            prev: "",
        }
    }

    #[test]
    fn a_signature_holds_for_exactly_what_was_signed() {
        let token = Token::new("0123456789abcdef").unwrap();
        let mac = token.sign(&header(1), b"body");
        assert!(token.verify(&header(1), b"body", &mac));
        // Any part changed: refused.
        assert!(!token.verify(&header(1), b"bodY", &mac));
        assert!(!token.verify(&header(2), b"body", &mac));
        for changed in [
            Header {
                run: "run-2",
                ..header(1)
            },
            Header {
                from: "agent-0",
                ..header(1)
            },
            Header {
                to: "agent-1",
                ..header(1)
            },
            Header {
                at_us: 1,
                ..header(1)
            },
            Header {
                kind: "start",
                ..header(1)
            },
            Header {
                arm: "arm-2",
                ..header(1)
            },
            Header {
                place: "another-inbox",
                ..header(1)
            },
            Header {
                prev: "ab",
                ..header(1)
            },
        ] {
            assert!(!token.verify(&changed, b"body", &mac), "{changed:?}");
        }
        // Another token, a truncated or non-hex signature: refused.
        let other = Token::new("0123456789abcdeF").unwrap();
        assert!(!other.verify(&header(1), b"body", &mac));
        assert!(!token.verify(&header(1), b"body", &mac[..10]));
        assert!(!token.verify(&header(1), b"body", "zz"));
        // Parts are length-prefixed: moving a byte between them changes it.
        let a = Header {
            run: "ab",
            from: "c",
            ..header(1)
        };
        let b = Header {
            run: "a",
            from: "bc",
            ..header(1)
        };
        assert_ne!(token.sign(&a, b""), token.sign(&b, b""));
    }

    #[test]
    fn a_short_token_is_refused_without_echoing_it() {
        let e = Token::new("secret").unwrap_err().to_string();
        assert!(e.contains("at least 16 characters"), "{e}");
        assert!(!e.contains("secret"), "{e}");
        let t = Token::new("  0123456789abcdef  ").unwrap();
        assert_eq!(format!("{t:?}"), "Token(16 bytes)");
    }

    #[test]
    fn sequences_only_count_up() {
        let mut s = Sequence::default();
        assert!(s.take(3));
        assert!(!s.take(3), "a replay");
        assert!(!s.take(2), "an older one");
        assert!(s.take(7));
    }
}
