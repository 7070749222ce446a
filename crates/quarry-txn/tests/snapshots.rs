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
