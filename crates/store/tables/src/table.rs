//! Long-format tables written as CSV and as Parquet (readable by pandas and polars), and read
//! back from Parquet a row group at a time, columns found by name.

use std::fmt::Write as _;
use std::io::Write;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use lgate_output::AtomicFile;
use parquet::basic::{Compression, LogicalType, Repetition, Type as PhysicalType};
use parquet::column::reader::ColumnReader;
use parquet::data_type::{ByteArray, ByteArrayType, DoubleType, Int32Type, Int64Type};
use parquet::errors::ParquetError;
use parquet::file::properties::WriterProperties;
use parquet::file::reader::{FileReader, RowGroupReader, SerializedFileReader};
use parquet::file::writer::SerializedFileWriter;
use parquet::schema::types::Type;

use lgate_rundir::{io_error, RunDirError};

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
    /// UTF-8 text from a small fixed vocabulary, such as parameter names.
    Symbol(Vec<&'static str>),
}

impl Column {
    fn len(&self) -> usize {
        match self {
            Column::Int32(v) => v.len(),
            Column::Int64(v) => v.len(),
            Column::Float64(v) => v.len(),
            Column::Text(v) => v.len(),
            Column::Symbol(v) => v.len(),
        }
    }

    fn write_cell(&self, row: usize, out: &mut String) {
        let _ = match self {
            Column::Int32(v) => write!(out, "{}", v[row]),
            Column::Int64(v) => write!(out, "{}", v[row]),
            Column::Float64(v) => write!(out, "{}", v[row]),
            Column::Text(v) => write!(out, "{}", lgate_output::csv_field(&v[row])),
            Column::Symbol(v) => write!(out, "{}", lgate_output::csv_field(v[row])),
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
        let mut out = self.csv_header();
        self.csv_rows(&mut out);
        out
    }

    fn csv_header(&self) -> String {
        let names: Vec<&str> = self.columns.iter().map(|(n, _)| n.as_str()).collect();
        names.join(",") + "\n"
    }

    fn csv_rows(&self, out: &mut String) {
        for row in 0..self.rows() {
            for (k, (_, c)) in self.columns.iter().enumerate() {
                if k > 0 {
                    out.push(',');
                }
                c.write_cell(row, out);
            }
            out.push('\n');
        }
    }

    /// The Parquet schema of the table's columns.
    fn schema(&self) -> Result<Arc<Type>, ParquetError> {
        let fields = self
            .columns
            .iter()
            .map(|(name, c)| {
                let (physical, logical) = match c {
                    Column::Int32(_) => (PhysicalType::INT32, None),
                    Column::Int64(_) => (PhysicalType::INT64, None),
                    Column::Float64(_) => (PhysicalType::DOUBLE, None),
                    Column::Text(_) | Column::Symbol(_) => {
                        (PhysicalType::BYTE_ARRAY, Some(LogicalType::String))
                    }
                };
                Type::primitive_type_builder(name, physical)
                    .with_repetition(Repetition::REQUIRED)
                    .with_logical_type(logical)
                    .build()
                    .map(Arc::new)
            })
            .collect::<Result<Vec<_>, _>>()?;
        Ok(Arc::new(
            Type::group_type_builder("schema")
                .with_fields(fields)
                .build()?,
        ))
    }

    fn properties() -> Arc<WriterProperties> {
        Arc::new(
            WriterProperties::builder()
                .set_compression(Compression::SNAPPY)
                .set_created_by(format!("lgate-plogp {}", env!("CARGO_PKG_VERSION")))
                .build(),
        )
    }

    fn write_row_group<W: Write + Send>(
        &self,
        writer: &mut SerializedFileWriter<W>,
    ) -> Result<(), ParquetError> {
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
                Column::Symbol(v) => {
                    let bytes: Vec<ByteArray> = v
                        .iter()
                        .map(|s| ByteArray::from(bytes::Bytes::from_static(s.as_bytes())))
                        .collect();
                    col.typed::<ByteArrayType>()
                        .write_batch(&bytes, None, None)?;
                }
            }
            col.close()?;
            k += 1;
        }
        group.close()?;
        Ok(())
    }

    /// The table as a Snappy-compressed Parquet file in one row group.
    pub fn to_parquet(&self) -> Result<Vec<u8>, ParquetError> {
        let mut writer = SerializedFileWriter::new(Vec::new(), self.schema()?, Self::properties())?;
        self.write_row_group(&mut writer)?;
        writer.into_inner()
    }
}

/// A table written in pieces (one Parquet row group each), for tables too large to hold.
pub struct TableWriter {
    parquet: SerializedFileWriter<AtomicFile>,
    csv: Option<AtomicFile>,
    header: String,
}

