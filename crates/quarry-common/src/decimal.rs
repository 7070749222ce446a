//! DECIMAL values: a signed mantissa of up to 76 digits and a scale, so a DECIMAL(65,s)
//! column (MariaDB's widest) and sums or products a little past it stay exact.
//!
//! Owns decimal arithmetic, rounding, parsing and printing. Conversions from the other
//! kinds of [`crate::Value`] live with `Value`; storage encodings live in the engines.

use std::cmp::Ordering;
use std::fmt::{self, Write};
use std::ops::Neg;

use ethnum::I256;

/// Most digits a DECIMAL column holds, and most fractional digits (MariaDB's limits).
pub const MAX_PRECISION: u32 = 65;
pub const MAX_SCALE: u8 = 38;
/// Columns of at most this precision keep the narrow storage forms (an i128 mantissa);
/// wider ones the 32-byte forms (docs/formats).
pub const NARROW_PRECISION: u32 = 38;
/// Fractional digits arithmetic keeps at most (MariaDB: 38).
const ARITH_SCALE: u8 = 38;
/// Most digits a mantissa holds: 10^76 < 2^255.
const MAX_DIGITS: usize = 76;

/// A signed 256-bit integer in four little-endian 64-bit words. The words (not ethnum's
/// 16-aligned type) keep a `Value` at 48 bytes; arithmetic goes through [`I256`].
#[derive(Clone, Copy, PartialEq, Eq, Hash, Default)]
pub struct Mantissa([u64; 4]);

const fn pow10_table() -> [Mantissa; MAX_DIGITS + 1] {
    let mut t = [Mantissa([0; 4]); MAX_DIGITS + 1];
    t[0] = Mantissa([1, 0, 0, 0]);
    let mut i = 1;
    while i <= MAX_DIGITS {
        // Multiply the previous power by 10, word by word with carry.
        let mut carry: u128 = 0;
        let mut w = 0;
        while w < 4 {
            let p = t[i - 1].0[w] as u128 * 10 + carry;
            t[i].0[w] = p as u64;
            carry = p >> 64;
            w += 1;
        }
        i += 1;
    }
    t
}

const POW10: [Mantissa; MAX_DIGITS + 1] = pow10_table();

/// 10^n, for n up to 76 (larger n saturate at 10^76: callers check digit counts first).
pub fn pow10(n: u8) -> Mantissa {
    POW10[(n as usize).min(MAX_DIGITS)]
}

impl Mantissa {
    pub const ZERO: Mantissa = Mantissa([0; 4]);

