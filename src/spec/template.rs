//! Parameter values with `${vars.x}` and `${sweep.x}` interpolation.
//!
//! `${vars.x}` is replaced while the pipeline is resolved; `${sweep.x}` stays a placeholder
//! until an instance binds the axis. A string that is exactly one placeholder takes the bound
//! value with its type (a `${sweep.res}` that is 32 is the integer 32); a placeholder inside
//! longer text is formatted into the string.
//!
//! A list element that is exactly one `${vars.x}` holding a list is spliced: with
//! `query_res = [224, 160]`, `["${vars.db_res}", "${vars.query_res}"]` is `[448, 224, 160]`, so
//! a report's `order` follows the vars instead of repeating their values. `[sweep]` axes take
//! vars the same way ([`vars_in_sweep`]): `query_res = "${vars.query_res}"` makes the var the
//! one place the resolutions are written.

use std::collections::{BTreeMap, BTreeSet};

use serde_json::Value;

use super::error::SpecError;
use super::source::Loc;
use super::value::{SKey, SKind, SValue};

/// A parameter value that may still refer to sweep axes.
#[derive(Debug, Clone)]
pub enum Tpl {
    /// A plain value.
    Lit(Value),
    /// Exactly `${sweep.AXIS}`: the bound value, type kept.
    Axis(String, Loc),
    /// Text with placeholders inside: always a string.
    Concat(Vec<Piece>, Loc),
    /// An array of templates.
    Array(Vec<Tpl>),
    /// A table of templates.
    Table(BTreeMap<String, Tpl>),
    /// Exactly `${search.NAME.best.DIM}`: the winning trial's value of a search dimension,
    /// known once the search has finished ([`crate::exec::search`] replaces it).
    Best {
        /// The search.
        search: String,
        /// The dimension.
        dim: String,
        /// Where it is written.
        loc: Loc,
    },
}

/// A piece of a [`Tpl::Concat`].
#[derive(Debug, Clone)]
pub enum Piece {
    /// Literal text.
    Text(String),
    /// A sweep axis.
    Axis(String),
}

/// A lookup of the pipeline's `[vars]`.
pub(crate) type Vars = BTreeMap<String, Value>;

impl Tpl {
    /// Builds a template from a written value, replacing `${vars.x}` from `vars`.
    /// `known_axes` are the sweep axes; any other reference is an error at its place.
    pub fn parse(value: &SValue, vars: &Vars, known_axes: &[&str]) -> Result<Tpl, SpecError> {
        match &value.kind {
            SKind::Str(text) if text.contains("${") => {
                parse_string(text, &value.loc, vars, known_axes)
            }
            SKind::Array(items) => {
                let mut out = Vec::with_capacity(items.len());
                for item in items {
                    match spliced(item, vars)? {
                        Some(values) => out.extend(values.into_iter().map(Tpl::Lit)),
                        None => out.push(Tpl::parse(item, vars, known_axes)?),
                    }
                }
                Ok(Tpl::Array(out))
            }
            SKind::Table(entries) => Ok(Tpl::Table(
                entries
                    .iter()
                    .map(|(k, v)| Ok((k.name.clone(), Tpl::parse(v, vars, known_axes)?)))
                    .collect::<Result<_, SpecError>>()?,
            )),
            _ => Ok(Tpl::Lit(value.to_json())),
        }
    }

    /// The sweep axes this template refers to.
    pub fn axes(&self, into: &mut BTreeSet<String>) {
        match self {
            Tpl::Lit(_) => {}
            Tpl::Axis(axis, _) => {
                into.insert(axis.clone());
            }
            Tpl::Concat(pieces, _) => {
                for piece in pieces {
                    if let Piece::Axis(axis) = piece {
                        into.insert(axis.clone());
                    }
                }
            }
            Tpl::Array(items) => items.iter().for_each(|t| t.axes(into)),
            Tpl::Table(entries) => entries.values().for_each(|t| t.axes(into)),
            Tpl::Best { .. } => {}
        }
    }

    /// The `${search.NAME.best.DIM}` references in this template: (search, dim, where).
    pub(crate) fn best_refs<'a>(&'a self, into: &mut Vec<(&'a str, &'a str, &'a Loc)>) {
        match self {
            Tpl::Best { search, dim, loc } => into.push((search, dim, loc)),
            Tpl::Array(items) => items.iter().for_each(|t| t.best_refs(into)),
            Tpl::Table(entries) => entries.values().for_each(|t| t.best_refs(into)),
            _ => {}
        }
    }

