//! What a sweep varies: a grid of scenario fields and a number of seeds.
//!
//! ## In a scenario document
//!
//! ```toml
//! [sweep]
//! seeds = 10                        # runs per grid point (default 1)
//! backend = "ray"                   # where the runs go: "local" (default) or "ray"
//! ray_address = "10.0.0.1:6379"     # the Ray cluster (backend "ray"; default: a local one)
//!
//! [sweep.grid]                      # field = the values to try, in order
//! "flows.0.cc" = ["cubic", "bbr"]   # quote a dotted key ...
//! duration = ["5s", "10s"]
//! links.bottleneck.loss = [0.0, 0.05]  # ... or let TOML nest it: same meaning
//! ```
//!
//! A grid key is the dotted path of
//! [`set_path`](peregrine_sim::scenario::overrides::set_path) (`flows.0.cc`:
//! element 0 of the `flows` array, its `cc` field). Unquoted dotted keys
//! make nested TOML tables; they are flattened back to dotted paths, so
//! both spellings above mean the same. Every grid entry must be a
//! non-empty array; its elements are the values tried, in order. Unknown
//! fields in `[sweep]` are errors (a typo would silently run one point).
//!
//! ## On the command line
//!
//! `--sweep key=v1,v2,…` (repeatable) and `--seeds N`. Each value is read
//! with [`parse_value`] (`5` is
//! an integer, `bbr` a string); commas inside brackets, braces or quotes
//! do not split (`--sweep sizes=[1,2],[4,8]` has two values).
//! [`SweepSpec::merge`] lays the command line over the document: a key
//! given on both keeps the document's position with the command line's
//! values, new keys go last, `--seeds` replaces `seeds`.
//!
//! ## Points
//!
//! [`SweepSpec::points`] is the cartesian product in declaration order,
//! the first key varying slowest (nested loops written in the order of the
//! keys): deterministic, and the order of every table and CSV built from
//! it. An empty grid is a single point labelled `base`.

use peregrine_sim::scenario::overrides::parse_value;
use thiserror::Error;
use toml::Value;

/// Most seeds a sweep may ask for per point (a typo guard, not a limit of
/// the runner).
pub const MAX_SEEDS: u32 = 1_000_000;

/// Why a sweep specification is invalid. Every variant names the field.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum SpecError {
    /// A field has the wrong TOML type.
    #[error("`{field}` must be {expected}, found {found}")]
    WrongType {
        /// The dotted field name (`sweep`, `sweep.grid`, `sweep.grid.duration`).
        field: String,
        /// What it must be.
        expected: &'static str,
        /// What was found (a TOML type name or the value).
        found: String,
    },
    /// A field `[sweep]` does not know.
    #[error(
        "`{field}` is not a sweep field (expected `seeds`, `grid`, `backend` or `ray_address`)"
    )]
    UnknownField {
        /// The dotted field name.
        field: String,
    },
    /// `seeds` out of range.
    #[error("`{field}` must be from 1 to {MAX_SEEDS}, found {found}")]
    SeedsOutOfRange {
        /// `sweep.seeds` or `--seeds`.
        field: String,
        /// The value given.
        found: i64,
    },
    /// A grid entry with no values.
    #[error("sweep key `{key}` has no values")]
    NoValues {
        /// The grid key.
        key: String,
    },
    /// A grid key with an empty segment (`a..b`, `=v`).
    #[error("sweep key `{key}` has an empty segment")]
    BadKey {
        /// The grid key.
        key: String,
    },
    /// The same key twice on the command line.
    #[error("sweep key `{key}` is given twice")]
    DuplicateKey {
        /// The grid key.
        key: String,
    },
    /// A `--sweep` text that is not `key=v1,v2,…`.
    #[error("`--sweep {text}` is not of the form key=v1,v2,…")]
    NotKeyValues {
        /// The text given.
        text: String,
    },
    /// An empty value in a `--sweep` list (`a=1,,2`).
    #[error("`--sweep {text}`: value {position} is empty")]
    EmptyValue {
        /// The text given.
        text: String,
        /// 1-based position of the empty value.
        position: usize,
    },
}

/// A sweep: the grid of field values and the number of seeds per point.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepSpec {
    /// (dotted key, values) in declaration order.
    pub grid: Vec<(String, Vec<Value>)>,
    /// Runs per grid point, with seeds `base_seed + 0 .. base_seed + seeds`.
    pub seeds: u32,
}

impl Default for SweepSpec {
    fn default() -> Self {
        SweepSpec {
            grid: Vec::new(),
            seeds: 1,
        }
    }
}