    fn wide(self) -> I256 {
        let w = self.0;
        let lo = (w[0] as u128 | (w[1] as u128) << 64) as i128;
        let hi = (w[2] as u128 | (w[3] as u128) << 64) as i128;
        I256::from_words(hi, lo)
    }
    fn from_wide(v: I256) -> Mantissa {
        let (hi, lo) = v.into_words();
        let (hi, lo) = (hi as u128, lo as u128);
        Mantissa([lo as u64, (lo >> 64) as u64, hi as u64, (hi >> 64) as u64])
    }
    /// The value as an i128, where it fits.
    pub fn to_i128(self) -> Option<i128> {
        let lo = (self.0[0] as u128 | (self.0[1] as u128) << 64) as i128;
        let sign_fill = if lo < 0 { u64::MAX } else { 0 };
        (self.0[2] == sign_fill && self.0[3] == sign_fill).then_some(lo)
    }
    /// The value as an i64, where it fits.
    pub fn to_i64(self) -> Option<i64> {
        self.to_i128().and_then(|v| i64::try_from(v).ok())
    }
    /// The value clamped to the i128 range.
    pub fn saturating_i128(self) -> i128 {
        self.to_i128().unwrap_or(if self.is_negative() {
            i128::MIN
        } else {
            i128::MAX
        })
    }
    pub fn is_negative(self) -> bool {
        (self.0[3] as i64) < 0
    }
    pub fn is_zero(self) -> bool {
        self == Mantissa::ZERO
    }
    pub fn signum(self) -> i32 {
        if self.is_negative() {
            -1
        } else if self.is_zero() {
            0
        } else {
            1
        }
    }
    /// `narrow` on two i128s where both fit and it succeeds (the common case, and cheap),
    /// else `wide` on 256 bits.
    fn op(
        self,
        o: Mantissa,
        narrow: fn(i128, i128) -> Option<i128>,
        wide: fn(I256, I256) -> Option<I256>,
    ) -> Option<Mantissa> {
        if let Some(v) = self
            .to_i128()
            .zip(o.to_i128())
            .and_then(|(a, b)| narrow(a, b))
        {
            return Some(Mantissa::from(v));
        }
        wide(self.wide(), o.wide()).map(Mantissa::from_wide)
    }
    pub fn checked_add(self, o: Mantissa) -> Option<Mantissa> {
        self.op(o, i128::checked_add, I256::checked_add)
    }
    pub fn checked_sub(self, o: Mantissa) -> Option<Mantissa> {
        self.op(o, i128::checked_sub, I256::checked_sub)
    }
    pub fn checked_mul(self, o: Mantissa) -> Option<Mantissa> {
        self.op(o, i128::checked_mul, I256::checked_mul)
    }
    /// Quotient truncated toward zero; None for a zero divisor.
    pub fn checked_div(self, o: Mantissa) -> Option<Mantissa> {
        self.op(o, i128::checked_div, I256::checked_div)
    }
    /// Remainder with the dividend's sign; None for a zero divisor.
    pub fn checked_rem(self, o: Mantissa) -> Option<Mantissa> {
        self.op(o, i128::checked_rem, I256::checked_rem)
    }
    pub fn abs(self) -> Mantissa {
        if self.is_negative() {
            -self
        } else {
            self
        }
    }
    /// Decimal digits of the magnitude (0 for zero).
    pub fn digits(self) -> u32 {
        if let Some(v) = self.to_i128() {
            return v.unsigned_abs().checked_ilog10().map_or(0, |l| l + 1);
        }
        let a = self.abs();
        POW10.iter().take_while(|p| **p <= a).count() as u32
    }
    pub fn to_le_bytes(self) -> [u8; 32] {
        let mut b = [0u8; 32];
        for (i, w) in self.0.iter().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&w.to_le_bytes());
        }
        b
    }
    pub fn from_le_bytes(b: [u8; 32]) -> Mantissa {
        let w = |i: usize| u64::from_le_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        Mantissa([w(0), w(1), w(2), w(3)])
    }
    /// Big-endian bytes with the sign bit flipped: byte order is numeric order.
    pub fn to_ordered_bytes(self) -> [u8; 32] {
        let mut b = [0u8; 32];
        for (i, w) in self.0.iter().rev().enumerate() {
            b[i * 8..i * 8 + 8].copy_from_slice(&w.to_be_bytes());
        }
        b[0] ^= 0x80;
        b
    }
    pub fn from_ordered_bytes(mut b: [u8; 32]) -> Mantissa {
        b[0] ^= 0x80;
        let w = |i: usize| u64::from_be_bytes(b[i * 8..i * 8 + 8].try_into().unwrap());
        Mantissa([w(3), w(2), w(1), w(0)])
    }
}

/// Negation (never overflows: a mantissa keeps at most 76 digits).
impl Neg for Mantissa {
    type Output = Mantissa;
    fn neg(self) -> Mantissa {
        Mantissa::from_wide(self.wide().wrapping_neg())
    }
}

impl Neg for Decimal {
    type Output = Decimal;
    fn neg(self) -> Decimal {
        Decimal::new(-self.mantissa, self.scale)
    }
}

impl From<i128> for Mantissa {
    fn from(v: i128) -> Mantissa {
        let fill = if v < 0 { u64::MAX } else { 0 };
        let u = v as u128;
        Mantissa([u as u64, (u >> 64) as u64, fill, fill])
    }
}

impl From<i64> for Mantissa {
    fn from(v: i64) -> Mantissa {
        Mantissa::from(v as i128)
    }
}

impl From<u64> for Mantissa {
    fn from(v: u64) -> Mantissa {
        Mantissa::from(v as i128)
    }
}

impl From<i32> for Mantissa {
    fn from(v: i32) -> Mantissa {
        Mantissa::from(v as i128)
    }
}

impl Ord for Mantissa {
    fn cmp(&self, o: &Mantissa) -> Ordering {
        (self.0[3] as i64)
            .cmp(&(o.0[3] as i64))
            .then(self.0[2].cmp(&o.0[2]))
            .then(self.0[1].cmp(&o.0[1]))
            .then(self.0[0].cmp(&o.0[0]))
    }
}

