//! Publishing: copies the outputs of publishing kinds (reports) out of the cache into
//! `reports/PIPELINE/STAGE/` after a run. The cache holds the artifacts; the folder is a view,
//! rewritten each time, so it never disagrees with the cache.

use std::path::{Path, PathBuf};

use crate::cache::{Cache, ObjectError, RunRecord};

/// Writes `record`'s outputs into `dest` (replacing what was there), verifying each object.
/// Returns the paths written.
pub fn publish(
    cache: &Cache,
    record: &RunRecord,
    dest: &Path,
) -> Result<Vec<PathBuf>, ObjectError> {
    let io = |path: &Path| {
        let path = path.to_path_buf();
        move |source| ObjectError::Io { path, source }
    };
    if dest.exists() {
        std::fs::remove_dir_all(dest).map_err(io(dest))?;
    }
    std::fs::create_dir_all(dest).map_err(io(dest))?;
    let mut written = Vec::new();
    for (name, output) in &record.outputs {
        let target = dest.join(name);
        if output.is_dir {
            cache.objects().materialise_dir(&output.digest, &target)?;
        } else {
            let src = cache.objects().open_verified(&output.digest)?;
            std::fs::copy(&src, &target).map_err(io(&target))?;
        }
        written.push(target);
    }
    Ok(written)
}
