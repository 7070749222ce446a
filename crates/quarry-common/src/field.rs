//! A field of a tab-separated line in the server's own text files (the account file, view
//! definitions): tab, newline, carriage return and backslash written `\t`, `\n`, `\r`,
//! `\\`, so a name holding them cannot split its line.

pub fn escape(s: &str) -> String {
    if !s.contains(['\t', '\n', '\\', '\r']) {
        return s.to_string();
    }
    s.replace('\\', "\\\\")
        .replace('\t', "\\t")
        .replace('\n', "\\n")
        .replace('\r', "\\r")
}

pub fn unescape(s: &str) -> String {
    if !s.contains('\\') {
        return s.to_string();
    }
    let mut out = String::with_capacity(s.len());
    let mut it = s.chars();
    while let Some(c) = it.next() {
        if c != '\\' {
            out.push(c);
            continue;
        }
        match it.next() {
            Some('t') => out.push('\t'),
            Some('n') => out.push('\n'),
            Some('r') => out.push('\r'),
            Some(o) => out.push(o),
            None => out.push('\\'),
        }
    }
    out
}

#[cfg(test)]
mod tests {
    #[test]
    fn fields_round_trip() {
        for s in ["plain", "a\tb\\c\nd\re", "\\", "tail\\"] {
            assert_eq!(super::unescape(&super::escape(s)), s);
        }
        assert!(!super::escape("a\tb").contains('\t'));
    }
}
