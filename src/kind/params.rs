//! Parameter declarations of stage kinds, and the resolved parameter values a stage receives.
//!
//! Every kind declares its parameters up front (name, type, default, doc). The declarations
//! serve three readers: the spec resolver (unknown names, "did you mean", wrong types, missing
//! required values are found before anything runs), `asymflow kinds KIND` (the reference a user
//! reads), and the stage itself (typed getters on [`Params`], which cannot fail on a value the
//! resolver accepted).
//!
//! Values are `serde_json::Value`s: TOML values map onto them without loss for everything a
//! pipeline holds (no datetimes), and the cache key is canonical JSON anyway.

use std::collections::BTreeMap;

use serde_json::Value;

/// The type of a parameter, checked when the pipeline is resolved.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum ParamType {
    /// A whole number (`12`).
    Int,
    /// A number; integers are accepted (`1` and `1.0` are the same value in the key).
    Float,
    /// `true` or `false`.
    Bool,
    /// Free text.
    Str,
    /// One of a fixed set of strings.
    Choice(&'static [&'static str]),
    /// A path to a file or folder, relative to the pipeline file's project (or absolute).
    /// Never part of the cache key as text: the stage's fingerprint covers the content, so
    /// moving the data keeps every cache hit.
    Path,
    /// A list whose elements all have the given type.
    List(&'static ParamType),
    /// An input size: an integer (a square; declare `at_least(1)`) or `[height, width]`, two
    /// positive integers ([`super::Resolution`]).
    Resolution,
    /// Any TOML value (tables included); validated by the stage itself.
    Any,
}

impl ParamType {
    /// Whether `value` is of this type.
    pub fn accepts(&self, value: &Value) -> bool {
        match (self, value) {
            (ParamType::Int, Value::Number(n)) => n.is_i64() || n.is_u64(),
            (ParamType::Float, Value::Number(_)) => true,
            (ParamType::Bool, Value::Bool(_)) => true,
            (ParamType::Str | ParamType::Path, Value::String(_)) => true,
            (ParamType::Choice(options), Value::String(s)) => options.contains(&s.as_str()),
            (ParamType::List(inner), Value::Array(items)) => items.iter().all(|v| inner.accepts(v)),
            // An integer's range (`>= 1`) is the declaration's, checked and reported as every
            // number's; a pair's sides must be positive here.
            (ParamType::Resolution, Value::Number(n)) => n.is_i64() || n.is_u64(),
            (ParamType::Resolution, v) => super::Resolution::from_value(v).is_some(),
            (ParamType::Any, _) => true,
            _ => false,
        }
    }

    /// A short human name: `int`, `float`, `"a" | "b"`, `list of int`.
    pub fn describe(&self) -> String {
        match self {
            ParamType::Int => "int".into(),
            ParamType::Float => "float".into(),
            ParamType::Bool => "bool".into(),
            ParamType::Str => "string".into(),
            ParamType::Path => "path".into(),
            ParamType::Choice(options) => options
                .iter()
                .map(|o| format!("\"{o}\""))
                .collect::<Vec<_>>()
                .join(" | "),
            ParamType::List(inner) => format!("list of {}", inner.describe()),
            ParamType::Resolution => "int or [height, width]".into(),
            ParamType::Any => "any".into(),
        }
    }
}

/// The values a number parameter may take (`epochs >= 1`, `0 < crop_min <= 1`), checked when
/// the pipeline is resolved, so `epochs = 0` is a mistake in the file (with its line and
/// column), not a failed stage. A list's range holds for each of its numbers. Declared once,
/// with the parameter, from what the code that reads it needs.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Range {
    /// The lowest value.
    pub low: f64,
    /// Whether `low` itself is excluded.
    pub low_open: bool,
    /// The highest value (infinite for none).
    pub high: f64,
    /// Whether `high` itself is excluded.
    pub high_open: bool,
}

impl Range {
    /// `low` and above.
    pub const fn at_least(low: f64) -> Range {
        Range {
            low,
            low_open: false,
            high: f64::INFINITY,
            high_open: false,
        }
    }

    /// Above `low` (`lr > 0`).
    pub const fn above(low: f64) -> Range {
        Range {
            low,
            low_open: true,
            high: f64::INFINITY,
            high_open: false,
        }
    }

    /// From `low` to `high`, both included (`jitter` in `[0, 1]`).
    pub const fn closed(low: f64, high: f64) -> Range {
        Range {
            low,
            low_open: false,
            high,
            high_open: false,
        }
    }

