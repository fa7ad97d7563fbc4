//! The HTTP routes (axum on tokio; the only module that uses either). Every handler does its
//! reading on tokio's blocking pool, and every response, error pages included, goes through
//! [`Reply`], which sets a Content-Security-Policy that allows scripts and styles only from
//! this server's `/assets/`, so even a string that escaped escaping could not run.
//!
//! | route | what |
//! | --- | --- |
//! | `/` | the pipelines |
//! | `/p/NAME` (`?over=AXIS&metrics=A,B&sort=COL&dir=desc&f.COL=EXPR&page=N&per=N`) | a pipeline: graph and instance table (or grouped over an axis), sorted, filtered and paged as the query says ([`super::query`]) |
//! | `/p/NAME/table?...` | the table part of that page alone (what the script swaps in) |
//! | `/p/NAME/curves?ids=A,B&term=T` | the loss curves of instances in one chart |
//! | `/p/NAME/sweep?stage=S&metric=M&param=P` | a metric against a swept parameter, and parallel coordinates |
//! | `/p/NAME/search/SEARCH` | a search's trials, the objective by trial, parallel coordinates |
//! | `/p/NAME/history` | results of the pipeline its file no longer asks for |
//! | `/p/NAME/i/ID` | an instance |
//! | `/p/NAME/i/ID/log` | its log as text |
//! | `/p/NAME/i/ID/out/OUTPUT` | one of its outputs (a folder output: its manifest) |
//! | `/p/NAME/compare?ids=A,B,...` | instances side by side |
//! | `/p/NAME/reports` | the report stages' tables, heat maps and plots |
//! | `/objects/DIGEST` (`?name=FILE`) | an object of the cache, verified |
//! | `/api/p/NAME/status` (`?ids=A,B`), `/api/p/NAME/i/ID` | what the script polls for live updates |
//! | `/assets/FILE` | the stylesheet and the script |
//!
//! Anything else, and any unknown pipeline, instance, output or digest, is a 404 page. A
//! request whose `Host` header names neither a loopback name nor the served address is
//! refused with a 403 before any route sees it ([`super::host`]).

use std::collections::HashMap;
use std::net::SocketAddr;
use std::sync::Arc;

use axum::extract::{Path, Query, State};
use axum::http::{header, HeaderValue, StatusCode, Uri};
use axum::response::{IntoResponse, Response};
use axum::routing::get;
use axum::Router;

use super::compute::{draw_page, pipeline_state};
use super::error::ServeError;
use super::host::HostCheck;
use super::pages::{
    compare, curves, history, instance, not_found, pipeline, pipelines, reports, search, sweep,
};
use super::query::TableQuery;
use super::site::Site;
use super::{assets, objects};

const CSP: &str = "default-src 'none'; script-src 'self'; style-src 'self' 'unsafe-inline'; \
img-src 'self' data:; connect-src 'self'; base-uri 'none'; form-action 'self'; frame-ancestors 'none'";

