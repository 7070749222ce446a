//! A B+tree of byte-string entries in one page file, through the buffer pool.
//!
//! Entries are whole memcomparable keys (the index key followed by the row id, see
//! `keycode`), so every entry is distinct and ordered by plain byte comparison; there is
//! no separate value. Page 0 is the meta page; leaves are linked left to right for range
//! scans. Inserts split full pages by bytes (so large and small keys share fairly) and
//! grow the root; deletes remove cells and leave underfull pages in place (no merging
//! yet). A tree-wide latch lets readers share and makes writers exclusive.

use crate::page::{
    cell_len, get32, put32, Node, NodeMut, KIND_INTERNAL, KIND_LEAF, KIND_META, MAX_KEY, PAGE_SIZE,
};
use crate::pool::{BufferPool, PageId};
use parking_lot::RwLock;
use quarry_common::{Error, Result};
use std::ops::Bound;
use std::path::Path;
use std::sync::Arc;

const META_ROOT: usize = 32;
const META_PAGES: usize = 36;
const META_ENTRIES: usize = 40;
/// Bulk builds fill pages to this share, leaving room for later inserts.
const FILL: usize = PAGE_SIZE * 9 / 10;

pub struct BTree {
    pool: Arc<BufferPool>,
    file: u32,
    latch: RwLock<()>,
}

fn too_long(len: usize) -> Error {
    Error::new(
        1071,
        format!(
            "Specified key was too long; max key length is {} bytes (got {len})",
            MAX_KEY - 16
        ),
    )
}

/// The smallest byte string greater than every string that starts with `prefix`
/// (`None` when no such bound exists: the prefix is all 0xFF).
pub fn prefix_end(prefix: &[u8]) -> Option<Vec<u8>> {
    let mut v = prefix.to_vec();
    while let Some(last) = v.pop() {
        if last != 0xFF {
            v.push(last + 1);
            return Some(v);
        }
    }
    None
}

impl BTree {
    /// Open the tree stored in `path`, creating an empty one if the file is new.
    pub fn open(pool: Arc<BufferPool>, path: &Path) -> Result<BTree> {
        let file = pool.open_file(path)?;
        let t = BTree {
            pool,
            file,
            latch: RwLock::new(()),
        };
        if t.pool.file_pages(file)? == 0 {
            let meta = t.page(0)?;
            let mut m = meta.write();
            NodeMut(&mut m).init(KIND_META, 0);
            put32(&mut m, META_ROOT, 1);
            put32(&mut m, META_PAGES, 2);
            drop(m);
            let root = t.page(1)?;
            NodeMut(&mut root.write()).init(KIND_LEAF, 0);
        } else if crate::page::kind(&t.page(0)?.read()) != KIND_META {
            let _ = t.pool.close_file(t.file, false);
            return Err(Error::corrupt(format!(
                "{} (no B-tree meta page)",
                path.display()
            )));
        }
        Ok(t)
    }

    pub fn file_id(&self) -> u32 {
        self.file
    }

