//! The server's OpenAPI document (`/openapi.json`, its schemas generated from the types of
//! `trainctl_server_api`) against the server itself: the document holds together (every `$ref`
//! resolves, every schema is JSON Schema 2020-12), every JSON answer a running server gives fits
//! the schema the document names for it, and decodes into the type the CLI's client reads with
//! nothing lost (decoded then encoded again, it is the same JSON).

use std::collections::BTreeSet;

use k8s_openapi::api::core::v1::ResourceQuota;
use serde::Serialize;
use serde::de::DeserializeOwned;
use serde_json::{Value, json};
use trainctl_cli_harness::manifest::{Replicas, tfjob};
use trainctl_cli_harness::server::Server;
use trainctl_server_api::{
    DashboardInfo, Deleted, ErrorBody, Items, JobSummary, JobView, LoginCode, LoginToken,
    MachineView, ScalarsView, Submitted,
};

/// The document, as the server serves it.
fn document(server: &Server) -> Value {
    let (status, document) = server.request("GET", "/openapi.json", None);
    assert_eq!(status, 200, "{document}");
    document
}

/// Every `$ref` under `value`.
fn refs<'a>(value: &'a Value, found: &mut Vec<&'a str>) {
    match value {
        Value::Object(object) => {
            for (key, value) in object {
                match (key.as_str(), value) {
                    ("$ref", Value::String(target)) => found.push(target),
                    _ => refs(value, found),
                }
            }
        }
        Value::Array(items) => items.iter().for_each(|item| refs(item, found)),
        _ => {}
    }
}

/// `schema` with the document's components, so that its `$ref`s resolve.
fn resolvable(schema: &Value, document: &Value) -> Value {
    json!({ "allOf": [schema], "components": document["components"] })
}

#[test]
fn the_document_is_openapi_3_1_and_every_ref_and_schema_holds() {
    let server = Server::start(&[]);
    let document = document(&server);
    assert_eq!(document["openapi"], "3.1.0");
    let mut found = Vec::new();
    refs(&document, &mut found);
    assert!(found.len() > 40, "{found:?}");
    for target in found {
        let pointer = target
            .strip_prefix('#')
            .unwrap_or_else(|| panic!("{target}: not local"));
        assert!(
            document.pointer(pointer).is_some(),
            "{target} does not resolve"
        );
    }
    let schemas = document["components"]["schemas"]
        .as_object()
        .expect("components.schemas");
    for name in [
        "Error",
        "JobView",
        "ReplicaView",
        "Submitted",
        "JobSummary",
        "MachineView",
        "ScalarsView",
        "io.k8s.api.core.v1.ResourceQuota",
    ] {
        assert!(schemas.contains_key(name), "no schema {name}");
    }
    let meta = jsonschema::draft202012::meta::validator();
    for (name, schema) in schemas {
        if let Err(error) = meta.validate(schema) {
            panic!("{name} is not JSON Schema 2020-12: {error}");
        }
        if let Err(error) = jsonschema::draft202012::new(&resolvable(schema, &document)) {
            panic!("{name} does not compile: {error}");
        }
    }
}

/// A running server, its document, and the answers checked so far.
struct Contract {
    server: Server,
    document: Value,
    checked: BTreeSet<String>,
}

impl Contract {
    fn start() -> Contract {
        let server = Server::start(&[]);
        let document = document(&server);
        Contract {
            server,
            document,
            checked: BTreeSet::new(),
        }
    }

    /// Sends `method path` (with `body`), expects `status`, and checks its JSON answer against
    /// the schema the document gives `method template` at that status; the answer decoded as
    /// the client's type `T`.
    fn answer<T: Serialize + DeserializeOwned>(
        &mut self,
        method: &str,
        path: &str,
        body: Option<&str>,
        (template, status): (&str, u16),
    ) -> T {
        let (answered, answer) = self.server.request(method, path, body);
        assert_eq!(answered, status, "{method} {path}: {answer}");
        let schema = &self.document["paths"][template][method.to_lowercase()]["responses"]
            [status.to_string()]["content"]["application/json"]["schema"];
        assert!(
            !schema.is_null(),
            "the document gives {method} {template} {status} no JSON schema"
        );
        let validator = jsonschema::draft202012::options()
            .should_validate_formats(true)
            .build(&resolvable(schema, &self.document))
            .expect("the schema compiles");
        let problems: Vec<String> = validator
            .iter_errors(&answer)
            .map(|error| format!("{}: {error}", error.instance_path()))
            .collect();
        assert!(
            problems.is_empty(),
            "{method} {path} does not fit its schema: {problems:#?}\n{answer:#}"
        );
        let decoded: T = serde_json::from_value(answer.clone())
            .unwrap_or_else(|error| panic!("{method} {path}: the client cannot read it: {error}"));
        assert_eq!(
            serde_json::to_value(&decoded).expect("encoded"),
            answer,
            "{method} {path}: decoded and encoded again, the answer changed"
        );
        self.checked
            .insert(format!("{} {template} {status}", method.to_lowercase()));
        decoded
    }