impl PartialOrd for Mantissa {
    fn partial_cmp(&self, o: &Mantissa) -> Option<Ordering> {
        Some(self.cmp(o))
    }
}

impl fmt::Display for Mantissa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self.to_i128() {
            Some(v) => write!(f, "{v}"),
            None => write!(f, "{}", self.wide()),
        }
    }
}

impl fmt::Debug for Mantissa {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(self, f)
    }
}

/// Fixed-point decimal: `mantissa * 10^-scale`.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Decimal {
    pub mantissa: Mantissa,
    pub scale: u8,
}

impl Decimal {
    pub fn new(mantissa: impl Into<Mantissa>, scale: u8) -> Decimal {
        Decimal {
            mantissa: mantissa.into(),
            scale,
        }
    }
    pub fn from_i64(v: i64) -> Decimal {
        Decimal::new(v, 0)
    }
    pub fn abs(self) -> Decimal {
        Decimal::new(self.mantissa.abs(), self.scale)
    }
    pub fn is_zero(self) -> bool {
        self.mantissa.is_zero()
    }
    pub fn is_negative(self) -> bool {
        self.mantissa.is_negative()
    }
    /// The integer part (truncated toward zero) and whether a fraction was dropped.
    pub fn trunc(self) -> (Mantissa, bool) {
        let p = pow10(self.scale);
        let q = self.mantissa.checked_div(p).unwrap_or(Mantissa::ZERO);
        let r = self.mantissa.checked_rem(p).unwrap_or(Mantissa::ZERO);
        (q, !r.is_zero())
    }
    /// Rescale, rounding half away from zero when digits are dropped; saturating when
    /// more digits would not fit (callers that store go through [`Self::checked_rescale`]).
    pub fn rescale(self, scale: u8) -> Decimal {
        self.checked_rescale(scale).unwrap_or(Decimal {
            mantissa: if self.is_negative() {
                -pow10(MAX_DIGITS as u8)
            } else {
                pow10(MAX_DIGITS as u8)
            },
            scale,
        })
    }
    /// The nearest double (a decimal literal written by a dump must come back as the
    /// double it was printed from).
    pub fn to_f64(self) -> f64 {
        // Both exact as doubles: one division, correctly rounded.
        if let Some(m) = self.mantissa.to_i128() {
            if m.unsigned_abs() <= 1 << 53 && self.scale <= 22 {
                return m as f64 / 10f64.powi(self.scale as i32);
            }
        }
        self.to_string().parse().unwrap_or(f64::NAN)
    }
    /// `v` rounded half away from zero at `scale`, from the shortest decimal that reads
    /// back as `v` (as MariaDB converts: 0.285 → 0.29 at scale 2, not 0.28); None when
    /// the mantissa would not fit.
    pub fn try_from_f64(v: f64, scale: u8) -> Option<Decimal> {
        if !v.is_finite() {
            return None;
        }
        // Rust prints a double in full positional form: its shortest round-trip digits,
        // then zeros; parse that exactly.
        Decimal::parse(&format!("{v}"))?.checked_rescale(scale)
    }
    /// As `try_from_f64`, saturating where the mantissa would not fit (for uses where
    /// only the order matters; storing goes through the checked form).
    pub fn from_f64(v: f64, scale: u8) -> Decimal {
        Decimal::try_from_f64(v, scale).unwrap_or(Decimal {
            mantissa: if v < 0.0 {
                -pow10(MAX_DIGITS as u8)
            } else {
                pow10(MAX_DIGITS as u8)
            },
            scale,
        })
    }
    /// `rescale`, or None where the mantissa would pass 76 digits.
    pub fn checked_rescale(self, scale: u8) -> Option<Decimal> {
        if scale == self.scale {
            return Some(self);
        }
        if scale > self.scale {
            let shift = (scale - self.scale) as usize;
            // A mantissa of up to 18 digits times up to 10^18 fits an i128 (the common
            // case: `1 - l_discount` rescales 1 to 100).
            if let (Some(m), true) = (self.mantissa.to_i64(), shift <= 18) {
                return Some(Decimal {
                    mantissa: Mantissa::from(m as i128 * 10i128.pow(shift as u32)),
                    scale,
                });
            }
            if shift > MAX_DIGITS || self.mantissa.digits() as usize + shift > MAX_DIGITS {
                return None;
            }
            Some(Decimal {
                mantissa: self.mantissa.checked_mul(POW10[shift])?,
                scale,
            })
        } else {
            let drop = self.scale - scale;
            if drop as usize > MAX_DIGITS {
                return Some(Decimal::new(Mantissa::ZERO, scale));
            }
            let div = pow10(drop);
            let q = self.mantissa.checked_div(div)?;
            let r = self.mantissa.checked_rem(div)?.abs();
            let half = r.checked_add(r)? >= div;
            let m = if half {
                q.checked_add(Mantissa::from(self.mantissa.signum()))?
            } else {
                q
            };
            Some(Decimal { mantissa: m, scale })
        }
    }
    /// Integer value, rounded half away from zero (MySQL's decimal → int rule),
    /// saturating at the i128 range.
    pub fn round_to_i128(self) -> i128 {
        self.rescale(0).mantissa.saturating_i128()
    }
    /// A decimal literal: sign, digits, point, digits. Fractional digits past what a
    /// mantissa holds are cut; None when the integer part alone needs more than 76 digits.
    pub fn parse(s: &str) -> Option<Decimal> {
        let s = s.trim();
        let (neg, body) = match s.as_bytes().first() {
            Some(b'-') => (true, &s[1..]),
            Some(b'+') => (false, &s[1..]),
            _ => (false, s),
        };
        let (int_part, frac_part) = match body.find('.') {
            Some(p) => (&body[..p], &body[p + 1..]),
            None => (body, ""),
        };
        if int_part.is_empty() && frac_part.is_empty() {
            return None;
        }
        if !int_part.bytes().all(|b| b.is_ascii_digit())
            || !frac_part.bytes().all(|b| b.is_ascii_digit())
        {
            return None;
        }
        let int_part = int_part.trim_start_matches('0');
        if int_part.len() > MAX_DIGITS {
            return None;
        }
        let keep = frac_part
            .len()
            .min(MAX_DIGITS - int_part.len())
            .min(u8::MAX as usize);
        let frac_part = &frac_part[..keep];
        let m = mantissa_of_digits(int_part.bytes().chain(frac_part.bytes()));
        Some(Decimal {
            mantissa: if neg { -m } else { m },
            scale: frac_part.len() as u8,
        })
    }
    pub fn checked_add(self, o: Decimal) -> Option<Decimal> {
        let s = self.scale.max(o.scale);
        let a = self.checked_rescale(s)?;
        let b = o.checked_rescale(s)?;
        Some(Decimal {
            mantissa: a.mantissa.checked_add(b.mantissa)?,
            scale: s,
        })
    }
    pub fn checked_sub(self, o: Decimal) -> Option<Decimal> {
        self.checked_add(-o)
    }
    /// The product, its fraction cut to 38 digits (rounded), and further where the
    /// whole would pass 76 digits (as MariaDB cuts the fraction to fit its 81); None when
    /// the integer part alone passes 76 digits.
    pub fn checked_mul(self, o: Decimal) -> Option<Decimal> {
        let scale = self.scale + o.scale;
        let exact = match (self.mantissa.to_i64(), o.mantissa.to_i64()) {
            // At most 38 digits: no check needed.
            (Some(a), Some(b)) => Some(Mantissa::from(a as i128 * b as i128)),
            _ => self
                .mantissa
                .checked_mul(o.mantissa)
                .filter(|m| m.digits() as usize <= MAX_DIGITS),
        };
        let d = match exact {
            Some(m) => Decimal { mantissa: m, scale },
            None => wide_product(self, o)?,
        };
        Some(if d.scale > ARITH_SCALE {
            d.rescale(ARITH_SCALE)
        } else {
            d
        })
    }
    /// Division with `extra` more fractional digits than the dividend
    /// (div_precision_increment); None for a zero divisor or a quotient past 76 digits.
    /// As MariaDB: the quotient is cut after whole 9-digit words of fraction, as many as
    /// the operands' and the increment's digits need, then rounded half away from zero
    /// to its scale — so 2.00000/3 is 0.666666666 (cut at the word it fills) and
    /// 2.00000/3.0 is 0.666666667.
    pub fn div(self, o: Decimal, extra: u8) -> Option<Decimal> {
        if o.is_zero() {
            return None;
        }
        let scale = self.scale.saturating_add(extra).min(ARITH_SCALE);
        let words = (self.scale as usize + o.scale as usize + extra as usize).div_ceil(9) * 9;
        if (scale as usize..=MAX_DIGITS).contains(&words) {
            if let Some(q) = self.quotient(o, words as u8, false) {
                return q.checked_rescale(scale);
            }
        }
        self.quotient(o, scale, true)
    }
    /// `self / o` at `scale`, rounded half away from zero (`round`) or cut.
    fn quotient(self, o: Decimal, scale: u8, round: bool) -> Option<Decimal> {
        // quotient mantissa = self.m * 10^(scale + o.scale - self.scale) / o.m
        let shift = scale as i32 + o.scale as i32 - self.scale as i32;
        let num = if shift >= 0 {
            if self.mantissa.digits() as i32 + shift > MAX_DIGITS as i32 {
                // The scaled dividend passes 256 bits: divide in 512.
                return wide_quotient(self.mantissa, o.mantissa, shift as u32, scale, round);
            }
            self.mantissa.checked_mul(pow10(shift as u8))?
        } else {
            self.mantissa.checked_div(pow10((-shift) as u8))?
        };
        let q = num.checked_div(o.mantissa)?;
        let r = num.checked_rem(o.mantissa)?.abs();
        let d = o.mantissa.abs();
        let m = if round && r.checked_add(r)? >= d {
            q.checked_add(Mantissa::from(num.signum() * o.mantissa.signum()))?
        } else {
            q
        };
        Some(Decimal { mantissa: m, scale })
    }
    pub fn cmp_dec(&self, o: &Decimal) -> Ordering {
        if self.scale == o.scale {
            return self.mantissa.cmp(&o.mantissa);
        }
        let s = self.scale.max(o.scale);
        match (self.checked_rescale(s), o.checked_rescale(s)) {
            (Some(a), Some(b)) => a.mantissa.cmp(&b.mantissa),
            // One side has too many digits to rescale: compare the integer parts first
            // (they fit), then the fractions at the common scale.
            _ => {
                let (ai, _) = self.trunc();
                let (bi, _) = o.trunc();
                ai.cmp(&bi).then_with(|| {
                    let fa = self.checked_sub(Decimal::new(ai, 0));
                    let fb = o.checked_sub(Decimal::new(bi, 0));
                    match (fa, fb) {
                        (Some(a), Some(b)) => a.rescale(s).mantissa.cmp(&b.rescale(s).mantissa),
                        _ => Ordering::Equal,
                    }
                })
            }
        }
    }
    /// Number of integer digits (for DECIMAL(p,s) range checks).
    pub fn int_digits(&self) -> u32 {
        self.trunc().0.digits()
    }
    /// The value without trailing fractional zeros (1.50 → 1.5): one form per number.
    pub fn normalized(self) -> Decimal {
        let mut d = self;
        while d.scale > 0 && d.mantissa.checked_rem(Mantissa::from(10i128)) == Some(Mantissa::ZERO)
        {
            d = Decimal::new(
                d.mantissa.checked_div(Mantissa::from(10i128)).unwrap(),
                d.scale - 1,
            );
        }
        d
    }
}

