//! Snapshots over the row engine: a reader sees its snapshot's rows through scans,
//! fetches, index scans (in key order, index-only or not) and declined counts while a
//! writer changes, moves, deletes and inserts rows; the writer sees its own changes;
//! a second writer waits for the first's row locks; purge forgets what nobody needs.

use std::collections::BTreeMap;
use std::ops::Bound;
use std::sync::Arc;
use std::time::Duration;

use quarry_common::{Row, SqlType, Value};
use quarry_engine_row::RowEngine;
use quarry_storage_api::{
    ColumnSchema, Engine, HandlerCounters, IndexScan, IndexSchema, RowFormat, ScanRequest, Table,
    TablePath, TableSchema,
};
use quarry_txn::{enter, Context, MvccTable, Snapshot, Txn, TxnManager, Versions};

fn schema() -> TableSchema {
    let col = |name: &str, ty| ColumnSchema {
        name: name.into(),
        ty,
        nullable: true,
        columnar: false,
    };
    let ix = |name: &str, c: usize, unique: bool| IndexSchema {
        name: name.into(),
        columns: vec![c],
        prefix: vec![0],
        desc: vec![false],
        unique,
        primary: unique,
    };
    TableSchema {
        columns: vec![
            col("id", SqlType::INT),
            col("v", SqlType::INT),
            col("s", SqlType::varchar(200)),
        ],
        indexes: vec![ix("PRIMARY", 0, true), ix("v", 1, false)],
        row_format: RowFormat::Dynamic,
    }
}

fn ctx(mgr: &Arc<TxnManager>, txn: Option<&Arc<Txn>>, snap: Option<Snapshot>) -> Context {
    Context {
        mgr: mgr.clone(),
        txn: txn.cloned(),
        snap,
        read_lock: None,
        current_read: false,
        lock_timeout: Duration::from_millis(300),
        killed: None,
    }
}

/// id → (v, s) as a scan sees the table.
fn scanned(t: &dyn Table) -> BTreeMap<i64, (i64, String)> {
    let mut out = BTreeMap::new();
    let mut c = t
        .scan(&ScanRequest {
            batch_rows: 7,
            ..Default::default()
        })
        .unwrap();
    while let Some(b) = c.next_batch().unwrap() {
        for r in b.rows {
            let prev = out.insert(
                r[0].to_i64(),
                (r[1].to_i64(), r[2].as_str_lossy().into_owned()),
            );
            assert!(prev.is_none(), "row {} twice", r[0].to_i64());
        }
    }
    out
}

/// (v, id) pairs in the order the v index gives them, ids fetched by id.
fn by_index(t: &dyn Table, reverse: bool) -> Vec<(i64, i64)> {
    let mut ids = vec![];
    t.index_scan(
        &IndexScan {
            index: 1,
            lo: Bound::Unbounded,
            hi: Bound::Unbounded,
            reverse,
            keys: false,
            after: None,
        },
        &mut |e| {
            ids.push(e.id);
            Ok(true)
        },
    )
    .unwrap();
    t.fetch(&ids)
        .unwrap()
        .into_iter()
        .map(|r| (r[1].to_i64(), r[0].to_i64()))
        .collect()
}

fn row(id: i64, v: i64, s: &str) -> Row {
    vec![Value::Int(id), Value::Int(v), Value::Str(s.into())]
}

