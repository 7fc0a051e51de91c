//! The server crate's top-level modules are layers (ARCHITECTURE.md, "Layers"): each
//! may use only modules of the layers below it, never one of its own layer or above.
//! This test reads the sources, as rust-analyzer's tidy tests do, and fails on any
//! `crate::<module>` a file may not name. The pure layer is another crate
//! (`crates/apimachinery`), kept free of IO by its Cargo.toml, which is checked too.

use std::collections::BTreeSet;
use std::fs;
use std::path::{Path, PathBuf};

/// The layers, top to bottom. A module may use every module of a lower layer.
const LAYERS: &[&[&str]] = &[
    &["harness"],
    &["server"],
    &["fault", "metrics"],
    &["handlers"],
    &["controllers"],
    &["apiserver"],
    &["rest"],
    &["admission"],
    &["conversion"],
    &["webhook"],
    &["auth"],
    &["registry"],
    &["http"],
    &["storage", "tls", "protobuf"],
];

/// Uses the layers would allow but an invariant forbids: handlers reach storage only
/// through the store (`rest::store`).
const FORBIDDEN: &[(&str, &str)] = &[("handlers", "storage")];

/// The pure layer's modules, re-exported by the server crate: every layer may use them.
const PURE: &[&str] = &[
    "access", "apply", "cel", "codec", "crd", "field", "goformat", "object", "pipeline", "schema",
    "selector", "status", "table", "typed", "user", "write",
];

/// Crates the pure layer may never depend on.
const IO_CRATES: &[&str] = &[
    "tokio",
    "hyper",
    "hyper-util",
    "tonic",
    "tower",
    "rustls",
    "tokio-rustls",
    "http",
    "http-body-util",
    "prost",
    "tonic-prost",
    "hyper-rustls",
    "kube",
];

fn layer_of(module: &str) -> Option<usize> {
    LAYERS.iter().position(|l| l.contains(&module))
}

/// Whether `from` may use `to`.
fn allowed(from: &str, to: &str) -> bool {
    if from == to || PURE.contains(&to) {
        return true;
    }
    if FORBIDDEN.contains(&(from, to)) {
        return false;
    }
    match (layer_of(from), layer_of(to)) {
        (Some(a), Some(b)) => b > a,
        _ => false,
    }
}

/// The top-level modules a source text names as `crate::<module>`, also inside
/// (multi-line, nested) `use crate::{a, b::{c, d}}` groups; comments left out.
fn modules_used(text: &str) -> BTreeSet<String> {
    let code: String = text
        .lines()
        .map(|l| l.split("//").next().unwrap_or(""))
        .collect::<Vec<_>>()
        .join("\n");
    let ident = |s: &str| -> String {
        s.trim_start()
            .chars()
            .take_while(|c| c.is_alphanumeric() || *c == '_')
            .collect()
    };
    let mut out = BTreeSet::new();
    let mut rest = code.as_str();
    while let Some(i) = rest.find("crate::") {
        let after = &rest[i + "crate::".len()..];
        if let Some(group) = after.strip_prefix('{') {
            // Top-level items of the group: split on commas at brace depth 0.
            let mut depth = 0;
            let mut item_start = 0;
            for (j, c) in group.char_indices() {
                match c {
                    '{' => depth += 1,
                    '}' if depth == 0 => {
                        out.insert(ident(&group[item_start..j]));
                        break;
                    }
                    '}' => depth -= 1,
                    ',' if depth == 0 => {
                        out.insert(ident(&group[item_start..j]));
                        item_start = j + 1;
                    }
                    _ => {}
                }
            }
        } else {
            out.insert(ident(after));
        }
        rest = after;
    }
    out.remove("");
    out
}

fn rust_files(dir: &Path, out: &mut Vec<PathBuf>) {
    for entry in fs::read_dir(dir).unwrap_or_else(|e| panic!("{}: {e}", dir.display())) {
        let path = entry.unwrap().path();
        if path.is_dir() {
            rust_files(&path, out);
        } else if path.extension().is_some_and(|e| e == "rs") {
            out.push(path);
        }
    }
}