    /// Above `low`, at most `high` (a share or a rate: `(0, 1]`).
    pub const fn above_to(low: f64, high: f64) -> Range {
        Range {
            low,
            low_open: true,
            high,
            high_open: false,
        }
    }

    /// From `low` (included) to below `high` (`non_mated` in `[0, 1)`).
    pub const fn from_below(low: f64, high: f64) -> Range {
        Range {
            low,
            low_open: false,
            high,
            high_open: true,
        }
    }

    /// Strictly between `low` and `high` (`train_fraction` in `(0, 1)`).
    pub const fn between(low: f64, high: f64) -> Range {
        Range {
            low,
            low_open: true,
            high,
            high_open: true,
        }
    }

    /// Whether `value` is in the range (never a NaN or an infinity).
    pub fn contains(&self, value: f64) -> bool {
        let above = if self.low_open {
            value > self.low
        } else {
            value >= self.low
        };
        let below = if self.high_open {
            value < self.high
        } else {
            value <= self.high
        };
        value.is_finite() && above && below
    }

    /// `>= 1`, `> 0`, `in (0, 1]`.
    pub fn describe(&self) -> String {
        if self.high.is_infinite() {
            format!("{} {}", if self.low_open { ">" } else { ">=" }, self.low)
        } else {
            format!(
                "in {}{}, {}{}",
                if self.low_open { "(" } else { "[" },
                self.low,
                self.high,
                if self.high_open { ")" } else { "]" }
            )
        }
    }
}

/// One declared parameter of a stage kind.
#[derive(Debug, Clone, Copy)]
pub struct ParamDecl {
    /// The name used under `params` in a pipeline file.
    pub name: &'static str,
    /// Its type.
    pub ty: ParamType,
    /// The default as a JSON literal (`"0.7"`, `"\"triplet\""`, `"[1, 5]"`), or `None` when the
    /// parameter is required.
    pub default: Option<&'static str>,
    /// One line for `asymflow kinds KIND`.
    pub doc: &'static str,
    /// The values a number (or each number of a list) may take, when limited.
    pub range: Option<Range>,
    /// The shared group it belongs to (`"optimiser and schedule"`), for `asymflow kinds`;
    /// `None` for a kind's own parameter.
    pub group: Option<&'static str>,
    /// Earlier names a pipeline may still use ([`Alias`]).
    pub aliases: &'static [Alias],
    /// Whether the parameter enters the key while it holds its default. `false` for a
    /// parameter added to a kind after results were cached under keys without it
    /// ([`ParamDecl::added_later`]).
    pub keyed_at_default: bool,
}

/// An earlier name of a parameter, kept working with a deprecation warning: the resolver
/// rewrites it to the current name(s) before anything is keyed, so an old file and its
/// rewritten form have the same keys.
#[derive(Debug, Clone, Copy)]
pub struct Alias {
    /// The old name.
    pub old: &'static str,
    /// What to write instead, for the warning (`"schedule = \"one-cycle\" | \"constant\""`).
    pub instead: &'static str,
    /// How the old value maps onto the current names.
    pub(crate) rewrite: AliasRewrite,
}

/// How an [`Alias`]'s value maps onto current parameters.
#[derive(Debug, Clone, Copy)]
pub(crate) enum AliasRewrite {
    /// A plain value mapped to one or more `(name, value)` pairs (a boolean that became a
    /// choice); `Err` says which values the old name took.
    Map(AliasMap),
}

