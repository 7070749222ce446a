//! The seed's I/O experiments. (a) "aio": write then read a file of 103-byte records with
//! one syscall per record, a 128 KiB buffer, a background I/O thread, and 128 KiB mmap
//! windows — the positional `pwrite`/`pread` calls the row engine itself uses.
//! (b) "caches": a bulk `INSERT … SELECT` and a full scan in an embedded Quarry database
//! for buffer sizes from 256 B to 1 GiB, with the engine's own read/write call counters
//! from `SHOW STATUS`.

use crate::report::Json;
use std::fs::{File, OpenOptions};
use std::os::unix::fs::FileExt;
use std::path::Path;
use std::sync::mpsc;
use std::time::Instant;

pub const RECORD: usize = 103;
pub const BLOCK: usize = 128 * 1024;

#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Strategy {
    PerRecord,
    Buffered,
    Background,
    Mmap,
}

impl Strategy {
    pub const ALL: [Strategy; 4] = [
        Strategy::PerRecord,
        Strategy::Buffered,
        Strategy::Background,
        Strategy::Mmap,
    ];

    pub fn name(self) -> &'static str {
        match self {
            Strategy::PerRecord => "1 syscall per record",
            Strategy::Buffered => "2 128 KiB buffer",
            Strategy::Background => "3 background I/O",
            Strategy::Mmap => "4 mmap",
        }
    }
}

fn record(i: u64, out: &mut [u8; RECORD]) {
    out.fill(b'a' + (i % 26) as u8);
    out[..8].copy_from_slice(&i.to_le_bytes());
}

/// Append `rec` to the block `buf`; when the block fills up, the part of `rec` that did
/// not fit is returned (the caller writes the block and starts the next with it).
fn append<'r>(buf: &mut Vec<u8>, rec: &'r [u8]) -> Option<&'r [u8]> {
    let room = BLOCK - buf.len();
    if room >= rec.len() {
        buf.extend_from_slice(rec);
        None
    } else {
        buf.extend_from_slice(&rec[..room]);
        Some(&rec[room..])
    }
}

/// Write `n` records with `s`; returns seconds.
pub fn write_file(path: &Path, n: u64, s: Strategy) -> std::io::Result<f64> {
    let start = Instant::now();
    let f = OpenOptions::new()
        .create(true)
        .truncate(true)
        .read(true)
        .write(true)
        .open(path)?;
    let mut rec = [0u8; RECORD];
    match s {
        Strategy::PerRecord => {
            for i in 0..n {
                record(i, &mut rec);
                f.write_all_at(&rec, i * RECORD as u64)?;
            }
        }
        Strategy::Buffered => {
            let mut buf = Vec::with_capacity(BLOCK);
            let mut off = 0u64;
            for i in 0..n {
                record(i, &mut rec);
                if let Some(rest) = append(&mut buf, &rec) {
                    f.write_all_at(&buf, off)?;
                    off += buf.len() as u64;
                    buf.clear();
                    buf.extend_from_slice(rest);
                }
            }
            f.write_all_at(&buf, off)?;
        }
        Strategy::Background => {
            // Two buffers: the writer thread flushes one while we fill the other.
            let (to_writer, jobs) = mpsc::sync_channel::<(Vec<u8>, u64)>(1);
            let (to_filler, free) = mpsc::sync_channel::<Vec<u8>>(2);
            to_filler.send(Vec::with_capacity(BLOCK)).unwrap();
            to_filler.send(Vec::with_capacity(BLOCK)).unwrap();
            let wf = f.try_clone()?;
            let writer = std::thread::spawn(move || -> std::io::Result<()> {
                for (mut buf, off) in jobs {
                    wf.write_all_at(&buf, off)?;
                    buf.clear();
                    let _ = to_filler.send(buf);
                }
                Ok(())
            });
            let mut buf = free.recv().unwrap();
            let mut off = 0u64;
            for i in 0..n {
                record(i, &mut rec);
                if let Some(rest) = append(&mut buf, &rec) {
                    let len = buf.len() as u64;
                    to_writer.send((buf, off)).unwrap();
                    off += len;
                    buf = free.recv().unwrap();
                    buf.extend_from_slice(rest);
                }
            }
            to_writer.send((buf, off)).unwrap();
            drop(to_writer);
            writer.join().unwrap()?;
        }
        Strategy::Mmap => {
            let total = n * RECORD as u64;
            f.set_len(total)?;
            let mut pos = 0u64;
            let mut i = 0u64;
            let mut carry: Option<(usize, [u8; RECORD])> = None;
            while pos < total {
                let len = (BLOCK as u64).min(total - pos) as usize;
                #[allow(unsafe_code)]
                // SAFETY: the file is ours, sized above, and nobody truncates it meanwhile.
                let mut map = unsafe {
                    memmap2::MmapOptions::new()
                        .offset(pos)
                        .len(len)
                        .map_mut(&f)?
                };
                let mut at = 0;
                if let Some((done, r)) = carry.take() {
                    let rest = RECORD - done;
                    map[..rest].copy_from_slice(&r[done..]);
                    at = rest;
                }
                while at < len {
                    record(i, &mut rec);
                    i += 1;
                    let take = RECORD.min(len - at);
                    map[at..at + take].copy_from_slice(&rec[..take]);
                    if take < RECORD {
                        carry = Some((take, rec));
                    }
                    at += take;
                }
                drop(map);
                pos += len as u64;
            }
        }
    }
    Ok(start.elapsed().as_secs_f64())
}

