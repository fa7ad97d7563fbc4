//! One instance: its status, parameters, inputs (linked to the instances that produced them),
//! outputs (sizes, digests, downloads), metrics, provenance and telemetry, the log, the loss
//! curves as an interactive chart, and "why would this rerun" against the pipeline file as it
//! is now. A running instance shows its progress and the log written so far, and the script
//! keeps both fresh through [`live_json`].
//!
//! An object that cannot be read (its bytes no longer match its digest, or the file is
//! unreadable) is shown as such where it would appear, the outputs table marks it, and the
//! rest of the page is built as usual: one bad file never hides the instance or stops the
//! page's live updates.

use std::fmt::Write;

use serde_json::{json, Value};

use super::pairs::pairs;
use super::status::{badge, progress_text};
use super::time::time;
use crate::cache::{IndexHasher, RunRecord, StageKey};
use crate::exec::freshness::{dirty_reasons, fingerprint, instance_key};
use crate::graph::Instance;
use crate::kind::LOG_OUTPUT;
use crate::report::loss::{parse_curves, LOSS_OUTPUT};
use crate::serve::error::ServeError;
use crate::serve::html::{bytes, esc, json_block, label, num, page, seg, value_text};
use crate::serve::site::Site;
use crate::serve::state::{InstanceState, PipelineState, Status};
use crate::serve::{live, objects, reason};

/// Why the instance would run now, as the engine explains it (empty when cached).
pub(crate) fn why_rerun(
    site: &Site,
    state: &PipelineState,
    s: &InstanceState,
) -> Result<Vec<String>, ServeError> {
    if s.status == Status::Cached {
        return Ok(Vec::new());
    }
    let (Some(index), Some(_)) = (site.index()?, s.key.as_ref()) else {
        return Ok(vec![s.reason.clone()]);
    };
    let plan = &state.plan;
    let inst = &plan.instances()[s.index];
    let hasher = IndexHasher::new(site.cache().index()?);
    let Ok(fp) = fingerprint(plan, inst, site.registry(), &hasher) else {
        return Ok(vec![s.reason.clone()]);
    };
    let upstream = |u: usize| state.record(u).cloned();
    let Some(key) = instance_key(plan, inst, site.registry(), &upstream, fp) else {
        return Ok(vec![s.reason.clone()]);
    };
    Ok(dirty_reasons(
        &index,
        site.cache(),
        &plan.spec().name,
        inst,
        &key,
        &key.digest(),
    )
    .iter()
    .map(ToString::to_string)
    .collect())
}

/// The log of the instance: the recorded `log.txt` when cached, what a running stage has
/// written so far, or `None`.
pub(crate) fn log_text(
    site: &Site,
    state: &PipelineState,
    s: &InstanceState,
) -> Result<Option<String>, ServeError> {
    if let Some(out) = state
        .record(s.index)
        .and_then(|r| r.outputs.get(LOG_OUTPUT))
    {
        let bytes = objects::read(site.cache(), &out.digest)?;
        return Ok(Some(String::from_utf8_lossy(&bytes).into_owned()));
    }
    if s.status == Status::Running {
        return Ok(s.key.as_deref().and_then(|k| live::log(site.cache(), k)));
    }
    Ok(None)
}

/// The first 16 characters of a digest, as tables show it.
fn short(digest: &str) -> &str {
    digest.get(..16).unwrap_or(digest)
}

/// The log for the page and the live updates: its text, or why it cannot be shown (a corrupt
/// or unreadable object), so the page is still built.
fn log_or_error(
    site: &Site,
    state: &PipelineState,
    s: &InstanceState,
) -> Result<Option<String>, String> {
    log_text(site, state, s).map_err(|e| e.to_string())
}

/// The digests of `record`'s outputs whose objects turned out corrupt while the page read
/// them (the log, the loss curves, folder manifests).
fn corrupt_outputs(site: &Site, record: &RunRecord) -> std::collections::BTreeSet<String> {
    record
        .outputs
        .iter()
        .filter(|(name, out)| {
            name.as_str() == LOG_OUTPUT || name.as_str() == LOSS_OUTPUT || out.is_dir
        })
        .filter(|(_, out)| {
            matches!(
                objects::read(site.cache(), &out.digest),
                Err(ServeError::Corrupt(_))
            )
        })
        .map(|(_, out)| out.digest.clone())
        .collect()
}

