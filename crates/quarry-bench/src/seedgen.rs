//! The seed documents' data set, generated reproducibly: `TestBig`, `TestSmall` and the
//! seed-004 `t1` table as tab-separated files. Same distribution as
//! `../shared/bench/gen_seed_data.py` (its own PRNG, so not byte-identical): PZN uniform
//! over a shared pool of 300 000 values, Hersteller Zipf(0.7) over 3 000 values with
//! '36440' forced to 3 % of TestBig and '08650' to 0.45 % of TestSmall.

use std::fs::File;
use std::io::{BufWriter, Write};
use std::path::Path;

pub const SEED: u64 = 36440;
pub const SMALL_ROWS: u64 = 301_036;
const N_PZN: usize = 300_000;
const N_HERST: usize = 3_000;

/// xoshiro256**, seeded through splitmix64.
pub struct Rng([u64; 4]);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        let mut x = seed;
        let mut next = || {
            x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = x;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^ (z >> 31)
        };
        Rng([next(), next(), next(), next()])
    }

    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.0;
        let out = s[1].wrapping_mul(5).rotate_left(7).wrapping_mul(9);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        out
    }

    /// Uniform in `0..n` (multiply-shift; the bias is below 2^-40 for our n).
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        ((self.next_u64() as u128 * n as u128) >> 64) as u64
    }

    #[inline]
    pub fn unit(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 / (1u64 << 53) as f64
    }

    fn sample_distinct(&mut self, universe: u64, k: usize) -> Vec<u64> {
        let mut seen = std::collections::HashSet::with_capacity(k * 2);
        let mut out = Vec::with_capacity(k);
        while out.len() < k {
            let v = self.below(universe);
            if seen.insert(v) {
                out.push(v);
            }
        }
        out
    }
}

/// Cumulative distribution over the manufacturer pool.
struct Weighted {
    cdf: Vec<f64>,
}

impl Weighted {
    /// Zipf(0.7) by a random popularity rank, with `special` forced to probability `p`.
    fn zipf_with_special(rank_of: &[usize], special: usize, p: f64) -> Weighted {
        let mut w: Vec<f64> = rank_of
            .iter()
            .map(|r| 1.0 / ((*r as f64) + 1.0).powf(0.7))
            .collect();
        w[special] = 0.0;
        let sum: f64 = w.iter().sum();
        for x in &mut w {
            *x = *x / sum * (1.0 - p);
        }
        w[special] = p;
        let mut acc = 0.0;
        let cdf = w
            .iter()
            .map(|x| {
                acc += x;
                acc
            })
            .collect();
        Weighted { cdf }
    }

    fn pick(&self, rng: &mut Rng) -> usize {
        let u = rng.unit() * self.cdf[self.cdf.len() - 1];
        self.cdf
            .partition_point(|c| *c <= u)
            .min(self.cdf.len() - 1)
    }
}

pub struct SeedData {
    rng: Rng,
    pzn_pool: Vec<u64>,
    herst_pool: Vec<u64>,
    big: Weighted,
    small: Weighted,
}

impl SeedData {
    pub fn new(seed: u64) -> SeedData {
        let mut rng = Rng::new(seed);
        let pzn_pool = rng.sample_distinct(1_000_000, N_PZN);
        let mut herst_pool: Vec<u64> = rng
            .sample_distinct(100_000, N_HERST + 2)
            .into_iter()
            .filter(|v| *v != 36440 && *v != 8650)
            .take(N_HERST - 2)
            .collect();
        herst_pool.splice(0..0, [36440, 8650]);
        // Fisher-Yates permutation: the popularity rank of each pool entry.
        let mut rank_of: Vec<usize> = (0..N_HERST).collect();
        for i in (1..N_HERST).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            rank_of.swap(i, j);
        }
        let big = Weighted::zipf_with_special(&rank_of, 0, 0.03);
        let small = Weighted::zipf_with_special(&rank_of, 1, 0.0045);
        SeedData {
            rng,
            pzn_pool,
            herst_pool,
            big,
            small,
        }
    }

    /// One TestBig/TestSmall line (without the newline).
    pub fn product_line(&mut self, id: u64, small: bool, out: &mut Vec<u8>) {
        let rng = &mut self.rng;
        let _ = write!(out, "{id:08}\t");
        let pzn = self.pzn_pool[rng.below(N_PZN as u64) as usize];
        let _ = write!(out, "{pzn:06}\t");
        let evp = 50 + rng.below(100_000 - 50);
        let hap = (evp as f64 * (0.55 + 0.4 * rng.unit())) as u64;
        let _ = write!(
            out,
            "{}.{:02}\t{}.{:02}\t",
            evp / 100,
            evp % 100,
            hap / 100,
            hap % 100
        );
        words(rng, 10, 40, out);
        out.push(b'\t');
        words(rng, 10, 26, out);
        out.push(b'\t');
        let h = if small {
            self.small.pick(rng)
        } else {
            self.big.pick(rng)
        };
        let _ = write!(out, "{:05}", self.herst_pool[h]);
    }
}