/// `d` as a value of DECIMAL(`precision`,`scale`) (UNSIGNED with `unsigned`): rounded to
/// `scale` fractional digits, or where it does not fit — more integer digits, or `None`,
/// a number past what any decimal holds, whose sign is `negative` — the nearest end of
/// the range (all nines; 0 for an UNSIGNED one below zero), with `true`.
pub fn fit(
    d: Option<Decimal>,
    negative: bool,
    precision: u32,
    scale: u8,
    unsigned: bool,
) -> (Decimal, bool) {
    let precision = precision.clamp(1, MAX_PRECISION);
    let max_int = precision.saturating_sub(scale as u32);
    let limit = pow10(precision as u8)
        .checked_sub(Mantissa::from(1i128))
        .expect("10^p > 0");
    let end = |negative: bool| {
        let m = match (negative, unsigned) {
            (true, true) => Mantissa::ZERO,
            (true, false) => -limit,
            (false, _) => limit,
        };
        (Decimal::new(m, scale), true)
    };
    match d.map(|d| (d, d.checked_rescale(scale))) {
        None => end(negative),
        Some((d, None)) => end(d.is_negative()),
        Some((_, Some(d))) if d.int_digits() > max_int || (unsigned && d.is_negative()) => {
            end(d.is_negative())
        }
        Some((_, Some(d))) => (d, false),
    }
}

