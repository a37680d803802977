//! The `ResourceQuota` routes: list (`GET /api/v1/resourcequotas?namespace=`), one (`GET
//! /api/v1/namespaces/{namespace}/resourcequotas/{name}`) and delete (`DELETE` the same). Quotas
//! are applied by submitting a manifest that holds them (`POST /api/v1/jobs`).

use axum::Json;
use axum::extract::{Path, Query, State};
use axum::http::StatusCode;
use axum::response::{IntoResponse, Response};
use serde::Deserialize;
use trainctl_api::manifest::check_namespace;
use trainctl_server_api::{Deleted, Items};

use super::errors::{error, failed};
use super::shared::{Api, query_namespace};

/// Query of `GET /api/v1/resourcequotas`.
#[derive(Debug, Deserialize)]
pub(super) struct QuotaListQuery {
    namespace: Option<String>,
}

/// The path of one quota.
#[derive(Debug, Deserialize)]
pub(super) struct QuotaPath {
    namespace: String,
    name: String,
}

impl QuotaPath {
    /// 400 when its namespace is not a DNS-1123 label.
    fn check(&self) -> Result<(), Box<Response>> {
        check_namespace(&self.namespace).map_err(|problem| {
            Box::new(error(
                StatusCode::BAD_REQUEST,
                &format!("the path's namespace: {problem}"),
                &[],
            ))
        })
    }
}

pub(super) async fn list(State(api): State<Api>, Query(query): Query<QuotaListQuery>) -> Response {
    if let Err(response) = query_namespace(query.namespace.as_deref()) {
        return *response;
    }
    match api.supervisor.quotas(query.namespace.as_deref()) {
        Ok(items) => Json(Items { items }).into_response(),
        Err(failure) => failed(&failure),
    }
}

pub(super) async fn one(State(api): State<Api>, Path(path): Path<QuotaPath>) -> Response {
    if let Err(response) = path.check() {
        return *response;
    }
    match api.supervisor.quota(&path.namespace, &path.name) {
        Ok(quota) => Json(quota).into_response(),
        Err(failure) => failed(&failure),
    }
}

pub(super) async fn delete(State(api): State<Api>, Path(path): Path<QuotaPath>) -> Response {
    if let Err(response) = path.check() {
        return *response;
    }
    match api.supervisor.delete_quota(&path.namespace, &path.name) {
        Ok(quota) => Json(Deleted { deleted: quota }).into_response(),
        Err(failure) => failed(&failure),
    }
}
