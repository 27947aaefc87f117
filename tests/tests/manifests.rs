//! Every library crate of crates/ is ready for crates.io: its package is `openmanus-<directory>`
//! while its library keeps the short name, the workspace dependency points at that package, and
//! the manifest has the metadata crates.io shows (description, README, keywords, categories,
//! license, repository) with the README and both license texts in the crate's directory.
//! (`cargo xtask ci` also runs `cargo package` on them; this test says which field is missing.)

// Tests fail loudly: unwrapping and panicking are how they report.
#![allow(clippy::unwrap_used, clippy::expect_used, clippy::panic)]

use std::path::{Path, PathBuf};

use toml::{Table, Value};

/// The category slugs crates.io accepts (its `src/boot/categories.toml`).
const CATEGORIES: &[&str] = &[
    "algorithms",
    "api-bindings",
    "asynchronous",
    "authentication",
    "caching",
    "command-line-interface",
    "command-line-utilities",
    "compression",
    "computer-vision",
    "config",
    "concurrency",
    "cryptography",
    "cryptography::cryptocurrencies",
    "database",
    "database-implementations",
    "data-structures",
    "date-and-time",
    "development-tools",
    "development-tools::build-utils",
    "development-tools::cargo-plugins",
    "development-tools::debugging",
    "development-tools::ffi",
    "development-tools::procedural-macro-helpers",
    "development-tools::profiling",
    "development-tools::testing",
    "email",
    "embedded",
    "emulators",
    "encoding",
    "external-ffi-bindings",
    "filesystem",
    "game-engines",
    "game-development",
    "games",
    "graphics",
    "gui",
    "hardware-support",
    "internationalization",
    "localization",
    "mathematics",
    "memory-management",
    "multimedia",
    "multimedia::audio",
    "multimedia::video",
    "multimedia::images",
    "multimedia::encoding",
    "network-programming",
    "no-std",
    "os",
    "os::linux-apis",
    "os::macos-apis",
    "os::unix-apis",
    "os::windows-apis",
    "parser-implementations",
    "parsing",
    "rendering",
    "rendering::engine",
    "rendering::graphics-api",
    "rendering::data-formats",
    "rust-patterns",
    "science",
    "science::robotics",
    "simulation",
    "template-engine",
    "text-editors",
    "text-processing",
    "value-formatting",
    "visualization",
    "wasm",
    "web-programming",
    "web-programming::http-client",
    "web-programming::http-server",
    "web-programming::websocket",
];

fn root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("..")
}

fn read_toml(path: &Path) -> Table {
    let text = std::fs::read_to_string(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    text.parse()
        .unwrap_or_else(|e| panic!("{}: {e}", path.display()))
}

fn str_of<'a>(table: &'a Table, key: &str) -> Option<&'a str> {
    table.get(key).and_then(Value::as_str)
}

fn inherits(table: &Table, key: &str) -> bool {
    table
        .get(key)
        .and_then(Value::as_table)
        .and_then(|t| t.get("workspace"))
        .and_then(Value::as_bool)
        == Some(true)
}

/// The directories of crates/ that hold a library (all but the command line).
fn library_crates() -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(root().join("crates"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|name| {
            root()
                .join("crates")
                .join(name)
                .join("src/lib.rs")
                .is_file()
        })
        .collect();
    names.sort();
    names
}

#[test]
fn every_library_crate_is_named_and_described_for_crates_io() {
    let workspace = read_toml(&root().join("Cargo.toml"));
    let workspace = workspace["workspace"].as_table().unwrap();
    let package_defaults = workspace["package"].as_table().unwrap();
    assert_eq!(
        str_of(package_defaults, "license"),
        Some("MIT OR Apache-2.0")
    );
    assert!(str_of(package_defaults, "repository").is_some_and(|r| r.starts_with("https://")));
    let dependencies = workspace["dependencies"].as_table().unwrap();
    let mit = std::fs::read_to_string(root().join("LICENSE-MIT")).unwrap();
    let apache = std::fs::read_to_string(root().join("LICENSE-APACHE")).unwrap();
    assert!(mit.contains("Copyright (c) The openmanus-rs developers"));
    assert!(apache.contains("Apache License") && apache.contains("Version 2.0, January 2004"));

    let crates = library_crates();
    assert!(crates.len() >= 20, "only {crates:?}");
    let mut problems = Vec::new();
    for dir in &crates {
        let path = root().join("crates").join(dir);
        let manifest = read_toml(&path.join("Cargo.toml"));
        let package = manifest["package"].as_table().unwrap();
        let mut problem = |what: String| problems.push(format!("crates/{dir}: {what}"));

        let name = format!("openmanus-{dir}");
        if str_of(package, "name") != Some(name.as_str()) {
            problem(format!("package name is not `{name}`"));
        }
        let lib = dir.replace('-', "_");
        let lib_name = manifest
            .get("lib")
            .and_then(Value::as_table)
            .and_then(|t| str_of(t, "name"));
        if lib_name != Some(lib.as_str()) {
            problem(format!("[lib] name is not `{lib}`"));
        }
        let entry = dependencies.get(dir.as_str()).and_then(Value::as_table);
        if entry.and_then(|e| str_of(e, "package")) != Some(name.as_str()) {
            problem(format!(
                "workspace.dependencies.{dir} does not say package = \"{name}\""
            ));
        }
        if str_of(package, "description").is_none_or(|d| d.trim().is_empty()) {
            problem("no description".into());
        }
        if str_of(package, "readme") != Some("README.md") {
            problem("readme is not README.md".into());
        }
        match std::fs::read_to_string(path.join("README.md")) {
            Ok(readme) if readme.starts_with(&format!("# {name}")) => {}
            Ok(_) => problem(format!("README.md does not open with `# {name}`")),
            Err(e) => problem(format!("README.md: {e}")),
        }
        let keywords: Vec<&str> = package
            .get("keywords")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if keywords.is_empty() || keywords.len() > 5 {
            problem(format!(
                "{} keywords (crates.io takes 1 to 5)",
                keywords.len()
            ));
        }
        for keyword in &keywords {
            let valid = keyword.len() <= 20
                && keyword.starts_with(|c: char| c.is_ascii_alphanumeric())
                && keyword
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '-' | '_' | '+'));
            if !valid {
                problem(format!("keyword `{keyword}` is not valid on crates.io"));
            }
        }
        let categories: Vec<&str> = package
            .get("categories")
            .and_then(Value::as_array)
            .map(|a| a.iter().filter_map(Value::as_str).collect())
            .unwrap_or_default();
        if categories.is_empty() || categories.len() > 5 {
            problem(format!(
                "{} categories (crates.io takes 1 to 5)",
                categories.len()
            ));
        }
        for category in &categories {
            if !CATEGORIES.contains(category) {
                problem(format!("category `{category}` is not a crates.io slug"));
            }
        }
        for key in ["license", "repository", "version", "edition"] {
            if !inherits(package, key) {
                problem(format!("{key} is not inherited from the workspace"));
            }
        }
        for (file, text) in [("LICENSE-MIT", &mit), ("LICENSE-APACHE", &apache)] {
            match std::fs::read_to_string(path.join(file)) {
                Ok(copy) if &copy == text => {}
                Ok(_) => problem(format!("{file} differs from the workspace's")),
                Err(e) => problem(format!("{file}: {e}")),
            }
        }
    }
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