/// One combination of grid values.
#[derive(Debug, Clone, PartialEq)]
pub struct SweepPoint {
    /// Position in [`SweepSpec::points`].
    pub index: usize,
    /// `key=value` pairs joined with `,` (`flows.0.cc=cubic,duration=5s`),
    /// or `base` for an empty grid.
    pub label: String,
    /// The overrides this point applies, in grid order.
    pub overrides: Vec<(String, Value)>,
}

impl SweepSpec {
    /// The `[sweep]` table of a scenario document, or `None` if it has none.
    pub fn from_document(doc: &Value) -> Result<Option<SweepSpec>, SpecError> {
        let Some(sweep) = doc.get("sweep") else {
            return Ok(None);
        };
        let table = sweep.as_table().ok_or_else(|| SpecError::WrongType {
            field: "sweep".into(),
            expected: "a table",
            found: sweep.type_str().into(),
        })?;
        let mut spec = SweepSpec::default();
        for (name, value) in table {
            match name.as_str() {
                "seeds" => spec.seeds = seeds_from(value, "sweep.seeds")?,
                "grid" => {
                    let grid = value.as_table().ok_or_else(|| SpecError::WrongType {
                        field: "sweep.grid".into(),
                        expected: "a table of key = [values]",
                        found: value.type_str().into(),
                    })?;
                    flatten_grid(grid, "", &mut spec.grid)?;
                }
                // Where the runs go, not what they are: read and checked
                // by the front end that runs the sweep
                // (`peregrine_lab::sweep_backend`).
                "backend" | "ray_address" => {}
                other => {
                    return Err(SpecError::UnknownField {
                        field: format!("sweep.{other}"),
                    })
                }
            }
        }
        Ok(Some(spec))
    }

    /// The command-line form: `--sweep key=v1,v2,…` texts and `--seeds N`.
    pub fn from_cli(sweeps: &[String], seeds: Option<u32>) -> Result<SweepSpec, SpecError> {
        let mut spec = SweepSpec::default();
        if let Some(n) = seeds {
            spec.seeds = check_seeds(i64::from(n), "--seeds")?;
        }
        for text in sweeps {
            let (key, raw) = text
                .split_once('=')
                .ok_or_else(|| SpecError::NotKeyValues { text: text.clone() })?;
            let key = key.trim();
            check_key(key)?;
            if spec.grid.iter().any(|(k, _)| k == key) {
                return Err(SpecError::DuplicateKey { key: key.into() });
            }
            let mut values = Vec::new();
            for (i, part) in split_values(raw).into_iter().enumerate() {
                let part = part.trim();
                if part.is_empty() {
                    return Err(SpecError::EmptyValue {
                        text: text.clone(),
                        position: i + 1,
                    });
                }
                values.push(parse_value(part));
            }
            spec.grid.push((key.to_string(), values));
        }
        Ok(spec)
    }

    /// `self` (from the document) with `cli` laid over it: a key in both
    /// keeps its place here and takes `cli`'s values; new keys go last;
    /// `cli_seeds` (if given) replaces the seed count.
    pub fn merge(mut self, cli: SweepSpec, cli_seeds: Option<u32>) -> SweepSpec {
        for (key, values) in cli.grid {
            match self.grid.iter_mut().find(|(k, _)| *k == key) {
                Some(slot) => slot.1 = values,
                None => self.grid.push((key, values)),
            }
        }
        if cli_seeds.is_some() {
            self.seeds = cli.seeds;
        }
        self
    }

    /// Number of grid points (1 for an empty grid).
    pub fn point_count(&self) -> usize {
        self.grid.iter().map(|(_, v)| v.len()).product()
    }

    /// Total runs: points × seeds.
    pub fn run_count(&self) -> usize {
        self.point_count() * self.seeds as usize
    }

    /// The grid points: the cartesian product in declaration order, the
    /// first key varying slowest.
    pub fn points(&self) -> Vec<SweepPoint> {
        let total = self.point_count();
        let mut points = Vec::with_capacity(total);
        for index in 0..total {
            // Mixed-radix digits of `index`, most significant = first key.
            let mut rest = index;
            let mut picks = vec![0usize; self.grid.len()];
            for (slot, (_, values)) in picks.iter_mut().zip(&self.grid).rev() {
                *slot = rest % values.len();
                rest /= values.len();
            }
            let overrides: Vec<(String, Value)> = self
                .grid
                .iter()
                .zip(&picks)
                .map(|((k, values), &i)| (k.clone(), values[i].clone()))
                .collect();
            let label = if overrides.is_empty() {
                "base".to_string()
            } else {
                overrides
                    .iter()
                    .map(|(k, v)| format!("{k}={}", value_label(v)))
                    .collect::<Vec<_>>()
                    .join(",")
            };
            points.push(SweepPoint {
                index,
                label,
                overrides,
            });
        }
        points
    }
}