/// `a × b` when the exact product passes 76 digits: computed in 512 bits, then as many
/// fractional digits dropped (rounding half away from zero) as make it fit; None when its
/// integer part alone does not.
fn wide_product(a: Decimal, b: Decimal) -> Option<Decimal> {
    let mut n = mul_words(a.mantissa.abs().0, b.mantissa.abs().0);
    let digits = wide_digits(n);
    let scale = a.scale + b.scale;
    let drop = digits.saturating_sub(MAX_DIGITS);
    if drop > scale as usize {
        return None;
    }
    // Cut all but the first dropped digit, then round on it.
    let mut left = drop.checked_sub(1)?;
    while left > 0 {
        let k = left.min(19);
        div_small(&mut n, 10u64.pow(k as u32));
        left -= k;
    }
    let first = div_small(&mut n, 10);
    if n[4..].iter().any(|&w| w != 0) {
        return None;
    }
    let mut m = Mantissa([n[0], n[1], n[2], n[3]]);
    if first >= 5 {
        m = m.checked_add(Mantissa::from(1i128))?;
    }
    if m.digits() as usize > MAX_DIGITS {
        return None;
    }
    let negative = a.is_negative() != b.is_negative();
    Some(Decimal::new(
        if negative { -m } else { m },
        scale - drop as u8,
    ))
}

