//! Crash tests of row tables written through the log: what a `kill -9` leaves on disk is
//! what was written before it (the log made durable, data files and pages possibly not),
//! so a crash is simulated by making the log durable and then forgetting every handle
//! without its drop-time write-out, and recovery runs as at the next start.

use super::*;
use quarry_common::SqlType;
use quarry_storage::vfs::RealFs;
use quarry_storage_api::{ColumnSchema, IndexSchema};

fn dir(name: &str) -> std::path::PathBuf {
    let d = std::env::temp_dir().join(format!("quarry-row-crash-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&d);
    std::fs::create_dir_all(d.join("db")).unwrap();
    d
}

fn schema() -> TableSchema {
    let col = |name: &str, ty| ColumnSchema {
        name: name.into(),
        ty,
        nullable: true,
        columnar: false,
    };
    let ix = |name: &str, col, unique| IndexSchema {
        name: name.into(),
        columns: vec![col],
        prefix: vec![0],
        desc: vec![false],
        unique,
        primary: unique,
    };
    TableSchema {
        columns: vec![
            col("id", SqlType::INT),
            col("pad", SqlType::varchar(30)),
            col("k", SqlType::INT),
        ],
        indexes: vec![ix("PRIMARY", 0, true), ix("k", 2, false)],
        row_format: RowFormat::Dynamic,
    }
}

fn table_path(root: &std::path::Path) -> TablePath {
    TablePath::new(&root.join("db"), "t")
}

fn counters() -> Arc<HandlerCounters> {
    Arc::new(HandlerCounters::default())
}

/// The kill: what the log holds is on disk; nothing else is written out.
fn kill(t: Arc<dyn Table>, engine: RowEngine, wal: Arc<Wal>) {
    wal.flush_to(wal.next_lsn(), true).unwrap();
    std::mem::forget(t);
    std::mem::forget(engine);
    std::mem::forget(wal);
}

fn start(root: &std::path::Path) -> (Arc<Wal>, RowEngine) {
    let (wal, _) = Wal::open(root, Arc::new(RealFs)).unwrap();
    let pool = Arc::new(BufferPool::new(64 * quarry_storage::page::PAGE_SIZE, 4));
    pool.attach_wal(wal.clone());
    (wal, RowEngine::new(pool))
}

fn row(i: i64) -> Row {
    vec![
        Value::Int(i),
        Value::Str(format!("pad{}", "x".repeat((i % 17) as usize))),
        Value::Int(i % 10),
    ]
}

/// A bulk statement's write buffer goes out in aligned blocks that end inside records;
/// killed mid-statement, recovery marked its records deleted but the tail of the last one
/// was never logged. The table used to stay corrupt ("record past end of file") with
/// its committed rows unreadable.
#[test]
fn a_bulk_statement_cut_by_a_crash_leaves_the_committed_rows() {
    let root = dir("bulk");
    let (path, schema, counters) = (table_path(&root), schema(), counters());
    let (wal, engine) = start(&root);
    engine.create(&path, &schema).unwrap();
    let t = engine.open(&path, &schema, counters.clone()).unwrap();
    wal.begin();
    for i in 1..=3 {
        t.insert(row(i)).unwrap();
    }
    t.flush().unwrap();
    wal.commit().unwrap();
    wal.begin();
    t.begin_bulk(4096);
    for i in 100..5_000 {
        t.insert(row(i)).unwrap();
    }
    kill(t, engine, wal);

    let (wal, engine) = start(&root);
    let t = engine.open(&path, &schema, counters.clone()).unwrap();
    assert_eq!(t.check().unwrap(), Vec::<String>::new());
    let mut c = t.scan(&ScanRequest::default()).unwrap();
    let mut ids = vec![];
    while let Some(b) = c.next_batch().unwrap() {
        ids.extend(b.rows.iter().map(|r| r[0].to_i64()));
    }
    drop(c);
    assert_eq!(ids, vec![1, 2, 3]);
    // The table takes new rows where the cut record was, and they survive a reopen.
    wal.begin();
    t.insert(row(4)).unwrap();
    t.flush().unwrap();
    wal.commit().unwrap();
    t.sync().unwrap();
    drop(t);
    let t = engine.open(&path, &schema, counters).unwrap();
    assert_eq!(t.check().unwrap(), Vec::<String>::new());
    assert!(
        matches!(t.stats().rows, Stat::Exact(4)),
        "{:?}",
        t.stats().rows
    );
    drop(t);
    drop(engine);
    drop(wal);
    std::fs::remove_dir_all(&root).unwrap();
}

/// Rows of index `k` (the non-unique one) with key `key`, as an index read finds them.
fn k_ids(t: &dyn Table, key: i64) -> Vec<RowId> {
    let v = [Value::Int(key)];
    t.index_range(1, Bound::Included(&v), Bound::Included(&v))
        .unwrap()
}

/// DISABLE KEYS keeps the non-unique index's entries out of its file across commits
/// (and a sync: the checkpoint's); a kill then leaves committed rows the index file
/// lacks, and the open must put them back.
#[test]
fn rows_committed_while_keys_are_disabled_are_indexed_after_a_crash() {
    let root = dir("keys");
    let (path, schema, counters) = (table_path(&root), schema(), counters());
    let (wal, engine) = start(&root);
    engine.create(&path, &schema).unwrap();
    let t = engine.open(&path, &schema, counters.clone()).unwrap();
    assert!(t.set_keys_disabled(true).unwrap());
    for chunk in [1..1_000, 1_000..2_000] {
        wal.begin();
        t.begin_bulk(4096);
        for i in chunk {
            t.insert(row(i)).unwrap();
        }
        t.end_bulk().unwrap();
        wal.commit().unwrap();
        t.sync().unwrap();
    }
    kill(t, engine, wal);

    let (wal, engine) = start(&root);
    let t = engine.open(&path, &schema, counters).unwrap();
    assert_eq!(t.check().unwrap(), Vec::<String>::new());
    assert_eq!(k_ids(&*t, 3).len(), 200);
    drop(t);
    drop(engine);
    drop(wal);
    std::fs::remove_dir_all(&root).unwrap();
}

/// While keys are disabled, an index read, an update and a delete see the entries that
/// wait (they go into the tree first); ENABLE KEYS puts the rest in and syncs, so the
/// next open has nothing to rebuild.
#[test]
fn deferred_index_entries_are_seen_by_reads_and_changes() {
    let root = dir("keys-read");
    let (path, schema, counters) = (table_path(&root), schema(), counters());
    let (wal, engine) = start(&root);
    engine.create(&path, &schema).unwrap();
    let t = engine.open(&path, &schema, counters.clone()).unwrap();
    t.set_keys_disabled(true).unwrap();
    let marker = path.file("qdirty");
    assert!(marker.exists());
    wal.begin();
    let ids: Vec<RowId> = (0..100).map(|i| t.insert(row(i)).unwrap()).collect();
    wal.commit().unwrap();
    assert_eq!(k_ids(&*t, 4).len(), 10);
    // Everything is in the trees now, but the next rows defer again: a sync leaves the
    // marker while keys are disabled.
    t.sync().unwrap();
    assert!(marker.exists());
    wal.begin();
    t.insert(row(104)).unwrap();
    t.delete(ids[4]).unwrap();
    let mut moved = row(14);
    moved[2] = Value::Int(5);
    t.update(ids[14], moved).unwrap();
    wal.commit().unwrap();
    assert_eq!(k_ids(&*t, 4).len(), 9);
    assert_eq!(k_ids(&*t, 5).len(), 11);
    wal.begin();
    t.insert(row(204)).unwrap();
    wal.commit().unwrap();
    t.set_keys_disabled(false).unwrap();
    assert!(!marker.exists());
    assert_eq!(t.check().unwrap(), Vec::<String>::new());
    drop(t);
    let t = engine.open(&path, &schema, counters).unwrap();
    assert_eq!(k_ids(&*t, 4).len(), 10);
    assert_eq!(t.check().unwrap(), Vec::<String>::new());
    drop(t);
    drop(engine);
    drop(wal);
    std::fs::remove_dir_all(&root).unwrap();
}
