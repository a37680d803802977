//! The pieces the document is built of: the schemas of the API's types, and the JSON of an
//! operation, its answers and its parameters.

use schemars::generate::SchemaSettings;
use schemars::{JsonSchema, SchemaGenerator};
use serde_json::{Map, Value, json};
use trainctl_server_api::ErrorBody;

/// A DNS-1123 label, as namespaces are.
pub const NAMESPACE_PATTERN: &str = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// The schemas of the API's types, generated as JSON Schema 2020-12 (what OpenAPI 3.1 takes),
/// each named type once under `#/components/schemas`.
pub struct Schemas(SchemaGenerator);

impl Schemas {
    /// No schema yet.
    pub fn new() -> Schemas {
        let settings = SchemaSettings::draft2020_12()
            // The server writes these bodies: a field it leaves out when empty is not required.
            .for_serialize()
            .with(|settings| {
                settings.definitions_path = "/components/schemas".into();
                settings.meta_schema = None;
            });
        Schemas(settings.into_generator())
    }

    /// The schema of `T`: a `$ref` to its component for a named type.
    pub fn of<T: JsonSchema>(&mut self) -> Value {
        self.0.subschema_for::<T>().to_value()
    }

    /// The components: the token's security scheme, and the schemas of the error envelope
    /// (which every error answer refers to: [`error`]) and of every named type referred to so
    /// far.
    pub fn components(mut self) -> Value {
        self.of::<ErrorBody>();
        json!({
            "securitySchemes": { "token": { "type": "http", "scheme": "bearer" } },
            "schemas": self.0.take_definitions(true),
        })
    }
}

/// A JSON answer: its description and its schema.
#[expect(
    clippy::needless_pass_by_value,
    reason = "every caller builds the schema for this answer alone"
)]
pub fn json_body(description: &str, schema: Value) -> Value {
    json!({ "description": description, "content": { "application/json": { "schema": schema } } })
}

/// An operation needing the token: its `responses`, with `400` and `401` added.
pub fn operation(summary: &str, responses: Value) -> Value {
    let mut responses = responses;
    if let Some(responses) = responses.as_object_mut() {
        responses
            .entry("400")
            .or_insert_with(|| error("A query parameter or a path segment it cannot take"));
        responses.insert(
            "401".to_owned(),
            error("No token, or a wrong one (see server.token in the state directory)"),
        );
    }
    json!({ "summary": summary, "responses": responses })
}

/// `operation` with the fields of `more` (parameters, a request body).
pub fn with(operation: Value, more: Value) -> Value {
    let mut operation = operation;
    if let (Some(operation), Value::Object(more)) = (operation.as_object_mut(), more) {
        operation.extend(more);
    }
    operation
}

/// An error answer: the envelope.
pub fn error(description: &str) -> Value {
    json!({ "description": description, "content": { "application/json": {
        "schema": { "$ref": "#/components/schemas/Error" } } } })
}

/// A text answer of `media_type`.
pub fn text(description: &str, media_type: &str) -> Value {
    let mut content = Map::new();
    content.insert(
        media_type.to_owned(),
        json!({ "schema": { "type": "string" } }),
    );
    json!({ "description": description, "content": content })
}

/// An optional string parameter (required in a path).
pub fn string(name: &str, place: &str, description: &str) -> Value {
    json!({ "name": name, "in": place, "required": place == "path", "description": description,
            "schema": { "type": "string" } })
}

/// A `namespace` parameter: a DNS-1123 label.
pub fn namespace(place: &str, description: &str) -> Value {
    json!({ "name": "namespace", "in": place, "required": place == "path", "description": description, "example": "default",
            "schema": { "type": "string", "minLength": 1, "maxLength": 63, "pattern": NAMESPACE_PATTERN } })
}
