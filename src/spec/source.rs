//! Source files and locations, so every error can say file, line and column.
//!
//! Files are read through [`SourceFile::read`], which opens without blocking and accepts
//! only regular files (a FIFO or `/dev/zero` named as a pipeline or template would block or
//! be read forever), and which locates a byte that is not UTF-8 at its line and column.

use std::io::Read;
use std::ops::Range;
use std::os::unix::fs::OpenOptionsExt;
use std::path::{Path, PathBuf};
use std::sync::Arc;

use super::error::SpecError;

/// Why a source file could not be read.
#[derive(Debug, thiserror::Error)]
pub enum ReadError {
    /// The file could not be opened or read.
    #[error("{0}")]
    Io(#[from] std::io::Error),
    /// The path names something other than a regular file.
    #[error("it is {0}, not a regular file")]
    NotRegular(&'static str),
    /// The text is not UTF-8; the error points at the first bad byte.
    #[error("{0}")]
    NotUtf8(Box<SpecError>),
}

/// The text of one file the pipeline was read from (the pipeline, a template, or the command
/// line, whose "file" is `<command line>` and whose text is the argument).
#[derive(Debug)]
pub struct SourceFile {
    /// The path as the user gave it (or `<command line>`).
    pub path: PathBuf,
    /// The whole text.
    pub text: String,
}

impl SourceFile {
    /// Reads the regular file at `path`, shown in errors as `shown` (the path as the user
    /// wrote it). Never blocks on a FIFO and never reads a device.
    pub fn read(path: &Path, shown: &Path) -> Result<Arc<SourceFile>, ReadError> {
        let mut file = std::fs::OpenOptions::new()
            .read(true)
            .custom_flags(libc::O_NONBLOCK)
            .open(path)?;
        let kind = file.metadata()?.file_type();
        if !kind.is_file() {
            return Err(ReadError::NotRegular(describe_file_type(kind)));
        }
        let mut bytes = Vec::new();
        file.read_to_end(&mut bytes)?;
        match String::from_utf8(bytes) {
            Ok(text) => Ok(Arc::new(SourceFile {
                path: shown.to_path_buf(),
                text,
            })),
            Err(e) => {
                let at = e.utf8_error().valid_up_to();
                let bad = e.as_bytes()[at];
                // The text up to the bad byte is unchanged by the lossy conversion, so the
                // location's line and column are those of the byte in the file.
                let file = Arc::new(SourceFile {
                    path: shown.to_path_buf(),
                    text: String::from_utf8_lossy(e.as_bytes()).into_owned(),
                });
                Err(ReadError::NotUtf8(Box::new(
                    SpecError::at(
                        &Loc::new(&file, at..at + 1),
                        format!("byte 0x{bad:02x} is not UTF-8 text"),
                    )
                    .hint("save the file as UTF-8 (pipeline files are TOML, which is UTF-8)"),
                )))
            }
        }
    }
}

/// `a FIFO`, `a folder`, `a device`: what a path that is not a regular file names.
pub(crate) fn describe_file_type(kind: std::fs::FileType) -> &'static str {
    use std::os::unix::fs::FileTypeExt;
    if kind.is_dir() {
        "a folder"
    } else if kind.is_fifo() {
        "a FIFO (named pipe)"
    } else if kind.is_char_device() || kind.is_block_device() {
        "a device"
    } else if kind.is_socket() {
        "a socket"
    } else {
        "not a file"
    }
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
    pub fn snippet(&self) -> (String, String) {
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
    fn issue28_a_byte_that_is_not_utf8_is_located_at_its_line_and_column() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("p.toml");
        std::fs::write(&path, b"[stages.a]\nkind = \"sp\xfflit\"\n").unwrap();
        let Err(ReadError::NotUtf8(err)) = SourceFile::read(&path, &path) else {
            panic!("expected a UTF-8 error");
        };
        assert_eq!(err.line_col(), Some((2, 11)), "{err}");
        assert!(err.to_string().contains("0xff"), "{err}");
    }

    #[test]
    fn issue28_devices_and_folders_are_refused_without_reading() {
        let dir = tempfile::tempdir().unwrap();
        for (path, what) in [
            (Path::new("/dev/zero"), "a device"),
            (dir.path(), "a folder"),
        ] {
            match SourceFile::read(path, path) {
                Err(ReadError::NotRegular(w)) => assert_eq!(w, what),
                other => panic!("{other:?}"),
            }
        }
    }

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
