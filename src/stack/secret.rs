//! The secrets of one stack: the password of the Redis rlbench starts and
//! the token of the replicas' admin endpoint, fresh random bytes from the
//! operating system each time, never written where other users can read
//! them (see `redis.rs` for the server's side, `replica.rs` for the
//! replicas').

use super::error::StackError;

/// Bytes of randomness in a secret: 128 bits, past guessing.
const BYTES: usize = 16;

/// A fresh secret as lowercase hex: safe in a URL, a config file and a
/// header alike.
pub(super) fn fresh() -> Result<String, StackError> {
    let mut bytes = [0u8; BYTES];
    getrandom::fill(&mut bytes).map_err(StackError::Secret)?;
    Ok(bytes.iter().map(|b| format!("{b:02x}")).collect())
}

#[cfg(test)]
mod tests {
    #[test]
    fn secrets_are_hex_and_differ() {
        let (a, b) = (super::fresh().unwrap(), super::fresh().unwrap());
        assert_eq!(a.len(), 32);
        assert!(a.bytes().all(|c| c.is_ascii_hexdigit()), "{a}");
        assert_ne!(a, b);
    }
}