/// The loss curves of a cached result, as the charts take them: `[{name, points}]`.
pub(crate) fn loss_curves(site: &Site, record: &RunRecord) -> Option<Value> {
    let out = record.outputs.get(LOSS_OUTPUT)?;
    let bytes = objects::read(site.cache(), &out.digest).ok()?;
    let doc: Value = serde_json::from_slice(&bytes).ok()?;
    let curves = parse_curves(&doc).ok()?;
    if curves.is_empty() {
        return None;
    }
    Some(Value::Array(
        curves
            .into_iter()
            .map(|(name, points)| {
                json!({ "name": name, "points": points.iter().map(|(x, y)| [x, y]).collect::<Vec<_>>() })
            })
            .collect(),
    ))
}

/// The page: the instance's summary, why it would rerun, its parameters and inputs, its
/// result (outputs, metrics, loss, provenance) when cached, its live loss while running, and
/// its log.
pub fn render(site: &Site, state: &PipelineState, s: &InstanceState) -> Result<String, ServeError> {
    let base = format!("/p/{}", seg(&state.name));
    let here = format!("{base}/i/{}", s.index);
    let inst = &state.plan.instances()[s.index];
    let title = label(&inst.stage, &inst.binding);
    let mut body = summary_section(inst, s);

    body.push_str("<section><h2>Why would this rerun</h2>");
    let reasons = why_rerun(site, state, s)?;
    body.push_str(&reason::render_list(
        &reasons,
        "It would not: its result under the current pipeline file is in the cache.",
    ));
    body.push_str("</section>\n");

    body.push_str("<section><h2>Parameters</h2>");
    body.push_str(&params_table(inst));
    body.push_str("</section>\n");

    if !inst.inputs.is_empty() {
        body.push_str("<section><h2>Inputs</h2>");
        body.push_str(&inputs_table(state, inst, &base));
        body.push_str("</section>\n");
    }

    if let Some(record) = state.record(s.index) {
        body.push_str(&outputs_section(site, record, &here));
        body.push_str(&metrics_section(record));
        if let Some(curves) = loss_curves(site, record) {
            body.push_str("<section><h2>Loss</h2>");
            body.push_str(&json_block("loss-data", &curves));
            body.push_str("<div class=\"chart\" id=\"loss-chart\" data-src=\"loss-data\" data-x=\"epoch\" data-y=\"loss\"></div></section>\n");
        }
        body.push_str(&provenance_section(record));
    }

    if s.status == Status::Running {
        body.push_str(&live_loss_section(site, s));
    }
    body.push_str(&log_section(site, state, s, &here));

    Ok(page(
        &title,
        &[
            (base.clone(), state.name.clone()),
            (here.clone(), title.clone()),
        ],
        &body,
        Some(&format!("/api{here}")),
    ))
}

/// The status (with live progress), stage, kind, key, sweep values and error, as pairs.
fn summary_section(inst: &Instance, s: &InstanceState) -> String {
    let mut summary = vec![
        (
            "status".to_string(),
            format!(
                "<span id=\"status\">{}</span> <span id=\"progress\">{}</span>",
                badge(s.status),
                esc(&progress_text(s.progress.as_ref()))
            ),
        ),
        ("stage".into(), esc(&inst.stage)),
        ("kind".into(), esc(&inst.kind)),
        (
            "key".into(),
            s.key
                .as_deref()
                .map(|k| format!("<code>{}</code>", esc(k)))
                .unwrap_or_else(|| {
                    "<span class=\"muted\">not known until its inputs are computed</span>".into()
                }),
        ),
    ];
    for (axis, value) in &inst.binding {
        summary.push((format!("sweep {axis}"), esc(&value_text(value))));
    }
    if let Some(failure) = &s.failure {
        summary.push((
            "error".into(),
            format!("<pre class=\"error\">{}</pre>", esc(failure)),
        ));
    }
    pairs(&summary)
}

