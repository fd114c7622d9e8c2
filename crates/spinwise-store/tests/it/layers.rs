//! The store's modules depend on each other one way (issue 31 item 5; docs/ARCHITECTURE.md,
//! "spinwise-store inside"): every module sits in a layer, and what it uses — a `crate::`
//! import, or a method of `Store` defined in another file — is in its own layer or one below,
//! and the whole is free of cycles. Methods count because `impl Store` blocks live in several
//! files: a call from one to another is a dependency no import shows.
//!
//! The checker reads `src/*.rs` as text (comments and `#[cfg(test)]` tails left out), so it
//! judges the code as written, not what the compiler resolved; a module missing from the table
//! fails the test too, so a new module must be placed.

use std::collections::{BTreeMap, BTreeSet};
use std::path::Path;

/// Bottom to top; a module may use modules of its own layer and the layers before it.
const LAYERS: &[(&str, &[&str])] = &[
    (
        "foundations",
        &[
            "blob_index",
            "board",
            "buffers",
            "clock",
            "columns",
            "crash",
            "driver",
            "durable",
            "hashing",
            "ordered",
            "owner",
            "placement",
            "runs",
            "subtree_hash",
            "tail_cache",
            "writeback",
        ],
    ),
    (
        "formats and settings",
        &[
            "config", "damaged", "error", "heal", "lock", "space", "stacks", "staging",
        ],
    ),
    ("the rack", &["rack", "survey"]),
    ("the store's state", &["store"]),
    (
        "operations",
        &[
            "compact", "get", "migrate", "open", "read", "recover", "repair", "scrub", "startup",
            "warm_gc",
        ],
    ),
    ("background work", &["duties", "upkeep"]),
];

/// A module's text without `//` comments and without its `#[cfg(test)]` tail, with method
/// chains split over lines joined (`self\n    .flush(` reads `self.flush(`).
fn code_of(path: &Path) -> String {
    let text = std::fs::read_to_string(path).unwrap_or_else(|error| {
        panic!("{}: {error}", path.display());
    });
    let text = text.split("#[cfg(test)]").next().unwrap_or_default();
    let code = text
        .lines()
        .filter(|line| !line.trim_start().starts_with("//"))
        .collect::<Vec<_>>()
        .join("\n");
    let mut joined = String::with_capacity(code.len());
    for (at, c) in code.char_indices() {
        let before_dot = code[at..].trim_start().starts_with('.');
        if !(c.is_whitespace() && before_dot) {
            joined.push(c);
        }
    }
    joined
}

/// Identifiers that follow `prefix` in `code` (`crate::name`, `fn name`).
fn names_after<'a>(code: &'a str, prefix: &str) -> Vec<&'a str> {
    code.match_indices(prefix)
        .map(|(at, _)| {
            let rest = &code[at + prefix.len()..];
            let end = rest
                .find(|c: char| !(c.is_ascii_alphanumeric() || c == '_'))
                .unwrap_or(rest.len());
            &rest[..end]
        })
        .filter(|name| !name.is_empty())
        .collect()
}

/// The modules `code` imports: `crate::name` paths, and the first names of `use crate::{..}`.
fn imports(code: &str) -> BTreeSet<String> {
    let mut used: BTreeSet<String> = names_after(code, "crate::")
        .into_iter()
        .map(str::to_string)
        .collect();
    for (at, _) in code.match_indices("use crate::{") {
        let group = &code[at + "use crate::{".len()..];
        let group = &group[..group.find("};").unwrap_or(group.len())];
        for item in group.split(',') {
            let first = item.trim().split("::").next().unwrap_or_default();
            used.insert(
                first
                    .trim_matches(|c: char| c == '{' || c.is_whitespace())
                    .into(),
            );
        }
    }
    used
}

/// Methods defined in the `impl .. Store<..> {` blocks of `code`.
fn store_methods(code: &str) -> BTreeSet<String> {
    let mut methods = BTreeSet::new();
    for (at, _) in code.match_indices("impl<C: Catalog> Store<C> {") {
        let block = &code[at..];
        let block = &block[..block.find("\n}\n").unwrap_or(block.len())];
        for line in block.lines().filter(|line| line.starts_with("    ")) {
            let line = line.trim_start();
            if line.starts_with("//") || !line.contains("fn ") {
                continue;
            }
            if let Some(name) = names_after(line, "fn ").first() {
                methods.insert(name.to_string());
            }
        }
    }
    methods
}