/// `|a| × |b|` exactly, in eight 64-bit words.
fn mul_words(x: [u64; 4], y: [u64; 4]) -> [u64; 8] {
    let mut n = [0u64; 8];
    for i in 0..4 {
        let mut carry: u128 = 0;
        for j in 0..4 {
            let t = x[i] as u128 * y[j] as u128 + n[i + j] as u128 + carry;
            n[i + j] = t as u64;
            carry = t >> 64;
        }
        n[i + 4] = carry as u64;
    }
    n
}

/// `a × 10^shift / b` at `scale`, rounded half away from zero (or cut), when `a × 10^shift`
/// passes 256 bits (binary long division in 512); None when the quotient passes 76
/// digits.
fn wide_quotient(a: Mantissa, b: Mantissa, shift: u32, scale: u8, round: bool) -> Option<Decimal> {
    if shift as usize > MAX_DIGITS {
        return None;
    }
    let n = mul_words(a.abs().0, pow10(shift as u8).0);
    let d = b.abs().0;
    let mut q = [0u64; 8];
    // The remainder stays below d < 2^255, so five words hold it shifted.
    let mut r = [0u64; 5];
    let ge = |r: &[u64; 5]| -> bool {
        if r[4] != 0 {
            return true;
        }
        for i in (0..4).rev() {
            if r[i] != d[i] {
                return r[i] > d[i];
            }
        }
        true
    };
    let sub = |r: &mut [u64; 5]| {
        let mut borrow = 0u64;
        for i in 0..5 {
            let di = if i < 4 { d[i] } else { 0 };
            let (v, b1) = r[i].overflowing_sub(di);
            let (v, b2) = v.overflowing_sub(borrow);
            r[i] = v;
            borrow = (b1 || b2) as u64;
        }
    };
    for bit in (0..512).rev() {
        for i in (1..5).rev() {
            r[i] = (r[i] << 1) | (r[i - 1] >> 63);
        }
        r[0] = (r[0] << 1) | ((n[bit / 64] >> (bit % 64)) & 1);
        if ge(&r) {
            sub(&mut r);
            q[bit / 64] |= 1 << (bit % 64);
        }
    }
    if q[4..].iter().any(|&w| w != 0) {
        return None;
    }
    let mut m = Mantissa([q[0], q[1], q[2], q[3]]);
    // Round on twice the remainder against the divisor.
    let mut twice = if round { r } else { [0; 5] };
    for i in (1..5).rev() {
        twice[i] = (twice[i] << 1) | (twice[i - 1] >> 63);
    }
    twice[0] <<= 1;
    if round && ge(&twice) {
        m = m.checked_add(Mantissa::from(1i128))?;
    }
    if m.digits() as usize > MAX_DIGITS {
        return None;
    }
    let negative = a.is_negative() != b.is_negative();
    Some(Decimal::new(if negative { -m } else { m }, scale))
}