    /// Every JSON answer the document describes: `method path status`.
    fn documented(&self) -> BTreeSet<String> {
        let mut documented = BTreeSet::new();
        for (path, item) in self.document["paths"].as_object().expect("paths") {
            for (method, operation) in item.as_object().expect("a path item") {
                let Some(responses) = operation["responses"].as_object() else {
                    continue;
                };
                for (status, response) in responses {
                    if !response["content"]["application/json"].is_null() {
                        documented.insert(format!("{method} {path} {status}"));
                    }
                }
            }
        }
        documented
    }
}

const JOB: &str = "/api/v1/namespaces/{namespace}/{plural}/{name}";
const QUOTA: &str = "/api/v1/namespaces/{namespace}/resourcequotas/{name}";

#[test]
fn every_json_answer_fits_its_schema_and_decodes_into_the_clients_types() {
    let mut contract = Contract::start();
    let claim = tempfile::tempdir().expect("a claim's directory");
    let companions = "apiVersion: v1\nkind: ResourceQuota\nmetadata:\n  name: quota\nspec:\n  hard:\n    count/tfjobs.kubeflow.org: \"2\"\n---\napiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: settings\ndata:\n  a: b\n---\napiVersion: v1\nkind: Secret\nmetadata:\n  name: keys\nstringData:\n  k: v";
    let manifest = tfjob("mnist", companions, &[Replicas::chief("sleep 60")]);
    let submit = format!(
        "/api/v1/jobs?source=job.yaml&volume=data={}",
        claim.path().display()
    );
    let submitted: Submitted =
        contract.answer("POST", &submit, Some(&manifest), ("/api/v1/jobs", 201));
    assert_eq!(
        (
            submitted.quotas.len(),
            submitted.claims.len(),
            submitted.config_maps.len(),
            submitted.secrets.len(),
            submitted.jobs.len()
        ),
        (1, 1, 1, 1, 1)
    );
    contract.server.wait_for("mnist", "running", |view| {
        view["replicas"][0]["state"] == "Running"
    });
    let mnist = "/api/v1/namespaces/default/tfjobs/mnist";
    let listed: Items<JobView> =
        contract.answer("GET", "/api/v1/jobs", None, ("/api/v1/jobs", 200));
    assert_eq!(listed.items.len(), 1);
    let view: JobView = contract.answer("GET", mnist, None, (JOB, 200));
    assert_eq!(view.replicas.len(), 1);
    let _: Items<JobSummary> = contract.answer(
        "GET",
        "/api/v1/job-summaries",
        None,
        ("/api/v1/job-summaries", 200),
    );
    let _: MachineView = contract.answer("GET", "/api/v1/machine", None, ("/api/v1/machine", 200));
    let _: ScalarsView = contract.answer(
        "GET",
        &format!("{mnist}/scalars"),
        None,
        (&format!("{JOB}/scalars"), 200),
    );
    let _: DashboardInfo =
        contract.answer("GET", "/api/v1/dashboard", None, ("/api/v1/dashboard", 200));
    let code: LoginCode = contract.answer(
        "POST",
        "/api/v1/dashboard/codes",
        None,
        ("/api/v1/dashboard/codes", 201),
    );
    let login = "/api/v1/dashboard/login";
    let token: LoginToken = contract.answer(
        "POST",
        login,
        Some(&json!({ "code": code.code }).to_string()),
        (login, 200),
    );
    assert_eq!(token.token, contract.server.token());
    let _: ErrorBody = contract.answer(
        "POST",
        login,
        Some(&json!({ "code": code.code }).to_string()),
        (login, 401),
    );
    let _: Items<ResourceQuota> = contract.answer(
        "GET",
        "/api/v1/resourcequotas",
        None,
        ("/api/v1/resourcequotas", 200),
    );
    let quota = "/api/v1/namespaces/default/resourcequotas/quota";
    let _: ResourceQuota = contract.answer("GET", quota, None, (QUOTA, 200));
    let suspended: JobView = contract.answer(
        "POST",
        &format!("{mnist}/suspend"),
        None,
        (&format!("{JOB}/suspend"), 200),
    );
    assert_eq!(suspended.state, "Suspended");
    let _: JobView = contract.answer(
        "POST",
        &format!("{mnist}/resume"),
        None,
        (&format!("{JOB}/resume"), 200),
    );
    let _: Deleted<JobView> = contract.answer("DELETE", mnist, None, (JOB, 200));
    let _: ErrorBody = contract.answer("GET", mnist, None, (JOB, 404));
    let _: Deleted<ResourceQuota> = contract.answer("DELETE", quota, None, (QUOTA, 200));
    let _: Value = contract.answer("GET", "/openapi.json", None, ("/openapi.json", 200));
    // Every success the document gives a JSON body was checked (errors: the envelope, seen here
    // at 401 and 404, and in server_contract).
    let documented: BTreeSet<String> = contract
        .documented()
        .into_iter()
        .filter(|answer| answer.ends_with(" 200") || answer.ends_with(" 201"))
        .collect();
    let missed: Vec<&String> = documented.difference(&contract.checked).collect();
    assert!(missed.is_empty(), "not checked: {missed:#?}");
}
