//! Statements whose string literals hold bytes that are not UTF-8: a dump made without
//! `--hex-blob` writes a BLOB's bytes inside a quoted literal, and MariaDB takes them as
//! they are. The server's SQL text is UTF-8, so each such literal is rewritten as the
//! hex literal of its bytes (`X'00FF10'`, a binary string), which a BLOB or BINARY column
//! stores byte for byte and a text column refuses as MariaDB does for invalid bytes.
//!
//! Owns: the lexing needed for that (quotes, escapes, comments). Must not touch: what
//! the statement means; text outside literals must already be UTF-8.

/// `bytes` as UTF-8 SQL text with every string literal that is not UTF-8 written as a hex
/// literal; None when bytes outside string literals are not UTF-8 either.
pub fn hex_binary_literals(bytes: &[u8]) -> Option<String> {
    let mut out: Vec<u8> = Vec::with_capacity(bytes.len() * 2);
    let mut i = 0;
    while i < bytes.len() {
        let c = bytes[i];
        let rest = &bytes[i..];
        if c == b'\'' || c == b'"' {
            let (content, end) = literal(bytes, i)?;
            let raw = &bytes[i..end];
            if std::str::from_utf8(raw).is_ok() {
                out.extend_from_slice(raw);
            } else {
                out.extend_from_slice(b"X'");
                for b in content {
                    out.extend_from_slice(format!("{b:02X}").as_bytes());
                }
                out.push(b'\'');
            }
            i = end;
            continue;
        }
        let skip = if c == b'`' {
            // A quoted name: to its closing backtick (doubled ones are one).
            let mut j = i + 1;
            while j < bytes.len() {
                if bytes[j] == b'`' {
                    if bytes.get(j + 1) == Some(&b'`') {
                        j += 2;
                        continue;
                    }
                    break;
                }
                j += 1;
            }
            (j + 1).min(bytes.len()) - i
        } else if rest.starts_with(b"#")
            || rest.starts_with(b"--") && rest.get(2).is_none_or(|b| b.is_ascii_whitespace())
        {
            rest.iter().position(|&b| b == b'\n').unwrap_or(rest.len())
        } else if rest.starts_with(b"/*") && !rest.starts_with(b"/*!") && !rest.starts_with(b"/*M!")
        {
            rest.windows(2)
                .position(|w| w == b"*/")
                .map_or(rest.len(), |p| p + 2)
        } else {
            1
        };
        out.extend_from_slice(&bytes[i..i + skip]);
        i += skip;
    }
    String::from_utf8(out).ok()
}

/// The bytes a quoted literal starting at `start` stands for (MySQL's backslash escapes
/// and doubled quotes undone) and where it ends; None when it is not closed.
fn literal(bytes: &[u8], start: usize) -> Option<(Vec<u8>, usize)> {
    let q = bytes[start];
    let mut content = Vec::new();
    let mut j = start + 1;
    while j < bytes.len() {
        let b = bytes[j];
        if b == b'\\' && j + 1 < bytes.len() {
            let e = bytes[j + 1];
            match e {
                b'0' => content.push(0),
                b'b' => content.push(8),
                b'n' => content.push(b'\n'),
                b'r' => content.push(b'\r'),
                b't' => content.push(b'\t'),
                b'Z' => content.push(0x1A),
                // LIKE's wildcards keep their backslash.
                b'%' | b'_' => content.extend_from_slice(&[b'\\', e]),
                other => content.push(other),
            }
            j += 2;
            continue;
        }
        if b == q {
            if bytes.get(j + 1) == Some(&q) {
                content.push(q);
                j += 2;
                continue;
            }
            return Some((content, j + 1));
        }
        content.push(b);
        j += 1;
    }
    None
}

#[cfg(test)]
mod tests {
    use super::hex_binary_literals;

    #[test]
    fn literals_that_are_not_utf8_become_hex() {
        assert_eq!(
            hex_binary_literals(b"INSERT INTO t VALUES (1,'\\0\xFF\x10','caf\xC3\xA9')").as_deref(),
            Some("INSERT INTO t VALUES (1,X'00FF10','caf\u{e9}')")
        );
        // Escapes and doubled quotes are undone; a quote in a comment starts nothing.
        assert_eq!(
            hex_binary_literals(b"-- it's\nSELECT \"a\\\"\xFE''\" /* ' */, `x'`").as_deref(),
            Some("-- it's\nSELECT X'6122FE2727' /* ' */, `x'`")
        );
        assert_eq!(hex_binary_literals(b"SELECT \xFF"), None);
        assert_eq!(hex_binary_literals(b"SELECT '\xFF"), None);
    }
}