/// The parameters the instance receives.
fn params_table(inst: &Instance) -> String {
    let params: Vec<(String, String)> = inst
        .params
        .0
        .iter()
        .map(|(k, v)| (k.clone(), format!("<code>{}</code>", esc(&v.to_string()))))
        .collect();
    pairs(&params)
}

/// Each input slot and the upstream instances connected to it, linked, with their status.
fn inputs_table(state: &PipelineState, inst: &Instance, base: &str) -> String {
    let rows: Vec<(String, String)> = inst
        .inputs
        .iter()
        .map(|(slot, ups)| {
            let links: Vec<String> = ups
                .iter()
                .map(|&u| {
                    format!(
                        "<a href=\"{base}/i/{u}\">{}</a> {}",
                        esc(&state.label(u)),
                        badge(state.instances[u].status)
                    )
                })
                .collect();
            (slot.clone(), links.join("<br>"))
        })
        .collect();
    pairs(&rows)
}

/// The result's outputs: size, digest and a download link each (a folder's files below it),
/// corrupt objects marked.
fn outputs_section(site: &Site, record: &RunRecord, here: &str) -> String {
    let mut body = String::new();
    let corrupt = corrupt_outputs(site, record);
    body.push_str("<section><h2>Outputs</h2><table class=\"grid\" id=\"outputs\"><thead><tr><th>name</th><th>size</th><th>digest</th><th></th></tr></thead><tbody>");
    for (name, out) in &record.outputs {
        let size = objects::size(site.cache(), &out.digest);
        let href = format!("{here}/out/{}", seg(name));
        let size = size.map(bytes).unwrap_or_else(|| "missing".into());
        let size = if corrupt.contains(&out.digest) {
            format!("{size} <span class=\"badge st-failed corrupt\">corrupt</span>")
        } else {
            size
        };
        let _ = write!(
            body,
            "<tr><td>{}{}</td><td class=\"num\">{}</td><td><code title=\"{}\">{}</code></td><td><a href=\"{}\" download>download</a></td></tr>",
            esc(name),
            if out.is_dir { "/" } else { "" },
            size,
            esc(&out.digest),
            esc(short(&out.digest)),
            esc(&href)
        );
        if out.is_dir {
            if let Ok(manifest) = objects::manifest(site.cache(), &out.digest) {
                for (rel, digest) in manifest.entries.iter().take(200) {
                    let _ = write!(
                        body,
                        "<tr class=\"sub\"><td>{}/{}</td><td class=\"num\">{}</td><td><code title=\"{}\">{}</code></td><td><a href=\"/objects/{}?name={}\" download>download</a></td></tr>",
                        esc(name),
                        esc(rel),
                        objects::size(site.cache(), digest).map(bytes).unwrap_or_else(|| "missing".into()),
                        esc(digest),
                        esc(short(digest)),
                        esc(digest),
                        seg(&objects::download_name(rel))
                    );
                }
                if manifest.entries.len() > 200 {
                    let _ = write!(body, "<tr class=\"sub\"><td colspan=\"4\" class=\"muted\">and {} more files</td></tr>", manifest.entries.len() - 200);
                }
            }
        }
    }
    body.push_str("</tbody></table></section>\n");
    body
}

/// The result's metrics.
fn metrics_section(record: &RunRecord) -> String {
    let mut body = String::new();
    body.push_str("<section><h2>Metrics</h2>");
    if record.metrics.is_empty() {
        body.push_str("<p class=\"muted\">none recorded</p>");
    } else {
        let rows: Vec<(String, String)> = record
            .metrics
            .iter()
            .map(|(k, v)| {
                (
                    k.clone(),
                    format!(
                        "<span class=\"num\" data-metric=\"{}\">{}</span>",
                        esc(k),
                        num(*v)
                    ),
                )
            })
            .collect();
        body.push_str(&pairs(&rows));
    }
    body.push_str("</section>\n");
    body
}