/// Uppercase letters with single interior spaces (15 % of positions), length min..=max.
fn words(rng: &mut Rng, min: u64, max: u64, out: &mut Vec<u8>) {
    let len = (min + rng.below(max - min + 1)) as usize;
    let mut prev_drawn = false;
    for i in 0..len {
        let letter = b'A' + rng.below(26) as u8;
        let drawn = rng.unit() < 0.15;
        // As in the Python generator: a space needs its own draw and no draw just before,
        // never first or last.
        let space = drawn && !prev_drawn && i > 0 && i + 1 < len;
        prev_drawn = drawn && i > 0;
        out.push(if space { b' ' } else { letter });
    }
}

/// Paths of the generated files; reused when a previous run made them with the same sizes.
pub struct SeedFiles {
    pub big: std::path::PathBuf,
    pub small: std::path::PathBuf,
    pub t1_empty: std::path::PathBuf,
    pub t1_half: std::path::PathBuf,
}

pub fn generate(
    dir: &Path,
    big_rows: u64,
    t1_rows: u64,
    progress: &dyn Fn(&str, u64, u64),
) -> std::io::Result<SeedFiles> {
    std::fs::create_dir_all(dir)?;
    let files = SeedFiles {
        big: dir.join(format!("testbig-{big_rows}.tsv")),
        small: dir.join("testsmall.tsv"),
        t1_empty: dir.join(format!("t1-empty-{t1_rows}.tsv")),
        t1_half: dir.join(format!("t1-half-{t1_rows}.tsv")),
    };
    let stamp = dir.join(format!("done-{SEED}-{big_rows}-{t1_rows}"));
    if stamp.exists() {
        return Ok(files);
    }
    let mut data = SeedData::new(SEED);
    let mut line = Vec::with_capacity(256);
    for (path, rows, small) in [
        (&files.big, big_rows, false),
        (&files.small, SMALL_ROWS, true),
    ] {
        let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
        for id in 1..=rows {
            line.clear();
            data.product_line(id, small, &mut line);
            line.push(b'\n');
            w.write_all(&line)?;
            if id % 100_000 == 0 {
                progress(if small { "TestSmall" } else { "TestBig" }, id, rows);
            }
        }
        w.flush()?;
    }
    for (path, col2) in [(&files.t1_empty, 1usize), (&files.t1_half, 1024)] {
        let mut w = BufWriter::with_capacity(1 << 20, File::create(path)?);
        let rng = &mut data.rng;
        for id in 1..=t1_rows {
            line.clear();
            let _ = write!(line, "{id}\t");
            line.extend((0..10).map(|_| b'A' + rng.below(26) as u8));
            line.push(b'\t');
            line.extend((0..col2).map(|_| b'A' + rng.below(26) as u8));
            line.push(b'\n');
            w.write_all(&line)?;
            if id % 100_000 == 0 {
                progress("t1", id, t1_rows);
            }
        }
        w.flush()?;
    }
    File::create(stamp)?;
    Ok(files)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn distribution_matches_the_seed_workload() {
        let mut d = SeedData::new(SEED);
        let mut line = Vec::new();
        let (mut probe_big, mut probe_small) = (0u64, 0u64);
        let n = 200_000;
        let mut pzns = std::collections::HashSet::new();
        for id in 1..=n {
            line.clear();
            d.product_line(id, false, &mut line);
            let s = std::str::from_utf8(&line).unwrap();
            let f: Vec<&str> = s.split('\t').collect();
            assert_eq!(f.len(), 7, "{s}");
            assert_eq!(f[0].len(), 8);
            assert_eq!(f[1].len(), 6);
            assert!(f[2].len() <= 8 && f[3].len() <= 8 && f[2].contains('.'));
            assert!((10..=40).contains(&f[4].len()) && !f[4].contains("  "));
            assert!(!f[4].starts_with(' ') && !f[4].ends_with(' '));
            assert!((10..=26).contains(&f[5].len()));
            assert_eq!(f[6].len(), 5);
            probe_big += (f[6] == "36440") as u64;
            pzns.insert(f[1].to_string());
            line.clear();
            d.product_line(id, true, &mut line);
            probe_small += line.ends_with(b"08650") as u64;
        }
        let big = probe_big as f64 / n as f64;
        let small = probe_small as f64 / n as f64;
        assert!((0.028..0.032).contains(&big), "36440 share {big}");
        assert!((0.0038..0.0052).contains(&small), "08650 share {small}");
        // 200k draws from a 300k pool: about 146k distinct values.
        assert!((140_000..152_000).contains(&pzns.len()), "{}", pzns.len());
    }

    #[test]
    fn generation_is_reproducible() {
        let mut a = SeedData::new(SEED);
        let mut b = SeedData::new(SEED);
        let (mut la, mut lb) = (Vec::new(), Vec::new());
        for id in 1..100 {
            la.clear();
            lb.clear();
            a.product_line(id, false, &mut la);
            b.product_line(id, false, &mut lb);
            assert_eq!(la, lb);
        }
    }
}