    /// This template with every `${search.NAME.best.DIM}` replaced by `best(search, dim)`.
    pub(crate) fn with_best(&self, best: &dyn Fn(&str, &str) -> Option<Value>) -> Tpl {
        match self {
            Tpl::Best { search, dim, .. } => match best(search, dim) {
                Some(v) => Tpl::Lit(v),
                None => self.clone(),
            },
            Tpl::Array(items) => Tpl::Array(items.iter().map(|t| t.with_best(best)).collect()),
            Tpl::Table(entries) => Tpl::Table(
                entries
                    .iter()
                    .map(|(k, t)| (k.clone(), t.with_best(best)))
                    .collect(),
            ),
            other => other.clone(),
        }
    }

    /// The value with every axis bound. Axes missing from `binding` are a bug in expansion
    /// (every referenced axis is bound there), reported as a string placeholder left intact.
    pub fn bind(&self, binding: &BTreeMap<String, Value>) -> Value {
        match self {
            Tpl::Lit(v) => v.clone(),
            Tpl::Axis(axis, _) => binding.get(axis).cloned().unwrap_or(Value::Null),
            Tpl::Concat(pieces, _) => Value::String(
                pieces
                    .iter()
                    .map(|p| match p {
                        Piece::Text(t) => t.clone(),
                        Piece::Axis(a) => match binding.get(a) {
                            Some(Value::String(s)) => s.clone(),
                            Some(v) => v.to_string(),
                            None => format!("${{sweep.{a}}}"),
                        },
                    })
                    .collect(),
            ),
            Tpl::Array(items) => Value::Array(items.iter().map(|t| t.bind(binding)).collect()),
            Tpl::Table(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, t)| (k.clone(), t.bind(binding)))
                    .collect(),
            ),
            Tpl::Best { .. } => Value::Null,
        }
    }
}

/// The name in `text` when it is exactly one `${vars.NAME}` (spaces around allowed).
fn whole_var(text: &str) -> Option<&str> {
    let inner = text.trim().strip_prefix("${")?.strip_suffix('}')?;
    if inner.contains(['{', '}']) {
        return None;
    }
    inner.trim().strip_prefix("vars.")
}

/// The items to splice in place of list element `item`: those of the list var it names when
/// it is exactly one `${vars.NAME}` holding a list; `None` for any other element.
fn spliced(item: &SValue, vars: &Vars) -> Result<Option<Vec<Value>>, SpecError> {
    let SKind::Str(text) = &item.kind else {
        return Ok(None);
    };
    let Some(name) = whole_var(text) else {
        return Ok(None);
    };
    match vars.get(name) {
        Some(Value::Array(values)) => Ok(Some(values.clone())),
        Some(_) => Ok(None),
        None => Err(SpecError::at(
            &item.loc,
            format!("unknown variable `{name}` in \"{text}\""),
        )
        .suggest(name, vars.keys().map(String::as_str))),
    }
}

/// `[sweep]` with its `${vars.x}` references replaced: an axis written `"${vars.x}"` takes the
/// var's list (a zip group member too), and a whole-var element of an axis's list splices a
/// list var's items, each at the place the reference was written so later errors (a value
/// listed twice, an axis that is not a list) point there. A sweep axis cannot refer to a sweep
/// axis, and text around a reference is an error: axis values are plain values.
pub(crate) fn vars_in_sweep(
    entries: &[(SKey, SValue)],
    vars: &Vars,
) -> Result<Vec<(SKey, SValue)>, SpecError> {
    entries
        .iter()
        .map(|(key, value)| Ok((key.clone(), sweep_value(value, vars)?)))
        .collect()
}

fn sweep_value(value: &SValue, vars: &Vars) -> Result<SValue, SpecError> {
    let kind = match &value.kind {
        SKind::Str(text) if text.contains("${") => {
            return match whole_var(text) {
                Some(name) => match vars.get(name) {
                    Some(v) => Ok(SValue::from_json(v, &value.loc)),
                    None => Err(SpecError::at(
                        &value.loc,
                        format!("unknown variable `{name}` in \"{text}\""),
                    )
                    .suggest(name, vars.keys().map(String::as_str))),
                },
                None => Err(SpecError::at(
                    &value.loc,
                    format!("sweep values cannot interpolate \"{text}\""),
                )
                .hint("a sweep axis is a list of plain values, or exactly `\"${vars.NAME}\"`")),
            };
        }
        SKind::Array(items) => {
            let mut out = Vec::with_capacity(items.len());
            for item in items {
                match spliced(item, vars)? {
                    Some(values) => {
                        out.extend(values.iter().map(|v| SValue::from_json(v, &item.loc)))
                    }
                    None => out.push(sweep_value(item, vars)?),
                }
            }
            SKind::Array(out)
        }
        SKind::Table(members) => SKind::Table(vars_in_sweep(members, vars)?),
        other => other.clone(),
    };
    Ok(SValue {
        kind,
        loc: value.loc.clone(),
    })
}