#[test]
fn a_snapshot_keeps_seeing_its_rows_while_a_writer_changes_them() {
    let dir = std::env::temp_dir().join(format!("quarry-txn-snap-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let engine = RowEngine::default();
    let path = TablePath::new(&dir, "t");
    engine.create(&path, &schema()).unwrap();
    let raw = engine
        .open(&path, &schema(), Arc::new(HandlerCounters::default()))
        .unwrap();
    let t = MvccTable::new(raw, Arc::new(Versions::default()), 1);
    let mut model: BTreeMap<i64, (i64, String)> = BTreeMap::new();
    for i in 0..100 {
        t.insert(row(i, i * 10, "x")).unwrap();
        model.insert(i, (i * 10, "x".into()));
    }
    let ids: BTreeMap<i64, u64> = {
        let mut c = t.scan(&ScanRequest::default()).unwrap();
        let mut m = BTreeMap::new();
        while let Some(b) = c.next_batch().unwrap() {
            for (id, r) in b.ids.iter().zip(&b.rows) {
                m.insert(r[0].to_i64(), *id);
            }
        }
        m
    };
    let mgr = TxnManager::new(4);
    let old = mgr.snapshot(0);
    let w = mgr.begin();
    let mut after = model.clone();
    {
        let _g = enter(ctx(&mgr, Some(&w), Some(mgr.snapshot(w.id))));
        for i in 0..10 {
            // Some grow past their slot and move to a new id.
            let s = if i % 2 == 0 {
                "y".repeat(150)
            } else {
                "z".into()
            };
            t.update(ids[&i], row(i, 1000 - i, &s)).unwrap();
            after.insert(i, (1000 - i, s));
        }
        for i in 20..30 {
            t.delete(ids[&i]).unwrap();
            after.remove(&i);
        }
        for i in 200..210 {
            t.insert(row(i, i, "new")).unwrap();
            after.insert(i, (i, "new".into()));
        }
        assert!(scanned(&t) == after, "the writer sees its own changes");
    }
    let check_old = |what: &str| {
        let _g = enter(ctx(&mgr, None, Some(old.clone())));
        assert!(scanned(&t) == model, "{what}: scan");
        let mut want: Vec<(i64, i64)> = model.iter().map(|(&id, (v, _))| (*v, id)).collect();
        want.sort();
        assert_eq!(by_index(&t, false), want, "{what}: index order");
        want.reverse();
        assert_eq!(by_index(&t, true), want, "{what}: reverse index order");
        assert_eq!(
            t.count(&ScanRequest::default()).unwrap(),
            None,
            "{what}: a count the engine would answer from newer rows is declined"
        );
    };
    check_old("writer open");
    // A second writer waits for the first's lock on id 5, then times out.
    {
        let w2 = mgr.begin();
        let _g = enter(ctx(&mgr, Some(&w2), Some(mgr.snapshot(w2.id))));
        let e = t.insert(row(5, 0, "dup")).unwrap_err();
        assert_eq!(e.code, 1205, "{}", e.message);
        mgr.end(&w2);
    }
    mgr.end(&w);
    check_old("writer committed");
    {
        let _g = enter(ctx(&mgr, None, Some(mgr.snapshot(0))));
        assert!(scanned(&t) == after, "a new snapshot sees the commit");
        let mut want: Vec<(i64, i64)> = after.iter().map(|(&id, (v, _))| (*v, id)).collect();
        want.sort();
        assert_eq!(by_index(&t, false), want);
        assert_eq!(t.count(&ScanRequest::default()).unwrap(), None);
    }
    drop(old);
    mgr.purge();
    assert_eq!(mgr.unpurged(), 0);
    {
        let _g = enter(ctx(&mgr, None, Some(mgr.snapshot(0))));
        assert!(scanned(&t) == after);
    }
    assert!(mgr.locks.is_empty());
    let _ = std::fs::remove_dir_all(&dir);
}

/// Counts a thread as finished when dropped, also by a panic.
struct Finished(Arc<std::sync::atomic::AtomicUsize>);

impl Drop for Finished {
    fn drop(&mut self) {
        self.0.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    }
}

/// Writers move amounts between accounts in transactions (row locks taken as the
/// executor takes them, deadlocks and timeouts rolled back by compensation, some
/// rolled back on purpose, balances' row sizes changing so rows move); readers check
/// that every snapshot sees the same total through a scan and through the index, and
/// the same rows twice.
#[test]
fn concurrent_transfers_never_show_a_torn_total() {
    let dir = std::env::temp_dir().join(format!("quarry-txn-xfer-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    // As in the server: a log, and each writer's changes under its own log transaction
    // (the engine parks a slot its deleter freed until the deleter is purged: a writer
    // whose snapshot predates that deleter must not put its own row where it still
    // reads the deleted one).
    let (wal, _) = quarry_storage::Wal::open(&dir, Arc::new(quarry_storage::vfs::RealFs)).unwrap();
    let pool = Arc::new(quarry_storage::BufferPool::new(16 << 20, 4));
    pool.attach_wal(wal.clone());
    let engine = RowEngine::new(pool);
    let path = TablePath::new(&dir, "acct");
    engine.create(&path, &schema()).unwrap();
    let raw = engine
        .open(&path, &schema(), Arc::new(HandlerCounters::default()))
        .unwrap();
    let t = Arc::new(MvccTable::new(raw, Arc::new(Versions::default()), 2));
    const N: i64 = 24;
    for i in 0..N {
        t.insert(row(i, 100, "")).unwrap();
    }
    let mgr = TxnManager::new(8);
    let stop = Arc::new(std::sync::atomic::AtomicBool::new(false));
    let writers_done = Arc::new(std::sync::atomic::AtomicUsize::new(0));
    let find = |t: &MvccTable, id: i64| -> Option<(u64, Row)> {
        let ids = t
            .index_range(
                0,
                Bound::Included(&[Value::Int(id)]),
                Bound::Included(&[Value::Int(id)]),
            )
            .unwrap();
        let rows = t.fetch(&ids).unwrap();
        ids.into_iter().zip(rows).next()
    };
    std::thread::scope(|s| {
        for w in 0..3u64 {
            let (t, mgr, writers_done, wal) =
                (t.clone(), mgr.clone(), writers_done.clone(), wal.clone());
            s.spawn(move || {
                // Counted done however the writer ends: a writer that panics must fail
                // the test, not leave the watcher and the readers waiting for it.
                let _done = Finished(writers_done);
                let mut x = w * 7919 + 13;
                let mut next = move || {
                    x ^= x << 13;
                    x ^= x >> 7;
                    x ^= x << 17;
                    x
                };
                let (mut done, mut failed) = (0, 0);
                while done < 300 {
                    let txn = mgr.begin();
                    let wal_txn = wal.begin_txn();
                    wal.hold(wal_txn);
                    quarry_storage::Wal::set_thread_txn(wal_txn);
                    let snap = mgr.snapshot(txn.id);
                    let _g = enter(ctx(&mgr, Some(&txn), Some(snap)));
                    let (a, b) = ((next() % N as u64) as i64, (next() % N as u64) as i64);
                    let amount = (next() % 20) as i64;
                    let mut undo: Vec<(u64, Row)> = vec![];
                    let step = |id: i64, delta: i64, undo: &mut Vec<(u64, Row)>| {
                        let (rid, r) = find(&t, id).expect("account exists");
                        let (rid, r) = t.lock_row(rid, r, true)?.expect("still there");
                        let mut n = r.clone();
                        let bal = r[1].to_i64() + delta;
                        n[1] = Value::Int(bal);
                        // Sizes change so rows move now and then.
                        n[2] = Value::Str("#".repeat((bal.unsigned_abs() % 90) as usize));
                        let nid = t.update(rid, n)?;
                        undo.push((nid, r));
                        Ok::<_, quarry_common::Error>(())
                    };
                    let r = step(a, -amount, &mut undo).and_then(|_| step(b, amount, &mut undo));
                    if r.is_err() || next() % 5 == 0 {
                        for (id, old) in undo.into_iter().rev() {
                            t.update(id, old).unwrap();
                        }
                        failed += 1;
                        wal.abort();
                    } else {
                        done += 1;
                        wal.commit().unwrap();
                    }
                    drop(_g);
                    let held = wal.clone();
                    txn.on_purged(move || held.release(wal_txn));
                    mgr.end(&txn);
                }
                assert!(failed > 0);
            });
        }
        for _ in 0..2 {
            let (t, mgr, stop) = (t.clone(), mgr.clone(), stop.clone());
            s.spawn(move || {
                let mut checks = 0;
                while !stop.load(std::sync::atomic::Ordering::Relaxed) || checks < 20 {
                    let _g = enter(ctx(&mgr, None, Some(mgr.snapshot(0))));
                    let first = scanned(t.as_ref());
                    let total: i64 = first.values().map(|(v, _)| v).sum();
                    assert_eq!(first.len() as i64, N);
                    assert_eq!(total, N * 100, "scan total");
                    let ix_total: i64 = by_index(t.as_ref(), checks % 2 == 0)
                        .iter()
                        .map(|(v, _)| v)
                        .sum();
                    assert_eq!(ix_total, N * 100, "index total");
                    assert!(scanned(t.as_ref()) == first, "repeatable within a snapshot");
                    checks += 1;
                }
                eprintln!("reader: {checks} snapshots checked");
            });
        }
        // Let the writers finish, then the readers.
        s.spawn({
            let (mgr, stop, writers_done) = (mgr.clone(), stop.clone(), writers_done.clone());
            move || {
                while writers_done.load(std::sync::atomic::Ordering::Relaxed) < 3 {
                    std::thread::sleep(Duration::from_millis(50));
                    mgr.purge();
                }
                // Bounded: a lock left behind fails the checks after the threads end.
                let give_up = std::time::Instant::now() + Duration::from_secs(60);
                while (mgr.unpurged() > 0 || !mgr.locks.is_empty())
                    && std::time::Instant::now() < give_up
                {
                    std::thread::sleep(Duration::from_millis(50));
                    mgr.purge();
                }
                std::thread::sleep(Duration::from_millis(200));
                stop.store(true, std::sync::atomic::Ordering::Relaxed);
            }
        });
    });
    assert!(mgr.locks.is_empty(), "{} locks left", mgr.locks.len());
    assert_eq!(mgr.unpurged(), 0, "versions left unpurged");
    let _g = enter(ctx(&mgr, None, Some(mgr.snapshot(0))));
    let total: i64 = scanned(t.as_ref()).values().map(|(v, _)| v).sum();
    assert_eq!(total, N * 100);
    let _ = std::fs::remove_dir_all(&dir);
}