/// Where, when and with what the result was made, and its key field by field.
fn provenance_section(record: &RunRecord) -> String {
    let mut body = String::new();
    body.push_str("<section><h2>Provenance and telemetry</h2>");
    let key: Option<StageKey> = serde_json::from_str(&record.key_json).ok();
    let prov = vec![
        ("pipeline".to_string(), esc(&record.pipeline)),
        ("stage when it ran".into(), esc(&record.stage)),
        ("kind".into(), esc(&record.kind)),
        (
            "IMPL_VERSION".into(),
            key.as_ref()
                .map(|k| k.impl_version.to_string())
                .unwrap_or_default(),
        ),
        (
            "key format".into(),
            key.as_ref()
                .map(|k| k.format.to_string())
                .unwrap_or_default(),
        ),
        ("started".into(), time(record.started)),
        ("finished".into(), time(record.finished)),
        ("duration".into(), format!("{:.2} s", record.duration)),
        ("device".into(), esc(&record.device)),
    ];
    body.push_str(&pairs(&prov));
    let pretty = serde_json::from_str::<Value>(&record.key_json)
        .map(|v| serde_json::to_string_pretty(&v).unwrap_or_default())
        .unwrap_or_else(|_| record.key_json.clone());
    let _ = writeln!(
        body,
        "<details><summary>The key, field by field</summary><pre>{}</pre></details></section>",
        esc(&pretty)
    );
    body
}

/// The loss of each epoch a running instance has logged so far, as a chart that grows.
fn live_loss_section(site: &Site, s: &InstanceState) -> String {
    let mut body = String::new();
    let points = live_loss(site, s);
    body.push_str("<section><h2>Loss so far</h2>");
    body.push_str(&json_block(
        "live-loss-data",
        &json!([{ "name": "loss", "points": points }]),
    ));
    body.push_str(
        "<p class=\"muted\" id=\"live-loss-note\">The loss of each epoch as the stage logs it; \
         the chart grows while it trains.</p>\
         <div class=\"chart\" id=\"live-loss\" data-src=\"live-loss-data\" data-x=\"epoch\" data-y=\"loss\"></div></section>\n",
    );
    body
}

/// The instance's log, or why it cannot be shown.
fn log_section(site: &Site, state: &PipelineState, s: &InstanceState, here: &str) -> String {
    let mut body = String::new();
    body.push_str("<section><h2>Log</h2>");
    match log_or_error(site, state, s) {
        Ok(Some(text)) => {
            let _ = write!(
                body,
                "<p><a href=\"{here}/log\">raw</a></p><pre id=\"log\" class=\"log\">{}</pre>",
                esc(&text)
            );
        }
        Ok(None) => body.push_str("<pre id=\"log\" class=\"log muted\">no log yet</pre>"),
        Err(why) => {
            let _ = write!(
                body,
                "<pre id=\"log\" class=\"log error\">The log cannot be shown: {}</pre>",
                esc(&why)
            );
        }
    }
    body.push_str("</section>\n");
    body
}

/// The (epoch, loss) points a running instance has logged so far.
fn live_loss(site: &Site, s: &InstanceState) -> Vec<[f64; 2]> {
    if s.status != Status::Running {
        return Vec::new();
    }
    s.key
        .as_deref()
        .and_then(|k| live::log(site.cache(), k))
        .map(|log| {
            live::loss_so_far(&log)
                .into_iter()
                .map(|(x, y)| [x, y])
                .collect()
        })
        .unwrap_or_default()
}

/// What the script polls on an instance page: status, progress, the loss a running stage has
/// logged so far (`loss`: `[[epoch, loss], ...]`), and the log so far (or, in `log_error`,
/// why it cannot be shown).
pub(crate) fn live_json(
    site: &Site,
    state: &PipelineState,
    s: &InstanceState,
) -> Result<Value, ServeError> {
    let (log, log_error) = match log_or_error(site, state, s) {
        Ok(log) => (log, None),
        Err(why) => (None, Some(why)),
    };
    Ok(json!({
        "id": s.index,
        "status": s.status.name(),
        "progress": s.progress,
        "loss": live_loss(site, s),
        "log": log,
        "log_error": log_error,
        "metrics": s.metrics,
    }))
}
