//! Embeds every `presets/*.toml` into the crate ([`presets::PRESETS`](src/presets.rs)), so
//! `--preset NAME` works from any directory and in every crate that loads a preset (the CLI, the
//! experiments), and a new preset needs no code change: drop the file in presets/ and rebuild.

use std::fmt::Write;
use std::path::Path;

fn main() {
    // Read at run time, not with env!(): a build-script binary compiled in one checkout is reused
    // by cargo for another checkout sharing the target directory (CI's cache), and a path baked
    // in at compile time would then point at a clone that no longer exists.
    let manifest_dir = std::env::var("CARGO_MANIFEST_DIR").expect("cargo sets CARGO_MANIFEST_DIR");
    let presets = Path::new(&manifest_dir).join("../../presets");
    println!("cargo:rerun-if-changed={}", presets.display());
    let mut entries: Vec<_> = std::fs::read_dir(&presets)
        .expect("presets/ directory next to the workspace root")
        .map(|entry| entry.expect("readable presets/ entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    entries.sort();
    let mut code = String::from(
        "/// (name, TOML text) of every shipped preset, in the order of their file names.\npub const PRESETS: &[(&str, &str)] = &[\n",
    );
    for path in entries {
        println!("cargo:rerun-if-changed={}", path.display());
        let name = path.file_stem().expect("file name").to_string_lossy();
        let absolute = path.canonicalize().expect("preset path");
        writeln!(
            code,
            "    ({name:?}, include_str!({:?})),",
            absolute.display().to_string()
        )
        .expect("writing to a String");
    }
    code.push_str("];\n");
    let out = Path::new(&std::env::var("OUT_DIR").expect("cargo sets OUT_DIR")).join("presets.rs");
    std::fs::write(out, code).expect("writing generated presets.rs");
}