/// Read the file back record by record with `s`; returns (seconds, checksum).
pub fn read_file(path: &Path, s: Strategy) -> std::io::Result<(f64, u64)> {
    let start = Instant::now();
    let f = File::open(path)?;
    let total = f.metadata()?.len();
    let mut sum = 0u64;
    let mut consume =
        |rec: &[u8]| sum = sum.wrapping_add(u64::from_le_bytes(rec[..8].try_into().unwrap()));
    match s {
        Strategy::PerRecord => {
            let mut rec = [0u8; RECORD];
            let mut off = 0;
            while off + RECORD as u64 <= total {
                f.read_exact_at(&mut rec, off)?;
                consume(&rec);
                off += RECORD as u64;
            }
        }
        Strategy::Buffered | Strategy::Background | Strategy::Mmap => {
            // Blocks arrive in order; records that straddle two blocks are stitched.
            let mut pending: Vec<u8> = Vec::with_capacity(RECORD);
            let mut eat = |block: &[u8]| {
                let mut at = 0;
                if !pending.is_empty() {
                    let need = (RECORD - pending.len()).min(block.len());
                    pending.extend_from_slice(&block[..need]);
                    at = need;
                    if pending.len() == RECORD {
                        consume(&pending);
                        pending.clear();
                    }
                }
                while at + RECORD <= block.len() {
                    consume(&block[at..at + RECORD]);
                    at += RECORD;
                }
                pending.extend_from_slice(&block[at..]);
            };
            match s {
                Strategy::Buffered => {
                    let mut buf = vec![0u8; BLOCK];
                    let mut off = 0u64;
                    while off < total {
                        let len = (BLOCK as u64).min(total - off) as usize;
                        f.read_exact_at(&mut buf[..len], off)?;
                        eat(&buf[..len]);
                        off += len as u64;
                    }
                }
                Strategy::Background => {
                    let (tx, rx) = mpsc::sync_channel::<std::io::Result<Vec<u8>>>(1);
                    let rf = f.try_clone()?;
                    let reader = std::thread::spawn(move || {
                        let mut off = 0u64;
                        while off < total {
                            let len = (BLOCK as u64).min(total - off) as usize;
                            let mut buf = vec![0u8; len];
                            let r = rf.read_exact_at(&mut buf, off).map(|_| buf);
                            let failed = r.is_err();
                            if tx.send(r).is_err() || failed {
                                return;
                            }
                            off += len as u64;
                        }
                    });
                    for block in rx {
                        eat(&block?);
                    }
                    let _ = reader.join();
                }
                _ => {
                    let mut off = 0u64;
                    while off < total {
                        let len = (BLOCK as u64).min(total - off) as usize;
                        #[allow(unsafe_code)]
                        // SAFETY: read-only map of a file nobody else modifies meanwhile.
                        let map =
                            unsafe { memmap2::MmapOptions::new().offset(off).len(len).map(&f)? };
                        eat(&map);
                        off += len as u64;
                    }
                }
            }
        }
    }
    Ok((start.elapsed().as_secs_f64(), sum))
}

