//! The 16 KiB page and its slotted layout: a header, an array of 2-byte cell offsets
//! growing up, and cells growing down from the end of the page.
//!
//! ```text
//! 0..4    crc32c of bytes 4..PAGE_SIZE (written when the page goes to disk)
//! 4..12   LSN of the last change (the log of the durability issue fills it)
//! 12..16  page number (a misdirected write is caught on read)
//! 16      kind: 0 free, 1 leaf, 2 internal, 3 meta
//! 17      level (0 = leaf)
//! 18..20  number of cells
//! 20..22  lowest cell offset (cells occupy cell_start..PAGE_SIZE)
//! 22..26  leaf: right sibling page (0 = none); internal: leftmost child
//! 26..28  bytes of dead cells inside the cell area (reclaimed by compaction)
//! 28..32  reserved
//! 32..    cell offsets, u16 each, in key order
//! ```
//! Leaf cell: `len u16, key`. Internal cell: `child u32, len u16, key` — the child holds
//! the keys from this cell's key up to the next cell's.

pub const PAGE_SIZE: usize = 16 * 1024;
pub const HEADER: usize = 32;
/// The largest key a page accepts: at least four cells fit in any page.
pub const MAX_KEY: usize = 3072 + 16;

pub const KIND_FREE: u8 = 0;
pub const KIND_LEAF: u8 = 1;
pub const KIND_INTERNAL: u8 = 2;
pub const KIND_META: u8 = 3;

fn get16(p: &[u8], at: usize) -> usize {
    u16::from_le_bytes([p[at], p[at + 1]]) as usize
}

fn put16(p: &mut [u8], at: usize, v: usize) {
    p[at..at + 2].copy_from_slice(&(v as u16).to_le_bytes());
}

pub fn get32(p: &[u8], at: usize) -> u32 {
    u32::from_le_bytes(p[at..at + 4].try_into().unwrap())
}

pub fn put32(p: &mut [u8], at: usize, v: u32) {
    p[at..at + 4].copy_from_slice(&v.to_le_bytes());
}

/// Stamp the checksum before the page is written.
pub fn seal(p: &mut [u8], page_no: u32) {
    put32(p, 12, page_no);
    let crc = crc32c::crc32c(&p[4..]);
    put32(p, 0, crc);
}

/// Whether a page read from disk is intact and is the page that was asked for. An
/// all-zero page (allocated, never written) counts as intact.
pub fn verify(p: &[u8], page_no: u32) -> bool {
    if p.iter().all(|b| *b == 0) {
        return true;
    }
    get32(p, 0) == crc32c::crc32c(&p[4..]) && get32(p, 12) == page_no
}

/// Whether a B-tree page's layout is sound: every cell slot points inside the cell area
/// and every cell lies inside the page. A page that passes its checksum can still be
/// malformed (written by a bug, or re-sealed by recovery after one); it must be an error,
/// never a slice out of bounds. Free and meta pages have no cells.
pub fn well_formed(p: &[u8]) -> bool {
    let kind = p[16];
    if kind != KIND_LEAF && kind != KIND_INTERNAL {
        return kind == KIND_FREE || kind == KIND_META;
    }
    let n = get16(p, 18);
    let start = get16(p, 20);
    if HEADER + 2 * n > start || start > PAGE_SIZE || (n > 0 && start == PAGE_SIZE) {
        return false;
    }
    let leaf = kind == KIND_LEAF;
    (0..n).all(|i| {
        let at = get16(p, HEADER + 2 * i);
        let len_at = at + if leaf { 0 } else { 4 };
        at >= start && len_at + 2 <= PAGE_SIZE && len_at + 2 + get16(p, len_at) <= PAGE_SIZE
    })
}

pub fn lsn(p: &[u8]) -> u64 {
    u64::from_le_bytes(p[4..12].try_into().unwrap())
}

pub fn set_lsn(p: &mut [u8], lsn: u64) {
    p[4..12].copy_from_slice(&lsn.to_le_bytes());
}

pub fn kind(p: &[u8]) -> u8 {
    p[16]
}

/// Read access to a B-tree node.
pub struct Node<'a>(pub &'a [u8]);

/// Write access to a B-tree node.
pub struct NodeMut<'a>(pub &'a mut [u8]);

impl<'a> Node<'a> {
    pub fn kind(&self) -> u8 {
        self.0[16]
    }

    pub fn is_leaf(&self) -> bool {
        self.0[16] == KIND_LEAF
    }

