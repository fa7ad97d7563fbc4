//! The engine binary links no libtorch. Its integration tests and benchmarks do (they run the
//! tensor kinds in-process through the `asymflow-tensor` dev-dependency), so they alone get an
//! rpath to libtorch, as the worker binary does (`crates/tensor/build.rs`).

fn main() {
    println!("cargo:rerun-if-env-changed=LIBTORCH");
    if let Ok(libtorch) = std::env::var("LIBTORCH") {
        let lib = std::path::Path::new(&libtorch).join("lib");
        println!("cargo:rustc-link-arg-tests=-Wl,-rpath,{}", lib.display());
        println!("cargo:rustc-link-arg-benches=-Wl,-rpath,{}", lib.display());
    }
}
