//! Test support: a small, deterministic mutation fuzzer for the decoders and parsers that
//! read what outsiders write (SQL text, protocol packets, records, definition files), run
//! inside the normal test suite on the stable toolchain. Each target runs for
//! `QUARRY_FUZZ_SECS` seconds (3 by default; a target's inputs are the same for the
//! same seed, `QUARRY_FUZZ_SEED`). A panic fails the test and prints the input, which
//! then becomes a regression case next to the target. Not used by the server itself.

use std::time::{Duration, Instant};

/// xorshift64*: enough randomness for inputs, the same stream for the same seed.
pub struct Rng(u64);

impl Rng {
    pub fn new(seed: u64) -> Rng {
        Rng(seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1)
    }
    pub fn next_u64(&mut self) -> u64 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        self.0.wrapping_mul(0x2545_F491_4F6C_DD1D)
    }
    /// A number below `n` (0 when `n` is 0).
    pub fn below(&mut self, n: usize) -> usize {
        if n == 0 {
            0
        } else {
            (self.next_u64() % n as u64) as usize
        }
    }
    pub fn chance(&mut self, one_in: usize) -> bool {
        self.below(one_in) == 0
    }
    pub fn bytes(&mut self, n: usize) -> Vec<u8> {
        (0..n).map(|_| self.next_u64() as u8).collect()
    }
    pub fn pick<'a, T>(&mut self, items: &'a [T]) -> &'a T {
        &items[self.below(items.len())]
    }
}

/// `input` changed a few times: bytes flipped, set to edge values, inserted, removed,
/// duplicated, or the whole thing cut short.
pub fn mutate(rng: &mut Rng, input: &[u8]) -> Vec<u8> {
    let mut v = input.to_vec();
    for _ in 0..1 + rng.below(4) {
        let at = rng.below(v.len() + 1);
        match rng.below(7) {
            0 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] ^= 1 << rng.below(8);
            }
            1 if !v.is_empty() => {
                let i = rng.below(v.len());
                v[i] = *rng.pick(&[0, 1, 0x7F, 0x80, 0xFF, b'\'', b'(', b';', b'\\']);
            }
            2 => {
                let n = 1 + rng.below(8);
                let b = rng.bytes(n);
                v.splice(at..at, b);
            }
            3 if at < v.len() => {
                let end = (at + 1 + rng.below(16)).min(v.len());
                v.drain(at..end);
            }
            4 if at < v.len() => {
                let end = (at + 1 + rng.below(32)).min(v.len());
                let copy = v[at..end].to_vec();
                v.splice(at..at, copy);
            }
            5 => v.truncate(at),
            _ => {
                let n = rng.below(4);
                v.splice(at..at, std::iter::repeat_n(0xFF, n));
            }
        }
    }
    v
}

fn budget() -> Duration {
    let secs = std::env::var("QUARRY_FUZZ_SECS")
        .ok()
        .and_then(|s| s.parse::<f64>().ok())
        .unwrap_or(3.0);
    Duration::from_secs_f64(secs.max(0.0))
}

fn seed() -> u64 {
    std::env::var("QUARRY_FUZZ_SEED")
        .ok()
        .and_then(|s| s.parse().ok())
        .unwrap_or(20_261_124)
}

/// Feed inputs from `generate` to `case` until the time budget is spent (at least
/// `min_runs` times); returns the number of executions. A panic in `case` fails with
/// the input that caused it.
pub fn run(
    name: &str,
    min_runs: u64,
    mut generate: impl FnMut(&mut Rng) -> Vec<u8>,
    case: impl Fn(&[u8]),
) -> u64 {
    let mut rng = Rng::new(seed() ^ name.len() as u64);
    let t0 = Instant::now();
    let budget = budget();
    let mut runs = 0u64;
    while runs < min_runs || t0.elapsed() < budget {
        let input = generate(&mut rng);
        let r = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| case(&input)));
        if r.is_err() {
            panic!(
                "fuzz target {name} panicked on input {:?} (hex {})",
                String::from_utf8_lossy(&input),
                input.iter().map(|b| format!("{b:02x}")).collect::<String>()
            );
        }
        runs += 1;
    }
    eprintln!(
        "fuzz target {name}: {runs} executions in {:.1?}",
        t0.elapsed()
    );
    runs
}
