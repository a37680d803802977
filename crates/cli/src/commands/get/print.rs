//! How `get` prints what it found: the table (`-o wide`, `--show-labels`), the objects
//! (`-o yaml|json`), their names (`-o name`), a JSONPath template or custom columns, sorted by
//! `--sort-by`; all of them, or (`-w`) the jobs that changed.

use std::io::Write;

use jiff::Timestamp;
use serde_json::Value;
use trainctl_api::JobKind;

use crate::cli::{Format, GetArgs, GetFormat};
use crate::selection::Selection;
use crate::table::Table;
use crate::view::jobs::{Columns, JobRow, table};
use crate::{output, paint};
use trainctl_jsonpath::{CustomColumns, Template, sort_order};

/// One job to print: its row and its object.
#[derive(Debug)]
pub struct Item<'a> {
    /// The job as the table shows it.
    pub row: JobRow<'a>,
    /// The job as the object formats show it.
    pub object: Value,
}

impl Item<'_> {
    /// What identifies the job among the others: `kind/namespace/name`.
    pub fn key(&self) -> String {
        format!(
            "{}/{}/{}",
            self.row.kind.singular(),
            self.row.namespace,
            self.row.name
        )
    }
}

/// What `-o` asks for, read and checked before anything is looked up.
#[derive(Debug)]
enum Shape {
    /// The table (`-o wide` for its wide columns).
    Table,
    /// `KIND.GROUP/NAME` a line.
    Name,
    /// The objects, as YAML or JSON.
    Objects(Format),
    /// A JSONPath template.
    JsonPath(Template),
    /// A table of custom columns.
    CustomColumns(CustomColumns),
}

/// What the command line named.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Named {
    /// No job: every job (of a kind) is listed.
    None,
    /// One job: the object formats print it alone, not in a `List`.
    One,
    /// Several jobs.
    Several,
}

/// How `get` prints, from its arguments.
#[derive(Debug)]
pub struct Printer {
    shape: Shape,
    /// Whether jobs were named, and how many.
    named: Named,
    /// The table's columns; NAMESPACE also when the jobs printed span namespaces.
    columns: Columns,
    /// `--sort-by`'s expression.
    sort_by: Option<String>,
    /// The namespace listed, for `No jobs found in NS namespace.`; `None` with `-A`.
    scope: Option<String>,
    /// States in colour (standard output is a terminal).
    colour: bool,
}

impl Printer {
    /// The printer `args` ask for, over what `selection` names in `namespace`; an error for a
    /// template that cannot be read.
    pub fn new(args: &GetArgs, selection: &Selection, namespace: &str) -> anyhow::Result<Printer> {
        let shape = match &args.output {
            None | Some(GetFormat::Wide) => Shape::Table,
            Some(GetFormat::Name) => Shape::Name,
            Some(GetFormat::Yaml) => Shape::Objects(Format::Yaml),
            Some(GetFormat::Json) => Shape::Objects(Format::Json),
            Some(GetFormat::JsonPath(template)) => Shape::JsonPath(Template::parse(template)?),
            Some(GetFormat::CustomColumns(spec)) => {
                Shape::CustomColumns(CustomColumns::parse(spec)?)
            }
        };
        if let Some(expression) = &args.sort_by {
            // Checked now, on nothing, so that a mistake is said before anything is listed.
            sort_order(&[], expression)?;
        }
        Ok(Printer {
            shape,
            named: match selection.jobs.len() {
                0 => Named::None,
                1 => Named::One,
                _ => Named::Several,
            },
            columns: Columns {
                with_kind: one_named_kind(selection).is_none(),
                with_namespace: args.all_namespaces,
                wide: matches!(args.output, Some(GetFormat::Wide)),
                labels: args.show_labels,
            },
            sort_by: args.sort_by.clone(),
            scope: (!args.all_namespaces).then(|| namespace.to_owned()),
            colour: paint::stdout_takes_colour(),
        })
    }

    /// Whether the rows need each job's restarts (`-o wide`).
    pub fn shows_restarts(&self) -> bool {
        matches!(self.shape, Shape::Table) && self.columns.wide
    }