/// Divide a 512-bit magnitude by `d`, in place; returns the remainder.
fn div_small(n: &mut [u64; 8], d: u64) -> u64 {
    let mut rem: u128 = 0;
    for w in n.iter_mut().rev() {
        let cur = (rem << 64) | *w as u128;
        *w = (cur / d as u128) as u64;
        rem = cur % d as u128;
    }
    rem as u64
}

/// Decimal digits of a 512-bit magnitude.
fn wide_digits(mut n: [u64; 8]) -> usize {
    let mut digits = 0;
    while n[1..].iter().any(|&w| w != 0) || n[0] >= 10u64.pow(19) {
        div_small(&mut n, 10u64.pow(19));
        digits += 19;
    }
    digits + n[0].checked_ilog10().map_or(0, |l| l as usize + 1)
}

/// The mantissa of a run of ASCII digits (at most 76 of them).
fn mantissa_of_digits(digits: impl Iterator<Item = u8>) -> Mantissa {
    // Eighteen digits at a time in a u64, then into the wide value.
    let mut m = Mantissa::ZERO;
    let mut chunk: u64 = 0;
    let mut n = 0;
    for b in digits {
        chunk = chunk * 10 + (b - b'0') as u64;
        n += 1;
        if n == 18 {
            m = m
                .checked_mul(POW10[18])
                .and_then(|m| m.checked_add(Mantissa::from(chunk)))
                .unwrap_or(m);
            chunk = 0;
            n = 0;
        }
    }
    if n > 0 {
        m = m
            .checked_mul(POW10[n])
            .and_then(|m| m.checked_add(Mantissa::from(chunk)))
            .unwrap_or(m);
    }
    m
}

