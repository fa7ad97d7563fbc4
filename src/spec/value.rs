//! TOML values that remember where they were written.
//!
//! The TOML parser's own tree borrows the text and has its own number types; this is the owned
//! tree the rest of the spec code works with, every node carrying its [`Loc`].

use std::sync::Arc;

use serde_json::Value;
use toml::de::{DeTable, DeValue};
use toml::Spanned;

use super::error::SpecError;
use super::source::{Loc, SourceFile};

/// A value and where it was written.
#[derive(Debug, Clone)]
pub struct SValue {
    /// The value.
    pub kind: SKind,
    /// Where.
    pub loc: Loc,
}

/// A key and where it was written.
#[derive(Debug, Clone)]
pub struct SKey {
    /// The key text.
    pub name: String,
    /// Where.
    pub loc: Loc,
}

/// The shape of a value.
#[derive(Debug, Clone)]
pub enum SKind {
    /// A string.
    Str(String),
    /// An integer.
    Int(i64),
    /// A float (never NaN or infinite: rejected when read).
    Float(f64),
    /// A boolean.
    Bool(bool),
    /// An array.
    Array(Vec<SValue>),
    /// A table, in the order written.
    Table(Vec<(SKey, SValue)>),
}

impl SValue {
    /// The TOML type name, for messages.
    pub(crate) fn type_name(&self) -> &'static str {
        match self.kind {
            SKind::Str(_) => "string",
            SKind::Int(_) => "integer",
            SKind::Float(_) => "float",
            SKind::Bool(_) => "boolean",
            SKind::Array(_) => "array",
            SKind::Table(_) => "table",
        }
    }

    /// The string, or an error saying a string was expected for `what`.
    pub(crate) fn expect_str(&self, what: &str) -> Result<&str, SpecError> {
        match &self.kind {
            SKind::Str(s) => Ok(s),
            _ => Err(SpecError::at(
                &self.loc,
                format!("{what} must be a string, found a {}", self.type_name()),
            )),
        }
    }

    /// The integer, or an error saying an integer of at least `min` was expected for `what`.
    pub(crate) fn expect_int_at_least(&self, what: &str, min: i64) -> Result<i64, SpecError> {
        match self.kind {
            SKind::Int(n) if n >= min => Ok(n),
            _ => Err(SpecError::at(
                &self.loc,
                format!(
                    "`{what}` must be an integer of at least {min}, found {}",
                    self.to_json()
                ),
            )),
        }
    }

    /// The table entries, or an error saying a table was expected for `what`.
    pub(crate) fn expect_table(&self, what: &str) -> Result<&[(SKey, SValue)], SpecError> {
        match &self.kind {
            SKind::Table(entries) => Ok(entries),
            _ => Err(SpecError::at(
                &self.loc,
                format!("{what} must be a table, found a {}", self.type_name()),
            )),
        }
    }

    /// `value` as if written at `loc` (a var's value where it is interpolated). JSON numbers
    /// that fit no `i64` become floats.
    pub(crate) fn from_json(value: &Value, loc: &Loc) -> SValue {
        let kind = match value {
            Value::String(s) => SKind::Str(s.clone()),
            Value::Number(n) => match n.as_i64() {
                Some(i) => SKind::Int(i),
                None => SKind::Float(n.as_f64().unwrap_or_default()),
            },
            Value::Bool(b) => SKind::Bool(*b),
            Value::Null => SKind::Str(String::new()),
            Value::Array(items) => {
                SKind::Array(items.iter().map(|v| SValue::from_json(v, loc)).collect())
            }
            Value::Object(entries) => SKind::Table(
                entries
                    .iter()
                    .map(|(k, v)| {
                        let key = SKey {
                            name: k.clone(),
                            loc: loc.clone(),
                        };
                        (key, SValue::from_json(v, loc))
                    })
                    .collect(),
            ),
        };
        SValue {
            kind,
            loc: loc.clone(),
        }
    }

    /// The plain JSON value (locations dropped).
    pub(crate) fn to_json(&self) -> Value {
        match &self.kind {
            SKind::Str(s) => Value::String(s.clone()),
            SKind::Int(i) => Value::from(*i),
            SKind::Float(f) => Value::from(*f),
            SKind::Bool(b) => Value::Bool(*b),
            SKind::Array(items) => Value::Array(items.iter().map(SValue::to_json).collect()),
            SKind::Table(entries) => Value::Object(
                entries
                    .iter()
                    .map(|(k, v)| (k.name.clone(), v.to_json()))
                    .collect(),
            ),
        }
    }
}