/// A value as it appears in a point label: strings bare, the rest as TOML.
pub fn value_label(v: &Value) -> String {
    match v {
        Value::String(s) => s.clone(),
        other => other.to_string(),
    }
}

fn seeds_from(value: &Value, field: &str) -> Result<u32, SpecError> {
    let n = value.as_integer().ok_or_else(|| SpecError::WrongType {
        field: field.into(),
        expected: "an integer",
        found: value.type_str().into(),
    })?;
    check_seeds(n, field)
}

fn check_seeds(n: i64, field: &str) -> Result<u32, SpecError> {
    if (1..=i64::from(MAX_SEEDS)).contains(&n) {
        // In 1..=MAX_SEEDS, which fits a u32.
        Ok(n as u32)
    } else {
        Err(SpecError::SeedsOutOfRange {
            field: field.into(),
            found: n,
        })
    }
}

fn check_key(key: &str) -> Result<(), SpecError> {
    if key.split('.').any(str::is_empty) {
        return Err(SpecError::BadKey { key: key.into() });
    }
    Ok(())
}

/// Flatten nested tables of `[sweep.grid]` into dotted keys; every leaf
/// must be a non-empty array.
fn flatten_grid(
    table: &toml::Table,
    prefix: &str,
    out: &mut Vec<(String, Vec<Value>)>,
) -> Result<(), SpecError> {
    for (name, value) in table {
        let key = if prefix.is_empty() {
            name.clone()
        } else {
            format!("{prefix}.{name}")
        };
        match value {
            Value::Table(inner) => flatten_grid(inner, &key, out)?,
            Value::Array(values) => {
                check_key(&key)?;
                if values.is_empty() {
                    return Err(SpecError::NoValues { key });
                }
                out.push((key, values.clone()));
            }
            other => {
                return Err(SpecError::WrongType {
                    field: format!("sweep.grid.{key}"),
                    expected: "an array of values",
                    found: other.type_str().into(),
                })
            }
        }
    }
    Ok(())
}