impl fmt::Display for Decimal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let neg = self.is_negative();
        let digits = self.mantissa.abs().to_string();
        let scale = self.scale as usize;
        if neg {
            f.write_char('-')?;
        }
        if scale == 0 {
            return f.write_str(&digits);
        }
        if digits.len() <= scale {
            f.write_str("0.")?;
            for _ in 0..scale - digits.len() {
                f.write_char('0')?;
            }
            f.write_str(&digits)
        } else {
            let (i, fr) = digits.split_at(digits.len() - scale);
            write!(f, "{i}.{fr}")
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn d(s: &str) -> Decimal {
        Decimal::parse(s).unwrap()
    }

    #[test]
    fn mantissas_past_i128_stay_exact() {
        // MariaDB 10.11's answers.
        let a = d("12345678901234567890123456789012345678901234567890");
        assert_eq!(
            a.checked_mul(d("3")).unwrap().to_string(),
            "37037036703703703670370370367037037036703703703670"
        );
        assert_eq!(
            a.div(d("7"), 4).unwrap().to_string(),
            "1763668414462081127160493827001763668414462081127.1429"
        );
        let nines = d(&"9".repeat(65));
        assert_eq!(
            nines.checked_add(d("1")).unwrap().to_string(),
            format!("1{}", "0".repeat(65))
        );
        assert!(nines.checked_mul(nines).is_none());
        // Past 76 digits the fraction is cut to fit, the kept digits exact and rounded
        // (Python's decimal gives these; MariaDB cuts the fraction to fit its 81 digits
        // but gets the middle digits of such products wrong: ...641137855594889262405.90).
        let p = d("-606883106792470822765444.46347861221")
            .checked_mul(d("-8375762833125815354930666836.450749528831436"))
            .unwrap();
        assert_eq!(
            p.to_string(),
            "5083108969924302175038260516124642896765789845683630.436771675334689340301434"
        );
        assert_eq!(
            d(&format!("0.{}", "9".repeat(40)))
                .checked_mul(d(&format!("{}.5", "9".repeat(60))))
                .unwrap()
                .to_string(),
            format!("{}8{}.5{}", "9".repeat(39), "9".repeat(20), "0".repeat(15))
        );
        // A scaled dividend past 256 bits divides in 512 (Python's decimal gives it;
        // MariaDB 10.11 too: -190509046305345.3442291069513003125).
        assert_eq!(
            d("39713320929001249431153890293968801132011446865709.319705679696209")
                .div(
                    d("-208458977141428083673554245341990045.974426531791138"),
                    4
                )
                .unwrap()
                .to_string(),
            "-190509046305345.3442291069513003125"
        );
        assert_eq!(
            d(&"9".repeat(70)).div(d("0.5"), 4).unwrap().to_string(),
            format!("1{}8.0000", "9".repeat(69))
        );
        assert!(d(&"9".repeat(70)).div(d("0.00005"), 4).is_none());
        assert_eq!(
            d("12345678901234567890123456789012345678901234567890.5")
                .div(d("2"), 4)
                .unwrap()
                .to_string(),
            "6172839450617283945061728394506172839450617283945.25000"
        );
        assert_eq!(
            d("123456789012345678901234567890123456789012345678.555")
                .rescale(2)
                .to_string(),
            "123456789012345678901234567890123456789012345678.56"
        );
        assert_eq!(
            d("-123456789012345678901234567890123456789012345678.5")
                .rescale(0)
                .to_string(),
            "-123456789012345678901234567890123456789012345679"
        );
        assert_eq!(a.int_digits(), 50);
        assert_eq!((-a).to_string(), format!("-{a}"));
        assert!((-a).cmp_dec(&a).is_lt());
        assert_eq!(d("0.50").normalized(), d("0.5"));
    }

    /// The mantissa's words are aligned to 8, not 16 as ethnum's type: a `Value` (rows
    /// are vectors of them) stays the 48 bytes it was with an i128 mantissa.
    #[test]
    fn a_value_stays_48_bytes() {
        assert_eq!(std::mem::size_of::<crate::Value>(), 48);
        assert_eq!(std::mem::size_of::<Decimal>(), 40);
    }

    /// Scaling up a small mantissa in i128 gives what the 256-bit multiplication gives.
    #[test]
    fn small_rescales_agree_with_wide_ones() {
        let samples = [
            0i64,
            1,
            -1,
            7,
            -100,
            123_456_789,
            i64::MAX,
            i64::MIN,
            -999_999_999_999,
        ];
        for m in samples {
            for from in [0u8, 2, 5] {
                for shift in 0u8..=18 {
                    let d = Decimal::new(m, from);
                    let wide = d
                        .mantissa
                        .checked_mul(POW10[shift as usize])
                        .map(|m| Decimal::new(m, from + shift));
                    assert_eq!(d.checked_rescale(from + shift), wide, "{m} {from} +{shift}");
                }
            }
        }
    }

    #[test]
    fn encodings_round_trip_and_keep_order() {
        let values = [
            format!("-{}", "9".repeat(65)),
            "-170141183460469231731687303715884105729".into(),
            "-1".into(),
            "0".into(),
            "1".into(),
            "170141183460469231731687303715884105728".into(),
            "9".repeat(76),
        ];
        let ms: Vec<Mantissa> = values.iter().map(|s| d(s).mantissa).collect();
        for w in ms.windows(2) {
            assert!(w[0] < w[1]);
            assert!(w[0].to_ordered_bytes() < w[1].to_ordered_bytes());
        }
        for m in ms {
            assert_eq!(Mantissa::from_le_bytes(m.to_le_bytes()), m);
            assert_eq!(Mantissa::from_ordered_bytes(m.to_ordered_bytes()), m);
        }
        assert!(Decimal::parse(&"9".repeat(77)).is_none());
        assert_eq!(Mantissa::from(-5i64).to_i128(), Some(-5));
        assert_eq!(d(&"9".repeat(40)).mantissa.to_i128(), None);
    }

    #[test]
    fn doubles_convert_to_the_decimal_they_print_as() {
        assert_eq!(Decimal::from_f64(0.285, 2).to_string(), "0.29");
        assert_eq!(
            Decimal::from_f64(1e60, 0).to_string(),
            format!("1{}", "0".repeat(60))
        );
        assert_eq!(Decimal::from_f64(-1.5e-7, 8).to_string(), "-0.00000015");
        assert!(Decimal::try_from_f64(1e80, 0).is_none());
    }
}
