//! Merging a patch into a stored object.

use serde_json::Value;

/// A JSON merge patch (RFC 7386): maps merge key by key, `null` removes a key, anything else
/// (lists included) replaces what was there.
///
/// It is also how this server applies a server-side apply patch to an object that exists: it
/// does not track field managers, so fields that a manager stops applying are kept rather than
/// removed, and lists are replaced rather than merged by key.
pub fn merge_patch(target: &mut Value, patch: &Value) {
    let Value::Object(patch) = patch else {
        *target = patch.clone();
        return;
    };
    if !target.is_object() {
        *target = Value::Object(serde_json::Map::new());
    }
    if let Value::Object(target) = target {
        for (key, value) in patch {
            if value.is_null() {
                target.remove(key);
            } else {
                merge_patch(target.entry(key.clone()).or_insert(Value::Null), value);
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    #[test]
    fn maps_merge_lists_replace_nulls_remove() {
        let mut object = json!({
            "metadata": {"labels": {"a": "1", "b": "2"}, "annotations": {"x": "y"}},
            "spec": {"ports": [1, 2], "keep": true},
        });
        merge_patch(
            &mut object,
            &json!({
                "metadata": {"labels": {"b": "3", "c": "4"}, "annotations": null},
                "spec": {"ports": [3]},
            }),
        );
        assert_eq!(
            object,
            json!({
                "metadata": {"labels": {"a": "1", "b": "3", "c": "4"}},
                "spec": {"ports": [3], "keep": true},
            })
        );
    }

    #[test]
    fn a_scalar_patch_replaces_the_target() {
        let mut object = json!({"a": 1});
        merge_patch(&mut object, &json!("text"));
        assert_eq!(object, json!("text"));
    }
}