/// Methods `code` calls on a store: `store.name(`, and `self.name(` where `self` is one (the
/// module has `impl Store` blocks). Other receivers' methods of the same name are not counted.
fn store_calls(code: &str) -> BTreeSet<&str> {
    let mut receivers = vec!["store.", "store()."];
    if !store_methods(code).is_empty() {
        receivers.push("self.");
    }
    receivers
        .into_iter()
        .flat_map(|receiver| names_after(code, receiver))
        .filter(|name| code.contains(&format!(".{name}(")))
        .collect()
}

/// Every module's uses of other modules: imports, and calls of `Store` methods defined there.
fn uses() -> BTreeMap<String, BTreeSet<String>> {
    let source = Path::new(env!("CARGO_MANIFEST_DIR")).join("src");
    let mut codes = BTreeMap::new();
    for entry in std::fs::read_dir(&source).unwrap() {
        let path = entry.unwrap().path();
        let name = path.file_stem().unwrap().to_string_lossy().to_string();
        if path.extension().is_some_and(|e| e == "rs") && name != "lib" {
            codes.insert(name, code_of(&path));
        }
    }
    let mut defined: BTreeMap<String, BTreeSet<String>> = BTreeMap::new();
    for (module, code) in &codes {
        for method in store_methods(code) {
            defined.entry(method).or_default().insert(module.clone());
        }
    }
    let modules: BTreeSet<String> = codes.keys().cloned().collect();
    let mut uses = BTreeMap::new();
    for (module, code) in &codes {
        let mut used: BTreeSet<String> = imports(code).intersection(&modules).cloned().collect();
        for call in store_calls(code) {
            used.extend(defined.get(call).into_iter().flatten().cloned());
        }
        used.remove(module);
        uses.insert(module.clone(), used);
    }
    uses
}

fn layer_of(module: &str) -> Option<usize> {
    LAYERS
        .iter()
        .position(|(_, modules)| modules.contains(&module))
}

#[test]
fn every_module_of_the_store_uses_only_its_own_layer_and_the_layers_below() {
    let uses = uses();
    let mut wrong = Vec::new();
    for (module, used) in &uses {
        let Some(layer) = layer_of(module) else {
            wrong.push(format!("`{module}` is in no layer of tests/it/layers.rs"));
            continue;
        };
        for other in used {
            let other_layer = layer_of(other).unwrap_or(usize::MAX);
            if other_layer > layer {
                wrong.push(format!(
                    "`{module}` ({}) uses `{other}` ({}), a layer above it",
                    LAYERS[layer].0,
                    LAYERS.get(other_layer).map_or("no layer", |l| l.0)
                ));
            }
        }
    }
    assert!(wrong.is_empty(), "{}", wrong.join("\n"));
}

#[test]
fn the_store_s_modules_use_each_other_without_a_cycle() {
    let uses = uses();
    // Kahn's algorithm: what is left when nothing more can be removed lies on a cycle.
    let mut remaining = uses.clone();
    loop {
        let free: Vec<String> = remaining
            .iter()
            .filter(|(_, used)| used.iter().all(|other| !remaining.contains_key(other)))
            .map(|(module, _)| module.clone())
            .collect();
        if free.is_empty() {
            break;
        }
        for module in free {
            remaining.remove(&module);
        }
    }
    // Then what no remaining module uses: what is left now lies on (or between) cycles.
    loop {
        let unused: Vec<String> = remaining
            .keys()
            .filter(|module| !remaining.values().any(|used| used.contains(*module)))
            .cloned()
            .collect();
        if unused.is_empty() {
            break;
        }
        for module in unused {
            remaining.remove(&module);
        }
    }
    assert!(
        remaining.is_empty(),
        "these modules use each other in a cycle: {remaining:?}"
    );
}

#[test]
fn the_checker_sees_imports_and_store_methods_of_other_files() {
    let uses = uses();
    // Known edges of each kind, so a checker that saw nothing could not pass.
    assert!(uses["staging"].contains("durable"), "an import: {uses:?}");
    assert!(uses["upkeep"].contains("scrub"), "an import: {uses:?}");
    assert!(
        uses["open"].contains("migrate"),
        "a method call (abandon_writing_blobs): {uses:?}"
    );
}
