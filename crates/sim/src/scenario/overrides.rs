//! `key=value` overrides on a TOML document.
//!
//! A key is a dotted path: table keys by name, array elements by index
//! (`flows.0.cc`, `links.bottleneck.rate_bps`). The value is read as a TOML
//! value (`5`, `0.1`, `true`, `"text"`, `[1, 2]`, `{ a = 1 }`); a bare word
//! that is not valid TOML (`bbr`, `5s`) is taken as a string, which is what
//! a person typing `--set flows.0.cc=bbr` means. A missing table on the
//! path is created; a missing array element is an error (silently
//! appending would hide a typo in the index).

use thiserror::Error;
use toml::Value;

/// Why an override could not be applied.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum OverrideError {
    /// The text is not `key=value`.
    #[error("override `{0}` is not of the form key=value")]
    NotKeyValue(String),
    /// The key is empty or has an empty segment (`a..b`).
    #[error("override key `{0}` has an empty segment")]
    EmptySegment(String),
    /// An index past the end of an array.
    #[error("override key `{key}`: index {index} is out of range (the array has {len} elements)")]
    IndexOutOfRange {
        /// The whole key.
        key: String,
        /// The index asked for.
        index: usize,
        /// The array's length.
        len: usize,
    },
    /// A segment goes through a value that is neither a table nor an array.
    #[error("override key `{key}`: `{segment}` is inside a {found}, not a table or array")]
    NotAContainer {
        /// The whole key.
        key: String,
        /// The segment that could not be followed.
        segment: String,
        /// The TOML type found there.
        found: &'static str,
    },
}

/// Parse one `key=value` into its key and TOML value.
pub fn parse_assignment(text: &str) -> Result<(String, Value), OverrideError> {
    let (key, raw) = text
        .split_once('=')
        .ok_or_else(|| OverrideError::NotKeyValue(text.to_string()))?;
    Ok((key.trim().to_string(), parse_value(raw.trim())))
}

/// Read `raw` as a TOML value, or as a string if it is not one.
pub fn parse_value(raw: &str) -> Value {
    let doc = format!("v = {raw}");
    match doc.parse::<toml::Table>() {
        Ok(mut t) => t
            .remove("v")
            .unwrap_or_else(|| Value::String(raw.to_string())),
        Err(_) => Value::String(raw.to_string()),
    }
}

/// Set `key` (a dotted path) in `root` to `value`.
pub fn set_path(root: &mut Value, key: &str, value: Value) -> Result<(), OverrideError> {
    let segments: Vec<&str> = key.split('.').collect();
    if segments.iter().any(|s| s.is_empty()) {
        return Err(OverrideError::EmptySegment(key.to_string()));
    }
    let mut node = root;
    for (i, seg) in segments.iter().enumerate() {
        let last = i + 1 == segments.len();
        node = match node {
            Value::Table(t) => {
                if last {
                    t.insert(seg.to_string(), value);
                    return Ok(());
                }
                t.entry(seg.to_string())
                    .or_insert_with(|| Value::Table(toml::Table::new()))
            }
            Value::Array(a) => {
                let index: usize = seg.parse().map_err(|_| OverrideError::NotAContainer {
                    key: key.to_string(),
                    segment: seg.to_string(),
                    found: "array (the segment must be an index)",
                })?;
                let len = a.len();
                let slot = a.get_mut(index).ok_or(OverrideError::IndexOutOfRange {
                    key: key.to_string(),
                    index,
                    len,
                })?;
                if last {
                    *slot = value;
                    return Ok(());
                }
                slot
            }
            other => {
                return Err(OverrideError::NotAContainer {
                    key: key.to_string(),
                    segment: seg.to_string(),
                    found: other.type_str(),
                })
            }
        };
    }
    // `segments` is non-empty (split always yields one item) and the loop
    // returns on the last one.
    unreachable!("set_path: the loop returns on the last segment")
}

/// Apply `key=value` texts in order (later ones win).
pub fn apply_all<'a>(
    root: &mut Value,
    assignments: impl IntoIterator<Item = &'a str>,
) -> Result<(), OverrideError> {
    for a in assignments {
        let (key, value) = parse_assignment(a)?;
        set_path(root, &key, value)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Value {
        Value::Table(
            text.parse::<toml::Table>()
                .expect("test document is valid TOML"),
        )
    }

    #[test]
    fn sets_nested_keys_and_array_elements() {
        let mut d =
            doc("duration = \"100s\"\n[[flows]]\ncc = \"cubic\"\n[[flows]]\ncc = \"bbr\"\n");
        apply_all(
            &mut d,
            ["duration=5s", "flows.1.cc=newreno", "links.x.rate_bps=5e6"],
        )
        .unwrap();
        assert_eq!(d["duration"].as_str(), Some("5s"));
        assert_eq!(d["flows"][0]["cc"].as_str(), Some("cubic"));
        assert_eq!(d["flows"][1]["cc"].as_str(), Some("newreno"));
        assert_eq!(d["links"]["x"]["rate_bps"].as_float(), Some(5e6));
    }

    #[test]
    fn values_are_typed_when_they_are_toml() {
        assert_eq!(parse_value("5"), Value::Integer(5));
        assert_eq!(parse_value("0.25"), Value::Float(0.25));
        assert_eq!(parse_value("true"), Value::Boolean(true));
        assert_eq!(parse_value("\"5\""), Value::String("5".into()));
        assert_eq!(parse_value("bbr"), Value::String("bbr".into()));
        assert_eq!(parse_value("[1, 2]").as_array().map(|a| a.len()), Some(2));
    }

    #[test]
    fn bad_keys_are_named_errors() {
        let mut d = doc("[[flows]]\ncc = \"cubic\"\nx = 1\n");
        assert_eq!(
            apply_all(&mut d, ["flows.3.cc=bbr"]),
            Err(OverrideError::IndexOutOfRange {
                key: "flows.3.cc".into(),
                index: 3,
                len: 1
            })
        );
        assert!(matches!(
            apply_all(&mut d, ["flows.0.x.y=1"]),
            Err(OverrideError::NotAContainer { .. })
        ));
        assert!(matches!(
            apply_all(&mut d, ["flows..cc=1"]),
            Err(OverrideError::EmptySegment(_))
        ));
        assert!(matches!(
            apply_all(&mut d, ["novalue"]),
            Err(OverrideError::NotKeyValue(_))
        ));
        assert!(matches!(
            apply_all(&mut d, ["flows.cc=1"]),
            Err(OverrideError::NotAContainer { .. })
        ));
    }
}