fn parse_string(text: &str, loc: &Loc, vars: &Vars, known_axes: &[&str]) -> Result<Tpl, SpecError> {
    let mut pieces: Vec<Piece> = Vec::new();
    let mut rest = text;
    let mut whole_var: Option<Value> = None;
    let mut count = 0;
    while let Some(start) = rest.find("${") {
        if start > 0 {
            pieces.push(Piece::Text(rest[..start].to_string()));
        }
        let after = &rest[start + 2..];
        let end = after.find('}').ok_or_else(|| {
            SpecError::at(loc, format!("unclosed interpolation in \"{text}\""))
                .hint("write `${vars.NAME}` or `${sweep.AXIS}`")
        })?;
        let reference = after[..end].trim();
        count += 1;
        match reference.split_once('.') {
            Some(("vars", name)) => {
                let value = vars.get(name).ok_or_else(|| {
                    SpecError::at(loc, format!("unknown variable `{name}` in \"{text}\""))
                        .suggest(name, vars.keys().map(String::as_str))
                })?;
                whole_var = Some(value.clone());
                pieces.push(Piece::Text(match value {
                    Value::String(s) => s.clone(),
                    v => v.to_string(),
                }));
            }
            Some(("sweep", axis)) => {
                if !known_axes.contains(&axis) {
                    return Err(SpecError::at(
                        loc,
                        format!("unknown sweep axis `{axis}` in \"{text}\""),
                    )
                    .suggest(axis, known_axes.iter().copied())
                    .hint_if_none("declare it under [sweep], e.g. `seed = [0, 1, 2]`"));
                }
                pieces.push(Piece::Axis(axis.to_string()));
            }
            Some(("search", rest)) => return parse_best(text, rest, loc),
            _ => {
                return Err(SpecError::at(
                    loc,
                    format!("bad interpolation `${{{reference}}}` in \"{text}\""),
                )
                .hint(
                    "only `${vars.NAME}`, `${sweep.AXIS}` and `${search.NAME.best.DIM}` can be \
                     interpolated",
                ))
            }
        }
        rest = &after[end + 1..];
    }
    if !rest.is_empty() {
        pieces.push(Piece::Text(rest.to_string()));
    }
    let single = count == 1 && text.trim().starts_with("${") && text.trim().ends_with('}');
    match (single, pieces.as_slice()) {
        (true, [Piece::Axis(axis)]) => Ok(Tpl::Axis(axis.clone(), loc.clone())),
        (true, [Piece::Text(_)]) => Ok(Tpl::Lit(whole_var.unwrap_or(Value::Null))),
        _ if pieces.iter().all(|p| matches!(p, Piece::Text(_))) => Ok(Tpl::Lit(Value::String(
            pieces
                .into_iter()
                .map(|p| match p {
                    Piece::Text(t) => t,
                    Piece::Axis(_) => unreachable!(),
                })
                .collect(),
        ))),
        _ => Ok(Tpl::Concat(pieces, loc.clone())),
    }
}

/// `${search.NAME.best.DIM}`, which must be the whole value (the winner's value keeps its
/// type).
fn parse_best(text: &str, rest: &str, loc: &Loc) -> Result<Tpl, SpecError> {
    let trimmed = text.trim();
    let whole =
        trimmed.starts_with("${") && trimmed.ends_with('}') && trimmed.matches("${").count() == 1;
    let parts: Vec<&str> = rest.split('.').collect();
    match (whole, parts.as_slice()) {
        (true, [search, "best", dim]) if !search.is_empty() && !dim.is_empty() => Ok(Tpl::Best {
            search: search.to_string(),
            dim: dim.to_string(),
            loc: loc.clone(),
        }),
        (false, _) => Err(SpecError::at(
            loc,
            format!("`${{search.{rest}}}` must be the whole value, found \"{text}\""),
        )
        .hint("write the reference alone: `\"${search.NAME.best.DIM}\"`")),
        _ => Err(SpecError::at(
            loc,
            format!("bad search reference `${{search.{rest}}}` in \"{text}\""),
        )
        .hint("write `${search.NAME.best.DIM}`, DIM a name in [search.NAME.space]")),
    }
}

trait HintIfNone {
    fn hint_if_none(self, hint: &str) -> Self;
}

