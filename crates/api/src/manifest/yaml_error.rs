//! The YAML parser's errors in a user's words: no parser type names (`Nodes { nodes: 250001 }`)
//! and no advice meant for programmers (`set DuplicateKeyPolicy in Options`).

use serde_saphyr::Error;
use serde_saphyr::budget::BudgetBreach;

/// What is said of a YAML parse error, after `invalid YAML: `.
pub(super) fn yaml_message(error: &Error) -> String {
    let mut cause = error.without_snippet();
    while let Error::AliasError { error, .. } | Error::WithSnippet { error, .. } = cause {
        cause = error;
    }
    let words = match cause {
        Error::Budget { breach, .. } => format!(
            "{}; refused, as a YAML bomb would be (aliases `*name` repeat what their anchor \
             `&name` holds, so a small file can stand for a huge one)",
            breach_words(breach)
        ),
        Error::DuplicateMappingKey { key: Some(key), .. } => {
            format!("the key `{key}` appears twice in one mapping: keep one")
        }
        Error::DuplicateMappingKey { key: None, .. } => {
            "a key appears twice in one mapping: keep one".to_owned()
        }
        other => parser_words(other),
    };
    format!("invalid YAML: {words}")
}

/// The limit a document went past.
fn breach_words(breach: &BudgetBreach) -> String {
    match breach {
        BudgetBreach::Nodes { nodes } => {
            format!("the document holds more than {} values", nodes - 1)
        }
        BudgetBreach::Events { events } => {
            format!(
                "the document is more than {} parser events long",
                events - 1
            )
        }
        BudgetBreach::Aliases { aliases } => {
            format!("the document uses more than {} aliases", aliases - 1)
        }
        BudgetBreach::Anchors { anchors } => {
            format!("the document defines more than {} anchors", anchors - 1)
        }
        BudgetBreach::Depth { depth } => {
            format!("the document nests more than {} levels deep", depth - 1)
        }
        BudgetBreach::Documents { documents } => {
            format!("the file holds more than {} documents", documents - 1)
        }
        BudgetBreach::ScalarBytes { total_scalar_bytes } => {
            format!(
                "the document's values add up to more than {} bytes",
                total_scalar_bytes - 1
            )
        }
        BudgetBreach::AliasAnchorRatio { aliases, anchors } => format!(
            "the document uses {aliases} aliases of {anchors} anchors, too many uses for so few \
             anchors"
        ),
        _ => "the document goes past one of the parser's safety limits".to_owned(),
    }
}

/// The parser's own message, without its `line N column M:` prefix and source snippet.
fn parser_words(error: &Error) -> String {
    let rendered = error.to_string();
    let first = rendered.lines().next().unwrap_or_default();
    let message = first.strip_prefix("error: ").unwrap_or(first);
    match message.split_once(": ") {
        Some((prefix, rest)) if prefix.starts_with("line ") && prefix.contains(" column ") => {
            rest.to_owned()
        }
        _ => message.to_owned(),
    }
}
