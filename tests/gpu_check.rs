//! `scripts/gpu-check.sh` on a machine without a GPU: one line saying so, exit 0, nothing built.
//! The script asks the `nvidia-smi` that `NVIDIA_SMI` names, so these cases hold on any machine,
//! one with GPUs included.

use std::path::Path;
use std::process::Command;

fn script() -> std::path::PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("scripts/gpu-check.sh")
}

/// Runs the script with `NVIDIA_SMI` set (or inherited when `None`); returns stdout, stderr.
fn gpu_check(nvidia_smi: Option<&Path>) -> (String, String) {
    let mut cmd = Command::new("bash");
    cmd.arg(script());
    if let Some(path) = nvidia_smi {
        cmd.env("NVIDIA_SMI", path);
    }
    let out = cmd.output().expect("bash runs");
    let (stdout, stderr) = (
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    );
    assert!(
        out.status.success(),
        "gpu-check.sh failed without a GPU:\n{stdout}\n{stderr}"
    );
    (stdout, stderr)
}

fn assert_one_line(stdout: &str, stderr: &str, why: &str) {
    assert_eq!(stdout.lines().count(), 1, "not one line: {stdout:?}");
    assert!(
        stdout.starts_with("gpu-check: no GPU here") && stdout.contains(why),
        "{stdout:?}"
    );
    assert!(stderr.is_empty(), "nothing else is printed: {stderr:?}");
}

#[test]
fn without_nvidia_smi_the_gpu_check_says_so_in_one_line_and_succeeds() {
    let dir = tempfile::tempdir().unwrap();
    let (stdout, stderr) = gpu_check(Some(&dir.path().join("nvidia-smi")));
    assert_one_line(&stdout, &stderr, "no nvidia-smi");
    // This machine as it is, when it has no nvidia-smi (the CI and development machines).
    let on_path = Command::new("bash")
        .args(["-c", "command -v nvidia-smi"])
        .output()
        .is_ok_and(|o| o.status.success());
    if !on_path {
        let (stdout, stderr) = gpu_check(None);
        assert_one_line(&stdout, &stderr, "no nvidia-smi");
    }
}

#[test]
fn a_driver_that_lists_no_gpu_is_no_gpu() {
    let dir = tempfile::tempdir().unwrap();
    let fake = dir.path().join("nvidia-smi");
    std::fs::write(
        &fake,
        "#!/bin/sh\necho 'NVIDIA-SMI has failed because it could not communicate with the NVIDIA driver.'\nexit 9\n",
    )
    .unwrap();
    let mut perms = std::fs::metadata(&fake).unwrap().permissions();
    std::os::unix::fs::PermissionsExt::set_mode(&mut perms, 0o755);
    std::fs::set_permissions(&fake, perms).unwrap();
    let (stdout, stderr) = gpu_check(Some(&fake));
    assert_one_line(&stdout, &stderr, "lists none");
}