impl HintIfNone for SpecError {
    fn hint_if_none(self, hint: &str) -> Self {
        if self.hint.is_some() {
            self
        } else {
            self.hint(hint)
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use super::*;
    use crate::spec::source::SourceFile;

    fn sval(text: &str) -> SValue {
        let file = Arc::new(SourceFile {
            path: "t.toml".into(),
            text: text.into(),
        });
        SValue {
            kind: SKind::Str(text.into()),
            loc: Loc::new(&file, 0..text.len()),
        }
    }

    #[test]
    fn whole_placeholder_keeps_the_type() {
        let vars = Vars::from([("res".to_string(), Value::from(64))]);
        let t = Tpl::parse(&sval("${vars.res}"), &vars, &[]).unwrap();
        assert_eq!(t.bind(&BTreeMap::new()), Value::from(64));
        let t = Tpl::parse(&sval("${sweep.seed}"), &vars, &["seed"]).unwrap();
        let binding = BTreeMap::from([("seed".to_string(), Value::from(2))]);
        assert_eq!(t.bind(&binding), Value::from(2));
    }

    #[test]
    fn embedded_placeholder_formats_into_text() {
        let vars = Vars::from([("name".to_string(), Value::from("cub"))]);
        let t = Tpl::parse(&sval("data/${vars.name}/s${sweep.seed}"), &vars, &["seed"]).unwrap();
        let binding = BTreeMap::from([("seed".to_string(), Value::from(1))]);
        assert_eq!(t.bind(&binding), Value::from("data/cub/s1"));
    }

    fn array(items: &[&str]) -> SValue {
        let mut v = sval(items[0]);
        v.kind = SKind::Array(items.iter().map(|t| sval(t)).collect());
        v
    }

    #[test]
    fn a_whole_list_var_in_a_list_is_spliced_and_other_elements_stay() {
        let vars = Vars::from([
            ("db".to_string(), Value::from(448)),
            ("q".to_string(), serde_json::json!([224, 160])),
        ]);
        let t = Tpl::parse(
            &array(&["${vars.db}", "${vars.q}", "x ${vars.q}"]),
            &vars,
            &[],
        )
        .unwrap();
        assert_eq!(
            t.bind(&BTreeMap::new()),
            serde_json::json!([448, 224, 160, "x [224,160]"])
        );
        let t = Tpl::parse(&sval("${vars.q}"), &vars, &[]).unwrap();
        assert_eq!(t.bind(&BTreeMap::new()), serde_json::json!([224, 160]));
        let e = Tpl::parse(&array(&["${vars.qq}"]), &vars, &[]).unwrap_err();
        assert!(e.message.contains("unknown variable `qq`"), "{e}");
        assert_eq!(e.hint.as_deref(), Some("did you mean `q`?"));
    }

    #[test]
    fn sweep_axes_take_vars_whole_or_spliced_and_refuse_anything_else() {
        let vars = Vars::from([
            ("db".to_string(), Value::from(448)),
            ("q".to_string(), serde_json::json!([224, 160])),
        ]);
        let key = SKey {
            name: "res".into(),
            loc: sval("res").loc,
        };
        let axis =
            |value: SValue| vars_in_sweep(&[(key.clone(), value)], &vars).map(|e| e[0].1.to_json());
        assert_eq!(
            axis(sval("${vars.q}")).unwrap(),
            serde_json::json!([224, 160])
        );
        assert_eq!(
            axis(array(&["${vars.db}", "${vars.q}"])).unwrap(),
            serde_json::json!([448, 224, 160])
        );
        let e = axis(sval("r${vars.db}")).unwrap_err();
        assert!(e.message.contains("sweep values cannot interpolate"), "{e}");
        let e = axis(array(&["${sweep.seed}"])).unwrap_err();
        assert!(e.message.contains("sweep values cannot interpolate"), "{e}");
        let e = axis(sval("${vars.qq}")).unwrap_err();
        assert_eq!(e.hint.as_deref(), Some("did you mean `q`?"));
    }

    #[test]
    fn unknown_references_are_errors_with_a_suggestion() {
        let vars = Vars::from([("db_res".to_string(), Value::from(64))]);
        let e = Tpl::parse(&sval("${vars.db_rez}"), &vars, &[]).unwrap_err();
        assert!(e.message.contains("unknown variable `db_rez`"), "{e}");
        assert_eq!(e.hint.as_deref(), Some("did you mean `db_res`?"));
        let e = Tpl::parse(&sval("${env.HOME}"), &vars, &[]).unwrap_err();
        assert!(e.message.contains("bad interpolation"), "{e}");
        let e = Tpl::parse(&sval("${sweep.seed"), &vars, &["seed"]).unwrap_err();
        assert!(e.message.contains("unclosed"), "{e}");
    }
}
