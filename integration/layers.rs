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
    &["cluster"],
    &["handlers"],
    &["controllers"],
    &["apiserver"],
    &["aggregator"],
    &["rest"],
    &["admission"],
    &["conversion"],
    &["webhook"],
    &["auth"],
    &["remote"],
    &["registry"],
    &["http"],
    &["snapshots"],
    &["storage", "tls", "protobuf"],
];

/// Uses the layers would allow but an invariant forbids: handlers reach storage only
/// through the store (`rest::store`).
const FORBIDDEN: &[(&str, &str)] = &[("handlers", "storage")];

/// The pure layer's modules, re-exported by the server crate: every layer may use them.
const PURE: &[&str] = &[
    "access",
    "apply",
    "cel",
    "codec",
    "crd",
    "duration",
    "field",
    "goformat",
    "object",
    "pipeline",
    "schema",
    "selector",
    "service_alloc",
    "status",
    "table",
    "typed",
    "user",
    "write",
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

/// The public signatures (`pub fn`, `pub(crate) fn`, ...) in `text` whose return type
/// is a `Result` with a `String` error, by their first line.
fn string_error_signatures(text: &str) -> Vec<String> {
    let mut found = Vec::new();
    let mut rest = text;
    while let Some(at) = rest.find("pub") {
        let after = &rest[at..];
        rest = &after[3..];
        let head = after[3..].trim_start();
        let head = match head.strip_prefix('(') {
            Some(scoped) => match scoped.find(')') {
                Some(close) => scoped[close + 1..].trim_start(),
                None => continue,
            },
            None => head,
        };
        let head = head.strip_prefix("async ").unwrap_or(head);
        if !head.starts_with("fn ") {
            continue;
        }
        // The signature runs to the body (or to `;` in a trait).
        let end = head.find(['{', ';']).unwrap_or(head.len());
        let signature: String = head[..end].split_whitespace().collect::<Vec<_>>().join(" ");
        let Some((_, ret)) = signature.split_once(") -> ") else {
            continue;
        };
        let ret = ret.split(" where ").next().unwrap_or(ret).trim();
        if ret.starts_with("Result<") && ret.ends_with(", String>") {
            found.push(signature.lines().next().unwrap_or_default().to_string());
        }
    }
    found
}

/// ARCHITECTURE.md, "Errors": no public function of either crate returns
/// `Result<_, String>`; each layer has its typed error.
#[test]
fn no_public_function_returns_a_string_error() {
    let root = repo();
    let mut files = Vec::new();
    rust_files(&root.join("src"), &mut files);
    rust_files(&root.join("crates/apimachinery/src"), &mut files);
    assert!(
        files.len() > 50,
        "sources not found under {}",
        root.display()
    );
    let mut offenders = Vec::new();
    for file in files {
        let text = fs::read_to_string(&file).expect("source file");
        // Unit tests at the end of a file may use whatever is handy.
        let code = text.split("#[cfg(test)]").next().unwrap_or(&text);
        for sig in string_error_signatures(code) {
            offenders.push(format!("{}: {sig}", file.display()));
        }
    }
    assert!(
        offenders.is_empty(),
        "public functions returning Result<_, String>:\n{}",
        offenders.join("\n")
    );
}

#[test]
fn a_string_error_signature_is_reported() {
    let text = "pub fn a(x: &str) -> Result<u8, String> {}\n\
        pub(crate) async fn b(\n    x: &str,\n) -> Result<Vec<String>, String>\nwhere T: X {}\n\
        fn private() -> Result<(), String> {}\n\
        pub fn typed() -> Result<String, CodecError> {}\n\
        pub trait T { fn in_trait(&self) -> Result<(), String>; }\n";
    let found = string_error_signatures(text);
    assert_eq!(found.len(), 2, "{found:?}");
    assert!(found[0].starts_with("fn a("));
    assert!(found[1].starts_with("fn b("));
}
