//! `-o custom-columns=NAME:.metadata.name,STATE:.status.conditions[-1:].type`, as kubectl's
//! `customcolumn.go` reads and fills it.

use serde_json::Value;

use super::{Template, TemplateError, relaxed_path, text};

/// Parsed `-o custom-columns` spec: a header and a path for each column.
#[derive(Debug, Clone)]
pub struct CustomColumns {
    columns: Vec<Column>,
}

/// One column.
#[derive(Debug, Clone)]
struct Column {
    header: String,
    path: Template,
}

impl CustomColumns {
    /// Reads a spec: `HEADER:PATH` pairs separated by commas, each path with or without its
    /// braces and leading dot (`NAME:metadata.name`, `NAME:{.metadata.name}`). A header ends
    /// at the first `:`, and a path cannot hold a `,`.
    pub fn parse(spec: &str) -> Result<CustomColumns, TemplateError> {
        if spec.is_empty() {
            return Err(TemplateError::NoColumns);
        }
        let columns = spec
            .split(',')
            .map(|column| {
                let (header, path) = column
                    .split_once(':')
                    .ok_or_else(|| TemplateError::ColumnSpec(column.to_owned()))?;
                Ok(Column {
                    header: header.to_owned(),
                    path: Template::parse(&relaxed_path(path)?)?,
                })
            })
            .collect::<Result<_, TemplateError>>()?;
        Ok(CustomColumns { columns })
    }

    /// The headers, and a row of cells for each of `items`. A cell holds its path's results
    /// separated by commas, each as Go prints it (`map[app:x]` for an object), or `<none>`.
    pub fn rows(&self, items: &[Value]) -> Result<(Vec<String>, Vec<Vec<String>>), TemplateError> {
        let headers = self
            .columns
            .iter()
            .map(|column| column.header.clone())
            .collect();
        let rows = items
            .iter()
            .map(|item| {
                self.columns
                    .iter()
                    .map(|column| column.cell(item))
                    .collect::<Result<_, _>>()
            })
            .collect::<Result<_, _>>()?;
        Ok((headers, rows))
    }
}

impl Column {
    /// This column's cell for `item`.
    fn cell(&self, item: &Value) -> Result<String, TemplateError> {
        let values: Vec<String> = self
            .path
            .results(item)?
            .into_iter()
            .flatten()
            .map(text::cell)
            .collect();
        if values.is_empty() {
            return Ok("<none>".to_owned());
        }
        Ok(values.join(","))
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::CustomColumns;
    use crate::tests::items;

    #[test]
    fn custom_columns() {
        let columns = CustomColumns::parse(
            "NAME:.metadata.name,NAMESPACE:metadata.namespace,STATE:{.status.conditions[-1:].type},\
             WORKERS:{spec.tfReplicaSpecs.Worker.replicas},ACTIVE:.status.replicaStatuses.Worker.active",
        )
        .expect("spec");
        let (headers, rows) = columns.rows(&items()).expect("rows");
        assert_eq!(headers, ["NAME", "NAMESPACE", "STATE", "WORKERS", "ACTIVE"]);
        assert_eq!(
            rows,
            [
                ["mnist", "team-a", "Running", "2", "2"],
                ["resnet", "team-b", "Created", "4", "<none>"]
            ]
        );
    }

    #[test]
    fn custom_columns_print_values_as_go_does() {
        let columns = CustomColumns::parse(
            "TYPES:.status.conditions[*].type,LABELS:.metadata.labels,SPEC:.spec,EMPTY:",
        )
        .expect("spec");
        let (_, rows) = columns.rows(&items()[..1]).expect("rows");
        assert_eq!(
            rows,
            [[
                "Created,Running",
                "map[app:vision training.kubeflow.org/job-name:mnist]",
                "map[tfReplicaSpecs:map[Worker:map[replicas:2]]]",
                "<none>",
            ]]
        );
        let columns = CustomColumns::parse("A:a,B:b,C:c,D:d").expect("spec");
        let object = json!({"a": null, "b": ["x", 1.5, {}], "c": 1e6, "d": "\u{1b}[31mred\r"});
        let (_, rows) = columns.rows(&[object]).expect("rows");
        assert_eq!(rows, [["<nil>", "[x 1.5 map[]]", "1e+06", "^[[31mred\\r"]]);
    }

    #[test]
    fn custom_columns_errors() {
        for (spec, message) in [
            (
                "",
                "custom-columns format specified but no custom columns given",
            ),
            (
                "NAME",
                "unexpected custom-columns spec: NAME, expected <header>:<json-path-expr>",
            ),
            (
                "NAME:.metadata.name,",
                "unexpected custom-columns spec: , expected <header>:<json-path-expr>",
            ),
            (
                "NAME:{.metadata.name",
                "unexpected path string \"{.metadata.name\", expected a 'name1.name2' or \
                 '.name1.name2' or '{name1.name2}' or '{.name1.name2}'",
            ),
            (
                "LAST:.status.conditions[",
                "error parsing jsonpath {.status.conditions[}, unterminated array",
            ),
        ] {
            match CustomColumns::parse(spec) {
                Ok(columns) => panic!("{spec} parsed: {columns:?}"),
                Err(error) => assert_eq!(error.to_string(), message, "{spec}"),
            }
        }
        let columns = CustomColumns::parse("THIRD:.status.conditions[2].type").expect("spec");
        let error = columns.rows(&items()).expect_err("out of bounds");
        assert_eq!(
            error.to_string(),
            "error executing jsonpath \"{.status.conditions[2].type}\": \
             array index out of bounds: index 2, length 2"
        );
    }
}
