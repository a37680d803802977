//! Plain-text tables, as kubectl prints them: left-aligned columns, three spaces apart.

use std::borrow::Cow;
use std::fmt::Write as _;

use crate::terminal_text::escaped;

/// A table being built.
#[derive(Debug, Clone)]
pub struct Table {
    rows: Vec<Vec<String>>,
}

impl Table {
    /// A table with these column headers.
    pub fn new<const N: usize>(headers: [&str; N]) -> Table {
        Table {
            rows: vec![headers.iter().map(|h| (*h).to_owned()).collect()],
        }
    }

    /// A table of `headers` and `rows` whose number of columns is known only when running
    /// (custom columns).
    pub fn from_rows(headers: Vec<String>, rows: Vec<Vec<String>>) -> Table {
        let mut all = Vec::with_capacity(rows.len() + 1);
        all.push(headers);
        all.extend(rows);
        Table { rows: all }
    }

    /// Adds a row.
    pub fn row<const N: usize>(&mut self, cells: [String; N]) {
        self.rows.push(cells.into());
    }

    /// Keeps only the columns whose flag is `true` (a missing flag keeps the column).
    pub fn keep_columns(&mut self, keep: &[bool]) {
        for row in &mut self.rows {
            let mut column = 0;
            row.retain(|_| {
                let kept = keep.get(column).copied().unwrap_or(true);
                column += 1;
                kept
            });
        }
    }

    /// The table as lines, each ending in a newline; trailing spaces trimmed.
    pub fn render(&self) -> String {
        self.render_painted(|_| None)
    }

    /// The table as [`Table::render`] lays it out, each cell for which `colour` gives an SGR
    /// colour (`31`: red) in that colour; what a cell holds that would act on the terminal is
    /// shown escaped ([`escaped`]).
    pub fn render_painted(&self, colour: impl Fn(&str) -> Option<&'static str>) -> String {
        let rows: Vec<Vec<Cow<'_, str>>> = self
            .rows
            .iter()
            .map(|row| row.iter().map(|cell| escaped(cell)).collect())
            .collect();
        let columns = rows.iter().map(Vec::len).max().unwrap_or(0);
        let widths: Vec<usize> = (0..columns)
            .map(|c| {
                rows.iter()
                    .filter_map(|row| row.get(c))
                    .map(|cell| cell.chars().count())
                    .max()
                    .unwrap_or(0)
            })
            .collect();
        let mut out = String::new();
        for row in &rows {
            let mut line = String::new();
            for (cell, width) in row.iter().zip(&widths) {
                let cell = cell.as_ref();
                match colour(cell) {
                    Some(code) => {
                        let _ = write!(line, "\x1b[{code}m{cell}\x1b[0m");
                    }
                    None => line.push_str(cell),
                }
                line.extend(std::iter::repeat_n(' ', width - cell.chars().count() + 3));
            }
            out.push_str(line.trim_end());
            out.push('\n');
        }
        out
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn columns_are_aligned_three_spaces_apart() {
        let mut table = Table::new(["NAME", "STATE"]);
        table.row(["digits-mwms".to_owned(), "Succeeded".to_owned()]);
        assert_eq!(
            table.render(),
            "NAME          STATE\ndigits-mwms   Succeeded\n"
        );
    }

    #[test]
    fn painted_cells_keep_the_columns_aligned() {
        let mut table = Table::new(["NAME", "STATE", "AGE"]);
        table.row(["a".to_owned(), "Failed".to_owned(), "5s".to_owned()]);
        table.row(["b".to_owned(), "Succeeded".to_owned(), "6s".to_owned()]);
        assert_eq!(
            table.render_painted(|cell| (cell == "Failed").then_some("31")),
            "NAME   STATE       AGE\n\
             a      \x1b[31mFailed\x1b[0m      5s\n\
             b      Succeeded   6s\n"
        );
    }
}
