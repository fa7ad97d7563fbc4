//! The front page: every pipeline under `pipelines/` with its instance counts (cached, to run,
//! running, failed); a file that does not load shows its error instead.

use std::fmt::Write;

use crate::serve::compute::pipeline_state;
use crate::serve::error::ServeError;
use crate::serve::html::{esc, page, seg};
use crate::serve::site::Site;
use crate::serve::state::Counts;

/// The page.
pub fn render(site: &Site) -> Result<String, ServeError> {
    let files = site.pipelines();
    let mut body = format!(
        "<p class=\"muted\">Project <code>{}</code>, cache <code>{}</code>.</p>\n",
        esc(&site.project_dir().display().to_string()),
        esc(&site.cache().dir().display().to_string())
    );
    if files.is_empty() {
        body.push_str(
            "<p>No pipeline files: put one under <code>pipelines/</code> (see the README's \
             \"The pipeline language\").</p>",
        );
        return Ok(page("Pipelines", &[], &body, None));
    }
    body.push_str(
        "<div class=\"scroll\"><table class=\"grid\" id=\"pipelines\"><thead><tr><th>file</th><th>pipeline</th>\
         <th>stages</th><th>instances</th><th>cached</th><th>to run</th><th>running</th>\
         <th>failed</th></tr></thead><tbody>\n",
    );
    for file in files {
        let href = format!("/p/{}", seg(&file.name));
        match pipeline_state(site, &file.name) {
            Ok(state) => {
                let c = Counts::of(&state.instances);
                let _ = writeln!(
                    body,
                    "<tr data-pipeline=\"{}\"><td><a href=\"{}\">{}</a></td><td>{}</td><td class=\"num\">{}</td>\
                     <td class=\"num\">{}</td><td class=\"num cached\">{}</td><td class=\"num to-run\">{}</td>\
                     <td class=\"num running\">{}</td><td class=\"num failed\">{}</td></tr>",
                    esc(&file.name),
                    esc(&href),
                    esc(&file.name),
                    esc(&state.plan.spec().name),
                    state.plan.spec().stages.len(),
                    state.instances.len(),
                    c.cached,
                    c.to_run,
                    c.running,
                    c.failed
                );
            }
            Err(ServeError::Pipeline(message)) => {
                let _ = writeln!(
                    body,
                    "<tr data-pipeline=\"{}\"><td><a href=\"{}\">{}</a></td><td colspan=\"7\" class=\"error\"><pre>{}</pre></td></tr>",
                    esc(&file.name),
                    esc(&href),
                    esc(&file.name),
                    esc(&message)
                );
            }
            Err(e) => return Err(e),
        }
    }
    body.push_str("</tbody></table></div>\n");
    Ok(page("Pipelines", &[], &body, None))
}
