//! Bakes the location of libtorch into the worker binary (an rpath), so `asymflow` runs without
//! LD_LIBRARY_PATH or any other variable. `scripts/libtorch.sh` exports LIBTORCH before the
//! build; torch-sys reads the same variable to find the headers and libraries.
//!
//! It also compiles `csrc/autocast.cpp`, the one libtorch call tch does not expose (CUDA
//! autocast in bfloat16, for `precision = "bf16"`), against the same headers.

fn main() {
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    println!("cargo::rustc-check-cfg=cfg(asymflow_bf16)");
    if let Ok(libtorch) = std::env::var("LIBTORCH") {
        // The wheel's `torch/version.py` names the libtorch version, kept in provenance.
        let version = std::path::Path::new(&libtorch).join("version.py");
        if let Ok(text) = std::fs::read_to_string(&version) {
            if let Some(v) = text
                .lines()
                .find_map(|l| l.strip_prefix("__version__ = "))
                .map(|v| v.trim_matches(|c| c == '\'' || c == '"'))
            {
                println!("cargo:rustc-env=ASYMFLOW_LIBTORCH_VERSION={v}");
            }
        }
        let lib = std::path::Path::new(&libtorch).join("lib");
        // `--no-as-needed` keeps libtorch_cuda in the binary's dependencies even though no
        // symbol of it is referenced directly: without it CUDA would never be registered.
        println!("cargo:rustc-link-arg=-Wl,-rpath,{}", lib.display());
        println!("cargo:rustc-link-arg=-Wl,--no-as-needed");
        if lib.join("libtorch_cuda.so").exists() {
            println!("cargo:rustc-link-arg=-ltorch_cuda");
        }
        println!("cargo:rustc-link-arg=-Wl,--as-needed");
        autocast_shim(std::path::Path::new(&libtorch));
    }
}

/// Compiles the bfloat16 autocast shim against libtorch's headers.
fn autocast_shim(libtorch: &std::path::Path) {
    println!("cargo:rerun-if-changed=csrc/autocast.cpp");
    cc::Build::new()
        .cpp(true)
        .file("csrc/autocast.cpp")
        .include(libtorch.join("include"))
        .include(libtorch.join("include/torch/csrc/api/include"))
        .flag("-std=c++17")
        .define("_GLIBCXX_USE_CXX11_ABI", "1")
        .warnings(false)
        .compile("asymflow_autocast");
    println!("cargo:rustc-cfg=asymflow_bf16");
}
