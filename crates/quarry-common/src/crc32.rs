//! CRC-32 as zlib computes it (ISO 3309, reflected polynomial 0xEDB88320): MariaDB's
//! `my_checksum`, which CHECKSUM TABLE sums (and the SQL function CRC32 returns).

const TABLE: [u32; 256] = {
    let mut t = [0u32; 256];
    let mut i = 0;
    while i < 256 {
        let mut c = i as u32;
        let mut k = 0;
        while k < 8 {
            c = if c & 1 != 0 {
                0xEDB8_8320 ^ (c >> 1)
            } else {
                c >> 1
            };
            k += 1;
        }
        t[i] = c;
        i += 1;
    }
    t
};

/// `crc` (0 to start) carried on over `bytes`: `crc32(crc32(0, a), b) == crc32(0, a ++ b)`.
pub fn crc32(crc: u32, bytes: &[u8]) -> u32 {
    let mut c = !crc;
    for &b in bytes {
        c = TABLE[((c ^ b as u32) & 0xFF) as usize] ^ (c >> 8);
    }
    !c
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zlibs_values() {
        // zlib.crc32 of these (Python) and MariaDB's CRC32('…').
        assert_eq!(crc32(0, b""), 0);
        assert_eq!(crc32(0, b"MySQL"), 3_259_397_556);
        assert_eq!(crc32(crc32(0, b"My"), b"SQL"), 3_259_397_556);
    }
}
