//! The stylesheet and the script, embedded in the binary at build time from `assets/serve/`:
//! the dashboard loads nothing from anywhere else (no CDN, no web font, no npm build). Both
//! are this project's own code, under its licence (see `assets/serve/LICENSE.md`).

const CSS: &str = include_str!("../../assets/serve/app.css");
const JS: &str = include_str!("../../assets/serve/app.js");

/// The asset called `name` with its content type.
pub fn get(name: &str) -> Option<(&'static str, &'static str)> {
    match name {
        "app.css" => Some(("text/css; charset=utf-8", CSS)),
        "app.js" => Some(("text/javascript; charset=utf-8", JS)),
        _ => None,
    }
}
