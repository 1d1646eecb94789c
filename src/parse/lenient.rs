//! Fields read leniently (`#[serde(deserialize_with = …)]`): a field of a file's format
//! that readers can do without is read as absent when it has the wrong shape, instead of
//! failing the whole line or file it is in. `check` reports such a field; every reader
//! goes on without it.

use std::collections::BTreeMap;

use serde::de::DeserializeOwned;
use serde::{Deserialize, Deserializer};
use serde_json::Value;

/// The field as `T`, or None when it is not one.
pub fn option<'de, D: Deserializer<'de>, T: DeserializeOwned>(d: D) -> Result<Option<T>, D::Error> {
    let value = Value::deserialize(d)?;
    Ok(serde_json::from_value(value).ok())
}

/// The field as `T`, or `T`'s default when it is not one.
pub fn or_default<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(d: D) -> Result<T, D::Error> {
    Ok(option(d)?.unwrap_or_default())
}

/// An object of `T`s, each read on its own: a value that is not a `T` is read as `T`'s
/// default, so that one bad entry leaves the others (and its own name) readable. Anything
/// but an object is an empty map.
pub fn map<'de, D: Deserializer<'de>, T: DeserializeOwned + Default>(d: D) -> Result<BTreeMap<String, T>, D::Error> {
    let Value::Object(entries) = Value::deserialize(d)? else { return Ok(BTreeMap::new()) };
    Ok(entries.into_iter().map(|(k, v)| (k, serde_json::from_value(v).unwrap_or_default())).collect())
}

#[cfg(test)]
mod tests {
    use serde::Deserialize;

    #[derive(Debug, Default, PartialEq, Deserialize)]
    struct Item {
        #[serde(default, deserialize_with = "super::option")]
        name: Option<String>,
        #[serde(default, deserialize_with = "super::or_default")]
        count: u64,
    }

    #[derive(Debug, PartialEq, Deserialize)]
    struct Items {
        #[serde(default, deserialize_with = "super::map")]
        items: std::collections::BTreeMap<String, Item>,
    }

    #[test]
    fn a_field_of_the_wrong_shape_is_read_as_absent() {
        let read = |t: &str| serde_json::from_str::<Item>(t).unwrap();
        assert_eq!(read(r#"{"name": "a", "count": 2}"#), Item { name: Some("a".into()), count: 2 });
        assert_eq!(read(r#"{"name": 5, "count": "two"}"#), Item::default());
        let items: Items = serde_json::from_str(r#"{"items": {"a": {"count": 1}, "b": 7}}"#).unwrap();
        assert_eq!(items.items["a"].count, 1);
        assert_eq!(items.items["b"], Item::default());
        let items: Items = serde_json::from_str(r#"{"items": []}"#).unwrap();
        assert!(items.items.is_empty());
    }
}
