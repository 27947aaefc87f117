//! Tables read from CSV files.

use std::path::Path;

use serde::{Deserialize, Serialize};

use crate::ChartError;

/// One column of a [`Table`]: its header and its cells as text (empty cells are `None`).
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct Column {
    /// The header.
    pub name: String,
    /// The cells, top to bottom; `None` for an empty cell.
    pub values: Vec<Option<String>>,
}

impl Column {
    /// The cells as numbers when every non-empty cell parses as one (and at least one does).
    #[must_use]
    pub fn numbers(&self) -> Option<Vec<Option<f64>>> {
        let mut any = false;
        let mut out = Vec::with_capacity(self.values.len());
        for cell in &self.values {
            match cell {
                None => out.push(None),
                Some(text) => {
                    let value: f64 = text.trim().replace(',', "").parse().ok()?;
                    if !value.is_finite() {
                        return None;
                    }
                    any = true;
                    out.push(Some(value));
                }
            }
        }
        any.then_some(out)
    }

    /// Whether the column is numeric (see [`Column::numbers`]).
    #[must_use]
    pub fn is_numeric(&self) -> bool {
        self.numbers().is_some()
    }

    /// The cell at `row` as a label (`""` when empty or missing).
    #[must_use]
    pub fn label(&self, row: usize) -> &str {
        self.values
            .get(row)
            .and_then(Option::as_deref)
            .unwrap_or_default()
    }
}

/// A table: named columns of equal length.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
pub struct Table {
    /// The columns, left to right.
    pub columns: Vec<Column>,
}

impl Table {
    /// Reads a CSV file with a header row. Short rows are padded with empty cells.
    ///
    /// # Errors
    ///
    /// [`ChartError::Io`] when the file cannot be read, [`ChartError::Csv`] when it is not CSV,
    /// [`ChartError::EmptyData`] when it has no header or no row.
    pub fn from_csv_path(path: &Path) -> Result<Self, ChartError> {
        let bytes = std::fs::read(path).map_err(|e| ChartError::Io(path.to_path_buf(), e))?;
        Self::from_csv_bytes(&bytes)
    }

    /// Reads CSV text with a header row (see [`Table::from_csv_path`]).
    ///
    /// # Errors
    ///
    /// [`ChartError::Csv`] or [`ChartError::EmptyData`].
    pub fn from_csv_bytes(bytes: &[u8]) -> Result<Self, ChartError> {
        let bytes = bytes.strip_prefix(b"\xEF\xBB\xBF").unwrap_or(bytes);
        let mut reader = csv::ReaderBuilder::new()
            .flexible(true)
            .trim(csv::Trim::All)
            .from_reader(bytes);
        let headers = reader.headers()?.clone();
        if headers.is_empty() {
            return Err(ChartError::EmptyData);
        }
        let mut columns: Vec<Column> = headers
            .iter()
            .enumerate()
            .map(|(i, h)| Column {
                name: if h.is_empty() {
                    format!("column_{}", i + 1)
                } else {
                    h.to_owned()
                },
                values: Vec::new(),
            })
            .collect();
        for record in reader.records() {
            let record = record?;
            for (i, column) in columns.iter_mut().enumerate() {
                let cell = record.get(i).unwrap_or_default();
                let empty = cell.is_empty()
                    || matches!(cell.to_ascii_lowercase().as_str(), "nan" | "null" | "none");
                column.values.push((!empty).then(|| cell.to_owned()));
            }
        }
        if columns.first().is_none_or(|c| c.values.is_empty()) {
            return Err(ChartError::EmptyData);
        }
        Ok(Self { columns })
    }

    /// The number of rows.
    #[must_use]
    pub fn rows(&self) -> usize {
        self.columns.first().map_or(0, |c| c.values.len())
    }

    /// The column named `name`.
    #[must_use]
    pub fn column(&self, name: &str) -> Option<&Column> {
        self.columns.iter().find(|c| c.name == name)
    }

    /// A short description for the model: headers with their kind and the first rows.
    #[must_use]
    pub fn describe(&self, max_rows: usize) -> String {
        let mut out = String::from("Columns:\n");
        for column in &self.columns {
            let kind = if column.is_numeric() {
                "number"
            } else {
                "text"
            };
            out.push_str(&format!("- {} ({kind})\n", column.name));
        }
        out.push_str(&format!("Rows: {}\nFirst rows:\n", self.rows()));
        for row in 0..self.rows().min(max_rows) {
            let cells: Vec<&str> = self.columns.iter().map(|c| c.label(row)).collect();
            out.push_str(&cells.join(", "));
            out.push('\n');
        }
        out
    }
}