/// An error of writing a table in pieces.
#[derive(Debug, thiserror::Error)]
pub enum TableWriteError {
    /// Parquet encoding or its file failed.
    #[error("cannot write Parquet: {0}")]
    Parquet(#[from] ParquetError),
    /// The CSV file failed.
    #[error("cannot write CSV: {0}")]
    Io(#[from] std::io::Error),
}

impl TableWriter {
    /// Starts a table whose columns are those of `shape` (which may be empty), written to
    /// `parquet` and, if given, `csv`.
    pub fn new(
        shape: &Table,
        parquet: AtomicFile,
        mut csv: Option<AtomicFile>,
    ) -> Result<Self, TableWriteError> {
        let header = shape.csv_header();
        if let Some(f) = &mut csv {
            f.write_all(header.as_bytes())?;
        }
        Ok(TableWriter {
            parquet: SerializedFileWriter::new(parquet, shape.schema()?, Table::properties())?,
            csv,
            header,
        })
    }

    /// Appends the rows of `piece`, whose columns must be the shape's.
    pub fn write(&mut self, piece: &Table) -> Result<(), TableWriteError> {
        debug_assert_eq!(piece.csv_header(), self.header, "same columns");
        if piece.rows() == 0 {
            return Ok(());
        }
        piece.write_row_group(&mut self.parquet)?;
        if let Some(f) = &mut self.csv {
            let mut text = String::new();
            piece.csv_rows(&mut text);
            f.write_all(text.as_bytes())?;
        }
        Ok(())
    }

    /// Finishes and commits the files.
    pub fn finish(self) -> Result<(), TableWriteError> {
        self.parquet.into_inner()?.commit()?;
        if let Some(f) = self.csv {
            f.commit()?;
        }
        Ok(())
    }
}

/// One column of a row group as read: integers of any width, floats or text.
#[derive(Debug, Clone, PartialEq)]
pub enum ColumnValues {
    /// 32- or 64-bit integers.
    Int(Vec<i64>),
    /// Floating-point numbers.
    Float(Vec<f64>),
    /// UTF-8 text.
    Text(Vec<String>),
}

/// A Parquet table read a row group at a time, its columns found by name; errors name the file.
pub struct TableReader {
    path: PathBuf,
    reader: SerializedFileReader<std::fs::File>,
    names: Vec<String>,
}

impl TableReader {
    /// Opens the Parquet table at `path`.
    pub fn open(path: &Path) -> Result<Self, RunDirError> {
        let file = std::fs::File::open(path).map_err(io_error(path))?;
        let reader = SerializedFileReader::new(file).map_err(|e| RunDirError::BadFile {
            path: path.to_path_buf(),
            message: format!("not a Parquet table: {e}"),
        })?;
        let names = reader
            .metadata()
            .file_metadata()
            .schema_descr()
            .columns()
            .iter()
            .map(|c| c.name().to_string())
            .collect();
        Ok(TableReader {
            path: path.to_path_buf(),
            reader,
            names,
        })
    }

    /// The error `message` about this table.
    pub fn error(&self, message: String) -> RunDirError {
        RunDirError::BadFile {
            path: self.path.clone(),
            message,
        }
    }

    /// The number of row groups.
    pub fn row_groups(&self) -> usize {
        self.reader.num_row_groups()
    }

    /// The number of rows.
    pub fn rows(&self) -> usize {
        self.reader.metadata().file_metadata().num_rows().max(0) as usize
    }

    /// Whether the table has a column `name`.
    pub fn has(&self, name: &str) -> bool {
        self.names.iter().any(|n| n == name)
    }

    /// The columns `names` of row group `g`, whole, in that order; `what` says what the table
    /// should be when a column is missing.
    pub fn read(
        &self,
        g: usize,
        names: &[&str],
        what: &str,
    ) -> Result<Vec<ColumnValues>, RunDirError> {
        let group = self
            .reader
            .get_row_group(g)
            .map_err(|e| self.error(e.to_string()))?;
        let rows = group.metadata().num_rows().max(0) as usize;
        names
            .iter()
            .map(|name| {
                let index = self
                    .names
                    .iter()
                    .position(|n| n == name)
                    .ok_or_else(|| self.error(format!("no column `{name}`: not {what}")))?;
                column(group.as_ref(), index, rows).map_err(|m| self.error(m))
            })
            .collect()
    }

    /// The integer column `name` of row group `g`, each value checked to be at least 0.
    pub fn indices(&self, g: usize, name: &str, what: &str) -> Result<Vec<usize>, RunDirError> {
        match self.read(g, &[name], what)?.pop() {
            Some(ColumnValues::Int(v)) => v
                .into_iter()
                .enumerate()
                .map(|(r, x)| {
                    usize::try_from(x).map_err(|_| {
                        self.error(format!("row {r} of row group {g}: `{name}` is {x}"))
                    })
                })
                .collect(),
            _ => Err(self.error(format!("column `{name}` must hold integers"))),
        }
    }

    /// The floating-point column `name` of row group `g`.
    pub fn floats(&self, g: usize, name: &str, what: &str) -> Result<Vec<f64>, RunDirError> {
        match self.read(g, &[name], what)?.pop() {
            Some(ColumnValues::Float(v)) => Ok(v),
            _ => Err(self.error(format!("column `{name}` must hold floating-point numbers"))),
        }
    }
}

/// One column of a row group, whole.
fn column(group: &dyn RowGroupReader, index: usize, rows: usize) -> Result<ColumnValues, String> {
    let reader = group.get_column_reader(index).map_err(|e| e.to_string())?;
    let e = |e: ParquetError| e.to_string();
    Ok(match reader {
        ColumnReader::Int32ColumnReader(mut r) => {
            let mut v = Vec::with_capacity(rows);
            r.read_records(rows, None, None, &mut v).map_err(e)?;
            ColumnValues::Int(v.into_iter().map(i64::from).collect())
        }
        ColumnReader::Int64ColumnReader(mut r) => {
            let mut v = Vec::with_capacity(rows);
            r.read_records(rows, None, None, &mut v).map_err(e)?;
            ColumnValues::Int(v)
        }
        ColumnReader::DoubleColumnReader(mut r) => {
            let mut v = Vec::with_capacity(rows);
            r.read_records(rows, None, None, &mut v).map_err(e)?;
            ColumnValues::Float(v)
        }
        ColumnReader::ByteArrayColumnReader(mut r) => {
            let mut v = Vec::with_capacity(rows);
            r.read_records(rows, None, None, &mut v).map_err(e)?;
            ColumnValues::Text(
                v.into_iter()
                    .map(|b| String::from_utf8_lossy(b.data()).into_owned())
                    .collect(),
            )
        }
        _ => return Err(format!("column {index} has an unexpected type")),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

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