    pub fn level(&self) -> u8 {
        self.0[17]
    }

    pub fn len(&self) -> usize {
        get16(self.0, 18)
    }

    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn cell_start(&self) -> usize {
        get16(self.0, 20)
    }

    /// Right sibling of a leaf (0 = none).
    pub fn next(&self) -> u32 {
        get32(self.0, 22)
    }

    /// Leftmost child of an internal node.
    pub fn leftmost(&self) -> u32 {
        get32(self.0, 22)
    }

    fn dead(&self) -> usize {
        get16(self.0, 26)
    }

    fn cell(&self, i: usize) -> usize {
        get16(self.0, HEADER + 2 * i)
    }

    pub fn key(&self, i: usize) -> &'a [u8] {
        let at = self.cell(i) + if self.is_leaf() { 0 } else { 4 };
        let len = get16(self.0, at);
        &self.0[at + 2..at + 2 + len]
    }

    /// Child to the right of key `i` (internal nodes).
    pub fn child(&self, i: usize) -> u32 {
        get32(self.0, self.cell(i))
    }

    /// The child covering `key`: the last cell whose key is <= `key`, else the leftmost.
    pub fn child_for(&self, key: &[u8]) -> (usize, u32) {
        match self.search(key) {
            Ok(i) => (i + 1, self.child(i)),
            Err(0) => (0, self.leftmost()),
            Err(i) => (i, self.child(i - 1)),
        }
    }

    /// Child number `slot` in the order leftmost, cell 0, cell 1, …
    pub fn child_at(&self, slot: usize) -> u32 {
        if slot == 0 {
            self.leftmost()
        } else {
            self.child(slot - 1)
        }
    }

    /// Binary search over the cell keys.
    pub fn search(&self, key: &[u8]) -> Result<usize, usize> {
        let (mut lo, mut hi) = (0, self.len());
        while lo < hi {
            let mid = (lo + hi) / 2;
            match self.key(mid).cmp(key) {
                std::cmp::Ordering::Less => lo = mid + 1,
                std::cmp::Ordering::Greater => hi = mid,
                std::cmp::Ordering::Equal => return Ok(mid),
            }
        }
        Err(lo)
    }

    /// Bytes a new cell could use after compaction.
    pub fn free_space(&self) -> usize {
        self.cell_start() + self.dead() - (HEADER + 2 * self.len())
    }

    fn cell_size(&self, i: usize) -> usize {
        let at = self.cell(i);
        if self.is_leaf() {
            2 + get16(self.0, at)
        } else {
            6 + get16(self.0, at + 4)
        }
    }

    /// Bytes the cells use (without their slots).
    pub fn used(&self) -> usize {
        (0..self.len()).map(|i| self.cell_size(i)).sum()
    }

    /// Where to split so both halves hold about the same bytes (never an empty half).
    pub fn split_point(&self) -> usize {
        let half = self.used() / 2;
        let mut acc = 0;
        for i in 0..self.len() {
            acc += self.cell_size(i) + 2;
            if acc >= half {
                return (i + 1).clamp(1, self.len() - 1);
            }
        }
        self.len() / 2
    }
}

pub fn cell_len(leaf: bool, key: &[u8]) -> usize {
    key.len() + if leaf { 2 } else { 6 }
}

