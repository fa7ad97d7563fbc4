//! Content checks for downloaded outputs: a digest proves a blob is the blob a record names,
//! not that it is the file the record says it is. Without a team secret anyone who can write
//! to the bucket can edit a record, and swapping two genuine digests (a model's and a loss
//! curve's) would pass every digest check. So each output whose type can be told from its
//! bytes is checked before it enters the cache: a `.safetensors` file starts with its header
//! (8 bytes, little-endian length, then that many bytes of JSON object), a `.json` file parses
//! as JSON. Other files (logs, images, plots) are taken as they are.

use std::io::Read;
use std::path::Path;

/// The largest safetensors header a check reads (the format's own limit is 100 MB).
const MAX_HEADER: u64 = 100 << 20;

/// Checks the file at `path`, stored as output `name`. `Err` says what is wrong.
pub(crate) fn check(name: &str, path: &Path) -> Result<(), String> {
    if name.ends_with(".safetensors") {
        check_safetensors(path)
    } else if name.ends_with(".json") {
        check_json(path)
    } else {
        Ok(())
    }
}

fn check_safetensors(path: &Path) -> Result<(), String> {
    let mut file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    let size = file.metadata().map_err(|e| e.to_string())?.len();
    let mut len = [0u8; 8];
    file.read_exact(&mut len)
        .map_err(|_| format!("{size} bytes: too short for a safetensors header"))?;
    let len = u64::from_le_bytes(len);
    if len == 0 || len > MAX_HEADER || 8 + len > size {
        return Err(format!(
            "not safetensors: its first 8 bytes give a header of {len} bytes in a file of {size}"
        ));
    }
    let mut header = vec![0u8; len as usize];
    file.read_exact(&mut header).map_err(|e| e.to_string())?;
    match serde_json::from_slice::<serde_json::Value>(&header) {
        Ok(serde_json::Value::Object(_)) => Ok(()),
        Ok(_) => Err("not safetensors: its header is not a JSON object".into()),
        Err(e) => Err(format!("not safetensors: its header is not JSON ({e})")),
    }
}

fn check_json(path: &Path) -> Result<(), String> {
    let file = std::fs::File::open(path).map_err(|e| e.to_string())?;
    serde_json::from_reader::<_, serde::de::IgnoredAny>(std::io::BufReader::new(file))
        .map(|_| ())
        .map_err(|e| format!("not JSON ({e})"))
}

#[cfg(test)]
mod tests {
    use super::check;

    fn file(bytes: &[u8]) -> tempfile::NamedTempFile {
        let f = tempfile::NamedTempFile::new().unwrap();
        std::fs::write(f.path(), bytes).unwrap();
        f
    }

    #[test]
    fn models_must_be_safetensors_and_json_must_parse() {
        let header = br#"{"w":{"dtype":"F32","shape":[1],"data_offsets":[0,4]}}"#;
        let mut model = (header.len() as u64).to_le_bytes().to_vec();
        model.extend_from_slice(header);
        model.extend_from_slice(&[0, 0, 128, 63]);
        assert!(check("model.safetensors", file(&model).path()).is_ok());
        let losses = br#"{"epochs":[{"loss":0.5}]}"#;
        let err = check("model.safetensors", file(losses).path()).unwrap_err();
        assert!(err.contains("not safetensors"), "{err}");
        assert!(check("model.safetensors", file(b"abc").path()).is_err());
        assert!(check("losses.json", file(losses).path()).is_ok());
        let err = check("losses.json", file(&model).path()).unwrap_err();
        assert!(err.contains("not JSON"), "{err}");
        assert!(check("log.txt", file(&model).path()).is_ok());
    }
}
