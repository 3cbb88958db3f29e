//! [`Keyed`]: an ordered list of (name, value) that serializes as a JSON
//! object in its own order — the shape of the nested tables of every
//! `summary.json` (controllers, schedulers, loads, …) whose key order is
//! part of the format.

use serde::de::{Deserialize, Deserializer, MapAccess, Visitor};
use serde::ser::{Serialize, SerializeMap, Serializer};
use std::fmt;
use std::marker::PhantomData;

/// Named values in a fixed order; a JSON object when serialized.
#[derive(Debug, Clone, PartialEq, Default)]
pub struct Keyed<T>(pub Vec<(String, T)>);

impl<T> Keyed<T> {
    /// An empty table.
    pub fn new() -> Keyed<T> {
        Keyed(Vec::new())
    }

    /// Append `value` under `key`. O(1) amortised.
    pub fn push(&mut self, key: impl Into<String>, value: T) {
        self.0.push((key.into(), value));
    }

    /// The value under `key`, if any. O(n).
    pub fn get(&self, key: &str) -> Option<&T> {
        self.0.iter().find(|(k, _)| k == key).map(|(_, v)| v)
    }

    /// The keys, in order.
    pub fn keys(&self) -> impl Iterator<Item = &str> {
        self.0.iter().map(|(k, _)| k.as_str())
    }

    /// The entries, in order.
    pub fn iter(&self) -> impl Iterator<Item = (&str, &T)> {
        self.0.iter().map(|(k, v)| (k.as_str(), v))
    }
}

impl<T: Serialize> Serialize for Keyed<T> {
    fn serialize<S: Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        let mut m = s.serialize_map(Some(self.0.len()))?;
        for (k, v) in &self.0 {
            m.serialize_entry(k, v)?;
        }
        m.end()
    }
}

impl<'de, T: Deserialize<'de>> Deserialize<'de> for Keyed<T> {
    fn deserialize<D: Deserializer<'de>>(d: D) -> Result<Keyed<T>, D::Error> {
        struct V<T>(PhantomData<T>);
        impl<'de, T: Deserialize<'de>> Visitor<'de> for V<T> {
            type Value = Keyed<T>;
            fn expecting(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
                f.write_str("an object")
            }
            fn visit_map<A: MapAccess<'de>>(self, mut a: A) -> Result<Keyed<T>, A::Error> {
                let mut out = Vec::new();
                while let Some((k, v)) = a.next_entry::<String, T>()? {
                    out.push((k, v));
                }
                Ok(Keyed(out))
            }
        }
        d.deserialize_map(V(PhantomData))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn keeps_its_order_both_ways() {
        let mut k = Keyed::new();
        k.push("wfq", 1.5);
        k.push("abs", 2.0);
        let text = serde_json::to_string(&k).expect("serializes");
        assert_eq!(text, r#"{"wfq":1.5,"abs":2.0}"#);
        let back: Keyed<f64> = serde_json::from_str(&text).expect("deserializes");
        assert_eq!(back, k);
        assert_eq!(back.get("abs"), Some(&2.0));
        assert!(serde_json::from_str::<Keyed<f64>>("[1]").is_err());
    }
}
