//! Reading pipeline and template files from disk.
//!
//! Files are read through [`SourceFile::read`], which opens without blocking and accepts
//! only regular files (a FIFO or `/dev/zero` named as a pipeline or template would block or
//! be read forever), and which locates a byte that is not UTF-8 at its line and column. It
//! lives apart from [`super::source`] because its errors are [`SpecError`]s, which point at
//! locations: the locations come first, the errors about them next, reading last.

use std::io::Read;
use std::os::unix::fs::OpenOptionsExt;
use std::path::Path;
use std::sync::Arc;

use super::error::SpecError;
use super::source::{Loc, SourceFile};

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
}
