//! JSON text as MariaDB's JSON_VALID reads it: RFC 8259 with MariaDB's leniencies (any
//! character may follow a backslash, a number may end in its point, `1.e5`) and its
//! limits (31 levels of nesting). Owns no JSON values; functions over them are to come.

/// Levels of arrays and objects MariaDB reads inside one another (JSON_DEPTH_LIMIT).
const MAX_DEPTH: usize = 31;

/// Whether `s` is one JSON value with whitespace around it, as MariaDB's JSON_VALID.
pub fn valid(s: &str) -> bool {
    let mut p = Reader {
        b: s.as_bytes(),
        i: 0,
    };
    p.ws();
    p.value(0) && {
        p.ws();
        p.i == p.b.len()
    }
}

struct Reader<'a> {
    b: &'a [u8],
    i: usize,
}

impl Reader<'_> {
    fn peek(&self) -> Option<u8> {
        self.b.get(self.i).copied()
    }

    fn ws(&mut self) {
        while matches!(self.peek(), Some(b' ' | b'\t' | b'\n' | b'\r')) {
            self.i += 1;
        }
    }

    fn eat(&mut self, c: u8) -> bool {
        if self.peek() == Some(c) {
            self.i += 1;
            true
        } else {
            false
        }
    }

    fn value(&mut self, depth: usize) -> bool {
        match self.peek() {
            Some(b'{') => self.container(depth, b'}', true),
            Some(b'[') => self.container(depth, b']', false),
            Some(b'"') => self.string(),
            Some(b'-' | b'0'..=b'9') => self.number(),
            Some(b't') => self.word(b"true"),
            Some(b'f') => self.word(b"false"),
            Some(b'n') => self.word(b"null"),
            _ => false,
        }
    }

    fn word(&mut self, w: &[u8]) -> bool {
        if self.b[self.i..].starts_with(w) {
            self.i += w.len();
            true
        } else {
            false
        }
    }

    /// An array, or an object (`keyed`) of string keys.
    fn container(&mut self, depth: usize, close: u8, keyed: bool) -> bool {
        if depth >= MAX_DEPTH {
            return false;
        }
        self.i += 1;
        self.ws();
        if self.eat(close) {
            return true;
        }
        loop {
            if keyed {
                if !self.string() {
                    return false;
                }
                self.ws();
                if !self.eat(b':') {
                    return false;
                }
                self.ws();
            }
            if !self.value(depth + 1) {
                return false;
            }
            self.ws();
            if self.eat(close) {
                return true;
            }
            if !self.eat(b',') {
                return false;
            }
            self.ws();
        }
    }

    fn string(&mut self) -> bool {
        if !self.eat(b'"') {
            return false;
        }
        loop {
            match self.peek() {
                None => return false,
                Some(b'"') => {
                    self.i += 1;
                    return true;
                }
                Some(c) if c < 0x20 => return false,
                Some(b'\\') => {
                    self.i += 1;
                    match self.peek() {
                        None => return false,
                        Some(b'u') => {
                            self.i += 1;
                            let Some(u) = self.hex4() else {
                                return false;
                            };
                            // A high surrogate must be followed by a low one; a low
                            // one alone is no character.
                            if (0xD800..0xDC00).contains(&u) {
                                if !self.word(b"\\u") {
                                    return false;
                                }
                                if !self.hex4().is_some_and(|l| (0xDC00..0xE000).contains(&l)) {
                                    return false;
                                }
                            } else if (0xDC00..0xE000).contains(&u) {
                                return false;
                            }
                        }
                        Some(_) => self.i += 1,
                    }
                }
                Some(_) => self.i += 1,
            }
        }
    }

    fn hex4(&mut self) -> Option<u32> {
        let h = self.b.get(self.i..self.i + 4)?;
        let s = std::str::from_utf8(h).ok()?;
        let v = u32::from_str_radix(s, 16).ok()?;
        if !h.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        self.i += 4;
        Some(v)
    }

    fn digits(&mut self) -> usize {
        let start = self.i;
        while matches!(self.peek(), Some(b'0'..=b'9')) {
            self.i += 1;
        }
        self.i - start
    }

    fn number(&mut self) -> bool {
        self.eat(b'-');
        match self.peek() {
            Some(b'0') => {
                self.i += 1;
                if matches!(self.peek(), Some(b'0'..=b'9')) {
                    return false;
                }
            }
            Some(b'1'..=b'9') => {
                self.digits();
            }
            _ => return false,
        }
        if self.eat(b'.') {
            self.digits();
        }
        if matches!(self.peek(), Some(b'e' | b'E')) {
            self.i += 1;
            if !self.eat(b'+') {
                self.eat(b'-');
            }
            if self.digits() == 0 {
                return false;
            }
        }
        true
    }
}

#[cfg(test)]
mod tests {
    use super::valid;

    /// MariaDB 10.11's JSON_VALID of each text.
    #[test]
    fn agrees_with_mariadb() {
        let yes = [
            "1",
            " {\"a\": [1, true, null, \"x\\u00e9\"]} ",
            "1e5",
            "\"\\x\"",
            "-0.5E-3",
            "{\"a\":1, \"a\":2}",
            "[]",
            "{}",
            "1.",
            "\"\\/\"",
            "null",
            "\"\\q\"",
            "1.e5",
            "0.0",
            "-0",
            "1E+2",
            "\"\\u00E9\"",
            "\"é\"",
            "\"\u{7f}\"",
            "[[[[1]]]]",
            "\"\\\\\"",
            "\"\\a\"",
            "\"\\u0000\"",
            "1 ",
            "\n1\t",
            "1\r",
        ];
        let no = [
            "tru",
            "",
            "01",
            "{\"a\":1,}",
            "-",
            ".5",
            "\"\\u12\"",
            "\"a\tb\"",
            "[1 2]",
            "nul",
            " ",
            "1e",
            "+1",
            "-01",
            "00",
            "1e-",
            "true false",
            "[1,]",
            "[,1]",
            "{\"a\"}",
            "{1:2}",
            "TRUE",
            "\"\u{1}\"",
            "0x1",
            "1.5.5",
            "-.5",
            "\"\\\"",
            "\"\\uD800\"",
        ];
        for s in yes {
            assert!(valid(s), "{s:?} is valid");
        }
        for s in no {
            assert!(!valid(s), "{s:?} is not valid");
        }
        let nest = |n: usize| format!("{}{}", "[".repeat(n), "]".repeat(n));
        assert!(valid(&nest(31)));
        assert!(!valid(&nest(32)));
        let obj = |n: usize| format!("{}1{}", "{\"a\":".repeat(n), "}".repeat(n));
        assert!(valid(&obj(31)));
        assert!(!valid(&obj(32)));
    }
}
