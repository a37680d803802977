//! Label and field selectors, as lists and watches take them.

use serde_json::Value;

use trainctl_api::selector::Selector;

use crate::error::ApiError;

/// A label selector (`a=b,c!=d,e in (f,g),!h`): every requirement must hold. Read and matched
/// by the api crate's [`Selector`], the one `trainctl -l` uses.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct LabelSelector(Selector);

impl LabelSelector {
    /// Reads the equality-based and set-based forms Kubernetes accepts.
    pub fn parse(text: &str) -> Result<LabelSelector, ApiError> {
        Selector::parse(text)
            .map(LabelSelector)
            .map_err(|error| ApiError::BadRequest(format!("unable to parse requirement: {error}")))
    }

    /// Whether `object`'s labels satisfy every requirement.
    #[must_use]
    pub fn matches(&self, object: &Value) -> bool {
        let labels = &object["metadata"]["labels"];
        self.0
            .matches_labels(|key| labels.get(key).and_then(Value::as_str))
    }
}

/// A field selector on `metadata.name` and `metadata.namespace` (`=`, `==`, `!=`), the fields
/// every resource supports.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct FieldSelector(Vec<(&'static str, bool, String)>);

impl FieldSelector {
    /// Reads a field selector; other fields are refused, as the API server refuses fields a
    /// resource does not index.
    pub fn parse(text: &str) -> Result<FieldSelector, ApiError> {
        let mut terms = Vec::new();
        for part in text
            .split(',')
            .map(str::trim)
            .filter(|part| !part.is_empty())
        {
            let (field, equal, value) = if let Some((field, value)) = part.split_once("!=") {
                (field, false, value)
            } else if let Some((field, value)) =
                part.split_once("==").or_else(|| part.split_once('='))
            {
                (field, true, value)
            } else {
                return Err(ApiError::BadRequest(format!(
                    "invalid selector: {text:?}; expected field=value or field!=value"
                )));
            };
            let field = match field.trim() {
                "metadata.name" => "name",
                "metadata.namespace" => "namespace",
                other => {
                    return Err(ApiError::BadRequest(format!(
                        "field label not supported: {other}"
                    )));
                }
            };
            terms.push((field, equal, value.trim().to_owned()));
        }
        Ok(FieldSelector(terms))
    }

    /// Whether `object` satisfies every term.
    #[must_use]
    pub fn matches(&self, object: &Value) -> bool {
        self.0.iter().all(|(field, equal, value)| {
            let actual = object["metadata"][*field].as_str().unwrap_or_default();
            (actual == value) == *equal
        })
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn labelled(labels: &Value) -> Value {
        json!({"metadata": {"name": "mnist-worker-0", "namespace": "ml", "labels": labels}})
    }

    #[test]
    fn equality_and_set_requirements_all_hold() {
        let selector =
            LabelSelector::parse("job=mnist,type in (worker, ps),role!=master,!gone,index")
                .expect("valid");
        assert!(selector.matches(&labelled(
            &json!({"job": "mnist", "type": "worker", "index": "0"})
        )));
        assert!(!selector.matches(&labelled(
            &json!({"job": "mnist", "type": "chief", "index": "0"})
        )));
        assert!(!selector.matches(&labelled(
            &json!({"job": "mnist", "type": "ps", "index": "0", "role": "master"})
        )));
        assert!(!selector.matches(&labelled(
            &json!({"job": "mnist", "type": "ps", "index": "0", "gone": ""})
        )));
        assert!(!selector.matches(&labelled(&json!({"job": "mnist", "type": "ps"}))));
    }

    #[test]
    fn notin_and_not_equals_match_a_missing_label() {
        let selector = LabelSelector::parse("a notin (x),b!=y").expect("valid");
        assert!(selector.matches(&labelled(&json!({}))));
        assert!(!selector.matches(&labelled(&json!({"a": "x"}))));
    }

    #[test]
    fn an_empty_selector_matches_everything() {
        assert!(LabelSelector::parse("").expect("valid").matches(&json!({})));
    }

    #[test]
    fn field_selectors_take_name_and_namespace_only() {
        let selector = FieldSelector::parse("metadata.name=mnist-worker-0,metadata.namespace!=x")
            .expect("valid");
        assert!(selector.matches(&labelled(&json!({}))));
        assert!(
            !FieldSelector::parse("metadata.name==other")
                .expect("valid")
                .matches(&labelled(&json!({})))
        );
        assert_eq!(
            FieldSelector::parse("status.phase=Running"),
            Err(ApiError::BadRequest(
                "field label not supported: status.phase".to_owned()
            ))
        );
    }
}