pub struct AioRow {
    pub size_mb: u64,
    pub strategy: Strategy,
    pub write_secs: f64,
    pub read_secs: f64,
}

/// File sizes from 1 GiB (or `max_mb` if smaller) doubling up to `max_mb`; stops doubling
/// when one size took longer than `budget_secs`.
pub fn run_aio(
    dir: &Path,
    max_mb: u64,
    budget_secs: f64,
    progress: &dyn Fn(&str),
) -> std::io::Result<Vec<AioRow>> {
    std::fs::create_dir_all(dir)?;
    let path = dir.join("aio.dat");
    let mut rows = Vec::new();
    let mut size = 1024.min(max_mb);
    while size <= max_mb {
        let n = size * 1024 * 1024 / RECORD as u64;
        let started = Instant::now();
        let mut expected = None;
        for s in Strategy::ALL {
            progress(&format!("aio: {size} MiB, {}", s.name()));
            let w = write_file(&path, n, s)?;
            let (r, sum) = read_file(&path, s)?;
            if *expected.get_or_insert(sum) != sum {
                return Err(std::io::Error::other(format!(
                    "{}: read back different data",
                    s.name()
                )));
            }
            rows.push(AioRow {
                size_mb: size,
                strategy: s,
                write_secs: w,
                read_secs: r,
            });
            std::fs::remove_file(&path)?;
        }
        if started.elapsed().as_secs_f64() > budget_secs {
            break;
        }
        size *= 2;
    }
    Ok(rows)
}

pub fn render_aio(rows: &[AioRow], mem_available_mb: u64) -> String {
    let mut s = format!(
        "seed 002 \"aio\": write then read 103-byte records (MemAvailable {mem_available_mb} MiB, so every size fits the page cache unless noted)\n\
         {:<8} {:<22} {:>9} {:>9} {:>9} {:>9}\n",
        "MiB", "strategy", "write s", "rel", "read s", "rel"
    );
    for r in rows {
        let base = rows
            .iter()
            .find(|b| b.size_mb == r.size_mb && b.strategy == Strategy::PerRecord)
            .unwrap();
        s.push_str(&format!(
            "{:<8} {:<22} {:>9.2} {:>9.3} {:>9.2} {:>9.3}\n",
            r.size_mb,
            r.strategy.name(),
            r.write_secs,
            r.write_secs / base.write_secs,
            r.read_secs,
            r.read_secs / base.read_secs
        ));
    }
    s
}

pub fn aio_json(rows: &[AioRow]) -> Json {
    Json::Arr(
        rows.iter()
            .map(|r| {
                Json::obj(vec![
                    ("size_mib", Json::Num(r.size_mb as f64)),
                    ("strategy", Json::str(r.strategy.name())),
                    ("write_seconds", Json::Num(r.write_secs)),
                    ("read_seconds", Json::Num(r.read_secs)),
                ])
            })
            .collect(),
    )
}

pub struct CacheRow {
    pub buffer: u64,
    pub insert_secs: f64,
    pub write_calls: u64,
    pub scan_secs: f64,
    pub read_calls: u64,
}

