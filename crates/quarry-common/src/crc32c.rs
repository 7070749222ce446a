//! CRC-32C (Castagnoli) of short buffers — a row record's payload, checked on every
//! record a scan reads — with the value of the `crc32c` crate, which the rest of the
//! code uses for logs and pages. For up to [`SHORT`] bytes the SSE 4.2 instruction runs
//! on unaligned words, then on the last 4, 2 and 1 bytes: the crate aligns first, which
//! costs up to fourteen byte steps on a hundred-byte record. Longer buffers, and CPUs
//! without the instruction, go to the crate.

/// Buffers up to this long take the word loop; the crate's interleaved loop wins above.
pub const SHORT: usize = 512;

/// CRC-32C of `data`, equal to `crc32c::crc32c(data)`.
#[inline]
pub fn crc32c(data: &[u8]) -> u32 {
    #[cfg(target_arch = "x86_64")]
    {
        if data.len() <= SHORT && std::arch::is_x86_feature_detected!("sse4.2") {
            // The instruction's availability was just checked.
            #[allow(unsafe_code)]
            return unsafe { short_sse42(data) };
        }
    }
    crc32c::crc32c(data)
}

#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "sse4.2")]
fn short_sse42(data: &[u8]) -> u32 {
    use std::arch::x86_64::{_mm_crc32_u16, _mm_crc32_u32, _mm_crc32_u64, _mm_crc32_u8};
    let mut crc = u64::from(!0u32);
    let mut words = data.chunks_exact(8);
    for w in &mut words {
        crc = _mm_crc32_u64(crc, u64::from_le_bytes(w.try_into().unwrap()));
    }
    let mut crc = crc as u32;
    let mut rest = words.remainder();
    if rest.len() >= 4 {
        crc = _mm_crc32_u32(crc, u32::from_le_bytes(rest[..4].try_into().unwrap()));
        rest = &rest[4..];
    }
    if rest.len() >= 2 {
        crc = _mm_crc32_u16(crc, u16::from_le_bytes(rest[..2].try_into().unwrap()));
        rest = &rest[2..];
    }
    if let Some(&b) = rest.first() {
        crc = _mm_crc32_u8(crc, b);
    }
    !crc
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::fuzz::Rng;

    #[test]
    fn equals_the_crates_value_at_every_length_and_offset() {
        let mut rng = Rng::new(9);
        let buf = rng.bytes(2 * SHORT + 64);
        for len in 0..=SHORT + 40 {
            for start in [0, 1, 3, 7] {
                let d = &buf[start..start + len];
                assert_eq!(crc32c(d), crc32c::crc32c(d), "len {len} at {start}");
            }
        }
        assert_eq!(crc32c(b"123456789"), 0xE306_9283);
    }
}
