//! Source files and places in them, so every error can say file, line and column.
//!
//! Reading a file from disk is [`super::read`]'s; a location only needs the text.

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::Arc;

/// The text of one file the pipeline was read from (the pipeline, a template, or the command
/// line, whose "file" is `<command line>` and whose text is the argument).
#[derive(Debug)]
pub struct SourceFile {
    /// The path as the user gave it (or `<command line>`).
    pub path: PathBuf,
    /// The whole text.
    pub text: String,
}

/// A place in a source file.
#[derive(Debug, Clone)]
pub struct Loc {
    /// The file.
    pub file: Arc<SourceFile>,
    /// Byte range of the value or key.
    pub span: Range<usize>,
}

impl Loc {
    /// A location in `file`.
    pub fn new(file: &Arc<SourceFile>, span: Range<usize>) -> Self {
        Loc {
            file: Arc::clone(file),
            span,
        }
    }

    /// 1-based line and column of the start of the span (columns count characters).
    pub fn line_col(&self) -> (usize, usize) {
        let start = self.start();
        let before = &self.file.text[..start];
        let line = before.matches('\n').count() + 1;
        let line_start = before.rfind('\n').map_or(0, |i| i + 1);
        let col = self.file.text[line_start..start].chars().count() + 1;
        (line, col)
    }

    /// The span's start, clamped into the text and onto a character boundary, so a location
    /// from any source never makes slicing panic.
    fn start(&self) -> usize {
        let mut start = self.span.start.min(self.file.text.len());
        while !self.file.text.is_char_boundary(start) {
            start -= 1;
        }
        start
    }

    /// The file's path.
    pub fn path(&self) -> &Path {
        &self.file.path
    }

    /// The source line holding the span's start, and a caret line under the span.
    pub(crate) fn snippet(&self) -> (String, String) {
        let (line, col) = self.line_col();
        let text = self
            .file
            .text
            .lines()
            .nth(line - 1)
            .unwrap_or("")
            .to_string();
        let width = self
            .file
            .text
            .get(self.start()..self.span.end.max(self.start()).min(self.file.text.len()))
            .unwrap_or("")
            .lines()
            .next()
            .map_or(1, |first| {
                first
                    .chars()
                    .count()
                    .clamp(1, text.chars().count().saturating_sub(col - 1).max(1))
            });
        let caret = format!("{}{}", " ".repeat(col - 1), "^".repeat(width));
        (text, caret)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue11_locations_never_slice_inside_a_character_or_past_the_end() {
        let file = Arc::new(SourceFile {
            path: PathBuf::from("x.toml"),
            text: "a = \"é€\"\nb".into(),
        });
        for start in 0..20 {
            for end in start..22 {
                let loc = Loc::new(&file, start..end);
                let _ = loc.line_col();
                let _ = loc.snippet();
            }
        }
    }
}
