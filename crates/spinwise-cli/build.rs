//! Embeds every `presets/*.toml` into the binary, so `--preset NAME` works from any directory and
//! a new preset needs no code change: drop the file in presets/ and rebuild.

use std::fmt::Write;
use std::path::Path;

fn main() {
    let presets = Path::new(env!("CARGO_MANIFEST_DIR")).join("../../presets");
    println!("cargo:rerun-if-changed={}", presets.display());
    let mut entries: Vec<_> = std::fs::read_dir(&presets)
        .expect("presets/ directory next to the workspace root")
        .map(|entry| entry.expect("readable presets/ entry").path())
        .filter(|path| path.extension().is_some_and(|e| e == "toml"))
        .collect();
    entries.sort();
    let mut code = String::from(
        "/// (name, TOML text) of every shipped preset, sorted by name.\npub const PRESETS: &[(&str, &str)] = &[\n",
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