/// An [`AliasRewrite::Map`]: the old value to `(current name, value)` pairs, or why not.
pub(crate) type AliasMap = fn(&Value) -> Result<Vec<(&'static str, Value)>, String>;

impl ParamDecl {
    /// A required parameter.
    pub const fn required(name: &'static str, ty: ParamType, doc: &'static str) -> Self {
        ParamDecl {
            name,
            ty,
            default: None,
            doc,
            range: None,
            group: None,
            aliases: &[],
            keyed_at_default: true,
        }
    }

    /// A parameter with a default, given as a JSON literal.
    pub const fn optional(
        name: &'static str,
        ty: ParamType,
        default: &'static str,
        doc: &'static str,
    ) -> Self {
        ParamDecl {
            name,
            ty,
            default: Some(default),
            doc,
            range: None,
            group: None,
            aliases: &[],
            keyed_at_default: true,
        }
    }

    /// Limits a number (or each number of a list) to `range`.
    pub const fn within(self, range: Range) -> Self {
        ParamDecl {
            range: Some(range),
            ..self
        }
    }

    /// Limits a number to `low` and above (`epochs`: 1).
    pub const fn at_least(self, low: f64) -> Self {
        self.within(Range::at_least(low))
    }

    /// Limits a number to a share: above 0, at most 1 (`crop_min`).
    pub const fn share(self) -> Self {
        self.within(Range::above_to(0.0, 1.0))
    }

    /// Marks it as a member of the shared group `group`.
    pub const fn in_group(self, group: &'static str) -> Self {
        ParamDecl {
            group: Some(group),
            ..self
        }
    }

    /// Keeps earlier names working ([`Alias`]).
    pub(crate) const fn aliased(self, aliases: &'static [Alias]) -> Self {
        ParamDecl { aliases, ..self }
    }

    /// Marks a parameter added to a kind after results were cached: while it holds its
    /// default it is left out of the key, so every existing key stays as it was. Sound only
    /// when the default computes exactly what the kind computed before the parameter existed
    /// (its `IMPL_VERSION` unchanged); a later change of the default needs an `IMPL_VERSION`
    /// bump, as any default's change does. See `cache/key.rs`.
    pub const fn added_later(self) -> Self {
        ParamDecl {
            keyed_at_default: false,
            ..self
        }
    }

    /// Whether `value` of this parameter enters the key: always, unless the parameter was
    /// [`added_later`](Self::added_later) and `value` is its default (compared canonically,
    /// so `0` and `0.0` are the same value).
    pub fn keyed_value(&self, value: &Value) -> bool {
        if self.keyed_at_default {
            return true;
        }
        self.default_value()
            .is_none_or(|default| !same_value(&default, value))
    }

    /// The parsed default value.
    ///
    /// # Panics
    /// When the declared literal is not JSON: a programming error caught by the registry's
    /// unit test over every kind, never by a user.
    pub fn default_value(&self) -> Option<Value> {
        self.default.map(|literal| {
            serde_json::from_str(literal).unwrap_or_else(|e| {
                panic!(
                    "default of parameter `{}` is not JSON ({literal}): {e}",
                    self.name
                )
            })
        })
    }
}

/// Whether two values are equal as the key sees them: numbers by value (`1` is `1.0`),
/// lists and tables element by element.
fn same_value(a: &Value, b: &Value) -> bool {
    match (a, b) {
        (Value::Number(x), Value::Number(y)) => x.as_f64() == y.as_f64(),
        (Value::Array(x), Value::Array(y)) => {
            x.len() == y.len() && x.iter().zip(y).all(|(x, y)| same_value(x, y))
        }
        (Value::Object(x), Value::Object(y)) => {
            x.len() == y.len()
                && x.iter()
                    .all(|(k, v)| y.get(k).is_some_and(|w| same_value(v, w)))
        }
        _ => a == b,
    }
}

/// How many declarations `parts` hold together (for [`concat`]).
pub const fn total(parts: &[&[ParamDecl]]) -> usize {
    let mut n = 0;
    let mut i = 0;
    while i < parts.len() {
        n += parts[i].len();
        i += 1;
    }
    n
}

/// `parts` in order as one array of `N = total(parts)` declarations: a kind's own parameters
/// and the shared groups it takes become its one declaration list at compile time
/// ([`crate::param_list`]).
pub const fn concat<const N: usize>(parts: &[&[ParamDecl]]) -> [ParamDecl; N] {
    let mut out = [ParamDecl::optional("", ParamType::Any, "null", ""); N];
    let mut n = 0;
    let mut i = 0;
    while i < parts.len() {
        let mut j = 0;
        while j < parts[i].len() {
            out[n] = parts[i][j];
            n += 1;
            j += 1;
        }
        i += 1;
    }
    assert!(n == N, "concat: N must be total(parts)");
    out
}

/// A kind's declaration list from its own parameters and the shared groups it takes:
/// `param_list!(OWN, &optim::params(DEFAULTS), ...)`, built at compile time.
#[macro_export]
macro_rules! param_list {
    ($($part:expr),+ $(,)?) => {{
        const PARTS: &[&[$crate::kind::ParamDecl]] = &[$($part),+];
        const N: usize = $crate::kind::params_total(PARTS);
        const LIST: [$crate::kind::ParamDecl; N] = $crate::kind::params_concat::<N>(PARTS);
        &LIST
    }};
}

/// One declared input slot of a stage kind (`inputs = { teacher = "teacher" }`).
#[derive(Debug, Clone, Copy)]
pub struct InputDecl {
    /// The slot name used under `inputs`.
    pub name: &'static str,
    /// Whether a pipeline must connect it.
    pub required: bool,
    /// The artifact types a connected stage must produce (one of them), checked when the
    /// pipeline is resolved.
    pub accepts: &'static [super::Artifact],
    /// One line for `asymflow kinds KIND`.
    pub doc: &'static str,
}

/// The resolved parameters of one stage instance: every declared parameter present (defaults
/// filled in), every value of its declared type, sweep variables bound.
#[derive(Debug, Clone, Default, PartialEq, serde::Serialize, serde::Deserialize)]
pub struct Params(pub BTreeMap<String, Value>);

/// A parameter a stage asked for is absent or of another type. The resolver makes this
/// impossible for declared parameters; it surfaces only for a stage reading a name it never
/// declared, or reading an upstream stage's parameters.
#[derive(Debug, thiserror::Error)]
#[error("parameter `{name}`: expected {expected}")]
pub struct ParamError {
    /// The parameter asked for.
    pub name: String,
    /// What the caller expected.
    pub expected: &'static str,
}

impl Params {
    /// The declared defaults of `decls`, the parameters a kind gets when none is written.
    pub(crate) fn defaults(decls: &[ParamDecl]) -> Params {
        let mut params = Params::default();
        for decl in decls {
            if let Some(value) = decl.default_value() {
                params.0.insert(decl.name.to_string(), value);
            }
        }
        params
    }

    /// The raw value, if present.
    pub fn get(&self, name: &str) -> Option<&Value> {
        super::param_reads::note_read(name);
        self.0.get(name)
    }

    fn typed<'a, T>(
        &'a self,
        name: &str,
        expected: &'static str,
        f: impl FnOnce(&'a Value) -> Option<T>,
    ) -> Result<T, ParamError> {
        self.get(name).and_then(f).ok_or_else(|| ParamError {
            name: name.to_string(),
            expected,
        })
    }

    /// An integer parameter.
    pub fn int(&self, name: &str) -> Result<i64, ParamError> {
        self.typed(name, "an integer", |v| v.as_i64())
    }

    /// A non-negative integer parameter, as `usize`.
    pub fn usize(&self, name: &str) -> Result<usize, ParamError> {
        self.typed(name, "a non-negative integer", |v| {
            v.as_u64().map(|u| u as usize)
        })
    }

    /// A resolution parameter ([`ParamType::Resolution`]): an integer side or
    /// `[height, width]`.
    pub fn resolution(&self, name: &str) -> Result<super::Resolution, ParamError> {
        self.typed(
            name,
            "a positive integer or [height, width]",
            super::Resolution::from_value,
        )
    }

    /// A number parameter (integers are widened).
    pub fn float(&self, name: &str) -> Result<f64, ParamError> {
        self.typed(name, "a number", |v| v.as_f64())
    }

    /// A boolean parameter.
    pub fn bool(&self, name: &str) -> Result<bool, ParamError> {
        self.typed(name, "a boolean", |v| v.as_bool())
    }

    /// A string (or choice, or path) parameter.
    pub fn str(&self, name: &str) -> Result<&str, ParamError> {
        self.typed(name, "a string", |v| v.as_str())
    }

    /// An optional string: absent, or an empty string, is `None`.
    pub(crate) fn opt_str(&self, name: &str) -> Option<&str> {
        self.get(name)
            .and_then(|v| v.as_str())
            .filter(|s| !s.is_empty())
    }

    /// A list of numbers.
    pub fn floats(&self, name: &str) -> Result<Vec<f64>, ParamError> {
        self.typed(name, "a list of numbers", |v| {
            v.as_array()?.iter().map(|x| x.as_f64()).collect()
        })
    }

    /// A list of integers.
    pub fn ints(&self, name: &str) -> Result<Vec<i64>, ParamError> {
        self.typed(name, "a list of integers", |v| {
            v.as_array()?.iter().map(|x| x.as_i64()).collect()
        })
    }

    /// A list of strings.
    pub(crate) fn strs(&self, name: &str) -> Result<Vec<String>, ParamError> {
        self.typed(name, "a list of strings", |v| {
            v.as_array()?
                .iter()
                .map(|x| x.as_str().map(str::to_string))
                .collect()
        })
    }
}