impl NodeMut<'_> {
    pub fn view(&self) -> Node<'_> {
        Node(self.0)
    }

    /// Format as an empty node.
    pub fn init(&mut self, kind: u8, level: u8) {
        self.0[16..].fill(0);
        self.0[16] = kind;
        self.0[17] = level;
        put16(self.0, 20, PAGE_SIZE);
    }

    pub fn set_next(&mut self, page: u32) {
        put32(self.0, 22, page);
    }

    pub fn set_leftmost(&mut self, page: u32) {
        put32(self.0, 22, page);
    }

    /// Point cell `i` of an internal node at another child.
    pub fn set_child(&mut self, i: usize, page: u32) {
        let at = get16(self.0, HEADER + 2 * i);
        put32(self.0, at, page);
    }

    /// Rewrite the cell area without dead cells.
    fn compact(&mut self) {
        let n = self.view().len();
        let cells: Vec<Vec<u8>> = (0..n)
            .map(|i| {
                let v = self.view();
                let at = v.cell(i);
                self.0[at..at + v.cell_size(i)].to_vec()
            })
            .collect();
        let mut end = PAGE_SIZE;
        for (i, c) in cells.iter().enumerate() {
            end -= c.len();
            self.0[end..end + c.len()].copy_from_slice(c);
            put16(self.0, HEADER + 2 * i, end);
        }
        put16(self.0, 20, end);
        put16(self.0, 26, 0);
    }

    /// Insert a cell at position `i`; false when the page has no room.
    pub fn insert(&mut self, i: usize, key: &[u8], child: Option<u32>) -> bool {
        let v = self.view();
        let leaf = v.is_leaf();
        let need = cell_len(leaf, key) + 2;
        if v.free_space() < need {
            return false;
        }
        let n = v.len();
        if v.cell_start() < HEADER + 2 * (n + 1) + cell_len(leaf, key) {
            self.compact();
        }
        let start = get16(self.0, 20) - cell_len(leaf, key);
        let mut at = start;
        if !leaf {
            put32(self.0, at, child.unwrap_or(0));
            at += 4;
        }
        put16(self.0, at, key.len());
        self.0[at + 2..at + 2 + key.len()].copy_from_slice(key);
        put16(self.0, 20, start);
        let slots = HEADER + 2 * i;
        self.0.copy_within(slots..HEADER + 2 * n, slots + 2);
        put16(self.0, slots, start);
        put16(self.0, 18, n + 1);
        true
    }

    /// Overwrite the key of leaf cell `i` with one of the same length that keeps the
    /// order.
    pub fn set_leaf_key(&mut self, i: usize, key: &[u8]) {
        let at = self.view().cell(i);
        debug_assert!(self.view().is_leaf() && get16(self.0, at) == key.len());
        self.0[at + 2..at + 2 + key.len()].copy_from_slice(key);
    }

    /// Remove cell `i`; its bytes become dead space.
    pub fn remove(&mut self, i: usize) {
        let v = self.view();
        let n = v.len();
        let size = v.cell_size(i);
        let at = v.cell(i);
        let dead = v.dead();
        if at == v.cell_start() {
            put16(self.0, 20, at + size);
        } else {
            put16(self.0, 26, dead + size);
        }
        let slots = HEADER + 2 * i;
        self.0.copy_within(slots + 2..HEADER + 2 * n, slots);
        put16(self.0, 18, n - 1);
    }

    /// Move cells `from..` to the empty node `right` (same kind).
    pub fn split_into(&mut self, from: usize, right: &mut NodeMut<'_>) {
        let n = self.view().len();
        for i in from..n {
            let v = self.view();
            let key = v.key(i).to_vec();
            let child = (!v.is_leaf()).then(|| v.child(i));
            let at = right.view().len();
            assert!(right.insert(at, &key, child), "split half must fit");
        }
        for i in (from..n).rev() {
            self.remove(i);
        }
        self.compact();
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn cells_stay_sorted_and_space_is_reclaimed() {
        let mut buf = vec![0u8; PAGE_SIZE];
        let mut n = NodeMut(&mut buf);
        n.init(KIND_LEAF, 0);
        let keys: Vec<Vec<u8>> = (0..200u32)
            .map(|i| format!("key{:05}", i * 7 % 200).into_bytes())
            .collect();
        for k in &keys {
            let pos = n.view().search(k).unwrap_err();
            assert!(n.insert(pos, k, None));
        }
        let v = n.view();
        assert_eq!(v.len(), 200);
        for i in 1..200 {
            assert!(v.key(i - 1) < v.key(i));
        }
        let before = n.view().free_space();
        for _ in 0..100 {
            n.remove(0);
        }
        assert!(n.view().free_space() > before);
        // Fill until full; compaction must make the dead space usable.
        let mut i = 0u32;
        while n.insert(n.view().len(), format!("zz{i:08}").as_bytes(), None) {
            i += 1;
        }
        assert!(n.view().free_space() < 14);
        let mut sorted: Vec<Vec<u8>> = (0..n.view().len())
            .map(|i| n.view().key(i).to_vec())
            .collect();
        let copy = sorted.clone();
        sorted.sort();
        assert_eq!(sorted, copy);
    }

    #[test]
    fn checksum_catches_a_flipped_bit_and_a_misplaced_page() {
        let mut buf = vec![0u8; PAGE_SIZE];
        assert!(verify(&buf, 9), "a never-written page is fine");
        NodeMut(&mut buf).init(KIND_LEAF, 0);
        seal(&mut buf, 9);
        assert!(verify(&buf, 9));
        assert!(!verify(&buf, 10));
        buf[1000] ^= 4;
        assert!(!verify(&buf, 9));
    }
}