pub fn cache_sizes() -> Vec<u64> {
    // 256 B, then ×4 up to 64 KiB, every doubling from 64 KiB to 256 KiB (where the
    // choice is), then ×4 to 1 GiB.
    let mut v = vec![256, 1024, 4096, 16384, 65536, 131072, 262144, 1 << 20];
    let mut x: u64 = 1 << 20;
    while x < 1 << 30 {
        x *= 4;
        v.push(x);
    }
    v
}

fn status(session: &mut quarry_core::Session, name: &str) -> Result<u64, String> {
    let out = session
        .query(&format!("SHOW GLOBAL STATUS LIKE '{name}'"))
        .map_err(|e| e.to_string())?;
    for o in out {
        if let quarry_core::Output::Rows { rows, .. } = o {
            if let Some(r) = rows.first() {
                return r[1]
                    .to_string()
                    .parse()
                    .map_err(|_| format!("{name} is not a number"));
            }
        }
    }
    Err(format!("{name} not in SHOW STATUS"))
}

/// The "caches" sweep in an embedded database at `datadir`, over `source` (a TestBig TSV).
pub fn run_caches(
    datadir: &Path,
    source: &Path,
    rows: u64,
    progress: &dyn Fn(&str),
) -> Result<Vec<CacheRow>, String> {
    let _ = std::fs::remove_dir_all(datadir);
    // The source file is the harness's own: the server may read it wherever it is.
    let opts = quarry_core::Options {
        secure_file_priv: Some(String::new()),
        ..Default::default()
    };
    let db = quarry_core::Database::open_with(datadir, &opts).map_err(|e| e.to_string())?;
    let mut s = db.session("root", "localhost");
    let q = |s: &mut quarry_core::Session, sql: &str| {
        s.query(sql).map(|_| ()).map_err(|e| format!("{sql}: {e}"))
    };
    q(&mut s, "CREATE DATABASE caches")?;
    q(&mut s, "USE caches")?;
    let cols = "(Id char(8), PZN char(7), EVP char(8), HAP char(8), ArtikelBez varchar(40), \
                ArtikelText varchar(26), Hersteller char(5))";
    q(&mut s, &format!("CREATE TABLE src {cols} ENGINE=ROW"))?;
    q(&mut s, &format!("CREATE TABLE dst {cols} ENGINE=ROW"))?;
    progress(&format!("caches: loading {rows} rows"));
    q(
        &mut s,
        &format!(
            "LOAD DATA INFILE '{}' INTO TABLE src FIELDS TERMINATED BY '\\t' LINES TERMINATED BY '\\n'",
            quarry_testkit::servers::abs(source).display()
        ),
    )?;
    let mut out = Vec::new();
    for size in cache_sizes() {
        progress(&format!("caches: buffer {}", human(size)));
        q(&mut s, "TRUNCATE TABLE dst")?;
        q(&mut s, &format!("SET SESSION read_buffer_size = {size}"))?;
        let w0 = status(&mut s, "Quarry_data_write_calls")?;
        let t = Instant::now();
        q(&mut s, "INSERT INTO dst SELECT * FROM src")?;
        let insert_secs = t.elapsed().as_secs_f64();
        let w1 = status(&mut s, "Quarry_data_write_calls")?;
        let r0 = status(&mut s, "Quarry_data_read_calls")?;
        let t = Instant::now();
        q(
            &mut s,
            "SELECT count(*) FROM dst WHERE Hersteller = 'ABCDE'",
        )?;
        let scan_secs = t.elapsed().as_secs_f64();
        let r1 = status(&mut s, "Quarry_data_read_calls")?;
        out.push(CacheRow {
            buffer: size,
            insert_secs,
            write_calls: w1 - w0,
            scan_secs,
            read_calls: r1 - r0,
        });
    }
    drop(s);
    drop(db);
    let _ = std::fs::remove_dir_all(datadir);
    Ok(out)
}

