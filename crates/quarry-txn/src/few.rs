//! [`Few`]: a list that nearly always holds one item, kept inline then (a lock's holders, a
//! row's versions: millions of each during a big statement, each a heap allocation as a
//! `Vec`).

pub(crate) enum Few<T> {
    One(T),
    /// Empty, or two and more.
    Many(Vec<T>),
}

impl<T> Default for Few<T> {
    fn default() -> Few<T> {
        Few::Many(Vec::new())
    }
}

impl<T> Few<T> {
    pub(crate) fn as_slice(&self) -> &[T] {
        match self {
            Few::One(x) => std::slice::from_ref(x),
            Few::Many(v) => v,
        }
    }

    pub(crate) fn as_mut_slice(&mut self) -> &mut [T] {
        match self {
            Few::One(x) => std::slice::from_mut(x),
            Few::Many(v) => v,
        }
    }

    pub(crate) fn push(&mut self, x: T) {
        match std::mem::take(self) {
            Few::Many(v) if v.is_empty() => *self = Few::One(x),
            Few::Many(mut v) => {
                v.push(x);
                *self = Few::Many(v);
            }
            Few::One(first) => *self = Few::Many(vec![first, x]),
        }
    }

    /// Keep the items `keep` says; whether any is left.
    pub(crate) fn retain(&mut self, keep: impl Fn(&T) -> bool) -> bool {
        match self {
            Few::One(x) if !keep(x) => *self = Few::default(),
            Few::One(_) => {}
            Few::Many(v) => v.retain(|x| keep(x)),
        }
        !self.as_slice().is_empty()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn one_item_is_inline_and_the_list_grows_and_shrinks() {
        let mut f: Few<u64> = Few::default();
        assert!(f.as_slice().is_empty());
        f.push(1);
        assert!(matches!(f, Few::One(1)));
        f.push(2);
        f.push(3);
        assert_eq!(f.as_slice(), [1, 2, 3]);
        f.as_mut_slice()[0] = 7;
        assert!(f.retain(|&x| x != 2));
        assert_eq!(f.as_slice(), [7, 3]);
        assert!(!f.retain(|_| false));
        f.push(9);
        assert!(!f.retain(|&x| x != 9));
        assert!(f.as_slice().is_empty());
    }
}
