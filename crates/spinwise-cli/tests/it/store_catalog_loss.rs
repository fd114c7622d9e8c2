//! `spinwise store` over a data directory whose catalog was emptied (`truncate -s 0`) or deleted
//! (issue 30 item 3): every command refuses with one `error:` line that names the catalog, what
//! happened to it and what the directory still holds, and no file under the data directory
//! changes — the staging segments (the only copy of staged objects) and the stripe stacks stay.
//! With the catalog put back, every object reads back byte-exact.
//!
//! Before the fix, `store ls` exited 0 listing nothing and deleted the staging segments, and a
//! later put and flush reused blob id 1 and its cleanup removed the older blob's stacks.

use crate::common;

use common::{TempDir, init_jbod_store, pattern, spinwise};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Every file under `root` (path relative to it → bytes).
fn snapshot(root: &Path) -> BTreeMap<PathBuf, Vec<u8>> {
    let mut files = BTreeMap::new();
    let mut pending = vec![root.to_path_buf()];
    while let Some(directory) = pending.pop() {
        for entry in std::fs::read_dir(&directory).unwrap() {
            let path = entry.unwrap().path();
            if path.is_dir() {
                pending.push(path);
            } else if path.file_name().is_some_and(|name| name == "owner.lock") {
                // Bookkeeping, not data: each command that owns the directory writes its pid.
                continue;
            } else {
                let relative = path.strip_prefix(root).unwrap().to_path_buf();
                files.insert(relative, std::fs::read(&path).unwrap());
            }
        }
    }
    files
}

/// `root`'s files under `directory` (relative), e.g. "staging" or "disks".
fn files_under(files: &BTreeMap<PathBuf, Vec<u8>>, directory: &str) -> usize {
    files
        .keys()
        .filter(|path| path.starts_with(directory))
        .count()
}

/// A dense-jbod-60 store holding `migrated` (flushed into a blob) and `staged` (only in the
/// staging log); returns the input files' bytes by key.
fn store_with_objects(dir: &TempDir, data: &str) -> BTreeMap<&'static str, Vec<u8>> {
    init_jbod_store(data);
    let mut objects = BTreeMap::new();
    for (key, seed) in [("migrated", 1), ("staged", 2)] {
        let bytes = pattern(200_000 + seed as usize, seed);
        let input = dir.join(key);
        std::fs::write(&input, &bytes).unwrap();
        let input = input.display().to_string();
        spinwise(["store", "--data", data, "put", key, &input]).success();
        if key == "migrated" {
            spinwise(["store", "--data", data, "flush"]).success();
        }
        objects.insert(key, bytes);
    }
    objects
}

/// Runs every command a user might try next; each must be refused and change no file.
fn assert_every_command_refused(data: &str, condition: &str, input: &str) {
    let before = snapshot(Path::new(data));
    assert!(
        files_under(&before, "staging") > 0,
        "the test needs staged data"
    );
    assert!(files_under(&before, "disks") > 0, "the test needs stacks");
    let commands: [&[&str]; 5] = [
        &["ls"],
        &["status", "--json"],
        &["get", "staged", "-"],
        &["put", "new", input],
        &["flush"],
    ];
    for command in commands {
        let mut args = vec!["store", "--data", data];
        args.extend_from_slice(command);
        let run = spinwise(&args).refused().stderr_mentions(&[
            "catalog.sqlite",
            condition,
            "staging segment",
            "stripe stack",
            "nothing was deleted",
            "recover",
        ]);
        assert!(run.stdout.is_empty(), "{}: {}", command[0], run.stdout);
        assert!(
            snapshot(Path::new(data)) == before,
            "`store {}` over a {condition} catalog changed files under the data directory",
            command.join(" ")
        );
    }
}

/// With the catalog back, both objects are listed and read back byte-exact.
fn assert_objects_back(dir: &TempDir, data: &str, objects: &BTreeMap<&str, Vec<u8>>) {
    let listed = spinwise(["store", "--data", data, "ls"]).success();
    for (key, bytes) in objects {
        assert!(listed.stdout.contains(key), "{}", listed.stdout);
        let output = dir.join(&format!("{key}.out"));
        let output_path = output.display().to_string();
        spinwise(["store", "--data", data, "get", key, &output_path]).success();
        assert!(std::fs::read(&output).unwrap() == *bytes, "{key} differs");
    }
}

#[test]
fn every_store_command_refuses_over_an_emptied_catalog_and_deletes_nothing() {
    let dir = TempDir::new("catalog-emptied");
    let data = dir.join("data").display().to_string();
    let objects = store_with_objects(&dir, &data);
    let catalog = Path::new(&data).join("catalog.sqlite");
    let kept = std::fs::read(&catalog).unwrap();
    std::fs::File::create(&catalog).unwrap(); // truncate -s 0
    let input = dir.join("migrated").display().to_string();
    assert_every_command_refused(&data, "is empty", &input);
    std::fs::write(&catalog, kept).unwrap();
    assert_objects_back(&dir, &data, &objects);
}

#[test]
fn every_store_command_refuses_over_a_deleted_catalog_and_deletes_nothing() {
    let dir = TempDir::new("catalog-deleted");
    let data = dir.join("data").display().to_string();
    let objects = store_with_objects(&dir, &data);
    let catalog = Path::new(&data).join("catalog.sqlite");
    let kept = std::fs::read(&catalog).unwrap();
    std::fs::remove_file(&catalog).unwrap();
    let input = dir.join("migrated").display().to_string();
    assert_every_command_refused(&data, "is missing", &input);
    assert!(!catalog.exists(), "a refused command created a catalog");
    std::fs::write(&catalog, kept).unwrap();
    assert_objects_back(&dir, &data, &objects);
}

#[test]
fn a_store_whose_catalog_went_before_any_put_opens_over_a_new_one() {
    let dir = TempDir::new("catalog-fresh");
    let data = dir.join("data").display().to_string();
    init_jbod_store(&data);
    std::fs::remove_file(Path::new(&data).join("catalog.sqlite")).unwrap();
    let input = dir.write("hello", "hello");
    let input = input.display().to_string();
    spinwise(["store", "--data", &data, "put", "hello", &input]).success();
    let listed = spinwise(["store", "--data", &data, "ls"]).success();
    assert!(listed.stdout.contains("hello"), "{}", listed.stdout);
}
