//! MariaDB's `ed25519` authentication plugin: the account keeps a public key derived from
//! the password; a login signs the server's 32-byte nonce with the secret derived from
//! the password (`client_ed25519`), so the password never crosses the wire and the stored
//! key does not reveal it.
//!
//! The secret is RFC 8032's expanded key with SHA-512 of the password in place of
//! SHA-512 of a 32-byte seed (MariaDB's variant); signatures are plain Ed25519 otherwise.
//! Keys are shown as MariaDB shows them: base64 without padding (43 characters).

use base64::engine::general_purpose::STANDARD_NO_PAD;
use base64::Engine;
use ed25519_dalek::hazmat::{raw_sign, ExpandedSecretKey};
use ed25519_dalek::{Signature, VerifyingKey};
use sha2::{Digest, Sha512};

fn secret(password: &str) -> ExpandedSecretKey {
    let h: [u8; 64] = Sha512::digest(password.as_bytes()).into();
    ExpandedSecretKey::from_bytes(&h)
}

/// The public key MariaDB stores for `IDENTIFIED VIA ed25519 USING PASSWORD('…')`.
pub fn public_key(password: &str) -> [u8; 32] {
    VerifyingKey::from(&secret(password)).to_bytes()
}

/// What client_ed25519 answers to `nonce` for `password`.
pub fn sign(password: &str, nonce: &[u8]) -> [u8; 64] {
    let esk = secret(password);
    raw_sign::<Sha512>(&esk, nonce, &VerifyingKey::from(&esk)).to_bytes()
}

/// Does `signature` sign `nonce` for the holder of `public`?
pub fn verify(public: &[u8; 32], nonce: &[u8], signature: &[u8]) -> bool {
    let (Ok(key), Ok(sig)) = (
        VerifyingKey::from_bytes(public),
        Signature::from_slice(signature),
    ) else {
        return false;
    };
    key.verify_strict(nonce, &sig).is_ok()
}

pub fn to_text(public: &[u8; 32]) -> String {
    STANDARD_NO_PAD.encode(public)
}

/// A key as MariaDB writes it (43 characters, padding allowed); None when it is not one.
pub fn from_text(text: &str) -> Option<[u8; 32]> {
    let bytes = STANDARD_NO_PAD.decode(text.trim_end_matches('=')).ok()?;
    bytes.try_into().ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// MariaDB 10.11: `CREATE USER ed IDENTIFIED VIA ed25519 USING PASSWORD('secret')`
    /// stores this key.
    #[test]
    fn keys_are_mariadbs_and_signatures_verify() {
        let k = public_key("secret");
        assert_eq!(to_text(&k), "ZIgUREUg5PVgQ6LskhXmO+eZLS0nC8be6HPjYWR4YJY");
        assert_eq!(from_text(&to_text(&k)), Some(k));
        let nonce = [7u8; 32];
        let sig = sign("secret", &nonce);
        assert!(verify(&k, &nonce, &sig));
        assert!(!verify(&k, &[8u8; 32], &sig));
        assert!(!verify(&public_key("other"), &nonce, &sig));
        assert!(!verify(&k, &nonce, &sig[..63]));
    }
}
