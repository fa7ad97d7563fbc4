//! Safe names: pipeline and stage names become folder names (`reports/PIPELINE/STAGE/`), so
//! they must be one plain path part. A name is letters, digits, `-`, `_` and `.`, not starting
//! with `.` (which also rules out `.` and `..`); an absolute path or a `/` could otherwise make
//! publishing replace a folder anywhere on the disk.

use super::error::SpecError;
use super::source::Loc;

/// The longest name accepted (a folder name must fit the file system's limit).
const MAX_NAME_LEN: usize = 128;

/// Whether `name` is a safe pipeline or stage name.
pub(crate) fn is_safe_name(name: &str) -> bool {
    !name.is_empty()
        && name.len() <= MAX_NAME_LEN
        && !name.starts_with('.')
        && name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '.'))
}

/// An error at `loc` unless `name` is safe; `what` is "pipeline name" or "stage name".
pub(crate) fn check_name(name: &str, what: &str, loc: &Loc) -> Result<(), SpecError> {
    if is_safe_name(name) {
        return Ok(());
    }
    let shown: String = name.chars().take(60).collect();
    Err(SpecError::at(
        loc,
        format!("{what} `{shown}` is not a safe name"),
    )
    .hint(format!(
        "use letters, digits, `-`, `_` and `.` (not first), at most {MAX_NAME_LEN} characters: it becomes a folder name under reports/"
    )))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn safe_names() {
        for ok in ["quickstart", "bct-v2", "eval_1.5", "A"] {
            assert!(is_safe_name(ok), "{ok}");
        }
        for bad in [
            "", ".", "..", ".hidden", "/tmp/x", "a/b", "a b", "x\0", "é", "..\\x",
        ] {
            assert!(!is_safe_name(bad), "{bad:?}");
        }
        assert!(!is_safe_name(&"a".repeat(129)));
    }
}