/// A response.
pub(crate) enum Reply {
    /// An HTML page.
    Html(StatusCode, String),
    /// A JSON document.
    Json(serde_json::Value),
    /// A file: content type, download name, bytes.
    File(&'static str, Option<String>, Vec<u8>),
    /// An embedded asset (cacheable).
    Asset(&'static str, &'static str),
}

impl IntoResponse for Reply {
    fn into_response(self) -> Response {
        let (status, ty, body, name, cache): (_, &str, Vec<u8>, Option<String>, bool) = match self {
            Reply::Html(status, text) => (
                status,
                "text/html; charset=utf-8",
                text.into_bytes(),
                None,
                false,
            ),
            Reply::Json(value) => (
                StatusCode::OK,
                "application/json",
                value.to_string().into_bytes(),
                None,
                false,
            ),
            Reply::File(ty, name, bytes) => (StatusCode::OK, ty, bytes, name, false),
            Reply::Asset(ty, text) => (StatusCode::OK, ty, text.as_bytes().to_vec(), None, true),
        };
        let mut response = (status, body).into_response();
        let headers = response.headers_mut();
        headers.insert(header::CONTENT_TYPE, HeaderValue::from_static(ty));
        headers.insert(
            header::CONTENT_SECURITY_POLICY,
            HeaderValue::from_static(CSP),
        );
        headers.insert(
            header::X_CONTENT_TYPE_OPTIONS,
            HeaderValue::from_static("nosniff"),
        );
        headers.insert(
            header::REFERRER_POLICY,
            HeaderValue::from_static("no-referrer"),
        );
        headers.insert(
            header::CACHE_CONTROL,
            HeaderValue::from_static(if cache { "max-age=300" } else { "no-store" }),
        );
        if let Some(name) = name {
            let inline = ty.starts_with("image/");
            let value = format!(
                "{}; filename=\"{}\"",
                if inline { "inline" } else { "attachment" },
                objects::download_name(&name)
            );
            if let Ok(v) = HeaderValue::from_str(&value) {
                headers.insert(header::CONTENT_DISPOSITION, v);
            }
        }
        response
    }
}

type Shared = Arc<Site>;

/// Runs `work` on the blocking pool; errors become the 404 page (the visitor asked for
/// something that does not exist) or the error page.
async fn blocking(
    uri: Uri,
    work: impl FnOnce() -> Result<Reply, ServeError> + Send + 'static,
) -> Reply {
    let path = uri.path().to_string();
    match tokio::task::spawn_blocking(work).await {
        Ok(Ok(reply)) => reply,
        Ok(Err(ServeError::NotFound(message))) => {
            Reply::Html(StatusCode::NOT_FOUND, not_found::render(&path, &message))
        }
        Ok(Err(e @ ServeError::Pipeline(_))) => Reply::Html(
            StatusCode::UNPROCESSABLE_ENTITY,
            not_found::error(&path, &format!("The pipeline file does not load:\n{e}")),
        ),
        Ok(Err(e)) => Reply::Html(
            StatusCode::INTERNAL_SERVER_ERROR,
            not_found::error(&path, &e.to_string()),
        ),
        Err(e) => Reply::Html(
            StatusCode::INTERNAL_SERVER_ERROR,
            not_found::error(&path, &format!("the page could not be built: {e}")),
        ),
    }
}

async fn index(State(site): State<Shared>, uri: Uri) -> Reply {
    blocking(uri, move || {
        Ok(Reply::Html(StatusCode::OK, pipelines::render(&site)?))
    })
    .await
}

async fn asset(Path(file): Path<String>, uri: Uri) -> Reply {
    match assets::get(&file) {
        Some((ty, text)) => Reply::Asset(ty, text),
        None => Reply::Html(
            StatusCode::NOT_FOUND,
            not_found::render(uri.path(), &format!("no asset `{file}`")),
        ),
    }
}

async fn pipeline_page(
    State(site): State<Shared>,
    Path(name): Path<String>,
    Query(q): Query<Vec<(String, String)>>,
    uri: Uri,
) -> Reply {
    blocking(uri, move || {
        let q = TableQuery::parse(&q);
        let html = draw_page(&site, &name, &q, |state| {
            pipeline::check(state, &q)?;
            Ok(pipeline::render(state, &q))
        })?;
        Ok(Reply::Html(StatusCode::OK, html))
    })
    .await
}

async fn table_fragment(
    State(site): State<Shared>,
    Path(name): Path<String>,
    Query(q): Query<Vec<(String, String)>>,
    uri: Uri,
) -> Reply {
    blocking(uri, move || {
        let state = pipeline_state(&site, &name)?;
        let q = TableQuery::parse(&q);
        pipeline::check(&state, &q)?;
        Ok(Reply::Html(StatusCode::OK, pipeline::fragment(&state, &q)))
    })
    .await
}

async fn curves_page(
    State(site): State<Shared>,
    Path(name): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> Reply {
    blocking(uri, move || {
        let state = pipeline_state(&site, &name)?;
        let ids = curves::parse_ids(&state, q.get("ids").map_or("", String::as_str))?;
        Ok(Reply::Html(
            StatusCode::OK,
            curves::render(&site, &state, &ids, q.get("term").map(String::as_str))?,
        ))
    })
    .await
}

async fn sweep_page(
    State(site): State<Shared>,
    Path(name): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> Reply {
    blocking(uri, move || {
        let state = pipeline_state(&site, &name)?;
        let pick = |k: &str| q.get(k).filter(|v| !v.is_empty()).cloned();
        let choice = sweep::Choice {
            stage: pick("stage"),
            metric: pick("metric"),
            param: pick("param"),
        };
        Ok(Reply::Html(StatusCode::OK, sweep::render(&state, &choice)?))
    })
    .await
}

async fn search_page(
    State(site): State<Shared>,
    Path((name, search_name)): Path<(String, String)>,
    uri: Uri,
) -> Reply {
    blocking(uri, move || {
        let state = pipeline_state(&site, &name)?;
        Ok(Reply::Html(
            StatusCode::OK,
            search::render(&state, &search_name)?,
        ))
    })
    .await
}

async fn history_page(State(site): State<Shared>, Path(name): Path<String>, uri: Uri) -> Reply {
    blocking(uri, move || {
        let state = pipeline_state(&site, &name)?;
        Ok(Reply::Html(StatusCode::OK, history::render(&site, &state)?))
    })
    .await
}

async fn instance_page(
    State(site): State<Shared>,
    Path((name, id)): Path<(String, String)>,
    uri: Uri,
) -> Reply {
    blocking(uri, move || {
        let state = pipeline_state(&site, &name)?;
        let s = state.instance(&id)?;
        Ok(Reply::Html(
            StatusCode::OK,
            instance::render(&site, &state, s)?,
        ))
    })
    .await
}

async fn instance_log(
    State(site): State<Shared>,
    Path((name, id)): Path<(String, String)>,
    uri: Uri,
) -> Reply {
    blocking(uri, move || {
        let state = pipeline_state(&site, &name)?;
        let s = state.instance(&id)?;
        let text = instance::log_text(&site, &state, s)?.ok_or_else(|| {
            ServeError::NotFound(format!("{} has no log yet", state.label(s.index)))
        })?;
        Ok(Reply::File(
            "text/plain; charset=utf-8",
            None,
            text.into_bytes(),
        ))
    })
    .await
}

async fn instance_output(
    State(site): State<Shared>,
    Path((name, id, output)): Path<(String, String, String)>,
    uri: Uri,
) -> Reply {
    blocking(uri, move || {
        let state = pipeline_state(&site, &name)?;
        let s = state.instance(&id)?;
        let record = state.record(s.index).ok_or_else(|| {
            ServeError::NotFound(format!(
                "{} is not cached, so it has no outputs",
                state.label(s.index)
            ))
        })?;
        let out = record.outputs.get(&output).ok_or_else(|| {
            ServeError::NotFound(format!(
                "{} has no output `{output}`; it has: {}",
                state.label(s.index),
                record
                    .outputs
                    .keys()
                    .cloned()
                    .collect::<Vec<_>>()
                    .join(", ")
            ))
        })?;
        let bytes = objects::read(site.cache(), &out.digest)?;
        if out.is_dir {
            return Ok(Reply::File(
                "application/json",
                Some(format!("{output}.manifest.json")),
                bytes,
            ));
        }
        Ok(Reply::File(
            objects::content_type(&output),
            Some(output),
            bytes,
        ))
    })
    .await
}

async fn object(
    State(site): State<Shared>,
    Path(digest): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> Reply {
    blocking(uri, move || {
        let bytes = objects::read(site.cache(), &digest)?;
        let name = q.get("name").cloned();
        let ty = name
            .as_deref()
            .map_or("application/octet-stream", objects::content_type);
        Ok(Reply::File(ty, Some(name.unwrap_or(digest)), bytes))
    })
    .await
}

async fn compare_page(
    State(site): State<Shared>,
    Path(name): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> Reply {
    blocking(uri, move || {
        let state = pipeline_state(&site, &name)?;
        let ids = compare::parse_ids(&state, q.get("ids").map_or("", String::as_str))?;
        Ok(Reply::Html(StatusCode::OK, compare::render(&state, &ids)))
    })
    .await
}

async fn reports_page(State(site): State<Shared>, Path(name): Path<String>, uri: Uri) -> Reply {
    blocking(uri, move || {
        let state = pipeline_state(&site, &name)?;
        Ok(Reply::Html(StatusCode::OK, reports::render(&state)))
    })
    .await
}

async fn api_status(
    State(site): State<Shared>,
    Path(name): Path<String>,
    Query(q): Query<HashMap<String, String>>,
    uri: Uri,
) -> Reply {
    blocking(uri, move || {
        let state = pipeline_state(&site, &name)?;
        let ids: Option<Vec<usize>> = q.get("ids").map(|ids| {
            ids.split(',')
                .filter_map(|i| i.trim().parse::<usize>().ok())
                .collect()
        });
        Ok(Reply::Json(pipeline::status_json(&state, ids.as_deref())))
    })
    .await
}

async fn api_instance(
    State(site): State<Shared>,
    Path((name, id)): Path<(String, String)>,
    uri: Uri,
) -> Reply {
    blocking(uri, move || {
        let state = pipeline_state(&site, &name)?;
        let s = state.instance(&id)?;
        Ok(Reply::Json(instance::live_json(&site, &state, s)?))
    })
    .await
}

/// axum's own rejections (a path segment or query that is not valid UTF-8 or not the
/// expected shape) come back as bare 400s; they become the 404 page like any other address
/// the dashboard does not serve.
async fn rejections(uri: Uri, response: Response) -> Response {
    if response.status() == StatusCode::BAD_REQUEST
        && !response
            .headers()
            .contains_key(header::CONTENT_SECURITY_POLICY)
    {
        return Reply::Html(
            StatusCode::NOT_FOUND,
            not_found::render(
                uri.path(),
                "This address is not one the dashboard serves (a part of it is not valid).",
            ),
        )
        .into_response();
    }
    response
}

async fn fallback(uri: Uri) -> Reply {
    Reply::Html(
        StatusCode::NOT_FOUND,
        not_found::render(uri.path(), "There is no page at this address."),
    )
}

/// Refuses a request whose `Host` header `hosts` does not allow (DNS rebinding).
async fn host_check(
    State(hosts): State<Arc<HostCheck>>,
    request: axum::extract::Request,
    next: axum::middleware::Next,
) -> Response {
    let host = request
        .headers()
        .get(header::HOST)
        .map(|h| String::from_utf8_lossy(h.as_bytes()).into_owned());
    if hosts.allows(host.as_deref()) {
        return next.run(request).await;
    }
    let mut response = Reply::File(
        "text/plain; charset=utf-8",
        None,
        hosts.explain(host.as_deref()).into_bytes(),
    )
    .into_response();
    *response.status_mut() = StatusCode::FORBIDDEN;
    response
}

/// The router over `site`, answering the hosts `hosts` allows.
pub(crate) fn router(site: Site, hosts: HostCheck) -> Router {
    Router::new()
        .route("/", get(index))
        .route("/assets/{file}", get(asset))
        .route("/p/{name}", get(pipeline_page))
        .route("/p/{name}/reports", get(reports_page))
        .route("/p/{name}/compare", get(compare_page))
        .route("/p/{name}/table", get(table_fragment))
        .route("/p/{name}/curves", get(curves_page))
        .route("/p/{name}/sweep", get(sweep_page))
        .route("/p/{name}/search/{search}", get(search_page))
        .route("/p/{name}/history", get(history_page))
        .route("/p/{name}/i/{id}", get(instance_page))
        .route("/p/{name}/i/{id}/log", get(instance_log))
        .route("/p/{name}/i/{id}/out/{output}", get(instance_output))
        .route("/objects/{digest}", get(object))
        .route("/api/p/{name}/status", get(api_status))
        .route("/api/p/{name}/i/{id}", get(api_instance))
        .fallback(fallback)
        .layer(axum::middleware::map_response(rejections))
        .layer(axum::middleware::from_fn_with_state(
            Arc::new(hosts),
            host_check,
        ))
        .with_state(Arc::new(site))
}

/// Binds `addr` and serves `site` until the process ends, answering requests addressed to a
/// loopback name, to `addr` or to one of `allow_hosts` ([`super::host`]). `ready` is called
/// with the bound address (port 0 picks a free one) before the first request is accepted.
pub fn serve(
    site: Site,
    addr: SocketAddr,
    allow_hosts: &[String],
    ready: impl FnOnce(SocketAddr),
) -> Result<(), ServeError> {
    let listener =
        std::net::TcpListener::bind(addr).map_err(|source| ServeError::Bind { addr, source })?;
    listener
        .set_nonblocking(true)
        .map_err(|source| ServeError::Bind { addr, source })?;
    let bound = listener
        .local_addr()
        .map_err(|source| ServeError::Bind { addr, source })?;
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .max_blocking_threads(8)
        .enable_all()
        .build()
        .map_err(ServeError::Server)?;
    runtime.block_on(async move {
        let listener = tokio::net::TcpListener::from_std(listener).map_err(ServeError::Server)?;
        ready(bound);
        axum::serve(listener, router(site, HostCheck::new(bound, allow_hosts)))
            .await
            .map_err(ServeError::Server)
    })
}
