//! `runs.parquet`: every run of a sweep as one table row, for pandas,
//! polars and DuckDB (`pd.read_parquet("runs.parquet")`).
//!
//! Columns, in order: `point` (the grid point's index, INT64), `seed`
//! (INT64), one column per grid key (named by the key, e.g. `flows.0.cc`;
//! INT64, DOUBLE, BOOLEAN or UTF-8 string when all its values have that
//! type, else the values' labels as strings), then one nullable DOUBLE
//! column per numeric summary field, named by its JSON pointer
//! (`/flows/0/goodput_bps`) in the aggregate's key order (null where a run
//! lacks the field). One row group, uncompressed: the file depends only on
//! the runs, so two sweeps with the same seeds write identical bytes.

use crate::experiment::{spec::value_label, Aggregate, SweepOutcome};
use anyhow::Context;
use parquet::basic::{ConvertedType, Repetition, Type as PhysicalType};
use parquet::data_type::{BoolType, ByteArray, ByteArrayType, DoubleType, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;
use std::sync::Arc;

/// One column's values, one entry per run.
enum Column {
    Int(Vec<i64>),
    Double(Vec<Option<f64>>),
    Bool(Vec<bool>),
    Text(Vec<String>),
}

/// The grid key `k`'s column: its values' common type, else labels.
fn grid_column(outcome: &SweepOutcome, k: usize) -> Column {
    let seeds = outcome.spec.seeds as usize;
    let values: Vec<&toml::Value> = outcome
        .points
        .iter()
        .flat_map(|p| std::iter::repeat_n(&p.overrides[k].1, seeds))
        .collect();
    if let Some(v) = values
        .iter()
        .map(|v| v.as_integer())
        .collect::<Option<Vec<_>>>()
    {
        Column::Int(v)
    } else if let Some(v) = values
        .iter()
        .map(|v| v.as_float().or_else(|| v.as_integer().map(|i| i as f64)))
        .collect::<Option<Vec<_>>>()
    {
        Column::Double(v.into_iter().map(Some).collect())
    } else if let Some(v) = values
        .iter()
        .map(|v| v.as_bool())
        .collect::<Option<Vec<_>>>()
    {
        Column::Bool(v)
    } else {
        Column::Text(values.iter().map(|v| value_label(v)).collect())
    }
}

/// The runs of `outcome` as a Parquet file (bytes); `aggregate` gives
/// the numeric keys and their order. O(runs × keys).
pub fn runs_parquet(outcome: &SweepOutcome, aggregate: &Aggregate) -> anyhow::Result<Vec<u8>> {
    let mut columns: Vec<(String, Column)> = Vec::new();
    let mut point = Vec::new();
    let mut seed = Vec::new();
    for (p, runs) in outcome.points.iter().zip(&outcome.runs) {
        for i in 0..runs.len() {
            point.push(p.index as i64);
            seed.push(outcome.seed(i) as i64);
        }
    }
    columns.push(("point".into(), Column::Int(point)));
    columns.push(("seed".into(), Column::Int(seed)));
    for (k, (key, _)) in outcome.spec.grid.iter().enumerate() {
        columns.push((key.clone(), grid_column(outcome, k)));
    }
    for key in &aggregate.keys {
        let values = outcome
            .runs
            .iter()
            .flatten()
            .map(|s| s.pointer(key).and_then(serde_json::Value::as_f64))
            .collect();
        columns.push((key.clone(), Column::Double(values)));
    }
    let fields = columns
        .iter()
        .map(|(name, c)| {
            let (physical, repetition) = match c {
                Column::Int(_) => (PhysicalType::INT64, Repetition::REQUIRED),
                Column::Double(_) => (PhysicalType::DOUBLE, Repetition::OPTIONAL),
                Column::Bool(_) => (PhysicalType::BOOLEAN, Repetition::REQUIRED),
                Column::Text(_) => (PhysicalType::BYTE_ARRAY, Repetition::REQUIRED),
            };
            let mut b = Type::primitive_type_builder(name, physical).with_repetition(repetition);
            if matches!(c, Column::Text(_)) {
                b = b.with_converted_type(ConvertedType::UTF8);
            }
            Ok(Arc::new(b.build()?))
        })
        .collect::<anyhow::Result<Vec<_>>>()?;
    let schema = Arc::new(
        Type::group_type_builder("runs")
            .with_fields(fields)
            .build()?,
    );
    let props = Arc::new(
        WriterProperties::builder()
            .set_created_by("peregrine".into())
            .build(),
    );
    let mut out = Vec::new();
    let mut writer = SerializedFileWriter::new(&mut out, schema, props)?;
    let mut group = writer.next_row_group()?;
    let mut it = columns.iter();
    while let Some(mut col) = group.next_column()? {
        let (name, c) = it.next().context("parquet: more columns than values")?;
        match c {
            Column::Int(v) => col.typed::<Int64Type>().write_batch(v, None, None),
            Column::Bool(v) => col.typed::<BoolType>().write_batch(v, None, None),
            Column::Text(v) => {
                let bytes: Vec<ByteArray> = v.iter().map(|s| ByteArray::from(s.as_str())).collect();
                col.typed::<ByteArrayType>().write_batch(&bytes, None, None)
            }
            Column::Double(v) => {
                let present: Vec<f64> = v.iter().flatten().copied().collect();
                let levels: Vec<i16> = v.iter().map(|x| i16::from(x.is_some())).collect();
                col.typed::<DoubleType>()
                    .write_batch(&present, Some(&levels), None)
            }
        }
        .with_context(|| format!("parquet: cannot write column {name}"))?;
        col.close()?;
    }
    group.close()?;
    writer.close()?;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::experiment::{aggregate, run_sweep, SweepSpec};
    use parquet::file::reader::{FileReader, SerializedFileReader};
    use parquet::record::Field;
    use serde_json::json;

    #[test]
    fn one_row_per_run_with_grid_and_numeric_columns() {
        let base: toml::Value = toml::from_str("seed = 7\ncc = \"cubic\"\nrate = 10\n").unwrap();
        let spec = SweepSpec {
            grid: vec![
                ("cc".into(), vec!["cubic".into(), "bbr".into()]),
                ("rate".into(), vec![10.into(), 20.into()]),
            ],
            seeds: 2,
        };
        let outcome = run_sweep::<_, (), _>(&base, &spec, 1, &|_, _| {}, |d, seed| {
            let rate = d["rate"].as_integer().unwrap() as f64;
            Ok(if d["cc"].as_str() == Some("bbr") && seed == 8 {
                json!({ "goodput": rate + seed as f64, "name": "x" })
            } else {
                json!({ "goodput": rate + seed as f64, "delay": 1.5, "name": "x" })
            })
        })
        .unwrap();
        let agg = aggregate(&outcome);
        let bytes = runs_parquet(&outcome, &agg).unwrap();
        let again = runs_parquet(&outcome, &agg).unwrap();
        assert_eq!(bytes, again, "deterministic bytes");
        let reader = SerializedFileReader::new(bytes::Bytes::from(bytes)).unwrap();
        let names: Vec<String> = reader
            .metadata()
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        assert_eq!(names, ["point", "seed", "cc", "rate", "/goodput", "/delay"]);
        let rows: Vec<_> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| r.unwrap())
            .collect();
        assert_eq!(rows.len(), 8);
        let row5: Vec<Field> = rows[5].get_column_iter().map(|(_, f)| f.clone()).collect();
        assert_eq!(
            row5,
            [
                Field::Long(2),
                Field::Long(8),
                Field::Str("bbr".into()),
                Field::Long(10),
                Field::Double(18.0),
                Field::Null,
            ]
        );
        let row0: Vec<Field> = rows[0].get_column_iter().map(|(_, f)| f.clone()).collect();
        assert_eq!(row0[4..], [Field::Double(17.0), Field::Double(1.5)]);
    }
}