pub fn human(bytes: u64) -> String {
    match bytes {
        b if b >= 1 << 30 && b % (1 << 30) == 0 => format!("{} GiB", b >> 30),
        b if b >= 1 << 20 && b % (1 << 20) == 0 => format!("{} MiB", b >> 20),
        b if b >= 1 << 10 && b % (1 << 10) == 0 => format!("{} KiB", b >> 10),
        b => format!("{b} B"),
    }
}

pub fn render_caches(rows: &[CacheRow], nrows: u64) -> String {
    let mut s = format!(
        "seed 002 \"caches\": INSERT INTO dst SELECT * FROM src ({nrows} rows) and a full scan of dst, per read_buffer_size\n\
         {:>10} {:>10} {:>14} {:>10} {:>14}\n",
        "buffer", "insert s", "write calls", "scan s", "read calls"
    );
    for r in rows {
        s.push_str(&format!(
            "{:>10} {:>10.2} {:>14} {:>10.2} {:>14}\n",
            human(r.buffer),
            r.insert_secs,
            r.write_calls,
            r.scan_secs,
            r.read_calls
        ));
    }
    s
}

pub fn caches_json(rows: &[CacheRow]) -> Json {
    Json::Arr(
        rows.iter()
            .map(|r| {
                Json::obj(vec![
                    ("buffer_bytes", Json::Num(r.buffer as f64)),
                    ("insert_seconds", Json::Num(r.insert_secs)),
                    ("write_calls", Json::Num(r.write_calls as f64)),
                    ("scan_seconds", Json::Num(r.scan_secs)),
                    ("read_calls", Json::Num(r.read_calls as f64)),
                ])
            })
            .collect(),
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn every_strategy_reads_back_what_was_written() {
        let dir = std::env::temp_dir().join(format!("quarry-bench-aio-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let path = dir.join("f");
        // Not a multiple of the block: records straddle block ends.
        let n = 3 * BLOCK as u64 / RECORD as u64 + 17;
        let mut sums = Vec::new();
        for s in Strategy::ALL {
            write_file(&path, n, s).unwrap();
            assert_eq!(
                std::fs::metadata(&path).unwrap().len(),
                n * RECORD as u64,
                "{}",
                s.name()
            );
            for r in Strategy::ALL {
                sums.push(read_file(&path, r).unwrap().1);
            }
        }
        let expected: u64 = (0..n).fold(0u64, |a, i| a.wrapping_add(i));
        assert!(sums.iter().all(|s| *s == expected), "{sums:?}");
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn cache_sizes_span_256_bytes_to_1_gib() {
        let v = cache_sizes();
        assert_eq!(v.first(), Some(&256));
        assert_eq!(v.last(), Some(&(1 << 30)));
        assert!(v.contains(&(128 * 1024)));
        assert_eq!(human(128 * 1024), "128 KiB");
        assert_eq!(human(300), "300 B");
    }

    #[test]
    fn smaller_buffers_mean_more_engine_calls() {
        let dir = std::env::temp_dir().join(format!("quarry-bench-caches-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let tsv = dir.join("src.tsv");
        let mut data = crate::seedgen::SeedData::new(1);
        let mut text = Vec::new();
        for id in 1..=3000 {
            data.product_line(id, false, &mut text);
            text.push(b'\n');
        }
        std::fs::write(&tsv, text).unwrap();
        let rows = run_caches(&dir.join("db"), &tsv, 3000, &|_| {}).unwrap();
        let small = rows.iter().find(|r| r.buffer == 4096).unwrap();
        let big = rows.iter().find(|r| r.buffer == 128 * 1024).unwrap();
        assert!(
            small.write_calls > 10 * big.write_calls,
            "{} vs {}",
            small.write_calls,
            big.write_calls
        );
        assert!(
            small.read_calls > 10 * big.read_calls,
            "{} vs {}",
            small.read_calls,
            big.read_calls
        );
        std::fs::remove_dir_all(dir).unwrap();
    }
}