/// Split `a,b,[c,d],"e,f"` on the commas outside brackets, braces and quotes.
fn split_values(raw: &str) -> Vec<&str> {
    let mut parts = Vec::new();
    let mut depth = 0i32;
    let mut quote: Option<char> = None;
    let mut start = 0;
    for (i, c) in raw.char_indices() {
        match (quote, c) {
            (Some(q), c) if c == q => quote = None,
            (Some(_), _) => {}
            (None, '"' | '\'') => quote = Some(c),
            (None, '[' | '{') => depth += 1,
            (None, ']' | '}') => depth -= 1,
            (None, ',') if depth <= 0 => {
                parts.push(&raw[start..i]);
                start = i + 1;
            }
            _ => {}
        }
    }
    parts.push(&raw[start..]);
    parts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn doc(text: &str) -> Value {
        Value::Table(text.parse::<toml::Table>().expect("test TOML is valid"))
    }

    #[test]
    fn document_form_keeps_declaration_order_and_flattens_nested_keys() {
        let d = doc(concat!(
            "seed = 7\n[sweep]\nseeds = 3\n[sweep.grid]\n",
            "\"flows.0.cc\" = [\"cubic\", \"bbr\"]\n",
            "duration = [\"5s\", \"10s\", \"20s\"]\n",
            "links.bottleneck.loss = [0.0, 0.05]\n",
        ));
        let spec = SweepSpec::from_document(&d).unwrap().unwrap();
        assert_eq!(spec.seeds, 3);
        let keys: Vec<&str> = spec.grid.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["flows.0.cc", "duration", "links.bottleneck.loss"]);
        assert_eq!(spec.point_count(), 12);
        assert_eq!(spec.run_count(), 36);
        let points = spec.points();
        assert_eq!(
            points[0].label,
            "flows.0.cc=cubic,duration=5s,links.bottleneck.loss=0.0"
        );
        assert_eq!(
            points[1].label,
            "flows.0.cc=cubic,duration=5s,links.bottleneck.loss=0.05"
        );
        assert_eq!(
            points[2].label,
            "flows.0.cc=cubic,duration=10s,links.bottleneck.loss=0.0"
        );
        assert_eq!(
            points[11].label,
            "flows.0.cc=bbr,duration=20s,links.bottleneck.loss=0.05"
        );
        assert!(points.iter().enumerate().all(|(i, p)| p.index == i));
        assert_eq!(points[11].overrides[1].1, Value::String("20s".into()));
    }

    #[test]
    fn no_sweep_table_is_none_and_empty_grid_is_one_base_point() {
        assert_eq!(SweepSpec::from_document(&doc("seed = 1\n")).unwrap(), None);
        let spec = SweepSpec::from_document(&doc("[sweep]\nseeds = 4\n"))
            .unwrap()
            .unwrap();
        let points = spec.points();
        assert_eq!(points.len(), 1);
        assert_eq!(points[0].label, "base");
        assert!(points[0].overrides.is_empty());
        assert_eq!(spec.run_count(), 4);
    }

    #[test]
    fn document_errors_name_the_field() {
        let cases = [
            ("sweep = 3\n", "`sweep` must be a table"),
            ("[sweep]\nseed = 3\n", "`sweep.seed` is not a sweep field"),
            ("[sweep]\nseeds = 0\n", "`sweep.seeds` must be from 1"),
            (
                "[sweep]\nseeds = \"ten\"\n",
                "`sweep.seeds` must be an integer",
            ),
            ("[sweep]\ngrid = 1\n", "`sweep.grid` must be a table"),
            (
                "[sweep.grid]\nduration = \"5s\"\n",
                "`sweep.grid.duration` must be an array",
            ),
            (
                "[sweep.grid]\nduration = []\n",
                "sweep key `duration` has no values",
            ),
        ];
        for (text, want) in cases {
            let err = SweepSpec::from_document(&doc(text))
                .unwrap_err()
                .to_string();
            assert!(err.contains(want), "{text:?}: got {err:?}, want {want:?}");
        }
    }

    #[test]
    fn cli_form_parses_typed_values_and_respects_brackets() {
        let spec = SweepSpec::from_cli(
            &[
                "flows.0.cc=cubic,bbr".to_string(),
                "rate=1e6, 5e6".to_string(),
                "sizes=[1,2],[4,8]".to_string(),
                "name=\"a,b\",c".to_string(),
            ],
            Some(5),
        )
        .unwrap();
        assert_eq!(spec.seeds, 5);
        assert_eq!(
            spec.grid[0].1,
            [Value::String("cubic".into()), Value::String("bbr".into())]
        );
        assert_eq!(spec.grid[1].1, [Value::Float(1e6), Value::Float(5e6)]);
        assert_eq!(spec.grid[2].1.len(), 2);
        assert_eq!(spec.grid[2].1[1].as_array().map(Vec::len), Some(2));
        assert_eq!(
            spec.grid[3].1,
            [Value::String("a,b".into()), Value::String("c".into())]
        );
        assert_eq!(
            spec.points()[0].label,
            "flows.0.cc=cubic,rate=1000000.0,sizes=[1, 2],name=a,b"
        );
    }

    #[test]
    fn cli_errors_name_the_text() {
        let err = |v: &[&str], s| {
            SweepSpec::from_cli(&v.iter().map(|x| x.to_string()).collect::<Vec<_>>(), s)
                .unwrap_err()
        };
        assert_eq!(
            err(&["cc"], None),
            SpecError::NotKeyValues { text: "cc".into() }
        );
        assert_eq!(
            err(&["a..b=1"], None),
            SpecError::BadKey { key: "a..b".into() }
        );
        assert_eq!(err(&["=1"], None), SpecError::BadKey { key: "".into() });
        assert_eq!(
            err(&["a=1,,2"], None),
            SpecError::EmptyValue {
                text: "a=1,,2".into(),
                position: 2
            }
        );
        assert_eq!(
            err(&["a=1", "a=2"], None),
            SpecError::DuplicateKey { key: "a".into() }
        );
        assert!(matches!(
            err(&[], Some(0)),
            SpecError::SeedsOutOfRange { found: 0, .. }
        ));
    }

    #[test]
    fn merge_lays_cli_over_document() {
        let d = doc("[sweep]\nseeds = 10\n[sweep.grid]\na = [1, 2]\nb = [3]\n");
        let from_doc = SweepSpec::from_document(&d).unwrap().unwrap();
        let cli = SweepSpec::from_cli(&["b=4,5".into(), "c=x".into()], None).unwrap();
        let merged = from_doc.clone().merge(cli.clone(), None);
        assert_eq!(merged.seeds, 10);
        let keys: Vec<&str> = merged.grid.iter().map(|(k, _)| k.as_str()).collect();
        assert_eq!(keys, ["a", "b", "c"]);
        assert_eq!(merged.grid[1].1, [Value::Integer(4), Value::Integer(5)]);
        let cli = SweepSpec::from_cli(&[], Some(2)).unwrap();
        assert_eq!(from_doc.merge(cli, Some(2)).seeds, 2);
    }
}