/// `src/x.rs` and `src/x/...` belong to module `x`; `lib.rs` and `main.rs` to none.
fn module_of(src: &Path, file: &Path) -> Option<String> {
    let rel = file.strip_prefix(src).ok()?;
    let first = rel.components().next()?.as_os_str().to_str()?;
    let name = first.strip_suffix(".rs").unwrap_or(first);
    (name != "lib" && name != "main").then(|| name.to_string())
}

/// Every forbidden use in the sources under `src`, as `file: from -> to`.
fn violations(src: &Path) -> Vec<String> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    let mut out = Vec::new();
    for file in files {
        let Some(from) = module_of(src, &file) else {
            continue;
        };
        let text = fs::read_to_string(&file).unwrap();
        for to in modules_used(&text) {
            if !allowed(&from, &to) {
                out.push(format!(
                    "{}: {from} may not use {to}",
                    file.strip_prefix(src).unwrap().display()
                ));
            }
        }
    }
    out
}

fn repo() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

#[test]
fn every_module_uses_only_the_layers_below_it() {
    let src = repo().join("src");
    let mut files = Vec::new();
    rust_files(&src, &mut files);
    let unplaced: BTreeSet<String> = files
        .iter()
        .filter_map(|f| module_of(&src, f))
        .filter(|m| layer_of(m).is_none())
        .collect();
    assert!(
        unplaced.is_empty(),
        "modules in no layer (place them in LAYERS and ARCHITECTURE.md): {unplaced:?}"
    );
    let found = violations(&src);
    assert!(
        found.is_empty(),
        "layering violations:\n{}",
        found.join("\n")
    );
}

/// Code (comments left out) of the files of module `module`, by path.
fn module_code(src: &Path, module: &str) -> Vec<(PathBuf, String)> {
    let mut files = Vec::new();
    rust_files(src, &mut files);
    files.sort();
    files
        .into_iter()
        .filter(|f| module_of(src, f).as_deref() == Some(module))
        .map(|f| {
            let text = fs::read_to_string(&f).unwrap();
            let code: Vec<&str> = text
                .lines()
                .map(|l| l.split("//").next().unwrap_or(""))
                .collect();
            (f, code.join("\n"))
        })
        .collect()
}

#[test]
fn handlers_reach_storage_only_through_the_store() {
    // Naming `crate::storage` is caught above; this catches `api.store.storage`.
    let src = repo().join("src");
    let handlers = module_code(&src, "handlers");
    assert!(!handlers.is_empty(), "no handler sources found");
    for (file, code) in handlers {
        assert!(
            !code.contains(".storage"),
            "{} reaches the storage backend: go through rest::Store",
            file.display()
        );
    }
}

#[test]
fn the_pure_layer_depends_on_no_io_crate() {
    let manifest = fs::read_to_string(repo().join("crates/apimachinery/Cargo.toml")).unwrap();
    let mut in_deps = false;
    for line in manifest.lines() {
        let t = line.trim();
        if t.starts_with('[') {
            in_deps = t == "[dependencies]";
            continue;
        }
        if !in_deps || t.starts_with('#') || t.is_empty() {
            continue;
        }
        let name = t.split(['=', ' ']).next().unwrap_or("");
        assert!(
            !IO_CRATES.contains(&name),
            "crates/apimachinery depends on {name}: it must stay free of IO"
        );
    }
}

#[test]
fn a_forbidden_use_is_reported() {
    // The checker itself: a store using a handler, a handler using storage.
    let dir = std::env::temp_dir().join(format!("crd-apiserver-layers-{}", std::process::id()));
    let _ = fs::remove_dir_all(&dir);
    fs::create_dir_all(dir.join("rest")).unwrap();
    fs::create_dir_all(dir.join("handlers")).unwrap();
    fs::write(
        dir.join("rest/store.rs"),
        "use crate::{\n    field,\n    handlers::{dispatch, watch},\n};\n// crate::server in a comment is fine\n",
    )
    .unwrap();
    fs::write(
        dir.join("handlers/watch.rs"),
        "let s = crate::storage::x;\n",
    )
    .unwrap();
    let found = violations(&dir);
    let _ = fs::remove_dir_all(&dir);
    assert_eq!(
        found,
        [
            "handlers/watch.rs: handlers may not use storage",
            "rest/store.rs: rest may not use handlers",
        ]
    );
}