/// Parses a whole TOML document into a table of located values.
pub(crate) fn parse_document(file: &Arc<SourceFile>) -> Result<Vec<(SKey, SValue)>, SpecError> {
    let table = DeTable::parse(&file.text).map_err(|e| toml_error(file, &e))?;
    let span = table.span();
    match convert_table(file, table.get_ref(), span)?.kind {
        SKind::Table(entries) => Ok(entries),
        _ => unreachable!("a document converts to a table"),
    }
}

/// Parses one TOML value written on the command line (`0.8`, `"x"`, `[1, 2]`); text that is
/// not a TOML value is taken as a bare string, so `--set p=triplet` works unquoted.
pub(crate) fn parse_cli_value(file: &Arc<SourceFile>, span: std::ops::Range<usize>) -> SValue {
    let text = &file.text[span.clone()];
    match DeValue::parse(text) {
        Ok(value) => {
            let offset = span.start;
            match convert(file, &value, offset) {
                Ok(v) => v,
                Err(_) => bare_string(file, span),
            }
        }
        Err(_) => bare_string(file, span),
    }
}

fn bare_string(file: &Arc<SourceFile>, span: std::ops::Range<usize>) -> SValue {
    SValue {
        kind: SKind::Str(file.text[span.clone()].to_string()),
        loc: Loc::new(file, span),
    }
}

fn toml_error(file: &Arc<SourceFile>, error: &toml::de::Error) -> SpecError {
    let span = error.span().unwrap_or(0..0);
    SpecError::at(
        &Loc::new(file, span),
        format!("TOML syntax: {}", error.message().trim()),
    )
    .hint("see https://toml.io for the syntax")
}

fn convert_table(
    file: &Arc<SourceFile>,
    table: &DeTable<'_>,
    span: std::ops::Range<usize>,
) -> Result<SValue, SpecError> {
    let mut entries = Vec::with_capacity(table.len());
    for (key, value) in table.iter() {
        let skey = SKey {
            name: key.get_ref().to_string(),
            loc: Loc::new(file, key.span()),
        };
        entries.push((skey, convert(file, value, 0)?));
    }
    entries.sort_by_key(|(k, _)| k.loc.span.start);
    Ok(SValue {
        kind: SKind::Table(entries),
        loc: Loc::new(file, span),
    })
}

fn convert(
    file: &Arc<SourceFile>,
    value: &Spanned<DeValue<'_>>,
    offset: usize,
) -> Result<SValue, SpecError> {
    let span = value.span();
    let span = span.start + offset..span.end + offset;
    let loc = Loc::new(file, span.clone());
    let kind = match value.get_ref() {
        DeValue::String(s) => SKind::Str(s.to_string()),
        DeValue::Integer(i) => {
            let digits = i.as_str().replace('_', "");
            let parsed = i64::from_str_radix(&digits, i.radix())
                .map_err(|_| SpecError::at(&loc, "integer out of range (64-bit signed)"))?;
            SKind::Int(parsed)
        }
        DeValue::Float(f) => {
            let text = f.as_str().replace('_', "");
            let parsed: f64 = match text.trim_start_matches('+') {
                "inf" => f64::INFINITY,
                "-inf" => f64::NEG_INFINITY,
                t => t.parse().map_err(|_| SpecError::at(&loc, "not a number"))?,
            };
            if parsed.is_nan() {
                return Err(SpecError::at(&loc, "NaN is not allowed in a pipeline")
                    .hint("NaN never equals itself, so it could never hit the cache"));
            }
            if parsed.is_infinite() {
                return Err(SpecError::at(&loc, "infinity is not allowed in a pipeline")
                    .hint("JSON has no infinity, so it would silently become null in the key; write a large finite number"));
            }
            SKind::Float(parsed)
        }
        DeValue::Boolean(b) => SKind::Bool(*b),
        DeValue::Datetime(_) => {
            return Err(
                SpecError::at(&loc, "dates and times are not supported in pipelines")
                    .hint("write it as a string"),
            )
        }
        DeValue::Array(items) => SKind::Array(
            items
                .iter()
                .map(|v| convert(file, v, offset))
                .collect::<Result<_, _>>()?,
        ),
        DeValue::Table(table) => {
            let mut entries = Vec::with_capacity(table.len());
            for (key, v) in table.iter() {
                let ks = key.span();
                let skey = SKey {
                    name: key.get_ref().to_string(),
                    loc: Loc::new(file, ks.start + offset..ks.end + offset),
                };
                entries.push((skey, convert(file, v, offset)?));
            }
            entries.sort_by_key(|(k, _)| k.loc.span.start);
            SKind::Table(entries)
        }
    };
    Ok(SValue { kind, loc })
}
