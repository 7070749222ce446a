//! Client character sets: the bytes a client sends (`character_set_client`) are turned
//! into the server's UTF-8, and result text into what it asked for
//! (`character_set_results`). Values are UTF-8 inside the server whatever the client
//! speaks. MySQL's `latin1` is Windows-1252 (with 0x81, 0x8D, 0x8F, 0x90 and 0x9D as
//! the C1 controls of the same number).

use std::borrow::Cow;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Charset {
    /// utf8mb4, utf8mb3 / utf8, ascii (a subset).
    Utf8,
    Latin1,
    /// No conversion (`SET NAMES binary`, `character_set_results = NULL`).
    Binary,
}

/// Unicode of bytes 0x80..=0x9F in MySQL's latin1.
const CP1252_HIGH: [char; 32] = [
    '€', '\u{81}', '‚', 'ƒ', '„', '…', '†', '‡', 'ˆ', '‰', 'Š', '‹', 'Œ', '\u{8D}', 'Ž', '\u{8F}',
    '\u{90}', '‘', '’', '“', '”', '•', '–', '—', '˜', '™', 'š', '›', 'œ', '\u{9D}', 'ž', 'Ÿ',
];

impl Charset {
    /// The character set a name (as SET NAMES takes it) stands for; None if Quarry does
    /// not speak it.
    pub fn named(name: &str) -> Option<Charset> {
        match name.to_ascii_lowercase().as_str() {
            "utf8mb4" | "utf8mb3" | "utf8" | "ascii" => Some(Charset::Utf8),
            "latin1" => Some(Charset::Latin1),
            "binary" => Some(Charset::Binary),
            _ => None,
        }
    }

    /// The character set of a handshake's collation id (None: one Quarry does not know;
    /// the connection then speaks UTF-8).
    pub fn of_collation(id: u8) -> Option<Charset> {
        match id {
            5 | 8 | 15 | 31 | 47 | 48 | 49 | 94 => Some(Charset::Latin1),
            33 | 45 | 46 | 83 | 192..=247 | 11 | 65 => Some(Charset::Utf8),
            63 => Some(Charset::Binary),
            _ => None,
        }
    }

    /// The name SHOW VARIABLES gives it.
    pub fn name(self) -> &'static str {
        match self {
            Charset::Utf8 => "utf8mb4",
            Charset::Latin1 => "latin1",
            Charset::Binary => "binary",
        }
    }

    /// The default collation id of the set, as column definitions carry it.
    pub fn collation_id(self) -> u16 {
        match self {
            Charset::Utf8 => 45,
            Charset::Latin1 => 8,
            Charset::Binary => 63,
        }
    }

    /// Client bytes as UTF-8; None when they are not valid in the set (UTF-8 only: every
    /// byte is a latin1 character).
    pub fn decode(self, bytes: &[u8]) -> Option<Cow<'_, str>> {
        match self {
            Charset::Utf8 | Charset::Binary => std::str::from_utf8(bytes).ok().map(Cow::Borrowed),
            Charset::Latin1 if bytes.is_ascii() => {
                Some(Cow::Borrowed(std::str::from_utf8(bytes).ok()?))
            }
            Charset::Latin1 => Some(Cow::Owned(
                bytes
                    .iter()
                    .map(|&b| match b {
                        0x80..=0x9F => CP1252_HIGH[(b - 0x80) as usize],
                        _ => b as char,
                    })
                    .collect(),
            )),
        }
    }

    /// UTF-8 text in the set; a character it lacks becomes `?` (as MariaDB converts).
    pub fn encode(self, s: &str) -> Cow<'_, [u8]> {
        match self {
            Charset::Utf8 | Charset::Binary => Cow::Borrowed(s.as_bytes()),
            Charset::Latin1 if s.is_ascii() => Cow::Borrowed(s.as_bytes()),
            Charset::Latin1 => Cow::Owned(
                s.chars()
                    .map(|c| match c as u32 {
                        0..=0x7F | 0xA0..=0xFF => c as u8,
                        _ => CP1252_HIGH
                            .iter()
                            .position(|&h| h == c)
                            .map_or(b'?', |i| 0x80 + i as u8),
                    })
                    .collect(),
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn latin1_is_cp1252_both_ways() {
        let bytes = [b'a', 0xE4, 0x80, 0x81, 0xFF, 0x9F];
        let s = Charset::Latin1.decode(&bytes).unwrap();
        assert_eq!(s, "aä€\u{81}ÿŸ");
        assert_eq!(&*Charset::Latin1.encode(&s), &bytes);
        assert_eq!(&*Charset::Latin1.encode("日本ä"), b"??\xE4");
        assert!(Charset::Utf8.decode(&[0xE4]).is_none());
        assert_eq!(Charset::named("UTF8"), Some(Charset::Utf8));
        assert_eq!(Charset::named("koi8r"), None);
    }
}