    /// Prints every item, sorted as asked.
    pub fn print(&self, items: &[Item<'_>], out: &mut impl Write) -> anyhow::Result<()> {
        let order = self.order(items)?;
        if order.is_empty() && matches!(self.shape, Shape::Table | Shape::CustomColumns(_)) {
            // Jobs named and not found were said to be missing, one by one.
            if self.named != Named::None {
                return Ok(());
            }
            match &self.scope {
                Some(namespace) => eprintln!("No jobs found in {namespace} namespace."),
                None => eprintln!("No jobs found."),
            }
            return Ok(());
        }
        self.print_items(items, &order, true, out)
    }

    /// Prints the items at `changed` (indexes into `items`) for `-w`: their rows without the
    /// header, or their objects one by one.
    pub fn print_changed(
        &self,
        items: &[Item<'_>],
        changed: &[usize],
        out: &mut impl Write,
    ) -> anyhow::Result<()> {
        if changed.is_empty() {
            return Ok(());
        }
        self.print_items(items, changed, false, out)
    }

    /// Prints `items` at `indexes`, in that order; `whole`: as a complete listing (the header,
    /// one object or a `List`), else as the changes of a watch.
    fn print_items(
        &self,
        items: &[Item<'_>],
        indexes: &[usize],
        whole: bool,
        out: &mut impl Write,
    ) -> anyhow::Result<()> {
        let chosen: Vec<&Item<'_>> = indexes.iter().map(|&i| &items[i]).collect();
        match &self.shape {
            Shape::Table => {
                // Every row is laid out, so that a watch's rows line up with the listing.
                let all: Vec<JobRow<'_>> = items.iter().map(|item| item.row.clone()).collect();
                let columns = Columns {
                    with_namespace: self.columns.with_namespace || spans_namespaces(&all),
                    ..self.columns
                };
                let table = table(&all, columns, Timestamp::now());
                let rendered = if self.colour {
                    table.render_painted(paint::state_colour)
                } else {
                    table.render()
                };
                let lines: Vec<&str> = rendered.lines().collect();
                if whole {
                    writeln!(out, "{}", lines[0])?;
                }
                for index in indexes {
                    writeln!(out, "{}", lines[index + 1])?;
                }
            }
            Shape::Name => {
                for item in chosen {
                    writeln!(
                        out,
                        "{}.{}/{}",
                        item.row.kind.singular(),
                        trainctl_api::GROUP,
                        item.row.name
                    )?;
                }
            }
            Shape::Objects(format) => {
                let objects: Vec<&Value> = chosen.iter().map(|item| &item.object).collect();
                if whole {
                    self.print_listing(&objects, *format, out)?;
                } else {
                    for object in objects {
                        if *format == Format::Yaml {
                            out.write_all(b"---\n")?;
                        }
                        output::write(out, object, *format)?;
                    }
                }
            }
            Shape::JsonPath(template) => {
                if whole {
                    let objects: Vec<&Value> = chosen.iter().map(|item| &item.object).collect();
                    out.write_all(template.render(&self.input(&objects))?.as_bytes())?;
                } else {
                    for item in chosen {
                        out.write_all(template.render(&item.object)?.as_bytes())?;
                    }
                }
            }
            Shape::CustomColumns(columns) => {
                let objects: Vec<Value> = items.iter().map(|item| item.object.clone()).collect();
                let (headers, cells) = columns.rows(&objects)?;
                let rendered = Table::from_rows(headers, cells).render();
                let lines: Vec<&str> = rendered.lines().collect();
                if whole {
                    writeln!(out, "{}", lines[0])?;
                }
                for index in indexes {
                    writeln!(out, "{}", lines[index + 1])?;
                }
            }
        }
        out.flush()?;
        Ok(())
    }

    /// The indexes of `items` in the order to print them.
    fn order(&self, items: &[Item<'_>]) -> anyhow::Result<Vec<usize>> {
        let Some(expression) = &self.sort_by else {
            return Ok((0..items.len()).collect());
        };
        let objects: Vec<&Value> = items.iter().map(|item| &item.object).collect();
        Ok(sort_order(&objects, expression)?)
    }

    /// One object alone when one job was named, else a v1 `List` of them.
    fn print_listing(
        &self,
        objects: &[&Value],
        format: Format,
        out: &mut impl Write,
    ) -> anyhow::Result<()> {
        output::write(out, &self.input(objects), format)
    }

    /// What the object formats and the templates see: the one job named, or a v1 `List`.
    fn input(&self, objects: &[&Value]) -> Value {
        if self.named == Named::One && objects.len() == 1 {
            return objects[0].clone();
        }
        serde_json::json!({
            "apiVersion": "v1",
            "kind": "List",
            "items": objects,
        })
    }
}

/// Whether `rows` are in more than one namespace.
fn spans_namespaces(rows: &[JobRow<'_>]) -> bool {
    rows.split_first()
        .is_some_and(|(first, rest)| rest.iter().any(|row| row.namespace != first.namespace))
}

/// Whether every job in `kinds` is of one kind that the user named, so that NAME needs no kind.
fn one_named_kind(selection: &Selection) -> Option<JobKind> {
    if selection.jobs.is_empty() {
        return selection.kind;
    }
    let mut kinds = selection.jobs.iter().map(|job| job.kind.or(selection.kind));
    let first = kinds.next().flatten()?;
    kinds.all(|kind| kind == Some(first)).then_some(first)
}