    fn page(&self, no: u32) -> Result<crate::pool::PageRef<'_>> {
        self.pool.get(PageId {
            file: self.file,
            page: no,
        })
    }

    fn meta(&self, at: usize) -> Result<u32> {
        Ok(get32(&self.page(0)?.read(), at))
    }

    fn set_meta(&self, at: usize, v: u32) -> Result<()> {
        put32(&mut self.page(0)?.write(), at, v);
        Ok(())
    }

    /// Number of entries.
    pub fn len(&self) -> Result<u64> {
        let m = self.page(0)?;
        let d = m.read();
        Ok(u64::from_le_bytes(
            d[META_ENTRIES..META_ENTRIES + 8].try_into().unwrap(),
        ))
    }

    pub fn is_empty(&self) -> Result<bool> {
        Ok(self.len()? == 0)
    }

    fn add_entries(&self, delta: i64) -> Result<()> {
        let m = self.page(0)?;
        let mut d = m.write();
        let n = u64::from_le_bytes(d[META_ENTRIES..META_ENTRIES + 8].try_into().unwrap());
        d[META_ENTRIES..META_ENTRIES + 8].copy_from_slice(&(n as i64 + delta).max(0).to_le_bytes());
        Ok(())
    }

    fn alloc(&self) -> Result<u32> {
        let n = self.meta(META_PAGES)?;
        self.set_meta(META_PAGES, n + 1)?;
        Ok(n)
    }

    /// Pages in use (including the meta page).
    pub fn pages(&self) -> Result<u32> {
        self.meta(META_PAGES)
    }

    /// Leaf for `key` and the internal pages above it (page, child slot taken).
    fn descend(&self, key: Option<&[u8]>) -> Result<(u32, Vec<u32>)> {
        let mut page = self.meta(META_ROOT)?;
        let mut path = vec![];
        loop {
            let r = self.page(page)?;
            let d = r.read();
            let n = Node(&d);
            match n.kind() {
                KIND_LEAF => return Ok((page, path)),
                KIND_INTERNAL => {
                    path.push(page);
                    page = match key {
                        Some(k) => n.child_for(k).1,
                        None => n.leftmost(),
                    };
                }
                _ => {
                    return Err(Error::corrupt(format!(
                        "B-tree page {page} in file {} has kind {}",
                        self.file,
                        n.kind()
                    )))
                }
            }
        }
    }

    /// Insert `key`; false if it is already present.
    pub fn insert(&self, key: &[u8]) -> Result<bool> {
        if key.len() > MAX_KEY {
            return Err(too_long(key.len()));
        }
        let _w = self.latch.write();
        let (leaf, path) = self.descend(Some(key))?;
        let r = self.page(leaf)?;
        let mut d = r.write();
        let mut n = NodeMut(&mut d);
        let pos = match n.view().search(key) {
            Ok(_) => return Ok(false),
            Err(pos) => pos,
        };
        if n.insert(pos, key, None) {
            drop(d);
            self.add_entries(1)?;
            return Ok(true);
        }
        let right_no = self.alloc()?;
        let rr = self.page(right_no)?;
        let mut rd = rr.write();
        let mut right = NodeMut(&mut rd);
        right.init(KIND_LEAF, 0);
        let at = n.view().split_point();
        n.split_into(at, &mut right);
        right.set_next(n.view().next());
        n.set_next(right_no);
        let fits = if key >= right.view().key(0) {
            let p = right.view().search(key).unwrap_err();
            right.insert(p, key, None)
        } else {
            let p = n.view().search(key).unwrap_err();
            n.insert(p, key, None)
        };
        if !fits {
            return Err(Error::corrupt("B-tree split left no room for the key"));
        }
        let sep = right.view().key(0).to_vec();
        drop(rd);
        drop(d);
        self.add_entries(1)?;
        self.insert_parent(path, leaf, sep, right_no)?;
        Ok(true)
    }

    /// After `left` split off `right` (first key `sep`), link `right` into the parent,
    /// splitting upward as needed.
    fn insert_parent(
        &self,
        mut path: Vec<u32>,
        mut left: u32,
        mut sep: Vec<u8>,
        mut right: u32,
    ) -> Result<()> {
        loop {
            let Some(parent) = path.pop() else {
                let level = Node(&self.page(left)?.read()).level();
                let root = self.alloc()?;
                let r = self.page(root)?;
                let mut d = r.write();
                let mut n = NodeMut(&mut d);
                n.init(KIND_INTERNAL, level + 1);
                n.set_leftmost(left);
                n.insert(0, &sep, Some(right));
                drop(d);
                return self.set_meta(META_ROOT, root);
            };
            let r = self.page(parent)?;
            let mut d = r.write();
            let mut n = NodeMut(&mut d);
            let pos = n.view().search(&sep).unwrap_or_else(|p| p);
            if n.insert(pos, &sep, Some(right)) {
                return Ok(());
            }
            // Split the internal node: the middle key moves up, its child becomes the
            // new node's leftmost.
            let new_no = self.alloc()?;
            let nr = self.page(new_no)?;
            let mut nd = nr.write();
            let mut new = NodeMut(&mut nd);
            new.init(KIND_INTERNAL, n.view().level());
            let mid = n.view().split_point().min(n.view().len() - 1);
            let up = n.view().key(mid).to_vec();
            new.set_leftmost(n.view().child(mid));
            n.split_into(mid + 1, &mut new);
            n.remove(mid);
            let fits = if sep >= up {
                let p = new.view().search(&sep).unwrap_or_else(|p| p);
                new.insert(p, &sep, Some(right))
            } else {
                let p = n.view().search(&sep).unwrap_or_else(|p| p);
                n.insert(p, &sep, Some(right))
            };
            if !fits {
                return Err(Error::corrupt("B-tree internal split left no room"));
            }
            left = parent;
            sep = up;
            right = new_no;
        }
    }

    /// Remove `key`; false if it was not there.
    pub fn delete(&self, key: &[u8]) -> Result<bool> {
        let _w = self.latch.write();
        let (leaf, _) = self.descend(Some(key))?;
        let r = self.page(leaf)?;
        let mut d = r.write();
        let mut n = NodeMut(&mut d);
        match n.view().search(key) {
            Ok(i) => {
                n.remove(i);
                drop(d);
                self.add_entries(-1)?;
                Ok(true)
            }
            Err(_) => Ok(false),
        }
    }

    /// Replace entry `old` by `new` (an index entry whose row moved or whose key changed).
    /// When `new` is as long as `old` and sorts into its slot of the same leaf, only the
    /// cell's bytes change: one small logged range, where a delete and an insert shift the
    /// slot array twice and count the entries twice. Otherwise it is a delete and an
    /// insert; `new` is inserted even if `old` was not there.
    pub fn replace(&self, old: &[u8], new: &[u8]) -> Result<()> {
        if old.len() == new.len() {
            let _w = self.latch.write();
            let (leaf, _) = self.descend(Some(old))?;
            if self.descend(Some(new))?.0 == leaf {
                let r = self.page(leaf)?;
                let slot = {
                    let d = r.read();
                    let n = Node(&d);
                    n.search(old).ok().filter(|&i| {
                        (i == 0 || n.key(i - 1) < new) && (i + 1 == n.len() || new < n.key(i + 1))
                    })
                };
                if let Some(i) = slot {
                    NodeMut(&mut r.write()).set_leaf_key(i, new);
                    return Ok(());
                }
            }
        }
        self.delete(old)?;
        self.insert(new)?;
        Ok(())
    }

    /// Whether `key` is present.
    pub fn contains(&self, key: &[u8]) -> Result<bool> {
        let _r = self.latch.read();
        let (leaf, _) = self.descend(Some(key))?;
        let r = self.page(leaf)?;
        let d = r.read();
        Ok(Node(&d).search(key).is_ok())
    }

    /// Call `f` with every entry in `[lo, hi]` in order until it returns false.
    pub fn scan(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        f: &mut dyn FnMut(&[u8]) -> Result<bool>,
    ) -> Result<()> {
        let _r = self.latch.read();
        let mut leaf = self.first_leaf(lo)?;
        let mut first = true;
        loop {
            let r = self.page(leaf)?;
            let d = r.read();
            let n = Node(&d);
            let from = if first { start_slot(&n, lo) } else { 0 };
            first = false;
            for i in from..n.len() {
                let k = n.key(i);
                let past = match hi {
                    Bound::Included(h) => k > h,
                    Bound::Excluded(h) => k >= h,
                    Bound::Unbounded => false,
                };
                if past || !f(k)? {
                    return Ok(());
                }
            }
            match n.next() {
                0 => return Ok(()),
                next => leaf = next,
            }
        }
    }

    /// The leaf where entries from `lo` on start.
    fn first_leaf(&self, lo: Bound<&[u8]>) -> Result<u32> {
        let start_key = match lo {
            Bound::Included(k) | Bound::Excluded(k) => Some(k),
            Bound::Unbounded => None,
        };
        Ok(self.descend(start_key)?.0)
    }

    /// The number of entries in `[lo, hi]`, exactly: leaves are counted whole, with a
    /// binary search only in the first and the last, so no entry is visited.
    pub fn count(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Result<u64> {
        let _r = self.latch.read();
        let mut leaf = self.first_leaf(lo)?;
        let mut first = true;
        let mut total = 0u64;
        loop {
            let r = self.page(leaf)?;
            let d = r.read();
            let n = Node(&d);
            let from = if first { start_slot(&n, lo) } else { 0 };
            first = false;
            let to = match hi {
                Bound::Included(h) => n.search(h).map_or_else(|p| p, |i| i + 1),
                Bound::Excluded(h) => n.search(h).unwrap_or_else(|p| p),
                Bound::Unbounded => n.len(),
            };
            total += to.saturating_sub(from) as u64;
            if to < n.len() {
                return Ok(total);
            }
            match n.next() {
                0 => return Ok(total),
                next => leaf = next,
            }
        }
    }

    /// Call `f` with every entry in `[lo, hi]` from the last to the first until it returns
    /// false. Leaves link only rightwards, so each step left descends again, bounded by
    /// the separator that led to the leaf just read (its low fence).
    pub fn scan_rev(
        &self,
        lo: Bound<&[u8]>,
        hi: Bound<&[u8]>,
        f: &mut dyn FnMut(&[u8]) -> Result<bool>,
    ) -> Result<()> {
        let _r = self.latch.read();
        let mut upper: Bound<Vec<u8>> = hi.map(<[u8]>::to_vec);
        loop {
            let (leaf, fence) = self.descend_before(upper.as_ref().map(Vec::as_slice))?;
            let r = self.page(leaf)?;
            let d = r.read();
            let n = Node(&d);
            let end = match &upper {
                Bound::Unbounded => n.len(),
                Bound::Included(k) => match n.search(k) {
                    Ok(i) => i + 1,
                    Err(p) => p,
                },
                Bound::Excluded(k) => n.search(k).unwrap_or_else(|p| p),
            };
            for i in (0..end).rev() {
                let k = n.key(i);
                let below = match lo {
                    Bound::Included(l) => k < l,
                    Bound::Excluded(l) => k <= l,
                    Bound::Unbounded => false,
                };
                if below || !f(k)? {
                    return Ok(());
                }
            }
            match fence {
                None => return Ok(()),
                Some(k) => {
                    if match lo {
                        Bound::Included(l) => k.as_slice() <= l,
                        Bound::Excluded(l) => k.as_slice() <= l,
                        Bound::Unbounded => false,
                    } {
                        return Ok(());
                    }
                    upper = Bound::Excluded(k)
                }
            }
        }
    }

    /// The leaf holding the last entry within `upper`, and that leaf's low fence (the
    /// separator below which its left neighbours' entries lie; `None` for the first leaf).
    fn descend_before(&self, upper: Bound<&[u8]>) -> Result<(u32, Option<Vec<u8>>)> {
        let mut page = self.meta(META_ROOT)?;
        let mut fence = None;
        loop {
            let r = self.page(page)?;
            let d = r.read();
            let n = Node(&d);
            match n.kind() {
                KIND_LEAF => return Ok((page, fence)),
                KIND_INTERNAL => {
                    let slot = match upper {
                        Bound::Unbounded => n.len(),
                        Bound::Included(k) => n.child_for(k).0,
                        Bound::Excluded(k) => n.search(k).unwrap_or_else(|p| p),
                    };
                    if slot > 0 {
                        fence = Some(n.key(slot - 1).to_vec());
                    }
                    page = n.child_at(slot);
                }
                _ => return Err(Error::corrupt(format!("B-tree page {page} has a bad kind"))),
            }
        }
    }

    /// Estimated number of entries in `[lo, hi]` (MySQL's `records_in_range`): each end's
    /// position is read off the path to it, assuming sibling subtrees hold equal shares;
    /// ends in the same leaf are counted exactly.
    pub fn estimate_range(&self, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Result<u64> {
        let _r = self.latch.read();
        let total = self.len()?;
        // Share of the entries before the end (`after`: also past entries equal to `k`).
        let position = |k: Option<&[u8]>, after: bool| -> Result<(f64, u32, usize)> {
            let mut page = self.meta(META_ROOT)?;
            let (mut at, mut width) = (0.0f64, 1.0f64);
            loop {
                let r = self.page(page)?;
                let d = r.read();
                let n = Node(&d);
                let slot = |n: &Node| match k {
                    None => n.len() + usize::from(!n.is_leaf()),
                    Some(k) => match n.search(k) {
                        Ok(i) => i + usize::from(after || !n.is_leaf()),
                        Err(p) => p,
                    },
                };
                let s = slot(&n);
                if n.is_leaf() {
                    let frac = if n.is_empty() {
                        0.0
                    } else {
                        s as f64 / n.len() as f64
                    };
                    return Ok((at + width * frac, page, s));
                }
                let children = (n.len() + 1) as f64;
                let s = s.min(n.len());
                at += width * s as f64 / children;
                width /= children;
                page = n.child_at(s);
            }
        };
        let (a, leaf_a, sa) = match lo {
            Bound::Unbounded => (0.0, u32::MAX, 0),
            Bound::Included(k) => position(Some(k), false)?,
            Bound::Excluded(k) => position(Some(k), true)?,
        };
        let (b, leaf_b, sb) = match hi {
            Bound::Unbounded => (1.0, u32::MAX - 1, 0),
            Bound::Included(k) => position(Some(k), true)?,
            Bound::Excluded(k) => position(Some(k), false)?,
        };
        if leaf_a == leaf_b {
            return Ok(sb.saturating_sub(sa) as u64);
        }
        Ok(((b - a).max(0.0) * total as f64).round() as u64)
    }

    /// Entries that start with `prefix`, in order.
    pub fn scan_prefix(
        &self,
        prefix: &[u8],
        f: &mut dyn FnMut(&[u8]) -> Result<bool>,
    ) -> Result<()> {
        match prefix_end(prefix) {
            Some(end) => self.scan(Bound::Included(prefix), Bound::Excluded(&end), f),
            None => self.scan(Bound::Included(prefix), Bound::Unbounded, f),
        }
    }

    /// Fill an empty tree from entries in ascending order, bottom-up: leaves packed to
    /// 90 % and written in file order, then each internal level over the one below.
    pub fn bulk_load(&self, sorted: &mut dyn Iterator<Item = Vec<u8>>) -> Result<u64> {
        let _w = self.latch.write();
        if self.len()? != 0 || self.pages()? != 2 {
            return Err(Error::new(1030, "bulk load needs an empty B-tree"));
        }
        // (first key, page) of every node of the level being built.
        let mut level: Vec<(Vec<u8>, u32)> = vec![];
        let mut count = 0u64;
        let mut prev: Option<Vec<u8>> = None;
        let mut cur = 1u32; // the empty root leaf is reused as the first leaf
        let mut cur_first: Option<Vec<u8>> = None;
        for key in sorted {
            if key.len() > MAX_KEY {
                return Err(too_long(key.len()));
            }
            if let Some(p) = &prev {
                if *p >= key {
                    return Err(Error::new(
                        1030,
                        "bulk load input is not strictly ascending",
                    ));
                }
            }
            let r = self.page(cur)?;
            let mut d = r.write();
            let mut n = NodeMut(&mut d);
            let full = PAGE_SIZE - n.view().free_space() + cell_len(true, &key) + 2 > FILL;
            if full && !n.view().is_empty() {
                let next = self.alloc()?;
                n.set_next(next);
                drop(d);
                level.push((cur_first.take().unwrap(), cur));
                cur = next;
                let r2 = self.page(cur)?;
                let mut d2 = r2.write();
                let mut n2 = NodeMut(&mut d2);
                n2.init(KIND_LEAF, 0);
                n2.insert(0, &key, None);
            } else {
                let at = n.view().len();
                n.insert(at, &key, None);
            }
            if cur_first.is_none() {
                cur_first = Some(key.clone());
            }
            prev = Some(key);
            count += 1;
        }
        level.push((cur_first.unwrap_or_default(), cur));
        let mut height = 0u8;
        while level.len() > 1 {
            height += 1;
            let mut upper: Vec<(Vec<u8>, u32)> = vec![];
            let mut node: Option<(u32, Vec<u8>)> = None;
            for (first, child) in level {
                if let Some((page, _)) = &node {
                    let r = self.page(*page)?;
                    let mut d = r.write();
                    let mut n = NodeMut(&mut d);
                    let used = PAGE_SIZE - n.view().free_space();
                    if used + cell_len(false, &first) + 2 <= FILL {
                        let at = n.view().len();
                        n.insert(at, &first, Some(child));
                        continue;
                    }
                    drop(d);
                    upper.push(node.take().map(|(p, k)| (k, p)).unwrap());
                }
                let page = self.alloc()?;
                let r = self.page(page)?;
                let mut d = r.write();
                let mut n = NodeMut(&mut d);
                n.init(KIND_INTERNAL, height);
                n.set_leftmost(child);
                node = Some((page, first));
            }
            if let Some((p, k)) = node {
                upper.push((k, p));
            }
            level = upper;
        }
        self.set_meta(META_ROOT, level[0].1)?;
        self.add_entries(count as i64)?;
        Ok(count)
    }

    /// Remove every entry (TRUNCATE): the meta page and an empty root leaf are written
    /// fresh; pages past them are reused as the tree grows again.
    pub fn clear(&self) -> Result<()> {
        let _w = self.latch.write();
        {
            let meta = self.page(0)?;
            let mut m = meta.write();
            NodeMut(&mut m).init(KIND_META, 0);
            put32(&mut m, META_ROOT, 1);
            put32(&mut m, META_PAGES, 2);
        }
        NodeMut(&mut self.page(1)?.write()).init(KIND_LEAF, 0);
        Ok(())
    }

    /// Write dirty pages and fsync the file.
    pub fn flush(&self) -> Result<()> {
        let _w = self.latch.write();
        self.pool.flush_file(self.file)
    }

    /// Close the file, writing it first unless it is being dropped.
    pub fn close(self, write: bool) -> Result<()> {
        self.pool.close_file(self.file, write)
    }

    /// Walk the whole tree and check its invariants: keys ascend within and across pages,
    /// every child lies within its separators, leaves are linked in order, and the entry
    /// count matches. Returns the problems found.
    pub fn verify(&self) -> Result<Vec<String>> {
        let _r = self.latch.read();
        let mut problems = vec![];
        let root = self.meta(META_ROOT)?;
        let mut leaves = vec![];
        self.verify_node(root, None, None, &mut leaves, &mut problems, 0)?;
        let mut count = 0u64;
        let mut last: Option<Vec<u8>> = None;
        for (i, leaf) in leaves.iter().enumerate() {
            let r = self.page(*leaf)?;
            let d = r.read();
            let n = Node(&d);
            let expect_next = leaves.get(i + 1).copied().unwrap_or(0);
            if n.next() != expect_next {
                problems.push(format!(
                    "leaf {leaf} links to {} not {expect_next}",
                    n.next()
                ));
            }
            for k in 0..n.len() {
                if let Some(l) = &last {
                    if l.as_slice() >= n.key(k) {
                        problems.push(format!("leaf {leaf}: keys out of order"));
                    }
                }
                last = Some(n.key(k).to_vec());
                count += 1;
            }
        }
        if count != self.len()? {
            problems.push(format!("{count} entries, meta page says {}", self.len()?));
        }
        Ok(problems)
    }

    fn verify_node(
        &self,
        page: u32,
        lo: Option<&[u8]>,
        hi: Option<&[u8]>,
        leaves: &mut Vec<u32>,
        problems: &mut Vec<String>,
        depth: usize,
    ) -> Result<()> {
        if depth > 64 {
            problems.push(format!("page {page}: tree deeper than 64 levels"));
            return Ok(());
        }
        let r = self.page(page)?;
        let d = r.read();
        let n = Node(&d);
        for i in 0..n.len() {
            let k = n.key(i);
            if lo.is_some_and(|l| k < l) || hi.is_some_and(|h| k >= h) {
                problems.push(format!("page {page}: key outside its parent's range"));
            }
        }
        if n.is_leaf() {
            leaves.push(page);
            return Ok(());
        }
        let keys: Vec<Vec<u8>> = (0..n.len()).map(|i| n.key(i).to_vec()).collect();
        let children: Vec<u32> = (0..=n.len()).map(|s| n.child_at(s)).collect();
        drop(d);
        for (s, child) in children.iter().enumerate() {
            let clo = if s == 0 {
                lo
            } else {
                Some(keys[s - 1].as_slice())
            };
            let chi = keys.get(s).map(|k| k.as_slice()).or(hi);
            self.verify_node(*child, clo, chi, leaves, problems, depth + 1)?;
        }
        Ok(())
    }
}

/// The first slot of leaf `n` at or past the lower bound `lo`.
fn start_slot(n: &Node, lo: Bound<&[u8]>) -> usize {
    match lo {
        Bound::Included(k) => n.search(k).unwrap_or_else(|p| p),
        Bound::Excluded(k) => n.search(k).map_or_else(|p| p, |i| i + 1),
        Bound::Unbounded => 0,
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::collections::BTreeSet;

    struct Rng(u64);
    impl Rng {
        fn next(&mut self) -> u64 {
            self.0 ^= self.0 << 13;
            self.0 ^= self.0 >> 7;
            self.0 ^= self.0 << 17;
            self.0
        }
    }

    fn tmp(name: &str) -> std::path::PathBuf {
        let d = std::env::temp_dir().join(format!("quarry-btree-{name}-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d).unwrap();
        d
    }

    fn collect(t: &BTree, lo: Bound<&[u8]>, hi: Bound<&[u8]>) -> Vec<Vec<u8>> {
        let mut out = vec![];
        t.scan(lo, hi, &mut |k| {
            out.push(k.to_vec());
            Ok(true)
        })
        .unwrap();
        out
    }

    fn key(rng: &mut Rng) -> Vec<u8> {
        // Mostly short keys, some long ones, so splits see uneven cells.
        let len = if rng.next().is_multiple_of(50) {
            500 + rng.next() % 2500
        } else {
            4 + rng.next() % 40
        };
        let seed = rng.next();
        (0..len)
            .map(|i| (seed.rotate_left(i as u32 % 64) % 7) as u8 + b'a')
            .collect()
    }

    #[test]
    fn random_operations_match_an_ordered_set_and_survive_reopen() {
        let d = tmp("random");
        let path = d.join("t.qix");
        let mut model = BTreeSet::new();
        let mut rng = Rng(0x1234_5678);
        {
            // A small pool forces evictions in the middle of splits.
            let pool = Arc::new(BufferPool::new(64 * PAGE_SIZE, 4));
            let t = BTree::open(pool, &path).unwrap();
            for step in 0..30_000 {
                let k = key(&mut rng);
                if rng.next().is_multiple_of(5) && !model.is_empty() {
                    // Replace an entry by one of its length (in place when it keeps its
                    // slot) or by another key.
                    let victim: Vec<u8> = model
                        .iter()
                        .nth(rng.next() as usize % model.len())
                        .cloned()
                        .unwrap();
                    let by = if rng.next().is_multiple_of(3) {
                        k
                    } else {
                        let mut v = victim.clone();
                        *v.last_mut().unwrap() = b'`' + (rng.next() % 10) as u8;
                        v
                    };
                    t.replace(&victim, &by).unwrap();
                    model.remove(&victim);
                    model.insert(by);
                } else if rng.next().is_multiple_of(4) && !model.is_empty() {
                    // Delete an existing key half of the time, a missing one otherwise.
                    let victim = if rng.next().is_multiple_of(2) {
                        model
                            .iter()
                            .nth(rng.next() as usize % model.len())
                            .cloned()
                            .unwrap()
                    } else {
                        k
                    };
                    assert_eq!(
                        t.delete(&victim).unwrap(),
                        model.remove(&victim),
                        "step {step}"
                    );
                } else {
                    assert_eq!(
                        t.insert(&k).unwrap(),
                        model.insert(k.clone()),
                        "step {step}"
                    );
                }
            }
            assert!(t.verify().unwrap().is_empty(), "{:?}", t.verify().unwrap());
            let all = collect(&t, Bound::Unbounded, Bound::Unbounded);
            assert_eq!(all, model.iter().cloned().collect::<Vec<_>>());
            t.close(true).unwrap();
        }
        let pool = Arc::new(BufferPool::new(64 * PAGE_SIZE, 4));
        let t = BTree::open(pool, &path).unwrap();
        assert_eq!(t.len().unwrap(), model.len() as u64);
        for _ in 0..200 {
            let a = key(&mut rng);
            let b = key(&mut rng);
            let (lo, hi) = if a <= b { (a, b) } else { (b, a) };
            let want: Vec<Vec<u8>> = model
                .range::<[u8], _>((
                    Bound::Excluded(lo.as_slice()),
                    Bound::Included(hi.as_slice()),
                ))
                .cloned()
                .collect();
            assert_eq!(
                collect(&t, Bound::Excluded(&lo), Bound::Included(&hi)),
                want
            );
            // Backwards, with every bound kind, stopping early half of the time.
            let stop = if rng.next().is_multiple_of(2) {
                7
            } else {
                usize::MAX
            };
            for (lb, hb) in [
                (
                    Bound::Included(lo.as_slice()),
                    Bound::Excluded(hi.as_slice()),
                ),
                (
                    Bound::Excluded(lo.as_slice()),
                    Bound::Included(hi.as_slice()),
                ),
                (Bound::Unbounded, Bound::Included(hi.as_slice())),
                (Bound::Included(lo.as_slice()), Bound::Unbounded),
            ] {
                let want: Vec<Vec<u8>> = model
                    .range::<[u8], _>((lb, hb))
                    .rev()
                    .take(stop)
                    .cloned()
                    .collect();
                let mut got = vec![];
                t.scan_rev(lb, hb, &mut |k| {
                    got.push(k.to_vec());
                    Ok(got.len() < stop)
                })
                .unwrap();
                assert_eq!(got, want);
                // The estimate is within a few leaves' worth of the truth.
                let n = model.range::<[u8], _>((lb, hb)).count() as i64;
                let est = t.estimate_range(lb, hb).unwrap() as i64;
                assert!((est - n).abs() <= 600 + n / 4, "estimate {est} for {n}");
                assert_eq!(t.count(lb, hb).unwrap() as i64, n, "exact count");
            }
            let probe = model.iter().nth(rng.next() as usize % model.len()).unwrap();
            assert!(t.contains(probe).unwrap());
        }
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn bulk_load_builds_a_valid_tree_and_prefix_scans_work() {
        let d = tmp("bulk");
        let pool = Arc::new(BufferPool::new(256 * PAGE_SIZE, 4));
        let t = BTree::open(pool, &d.join("b.qix")).unwrap();
        let keys: Vec<Vec<u8>> = (0..200_000u32)
            .map(|i| {
                let mut k = format!("p{:04}", i / 100).into_bytes();
                k.extend_from_slice(&i.to_be_bytes());
                k
            })
            .collect();
        assert_eq!(t.bulk_load(&mut keys.clone().into_iter()).unwrap(), 200_000);
        assert!(t.verify().unwrap().is_empty(), "{:?}", t.verify().unwrap());
        let mut n = 0;
        t.scan_prefix(b"p0042", &mut |k| {
            assert!(k.starts_with(b"p0042"));
            n += 1;
            Ok(true)
        })
        .unwrap();
        assert_eq!(n, 100);
        // The bulk-built tree keeps accepting inserts and deletes.
        assert!(t.insert(b"p0042zzzz").unwrap());
        assert!(!t.insert(&keys[7]).unwrap());
        assert!(t.delete(&keys[8]).unwrap());
        assert!(t.verify().unwrap().is_empty());
        assert_eq!(t.len().unwrap(), 200_000);
        let e = t
            .bulk_load(&mut vec![b"x".to_vec()].into_iter())
            .unwrap_err();
        assert_eq!(e.code, 1030);
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn oversized_keys_and_prefix_bounds() {
        let d = tmp("limits");
        let pool = Arc::new(BufferPool::new(64 * PAGE_SIZE, 1));
        let t = BTree::open(pool, &d.join("l.qix")).unwrap();
        assert_eq!(t.insert(&vec![1u8; MAX_KEY + 1]).unwrap_err().code, 1071);
        assert_eq!(prefix_end(b"ab"), Some(b"ac".to_vec()));
        assert_eq!(prefix_end(&[1, 0xFF]), Some(vec![2]));
        assert_eq!(prefix_end(&[0xFF, 0xFF]), None);
        std::fs::remove_dir_all(d).unwrap();
    }

    #[test]
    fn readers_run_while_a_writer_inserts() {
        let d = tmp("concurrent");
        let pool = Arc::new(BufferPool::new(128 * PAGE_SIZE, 8));
        let t = Arc::new(BTree::open(pool, &d.join("c.qix")).unwrap());
        for i in 0..5000u32 {
            t.insert(&(i * 2).to_be_bytes()).unwrap();
        }
        let writer = {
            let t = t.clone();
            std::thread::spawn(move || {
                for i in 0..5000u32 {
                    t.insert(&(i * 2 + 1).to_be_bytes()).unwrap();
                }
            })
        };
        let readers: Vec<_> = (0..2)
            .map(|_| {
                let t = t.clone();
                std::thread::spawn(move || {
                    for _ in 0..50 {
                        let mut evens = 0;
                        let mut last: Option<Vec<u8>> = None;
                        t.scan(Bound::Unbounded, Bound::Unbounded, &mut |k| {
                            if let Some(l) = &last {
                                assert!(l.as_slice() < k);
                            }
                            last = Some(k.to_vec());
                            evens += (u32::from_be_bytes(k.try_into().unwrap()) % 2 == 0) as u32;
                            Ok(true)
                        })
                        .unwrap();
                        assert_eq!(evens, 5000);
                    }
                })
            })
            .collect();
        writer.join().unwrap();
        for r in readers {
            r.join().unwrap();
        }
        assert_eq!(t.len().unwrap(), 10_000);
        assert!(t.verify().unwrap().is_empty());
        std::fs::remove_dir_all(d).unwrap();
    }
}
