//! Errors in pipeline files: what went wrong, where (file, line, column), and how to fix it.

use std::fmt;

use super::source::Loc;

/// A mistake in a pipeline file, a template, or a command-line override, found before
/// anything runs.
#[derive(Debug, Clone)]
pub struct SpecError {
    /// Where (None only for errors that are about no place, like an unreadable file).
    pub loc: Option<Loc>,
    /// What is wrong.
    pub message: String,
    /// How to fix it, when there is something to say.
    pub hint: Option<String>,
}

impl SpecError {
    /// An error at `loc`.
    pub fn at(loc: &Loc, message: impl Into<String>) -> Self {
        SpecError {
            loc: Some(loc.clone()),
            message: message.into(),
            hint: None,
        }
    }

    /// An error about no particular place.
    pub fn nowhere(message: impl Into<String>) -> Self {
        SpecError {
            loc: None,
            message: message.into(),
            hint: None,
        }
    }

    /// Adds a hint.
    pub fn hint(mut self, hint: impl Into<String>) -> Self {
        self.hint = Some(hint.into());
        self
    }

    /// Adds "did you mean `x`?" when one of `candidates` is close to `wrong`, else lists them.
    pub(crate) fn suggest<'a>(
        self,
        wrong: &str,
        candidates: impl IntoIterator<Item = &'a str>,
    ) -> Self {
        let candidates: Vec<&str> = candidates.into_iter().collect();
        match closest(wrong, &candidates) {
            Some(best) => self.hint(format!("did you mean `{best}`?")),
            None if candidates.is_empty() => self,
            None => self.hint(format!("expected one of: {}", candidates.join(", "))),
        }
    }

    /// The 1-based line and column, when the error has a place.
    pub fn line_col(&self) -> Option<(usize, usize)> {
        self.loc.as_ref().map(Loc::line_col)
    }
}

/// The candidate closest to `wrong` by edit distance, if close enough to be a likely typo.
pub fn closest<'a>(wrong: &str, candidates: &[&'a str]) -> Option<&'a str> {
    candidates
        .iter()
        .map(|c| (strsim::damerau_levenshtein(wrong, c), *c))
        .filter(|(d, c)| *d <= (c.len().max(wrong.len()) / 3).max(1))
        .min_by_key(|(d, _)| *d)
        .map(|(_, c)| c)
}

impl fmt::Display for SpecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match &self.loc {
            Some(loc) => {
                let (line, col) = loc.line_col();
                write!(f, "{}:{line}:{col}: {}", loc.path().display(), self.message)?;
                let (text, caret) = loc.snippet();
                let gutter = line.to_string().len();
                write!(
                    f,
                    "\n{:gutter$} |\n{line} | {text}\n{:gutter$} | {caret}",
                    "", ""
                )?;
            }
            None => write!(f, "{}", self.message)?,
        }
        if let Some(hint) = &self.hint {
            write!(f, "\n  hint: {hint}")?;
        }
        Ok(())
    }
}

impl std::error::Error for SpecError {}
