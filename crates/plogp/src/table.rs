//! Long-format tables written as CSV and as Parquet (readable by pandas and polars).

use std::fmt::Write as _;
use std::sync::Arc;

use parquet::basic::{Compression, LogicalType, Repetition, Type as PhysicalType};
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
use parquet::file::properties::WriterProperties;
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

/// One column of a table.
#[derive(Debug, Clone, PartialEq)]
pub enum Column {
    /// 32-bit integers.
    Int32(Vec<i32>),
    /// 64-bit integers.
    Int64(Vec<i64>),
    /// Floating-point numbers.
    Float64(Vec<f64>),
    /// UTF-8 text.
    Text(Vec<String>),
}

impl Column {
    fn len(&self) -> usize {
        match self {
            Column::Int32(v) => v.len(),
            Column::Int64(v) => v.len(),
            Column::Float64(v) => v.len(),
            Column::Text(v) => v.len(),
        }
    }

    fn write_cell(&self, row: usize, out: &mut String) {
        let _ = match self {
            Column::Int32(v) => write!(out, "{}", v[row]),
            Column::Int64(v) => write!(out, "{}", v[row]),
            Column::Float64(v) => write!(out, "{}", v[row]),
            Column::Text(v) => write!(out, "{}", lgate_matrix::csv_field(&v[row])),
        };
    }
}

/// A table of named columns of equal length.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Table {
    columns: Vec<(String, Column)>,
}

impl Table {
    /// An empty table.
    pub fn new() -> Self {
        Self::default()
    }

    /// Adds a column; every column must have as many rows as the first.
    pub fn with(mut self, name: &str, column: Column) -> Self {
        if let Some((_, first)) = self.columns.first() {
            assert_eq!(
                first.len(),
                column.len(),
                "column {name} has another length"
            );
        }
        self.columns.push((name.to_string(), column));
        self
    }

    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |(_, c)| c.len())
    }

    /// The table as CSV with a header line.
    pub fn to_csv(&self) -> String {
        let mut out = String::new();
        let names: Vec<&str> = self.columns.iter().map(|(n, _)| n.as_str()).collect();
        out.push_str(&names.join(","));
        out.push('\n');
        for row in 0..self.rows() {
            for (k, (_, c)) in self.columns.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                c.write_cell(row, &mut out);
            }
            out.push('\n');
        }
        out
    }

    /// The table as a Snappy-compressed Parquet file in one row group.
    pub fn to_parquet(&self) -> Result<Vec<u8>, parquet::errors::ParquetError> {
        let fields = self
            .columns
            .iter()
            .map(|(name, c)| {
                let (physical, logical) = match c {
                    Column::Int32(_) => (PhysicalType::INT32, None),
                    Column::Int64(_) => (PhysicalType::INT64, None),
                    Column::Float64(_) => (PhysicalType::DOUBLE, None),
                    Column::Text(_) => (PhysicalType::BYTE_ARRAY, Some(LogicalType::String)),
                };
                Type::primitive_type_builder(name, physical)
                    .with_repetition(Repetition::REQUIRED)
                    .with_logical_type(logical)
                    .build()
                    .map(Arc::new)
            })
            .collect::<Result<Vec<_>, _>>()?;
        let schema = Arc::new(
            Type::group_type_builder("schema")
                .with_fields(fields)
                .build()?,
        );
        let props = Arc::new(
            WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .set_created_by(format!("lgate-plogp {}", env!("CARGO_PKG_VERSION")))
                .build(),
        );
        let mut writer = SerializedFileWriter::new(Vec::new(), schema, props)?;
        let mut group = writer.next_row_group()?;
        let mut k = 0;
        while let Some(mut col) = group.next_column()? {
            match &self.columns[k].1 {
                Column::Int32(v) => {
                    col.typed::<Int32Type>().write_batch(v, None, None)?;
                }
                Column::Int64(v) => {
                    col.typed::<Int64Type>().write_batch(v, None, None)?;
                }
                Column::Float64(v) => {
                    col.typed::<DoubleType>().write_batch(v, None, None)?;
                }
                Column::Text(v) => {
                    let bytes: Vec<ByteArray> =
                        v.iter().map(|s| ByteArray::from(s.as_str())).collect();
                    col.typed::<ByteArrayType>()
                        .write_batch(&bytes, None, None)?;
                }
            }
            col.close()?;
            k += 1;
        }
        group.close()?;
        writer.into_inner()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use parquet::file::reader::{FileReader, SerializedFileReader};

    fn sample() -> Table {
        Table::new()
            .with("i", Column::Int32(vec![0, 1]))
            .with("size_bytes", Column::Int64(vec![0, 1 << 20]))
            .with("parameter", Column::Text(vec!["rtt".into(), "a,b".into()]))
            .with("median_us", Column::Float64(vec![1.5, 2.25]))
    }

    #[test]
    fn csv_has_a_header_and_quotes() {
        assert_eq!(
            sample().to_csv(),
            "i,size_bytes,parameter,median_us\n0,0,rtt,1.5\n1,1048576,\"a,b\",2.25\n"
        );
    }

    #[test]
    fn parquet_reads_back() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("t.parquet");
        std::fs::write(&path, sample().to_parquet().unwrap()).unwrap();
        let reader = SerializedFileReader::new(std::fs::File::open(&path).unwrap()).unwrap();
        let meta = reader.metadata();
        assert_eq!(meta.file_metadata().num_rows(), 2);
        let names: Vec<String> = meta
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        assert_eq!(names, ["i", "size_bytes", "parameter", "median_us"]);
        let rows: Vec<String> = reader
            .get_row_iter(None)
            .unwrap()
            .map(|r| r.unwrap().to_string())
            .collect();
        assert!(
            rows[1].contains("a,b") && rows[1].contains("2.25"),
            "{rows:?}"
        );
    }
}
