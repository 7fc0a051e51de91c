//! [`SortedMap`]: the children of a compiled schema node, by property name.
//!
//! A `BTreeMap` allocates room for eleven entries per leaf even when it holds one, and
//! most schema objects have a handful of properties: with node-sized values that
//! room was most of a compiled large CRD's memory. This map keeps exactly its entries,
//! sorted by key in one vector, with the reads `BTreeMap` offered (lookup by binary
//! search, iteration in key order).

use std::ops::Index;

/// Entries sorted by key, each key once.
#[derive(Clone, Debug, PartialEq)]
pub struct SortedMap<V> {
    entries: Vec<(String, V)>,
}

impl<V> Default for SortedMap<V> {
    fn default() -> Self {
        SortedMap {
            entries: Vec::new(),
        }
    }
}

impl<V> SortedMap<V> {
    /// An empty map.
    pub fn new() -> Self {
        Self::default()
    }

    fn position(&self, key: &str) -> Result<usize, usize> {
        self.entries.binary_search_by(|(k, _)| k.as_str().cmp(key))
    }

    /// The value of `key`.
    pub fn get(&self, key: &str) -> Option<&V> {
        self.position(key).ok().map(|i| &self.entries[i].1)
    }

    /// The value of `key`, to change.
    pub fn get_mut(&mut self, key: &str) -> Option<&mut V> {
        match self.position(key) {
            Ok(i) => Some(&mut self.entries[i].1),
            Err(_) => None,
        }
    }

    /// Whether `key` has a value.
    pub fn contains_key(&self, key: &str) -> bool {
        self.position(key).is_ok()
    }

    /// Sets `key` to `value`; the value it had, if any.
    pub fn insert(&mut self, key: String, value: V) -> Option<V> {
        match self.position(&key) {
            Ok(i) => Some(std::mem::replace(&mut self.entries[i].1, value)),
            Err(i) => {
                self.entries.insert(i, (key, value));
                None
            }
        }
    }

    /// The entries in key order.
    pub fn iter(&self) -> Iter<'_, V> {
        self.entries.iter().map(|(k, v)| (k, v))
    }

    /// The keys in order.
    pub fn keys(&self) -> impl Iterator<Item = &String> {
        self.entries.iter().map(|(k, _)| k)
    }

    /// The values in key order.
    pub fn values(&self) -> impl Iterator<Item = &V> {
        self.entries.iter().map(|(_, v)| v)
    }

    /// The values in key order, to change.
    pub fn values_mut(&mut self) -> impl Iterator<Item = &mut V> {
        self.entries.iter_mut().map(|(_, v)| v)
    }

    /// How many entries.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether there are none.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// [`SortedMap::iter`]'s iterator.
pub type Iter<'a, V> =
    std::iter::Map<std::slice::Iter<'a, (String, V)>, fn(&'a (String, V)) -> (&'a String, &'a V)>;

impl<V> FromIterator<(String, V)> for SortedMap<V> {
    /// As a `BTreeMap` collects: a later entry of a key replaces an earlier one.
    fn from_iter<I: IntoIterator<Item = (String, V)>>(iter: I) -> Self {
        let mut entries: Vec<(String, V)> = iter.into_iter().collect();
        // Stable: among equal keys the last one written stays last, and is kept.
        entries.sort_by(|a, b| a.0.cmp(&b.0));
        let mut kept: Vec<(String, V)> = Vec::with_capacity(entries.len());
        for entry in entries {
            match kept.last_mut() {
                Some(last) if last.0 == entry.0 => *last = entry,
                _ => kept.push(entry),
            }
        }
        kept.shrink_to_fit();
        SortedMap { entries: kept }
    }
}

impl<'a, V> IntoIterator for &'a SortedMap<V> {
    type Item = (&'a String, &'a V);
    type IntoIter = Iter<'a, V>;
    fn into_iter(self) -> Iter<'a, V> {
        self.iter()
    }
}

impl<V> Index<&str> for SortedMap<V> {
    type Output = V;
    fn index(&self, key: &str) -> &V {
        match self.get(key) {
            Some(v) => v,
            None => panic!("no entry {key:?} in the map"),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reads_like_a_btree_map() {
        let map: SortedMap<u32> = [("b", 1), ("a", 2), ("c", 3), ("a", 4)]
            .into_iter()
            .map(|(k, v)| (k.to_string(), v))
            .collect();
        let btree: std::collections::BTreeMap<String, u32> =
            [("b", 1), ("a", 2), ("c", 3), ("a", 4)]
                .into_iter()
                .map(|(k, v)| (k.to_string(), v))
                .collect();
        assert!(map.iter().eq(btree.iter()));
        assert_eq!(map.get("a"), Some(&4));
        assert_eq!(map.get("z"), None);
        assert_eq!(map["c"], 3);
        assert_eq!(map.len(), 3);
        let mut map = map;
        assert_eq!(map.insert("aa".into(), 5), None);
        assert_eq!(map.insert("b".into(), 6), Some(1));
        assert_eq!(
            map.keys().map(String::as_str).collect::<Vec<_>>(),
            ["a", "aa", "b", "c"]
        );
        assert!(map.contains_key("aa") && !map.contains_key("d"));
    }
}
