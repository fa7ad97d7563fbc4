//! Signing records with the team secret, as Turborepo signs its remote artifacts: HMAC-SHA256
//! over the stage key and the record's exact bytes. Anyone who can write to the bucket but
//! does not hold the secret cannot make a record that a teammate will use, and a record cannot
//! be moved to another key. Comparison is constant-time.

use hmac::{Hmac, Mac};
use sha2::Sha256;

type HmacSha256 = Hmac<Sha256>;

fn mac(secret: &str, key: &str, body: &str) -> HmacSha256 {
    let mut mac =
        HmacSha256::new_from_slice(secret.as_bytes()).expect("HMAC takes keys of any length");
    mac.update(key.as_bytes());
    mac.update(b"\n");
    mac.update(body.as_bytes());
    mac
}

/// The signature (lowercase hex) of `body` stored under `key`.
pub(crate) fn sign(secret: &str, key: &str, body: &str) -> String {
    let bytes = mac(secret, key, body).finalize().into_bytes();
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

/// Whether `signature` is the signature of `body` under `key`.
pub(crate) fn verify(secret: &str, key: &str, body: &str, signature: &str) -> bool {
    let Some(bytes) = decode_hex(signature) else {
        return false;
    };
    mac(secret, key, body).verify_slice(&bytes).is_ok()
}

fn decode_hex(s: &str) -> Option<Vec<u8>> {
    if s.len() % 2 != 0 || !s.is_ascii() {
        return None;
    }
    (0..s.len())
        .step_by(2)
        .map(|i| u8::from_str_radix(&s[i..i + 2], 16).ok())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_signature_holds_only_for_its_secret_key_and_body() {
        let sig = sign("team", "k1", "{\"a\":1}");
        assert_eq!(sig.len(), 64);
        assert!(verify("team", "k1", "{\"a\":1}", &sig));
        assert!(!verify("other", "k1", "{\"a\":1}", &sig));
        assert!(!verify("team", "k2", "{\"a\":1}", &sig));
        assert!(!verify("team", "k1", "{\"a\":2}", &sig));
        assert!(!verify("team", "k1", "{\"a\":1}", "zz"));
    }
}
