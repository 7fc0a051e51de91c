//! `meta.k8s.io/v1` Table responses for custom resources (`Accept: application/json;as=Table;
//! v=v1;g=meta.k8s.io`), as kube's CRD table convertor builds them: a `Name` column, then
//! the CRD's `additionalPrinterColumns` (or a default `Age` column), cells evaluated with
//! kube's JSONPath dialect, and each row's `object` per `?includeObject=`.

use crate::schema::objectmeta::OBJECT_META_FIELDS;
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};

/// What the Table layer refuses; the texts are kube's.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum TableError {
    /// `?includeObject=` that is none of `None`, `Metadata`, `Object`.
    #[error("unrecognized includeObject value: {}", crate::field::go_quote(.0))]
    IncludeObject(String),
    /// A JSONPath that does not parse (kube's JSONPath parser's text).
    #[error("{0}")]
    JsonPathParse(String),
    /// A JSONPath that cannot be evaluated on an object (kube's JSONPath evaluator's text).
    #[error("{0}")]
    JsonPathFind(String),
}

/// Description kube gives the `Name` column (ObjectMeta's `name` field doc).
pub const NAME_COLUMN_DESCRIPTION: &str = "Name must be unique within a namespace. Is required when creating resources, although some resources may allow a client to request the generation of an appropriate name automatically. Name is primarily intended for creation idempotence and configuration definition. Cannot be updated. More info: https://kubernetes.io/docs/concepts/overview/working-with-objects/names#names";

/// Description kube gives the default `Age` column (ObjectMeta's `creationTimestamp` doc).
pub const AGE_COLUMN_DESCRIPTION: &str = "CreationTimestamp is a timestamp representing the server time when this object was created. It is not guaranteed to be set in happens-before order across separate operations. Clients may not set this value. It is represented in RFC3339 form and is in UTC.\n\nPopulated by the system. Read-only. Null for lists. More info: https://git.k8s.io/community/contributors/devel/sig-architecture/api-conventions.md#metadata";

/// The Table API version kube answers with by default.
pub const TABLE_GROUP_VERSION: &str = "meta.k8s.io/v1";

/// One CRD printer column (`additionalPrinterColumns[]`).
#[derive(Clone, Debug, PartialEq)]
pub struct PrinterColumn {
    /// Column header.
    pub name: String,
    /// OpenAPI type: `string`, `integer`, `number`, `boolean` or `date`.
    pub type_: String,
    /// OpenAPI format (may be empty).
    pub format: String,
    /// Description; empty means kube's default text naming the JSONPath.
    pub description: String,
    /// 0 for the default view, higher for `-o wide`.
    pub priority: i64,
    /// JSONPath as written in the CRD, e.g. `.spec.replicas`.
    pub json_path: String,
}

impl PrinterColumn {
    /// Read one `additionalPrinterColumns` entry of a CRD version.
    pub fn from_crd_json(v: &Value) -> Option<Self> {
        let s = |k: &str| v.get(k).and_then(Value::as_str).unwrap_or("").to_string();
        Some(PrinterColumn {
            name: v.get("name")?.as_str()?.to_string(),
            type_: s("type"),
            format: s("format"),
            description: s("description"),
            priority: v.get("priority").and_then(Value::as_i64).unwrap_or(0),
            json_path: v.get("jsonPath")?.as_str()?.to_string(),
        })
    }

    /// The default `Age` column kube serves when a version has no printer columns.
    pub fn age() -> Self {
        PrinterColumn {
            name: "Age".to_string(),
            type_: "date".to_string(),
            format: String::new(),
            description: AGE_COLUMN_DESCRIPTION.to_string(),
            priority: 0,
            json_path: ".metadata.creationTimestamp".to_string(),
        }
    }

    /// The `description` kube puts in the column definition.
    pub fn effective_description(&self) -> String {
        if self.description.is_empty() {
            format!(
                "Custom resource definition column (in JSONPath format): {}",
                self.json_path
            )
        } else {
            self.description.clone()
        }
    }
}

/// A CRD version's printer columns as kube serves them: its `additionalPrinterColumns`
/// (JSON array or null), or the single default `Age` column when there are none.
pub fn printer_columns_for_version(additional_printer_columns: &Value) -> Vec<PrinterColumn> {
    let cols: Vec<PrinterColumn> = additional_printer_columns
        .as_array()
        .map(|a| a.iter().filter_map(PrinterColumn::from_crd_json).collect())
        .unwrap_or_default();
    if cols.is_empty() {
        vec![PrinterColumn::age()]
    } else {
        cols
    }
}

/// Columns kube uses for the `/scale` subresource Table (`Desired`, `Available`, `Age`).
pub fn scale_printer_columns(
    has_spec_replicas_path: bool,
    has_status_replicas_path: bool,
) -> Vec<PrinterColumn> {
    let mut cols = Vec::new();
    let replicas = |name: &str, desc: &str, path: &str| PrinterColumn {
        name: name.to_string(),
        type_: "integer".to_string(),
        format: String::new(),
        description: desc.to_string(),
        priority: 0,
        json_path: path.to_string(),
    };
    if has_spec_replicas_path {
        cols.push(replicas(
            "Desired",
            "Number of desired replicas",
            ".spec.replicas",
        ));
    }
    if has_status_replicas_path {
        cols.push(replicas(
            "Available",
            "Number of actual replicas",
            ".status.replicas",
        ));
    }
    cols.push(PrinterColumn::age());
    cols
}

/// What each row's `object` holds (`?includeObject=`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Default)]
pub enum IncludeObject {
    /// `None`: `object` is null.
    None,
    /// `Metadata` (the default): a `PartialObjectMetadata`.
    #[default]
    Metadata,
    /// `Object`: the full object.
    Object,
}

impl IncludeObject {
    /// Parse the query value; the error is kube's 400 message.
    pub fn parse(v: Option<&str>) -> Result<Self, TableError> {
        match v.unwrap_or("") {
            "" | "Metadata" => Ok(IncludeObject::Metadata),
            "None" => Ok(IncludeObject::None),
            "Object" => Ok(IncludeObject::Object),
            other => Err(TableError::IncludeObject(other.to_string())),
        }
    }
}

/// How to render a Table.
#[derive(Clone, Debug, PartialEq)]
pub struct TableOptions {
    /// `?includeObject=`.
    pub include_object: IncludeObject,
    /// Omit `columnDefinitions` (kube does so for every watch event after the first).
    pub no_headers: bool,
    /// `meta.k8s.io/v1` or `meta.k8s.io/v1beta1`, as negotiated.
    pub group_version: String,
}

impl Default for TableOptions {
    fn default() -> Self {
        TableOptions {
            include_object: IncludeObject::Metadata,
            no_headers: false,
            group_version: TABLE_GROUP_VERSION.to_string(),
        }
    }
}

/// `columnDefinitions`: `Name` first, then the given columns.
pub fn column_definitions(columns: &[PrinterColumn]) -> Value {
    let mut defs = vec![json!({
        "name": "Name",
        "type": "string",
        "format": "name",
        "description": NAME_COLUMN_DESCRIPTION,
        "priority": 0,
    })];
    for c in columns {
        defs.push(json!({
            "name": c.name,
            "type": c.type_,
            "format": c.format,
            "description": c.effective_description(),
            "priority": c.priority,
        }));
    }
    Value::Array(defs)
}

/// The Table for objects (a list, a single GET, or one watch event): each row's
/// `object` per `include_object`, column definitions included.
/// `list_meta` is the list's `metadata` (`resourceVersion`, `continue`,
/// `remainingItemCount` are carried over; for one object pass its `resourceVersion`).
/// Empty `columns` mean kube's default (`Name`, `Age`).
pub fn table_for_objects(
    objs: &[Value],
    columns: &[PrinterColumn],
    include_object: IncludeObject,
    list_meta: Value,
) -> Value {
    let options = TableOptions {
        include_object,
        ..TableOptions::default()
    };
    table_with_options(objs, columns, &options, &list_meta, Utc::now())
}

/// [`table_for_objects`] with every option and an explicit clock for `date` cells.
pub fn table_with_options(
    objs: &[Value],
    columns: &[PrinterColumn],
    options: &TableOptions,
    list_meta: &Value,
    now: DateTime<Utc>,
) -> Value {
    let default_columns;
    let columns = if columns.is_empty() {
        default_columns = [PrinterColumn::age()];
        &default_columns[..]
    } else {
        columns
    };
    let rows = objs
        .iter()
        .map(|o| table_row(o, columns, options, now))
        .collect();
    table_value(
        table_list_meta(list_meta),
        column_definitions(columns),
        options,
        rows,
    )
}

/// The Table's `metadata`: what it carries over from the list's.
fn table_list_meta(list_meta: &Value) -> Value {
    let mut meta = Map::new();
    for key in ["selfLink", "resourceVersion", "continue"] {
        if let Some(s) = list_meta.get(key).and_then(Value::as_str) {
            if !s.is_empty() {
                meta.insert(key.to_string(), Value::String(s.to_string()));
            }
        }
    }
    if let Some(n) = list_meta
        .get("remainingItemCount")
        .filter(|v| v.is_number())
    {
        meta.insert("remainingItemCount".to_string(), n.clone());
    }
    Value::Object(meta)
}

fn table_value(meta: Value, defs: Value, options: &TableOptions, rows: Vec<Value>) -> Value {
    let defs = if options.no_headers {
        Value::Null
    } else {
        defs
    };
    json!({
        "kind": "Table",
        "apiVersion": options.group_version,
        "metadata": meta,
        "columnDefinitions": defs,
        "rows": rows,
    })
}

/// One row: `cells` (name, then one per column) and `object`.
pub fn table_row(
    obj: &Value,
    columns: &[PrinterColumn],
    options: &TableOptions,
    now: DateTime<Utc>,
) -> Value {
    let name = obj
        .get("metadata")
        .and_then(|m| m.get("name"))
        .and_then(Value::as_str)
        .unwrap_or("");
    let mut cells = vec![Value::String(name.to_string())];
    cells.extend(columns.iter().map(|c| cell_for_column(obj, c, now)));
    let object = match options.include_object {
        IncludeObject::None => Value::Null,
        IncludeObject::Object => obj.clone(),
        IncludeObject::Metadata => partial_object_metadata(obj, &options.group_version),
    };
    json!({"cells": cells, "object": object})
}

/// A `PartialObjectMetadata` for an object, in the given `meta.k8s.io` version.
pub fn partial_object_metadata(obj: &Value, group_version: &str) -> Value {
    let mut meta = Map::new();
    if let Some(m) = obj.get("metadata").and_then(Value::as_object) {
        for key in OBJECT_META_FIELDS {
            if let Some(v) = m.get(key) {
                meta.insert(key.to_string(), v.clone());
            }
        }
    }
    // kube v1.36's ObjectMeta omits a zero creationTimestamp (`omitzero`): only objects
    // never stored (component statuses) have none.
    json!({
        "kind": "PartialObjectMetadata",
        "apiVersion": group_version,
        "metadata": meta,
    })
}

/// One cell, as kube's CRD table convertor computes it (null when nothing is found).
pub fn cell_for_column(obj: &Value, column: &PrinterColumn, now: DateTime<Utc>) -> Value {
    let Ok(path) = jsonpath::parse(&column.json_path) else {
        return Value::Null;
    };
    let results = match path.find(obj) {
        Ok(r) if !r.is_empty() => r,
        _ => return Value::Null,
    };
    // Several matches (e.g. `[*]`) become one JSON array value.
    let value = match results.as_slice() {
        [one] => (*one).clone(),
        many => Value::Array(many.iter().map(|v| (*v).clone()).collect()),
    };
    if column.type_ == "string" {
        return Value::String(jsonpath::print_result(&value));
    }
    cell_for_json_value(&column.type_, &value, now)
}

/// kube's `cellForJSONValue` for non-string columns.
fn cell_for_json_value(type_: &str, value: &Value, now: DateTime<Utc>) -> Value {
    match (type_, value) {
        ("integer", Value::Number(n)) => match n.as_i64() {
            Some(i) => Value::from(i),
            // Go converts float64 to int64 by truncation.
            None => Value::from(n.as_f64().unwrap_or(0.0) as i64),
        },
        ("number", Value::Number(n)) => {
            let f = n.as_f64().unwrap_or(0.0);
            // Go encodes float64(42) as `42`; keep integral values integral on the wire.
            if n.is_i64() || (f.fract() == 0.0 && f.abs() < 9.0e15) {
                Value::from(f as i64)
            } else {
                Value::from(f)
            }
        }
        ("boolean", Value::Bool(b)) => Value::Bool(*b),
        ("date", Value::String(s)) => Value::String(human_date(s, now)),
        _ => Value::Null,
    }
}

/// kube's `date` cell: the age of an RFC 3339 timestamp, `<unknown>` for an empty
/// value and `<invalid>` for an unparseable one.
pub fn human_date(timestamp: &str, now: DateTime<Utc>) -> String {
    if timestamp.is_empty() || timestamp == "null" {
        return "<unknown>".to_string();
    }
    match DateTime::parse_from_rfc3339(timestamp) {
        Ok(t) => short_human_duration(now.signed_duration_since(t.with_timezone(&Utc))),
        Err(_) => "<invalid>".to_string(),
    }
}

/// kube's `duration.ShortHumanDuration`.
pub fn short_human_duration(d: chrono::TimeDelta) -> String {
    let nanos = d.num_nanoseconds().map(|n| n as f64).unwrap_or_else(|| {
        // Beyond ±292 years: milliseconds are precise enough.
        d.num_milliseconds() as f64 * 1e6
    });
    let seconds = (nanos / 1e9).trunc() as i64;
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 60 {
        return format!("{seconds}s");
    }
    let minutes = (nanos / 6e10).trunc() as i64;
    if minutes < 60 {
        return format!("{minutes}m");
    }
    let hours = (nanos / 3.6e12).trunc() as i64;
    if hours < 24 {
        return format!("{hours}h");
    }
    if hours < 24 * 365 {
        return format!("{}d", hours / 24);
    }
    format!("{}y", (nanos / 3.6e12 / 24.0 / 365.0).trunc() as i64)
}

/// One column of a built-in kind's Table, as kube's printers define it.
#[derive(Clone, Debug, PartialEq)]
pub struct BuiltinColumn {
    /// Column header.
    pub name: &'static str,
    /// `string` or `integer`.
    pub type_: &'static str,
    /// `name` for the object name column, else empty.
    pub format: &'static str,
    /// 0 for the default view, 1 for `-o wide`.
    pub priority: i64,
    /// kube's description (the documentation of the field shown).
    pub description: String,
}

impl BuiltinColumn {
    /// A column with no format.
    pub fn new(name: &'static str, type_: &'static str, priority: i64, description: &str) -> Self {
        BuiltinColumn {
            name,
            type_,
            format: "",
            priority,
            description: description.to_string(),
        }
    }

    /// kube's `Name` column of built-in kinds.
    pub fn name(priority: i64) -> Self {
        BuiltinColumn {
            name: "Name",
            type_: "string",
            format: "name",
            priority,
            description: NAME_COLUMN_DESCRIPTION.to_string(),
        }
    }

    /// kube's `Age` column of built-in kinds (a string cell, computed by the server).
    pub fn age() -> Self {
        BuiltinColumn::new("Age", "string", 0, AGE_COLUMN_DESCRIPTION)
    }
}

/// kube's Table printer of a built-in kind (`pkg/printers/internalversion`): column
/// definitions and the function computing a row's cells, one per column (kube fills
/// the `-o wide` cells too; kubectl hides them).
#[derive(Clone, Debug)]
pub struct BuiltinPrinter {
    /// Column definitions, in order (built-in kinds say where `Name` goes).
    pub columns: Vec<BuiltinColumn>,
    /// The cells of one object's row at the given time.
    pub cells: fn(&Value, DateTime<Utc>) -> Vec<Value>,
}

/// The Table of a built-in kind's objects (see [`table_with_options`] for the arguments).
pub fn builtin_table(
    objs: &[Value],
    printer: &BuiltinPrinter,
    options: &TableOptions,
    list_meta: &Value,
    now: DateTime<Utc>,
) -> Value {
    let defs = printer
        .columns
        .iter()
        .map(|c| {
            json!({
                "name": c.name,
                "type": c.type_,
                "format": c.format,
                "description": c.description,
                "priority": c.priority,
            })
        })
        .collect();
    let rows = objs
        .iter()
        .map(|o| {
            let object = match options.include_object {
                IncludeObject::None => Value::Null,
                IncludeObject::Object => o.clone(),
                IncludeObject::Metadata => partial_object_metadata(o, &options.group_version),
            };
            json!({"cells": (printer.cells)(o, now), "object": object})
        })
        .collect();
    table_value(
        table_list_meta(list_meta),
        Value::Array(defs),
        options,
        rows,
    )
}

/// kube's `translateTimestampSince` for a timestamp field: `<unknown>` when absent,
/// else the age in kube's `HumanDuration` (`5m30s`, `3h`, `2d4h`).
pub fn timestamp_since(timestamp: Option<&str>, now: DateTime<Utc>) -> String {
    match timestamp.filter(|t| !t.is_empty()) {
        None => "<unknown>".to_string(),
        Some(t) => match DateTime::parse_from_rfc3339(t) {
            Ok(t) => human_duration(now.signed_duration_since(t.with_timezone(&Utc))),
            Err(_) => "<unknown>".to_string(),
        },
    }
}

/// kube's `duration.HumanDuration` (more precise than [`short_human_duration`]).
pub fn human_duration(d: chrono::TimeDelta) -> String {
    let seconds = d.num_seconds();
    if seconds < -1 {
        return "<invalid>".to_string();
    }
    if seconds < 0 {
        return "0s".to_string();
    }
    if seconds < 120 {
        return format!("{seconds}s");
    }
    let minutes = d.num_minutes();
    if minutes < 10 {
        return two_units(minutes, "m", seconds % 60, "s");
    }
    if minutes < 180 {
        return format!("{minutes}m");
    }
    let hours = d.num_hours();
    if hours < 8 {
        return two_units(hours, "h", minutes % 60, "m");
    }
    if hours < 48 {
        return format!("{hours}h");
    }
    if hours < 24 * 8 {
        return two_units(hours / 24, "d", hours % 24, "h");
    }
    if hours < 24 * 365 * 2 {
        return format!("{}d", hours / 24);
    }
    if hours < 24 * 365 * 8 {
        return two_units(hours / 24 / 365, "y", (hours / 24) % 365, "d");
    }
    format!("{}y", hours / 24 / 365)
}

/// `<n><unit>`, then `<rest><rest_unit>` unless `rest` is 0: `5m`, `5m30s`.
fn two_units(n: i64, unit: &str, rest: i64, rest_unit: &str) -> String {
    if rest == 0 {
        format!("{n}{unit}")
    } else {
        format!("{n}{unit}{rest}{rest_unit}")
    }
}

/// kube's JSONPath dialect (`k8s.io/client-go/util/jsonpath`), enough for printer
/// columns and selectable fields: `.a.b`, `['a.b']`, `[0]`, `[-1]`, `[1:3]`, `[*]`,
/// `.*`, `..`, and filters `[?(@.type=="Ready")]`; missing keys yield no results.
pub mod jsonpath {
    use super::TableError;
    use crate::goformat::{go_float_v, go_json};
    use serde_json::Value;

    /// A parsed JSONPath.
    #[derive(Clone, Debug, PartialEq)]
    pub struct JsonPath {
        nodes: Vec<Node>,
    }

    #[derive(Clone, Debug, PartialEq)]
    enum Node {
        Field(String),
        Fields(Vec<String>),
        Slice(Slice),
        Indices(Vec<i64>),
        Wildcard,
        Recursive,
        Filter(Box<Filter>),
    }

    #[derive(Clone, Debug, PartialEq)]
    struct Slice {
        start: Option<i64>,
        end: Option<i64>,
        step: Option<i64>,
        /// `[n]`: the end was derived as `n+1`.
        single: bool,
    }

    #[derive(Clone, Debug, PartialEq)]
    struct Filter {
        left: Vec<Node>,
        op: String,
        right: Operand,
    }

    #[derive(Clone, Debug, PartialEq)]
    enum Operand {
        None,
        Path(Vec<Node>),
        Str(String),
        Int(i64),
        Float(f64),
        Bool(bool),
    }

    /// Parse an expression as written in a CRD (`.spec.x`), optionally inside `{}`.
    pub fn parse(expr: &str) -> Result<JsonPath, TableError> {
        let trimmed = expr.trim();
        let inner = trimmed
            .strip_prefix('{')
            .and_then(|s| s.strip_suffix('}'))
            .unwrap_or(trimmed);
        let chars: Vec<char> = inner.chars().collect();
        let nodes = parse_nodes(&chars).map_err(TableError::JsonPathParse)?;
        Ok(JsonPath { nodes })
    }

    impl JsonPath {
        /// All values the path selects, in kube's order; `Err` where kube's evaluation
        /// fails (indexing a non-array, index out of range, bad comparison).
        pub fn find<'a>(&self, root: &'a Value) -> Result<Vec<&'a Value>, TableError> {
            eval(&self.nodes, vec![root]).map_err(TableError::JsonPathFind)
        }
    }

    fn is_terminator(c: char) -> bool {
        c.is_whitespace() || matches!(c, '.' | ',' | '[' | ']' | '$' | '@' | '{' | '}')
    }

    fn parse_nodes(chars: &[char]) -> Result<Vec<Node>, String> {
        let mut nodes = Vec::new();
        let mut i = 0;
        while i < chars.len() {
            match chars[i] {
                c if c.is_whitespace() => i += 1,
                '$' | '@' => i += 1,
                '.' => {
                    i += 1;
                    if chars.get(i) == Some(&'.') {
                        nodes.push(Node::Recursive);
                        i += 1;
                        if chars.get(i) == Some(&'[') {
                            continue;
                        }
                    }
                    let mut name = String::new();
                    while i < chars.len() && !is_terminator(chars[i]) {
                        if chars[i] == '\\' && i + 1 < chars.len() {
                            i += 1;
                        }
                        name.push(chars[i]);
                        i += 1;
                    }
                    if name == "*" {
                        nodes.push(Node::Wildcard);
                    } else if !name.is_empty() {
                        nodes.push(Node::Field(name));
                    }
                }
                '[' => {
                    let (node, next) = parse_bracket(chars, i)?;
                    nodes.push(node);
                    i = next;
                }
                c => return Err(format!("unrecognized character in action: {c:?}")),
            }
        }
        Ok(nodes)
    }

    /// Parse `[...]` starting at `chars[start] == '['`; returns the node and the index after `]`.
    fn parse_bracket(chars: &[char], start: usize) -> Result<(Node, usize), String> {
        if chars.get(start + 1) == Some(&'?') {
            return parse_filter(chars, start);
        }
        let mut i = start + 1;
        let mut quote: Option<char> = None;
        while i < chars.len() {
            let c = chars[i];
            match quote {
                Some(_) if c == '\\' => i += 1,
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if c == '\'' || c == '"' => quote = Some(c),
                None if c == ']' => break,
                None => {}
            }
            i += 1;
        }
        if i >= chars.len() {
            return Err("unterminated array".to_string());
        }
        let text: String = chars[start + 1..i].iter().collect();
        let text = text.trim();
        let node = if text.starts_with('\'') || text.starts_with('"') {
            let names = split_top_level(text, ',')
                .into_iter()
                .map(|p| unquote(p.trim()))
                .collect::<Result<Vec<_>, _>>()?;
            match <[String; 1]>::try_from(names) {
                Ok([one]) => Node::Field(one),
                Err(many) => Node::Fields(many),
            }
        } else if text == "*" {
            Node::Slice(Slice {
                start: None,
                end: None,
                step: None,
                single: false,
            })
        } else if text.contains(',') {
            let idx = text
                .split(',')
                .map(|p| p.trim().parse::<i64>().map_err(|e| e.to_string()))
                .collect::<Result<Vec<_>, _>>()?;
            Node::Indices(idx)
        } else {
            let parts: Vec<&str> = text.split(':').collect();
            if parts.len() > 3 {
                return Err(format!("invalid array index {text}"));
            }
            let num = |s: &str| -> Result<Option<i64>, String> {
                let s = s.trim();
                if s.is_empty() {
                    Ok(None)
                } else {
                    s.parse::<i64>()
                        .map(Some)
                        .map_err(|_| format!("invalid array index {text}"))
                }
            };
            let first = num(parts[0])?;
            if parts.len() == 1 {
                let Some(n) = first else {
                    return Err(format!("invalid array index {text}"));
                };
                Node::Slice(Slice {
                    start: Some(n),
                    end: Some(n + 1),
                    step: None,
                    single: true,
                })
            } else {
                Node::Slice(Slice {
                    start: first,
                    end: num(parts[1])?,
                    step: match parts.get(2) {
                        Some(s) => num(s)?,
                        None => None,
                    },
                    single: false,
                })
            }
        };
        Ok((node, i + 1))
    }

    fn split_top_level(text: &str, sep: char) -> Vec<&str> {
        let mut parts = Vec::new();
        let mut quote: Option<char> = None;
        let mut start = 0;
        let mut escaped = false;
        for (i, c) in text.char_indices() {
            if escaped {
                escaped = false;
                continue;
            }
            match quote {
                Some(_) if c == '\\' => escaped = true,
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if c == '\'' || c == '"' => quote = Some(c),
                None if c == sep => {
                    parts.push(&text[start..i]);
                    start = i + c.len_utf8();
                }
                None => {}
            }
        }
        parts.push(&text[start..]);
        parts
    }

    fn unquote(s: &str) -> Result<String, String> {
        let mut chars = s.chars();
        let q = chars.next().ok_or("empty quoted string")?;
        if !(q == '\'' || q == '"') || !s.ends_with(q) || s.len() < 2 {
            return Err(format!("invalid quoted string {s}"));
        }
        let body = &s[1..s.len() - 1];
        let mut out = String::new();
        let mut it = body.chars();
        while let Some(c) = it.next() {
            if c != '\\' {
                out.push(c);
                continue;
            }
            match it.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some('r') => out.push('\r'),
                Some(other) => out.push(other),
                None => return Err("unterminated escape".to_string()),
            }
        }
        Ok(out)
    }

    fn parse_filter(chars: &[char], start: usize) -> Result<(Node, usize), String> {
        // `[?(` ... `)]`, with quotes allowed to contain `)`.
        let mut i = start + 2;
        if chars.get(i) != Some(&'(') {
            return Err("invalid filter".to_string());
        }
        i += 1;
        let body_start = i;
        let mut quote: Option<char> = None;
        while i < chars.len() {
            let c = chars[i];
            match quote {
                Some(_) if c == '\\' => i += 1,
                Some(q) if c == q => quote = None,
                Some(_) => {}
                None if c == '\'' || c == '"' => quote = Some(c),
                None if c == ')' => break,
                None => {}
            }
            i += 1;
        }
        if i >= chars.len() || chars.get(i + 1) != Some(&']') {
            return Err("unterminated filter".to_string());
        }
        let text: String = chars[body_start..i].iter().collect();
        let is_op = |c: char| matches!(c, '!' | '<' | '>' | '=');
        let left_end = text.find(is_op).unwrap_or(text.len());
        let filter = if left_end == 0 || left_end == text.len() {
            Filter {
                left: parse_nodes(&text.chars().collect::<Vec<_>>())?,
                op: "exists".to_string(),
                right: Operand::None,
            }
        } else {
            let rest = &text[left_end..];
            let op_len = rest.find(|c: char| !is_op(c)).unwrap_or(rest.len());
            let (op, right) = rest.split_at(op_len);
            if right.is_empty() {
                return Err(format!("invalid filter {text}"));
            }
            Filter {
                left: parse_nodes(&text[..left_end].chars().collect::<Vec<_>>())?,
                op: op.to_string(),
                right: parse_operand(right.trim())?,
            }
        };
        Ok((Node::Filter(Box::new(filter)), i + 2))
    }

    fn parse_operand(s: &str) -> Result<Operand, String> {
        if s.starts_with('\'') || s.starts_with('"') {
            return unquote(s).map(Operand::Str);
        }
        if s.starts_with('@') || s.starts_with('$') || s.starts_with('.') {
            return parse_nodes(&s.chars().collect::<Vec<_>>()).map(Operand::Path);
        }
        match s {
            "true" => return Ok(Operand::Bool(true)),
            "false" => return Ok(Operand::Bool(false)),
            _ => {}
        }
        if s.contains('.') || s.contains(['e', 'E']) {
            s.parse::<f64>()
                .map(Operand::Float)
                .map_err(|_| format!("unrecognized identifier {s}"))
        } else {
            s.parse::<i64>()
                .map(Operand::Int)
                .map_err(|_| format!("unrecognized identifier {s}"))
        }
    }

    fn eval<'a>(nodes: &[Node], mut cur: Vec<&'a Value>) -> Result<Vec<&'a Value>, String> {
        for node in nodes {
            cur = eval_node(node, cur)?;
        }
        Ok(cur)
    }

    fn children(v: &Value) -> Vec<&Value> {
        match v {
            Value::Object(m) => m.values().collect(),
            Value::Array(a) => a.iter().collect(),
            _ => Vec::new(),
        }
    }

    fn eval_node<'a>(node: &Node, input: Vec<&'a Value>) -> Result<Vec<&'a Value>, String> {
        let mut out = Vec::new();
        match node {
            Node::Field(name) => {
                for v in input {
                    if let Some(x) = v.as_object().and_then(|m| m.get(name)) {
                        out.push(x);
                    }
                }
            }
            Node::Fields(names) => {
                for v in input {
                    if let Some(m) = v.as_object() {
                        out.extend(names.iter().filter_map(|n| m.get(n)));
                    }
                }
            }
            Node::Wildcard => {
                for v in input {
                    out.extend(children(v));
                }
            }
            Node::Recursive => {
                fn walk<'a>(v: &'a Value, out: &mut Vec<&'a Value>) {
                    let kids = children(v);
                    if !kids.is_empty() {
                        out.push(v);
                        for k in kids {
                            walk(k, out);
                        }
                    }
                }
                for v in input {
                    walk(v, &mut out);
                }
            }
            Node::Indices(idx) => {
                for v in input {
                    if v.is_null() {
                        continue;
                    }
                    let a = v.as_array().ok_or_else(|| not_array(v))?;
                    for &i in idx {
                        let len = a.len() as i64;
                        let j = if i < 0 { i + len } else { i };
                        let item = usize::try_from(j).ok().and_then(|j| a.get(j));
                        out.push(item.ok_or_else(|| out_of_bounds(i, len))?);
                    }
                }
            }
            Node::Slice(s) => {
                for v in input {
                    if v.is_null() {
                        continue;
                    }
                    let a = v.as_array().ok_or_else(|| not_array(v))?;
                    let len = a.len() as i64;
                    let mut start = s.start.unwrap_or(0);
                    if start < 0 {
                        start += len;
                    }
                    let mut end = s.end.unwrap_or(len);
                    if end < 0 || (end == 0 && s.single) {
                        end += len;
                    }
                    if start == end {
                        // kube stops evaluating this node here.
                        return Ok(out);
                    }
                    if start >= len || start < 0 {
                        return Err(out_of_bounds(start, len));
                    }
                    if end > len || end < 0 {
                        return Err(out_of_bounds(end - 1, len));
                    }
                    if start > end {
                        return Err(format!(
                            "starting index {start} is greater than ending index {end}"
                        ));
                    }
                    let step = s.step.unwrap_or(1);
                    if step <= 0 {
                        return Err("step must be > 0".to_string());
                    }
                    let slice = &a[start as usize..end as usize];
                    out.extend(slice.iter().step_by(step as usize));
                }
            }
            Node::Filter(f) => {
                for v in input {
                    if v.is_null() {
                        continue;
                    }
                    let a = v.as_array().ok_or_else(|| {
                        format!("{v} is not array or slice and cannot be filtered")
                    })?;
                    for item in a {
                        if filter_keeps(f, item)? {
                            out.push(item);
                        }
                    }
                }
            }
        }
        Ok(out)
    }

    fn not_array(v: &Value) -> String {
        format!("{v} is not array or slice")
    }

    fn out_of_bounds(i: i64, len: i64) -> String {
        format!("array index out of bounds: index {i}, length {len}")
    }

    /// A comparable scalar, with kube template's kinds.
    enum Scalar<'a> {
        Int(i64),
        Float(f64),
        Str(&'a str),
        Bool(bool),
    }

    fn scalar_of(v: &Value) -> Result<Scalar<'_>, String> {
        match v {
            Value::Number(n) => Ok(match n.as_i64() {
                Some(i) => Scalar::Int(i),
                None => Scalar::Float(n.as_f64().unwrap_or(0.0)),
            }),
            Value::String(s) => Ok(Scalar::Str(s)),
            Value::Bool(b) => Ok(Scalar::Bool(*b)),
            _ => Err("invalid type for comparison".to_string()),
        }
    }

    fn filter_keeps(f: &Filter, item: &Value) -> Result<bool, String> {
        let lefts = eval(&f.left, vec![item]);
        if f.op == "exists" {
            return Ok(lefts.is_ok_and(|l| !l.is_empty()));
        }
        let lefts = lefts?;
        let left = match lefts.as_slice() {
            [] => return Ok(false),
            [one] => scalar_of(one)?,
            _ => return Err("can only compare one element at a time".to_string()),
        };
        let right_owned;
        let right = match &f.right {
            Operand::Path(p) => {
                let rights = eval(p, vec![item])?;
                match rights.as_slice() {
                    [] => return Ok(false),
                    [one] => {
                        right_owned = (*one).clone();
                        scalar_of(&right_owned)?
                    }
                    _ => return Err("can only compare one element at a time".to_string()),
                }
            }
            Operand::Str(s) => Scalar::Str(s),
            Operand::Int(i) => Scalar::Int(*i),
            Operand::Float(x) => Scalar::Float(*x),
            Operand::Bool(b) => Scalar::Bool(*b),
            Operand::None => return Ok(false),
        };
        let eq = || -> Result<bool, String> {
            Ok(match (&left, &right) {
                (Scalar::Int(a), Scalar::Int(b)) => a == b,
                (Scalar::Float(a), Scalar::Float(b)) => a == b,
                (Scalar::Str(a), Scalar::Str(b)) => a == b,
                (Scalar::Bool(a), Scalar::Bool(b)) => a == b,
                _ => return Err("incompatible types for comparison".to_string()),
            })
        };
        let lt = || -> Result<bool, String> {
            Ok(match (&left, &right) {
                (Scalar::Int(a), Scalar::Int(b)) => a < b,
                (Scalar::Float(a), Scalar::Float(b)) => a < b,
                (Scalar::Str(a), Scalar::Str(b)) => a < b,
                (Scalar::Bool(_), Scalar::Bool(_)) => {
                    return Err("invalid type for comparison".to_string())
                }
                _ => return Err("incompatible types for comparison".to_string()),
            })
        };
        match f.op.as_str() {
            "==" => eq(),
            "!=" => eq().map(|b| !b),
            "<" => lt(),
            "<=" => Ok(lt()? || eq()?),
            ">" => Ok(!(lt()? || eq()?)),
            ">=" => lt().map(|b| !b),
            other => Err(format!("unrecognized filter operator {other}")),
        }
    }

    /// kube's `PrintResults` for one value: maps and arrays as compact Go JSON,
    /// everything else as Go's `fmt.Fprint` (null prints `<no value>`).
    pub fn print_result(v: &Value) -> String {
        match v {
            Value::Object(_) | Value::Array(_) => go_json(v),
            Value::Null => "<no value>".to_string(),
            other => go_sprint(other),
        }
    }

    /// Go's `fmt.Sprint` of a decoded JSON value (int64, float64, bool, string, maps, slices).
    pub fn go_sprint(v: &Value) -> String {
        match v {
            Value::Null => "<nil>".to_string(),
            Value::Bool(b) => b.to_string(),
            Value::String(s) => s.clone(),
            Value::Number(n) => match n.as_i64() {
                Some(i) => i.to_string(),
                None => go_float_v(n.as_f64().unwrap_or(0.0)),
            },
            Value::Array(a) => {
                let parts: Vec<String> = a.iter().map(go_sprint).collect();
                format!("[{}]", parts.join(" "))
            }
            Value::Object(m) => {
                let parts: Vec<String> = m
                    .iter()
                    .map(|(k, v)| format!("{k}:{}", go_sprint(v)))
                    .collect();
                format!("map[{}]", parts.join(" "))
            }
        }
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn human_duration_matches_kubes_human_duration() {
        let d = chrono::TimeDelta::seconds;
        assert_eq!(human_duration(d(-5)), "<invalid>");
        assert_eq!(human_duration(d(-1)), "0s");
        assert_eq!(human_duration(d(119)), "119s");
        assert_eq!(human_duration(d(5 * 60 + 30)), "5m30s");
        assert_eq!(human_duration(d(6 * 60)), "6m");
        assert_eq!(human_duration(d(90 * 60)), "90m");
        assert_eq!(human_duration(d(3 * 3600 + 5 * 60)), "3h5m");
        assert_eq!(human_duration(d(10 * 3600)), "10h");
        assert_eq!(human_duration(d(3 * 86400 + 4 * 3600)), "3d4h");
        assert_eq!(human_duration(d(30 * 86400)), "30d");
        assert_eq!(human_duration(d(800 * 86400)), "2y70d");
    }

    #[test]
    fn builtin_table_uses_the_printers_columns_and_cells() {
        let printer = BuiltinPrinter {
            columns: vec![BuiltinColumn::name(0), BuiltinColumn::age()],
            cells: |obj, _| vec![obj["metadata"]["name"].clone(), json!("5m")],
        };
        let t = builtin_table(
            &[json!({"metadata": {"name": "a"}})],
            &printer,
            &TableOptions::default(),
            &json!({"resourceVersion": "7"}),
            Utc::now(),
        );
        assert_eq!(t["columnDefinitions"][0]["format"], "name");
        assert_eq!(t["columnDefinitions"][1]["type"], "string");
        assert_eq!(t["rows"][0]["cells"], json!(["a", "5m"]));
        assert_eq!(t["metadata"], json!({"resourceVersion": "7"}));
    }

    use super::*;
    use chrono::TimeZone;

    fn col(name: &str, type_: &str, path: &str) -> PrinterColumn {
        PrinterColumn {
            name: name.to_string(),
            type_: type_.to_string(),
            format: String::new(),
            description: String::new(),
            priority: 0,
            json_path: path.to_string(),
        }
    }

    fn now() -> DateTime<Utc> {
        Utc.with_ymd_and_hms(2024, 1, 2, 0, 0, 0).unwrap()
    }

    fn servers_obj() -> Value {
        json!({
            "apiVersion": "example.istio.io/v1alpha1", "kind": "Blah",
            "metadata": {"name": "blah"},
            "spec": {
                "servers": [{"hosts": ["foo"]}, {"hosts": ["bar", "baz"]}],
                "foo": [{"bar": [1]}, {"bar": [2, 3]}]
            }
        })
    }

    #[test]
    fn kube_test_multiple_string_values() {
        // tableconvertor_test.go: "Return table with additional column containing multiple string values"
        let cols = vec![
            col("valueOnly", "string", ".spec.servers[0].hosts[0]"),
            col("single1", "string", ".spec.servers[0].hosts"),
            col("single2", "string", ".spec.servers[1].hosts"),
            col("multi", "string", ".spec.servers[*].hosts"),
        ];
        let row = table_row(&servers_obj(), &cols, &TableOptions::default(), now());
        assert_eq!(
            row["cells"],
            json!([
                "blah",
                "foo",
                "[\"foo\"]",
                "[\"bar\",\"baz\"]",
                "[[\"foo\"],[\"bar\",\"baz\"]]"
            ])
        );
    }

    #[test]
    fn kube_test_multiple_integer_values_as_string() {
        let cols = vec![
            col("valueOnly", "string", ".spec.foo[0].bar[0]"),
            col("single1", "string", ".spec.foo[0].bar"),
            col("single2", "string", ".spec.foo[1].bar"),
            col("multi", "string", ".spec.foo[*].bar"),
        ];
        let row = table_row(&servers_obj(), &cols, &TableOptions::default(), now());
        assert_eq!(
            row["cells"],
            json!(["blah", "1", "[1]", "[2,3]", "[[1],[2,3]]"])
        );
    }

    #[test]
    fn kube_test_multiple_integer_values() {
        let cols = vec![
            col("valueOnly", "integer", ".spec.foo[0].bar[0]"),
            col("single1", "integer", ".spec.foo[0].bar"),
            col("single2", "integer", ".spec.foo[1].bar"),
            col("multi", "integer", ".spec.foo[*].bar"),
        ];
        let row = table_row(&servers_obj(), &cols, &TableOptions::default(), now());
        assert_eq!(row["cells"], json!(["blah", 1, null, null, null]));
    }

    #[test]
    fn kube_test_cell_for_json_value() {
        // tableconvertor_test.go Test_cellForJSONValue.
        let n = now();
        let cases: Vec<(&str, Value, Value)> = vec![
            ("integer", json!(42), json!(42)),
            ("integer", json!(3.25), json!(3)),
            ("integer", json!(true), Value::Null),
            ("integer", json!("foo"), Value::Null),
            ("number", json!(42), json!(42)),
            ("number", json!(3.25), json!(3.25)),
            ("number", json!(true), Value::Null),
            ("boolean", json!(42), Value::Null),
            ("boolean", json!(true), json!(true)),
            ("boolean", json!("foo"), Value::Null),
            ("date", json!(42), Value::Null),
            ("date", json!(true), Value::Null),
            ("date", json!("2024-01-01T11:30:00Z"), json!("12h")),
            ("date", json!("2024-01-02T12:30:00Z"), json!("<invalid>")),
            ("date", json!(""), json!("<unknown>")),
            ("unknown", json!("foo"), Value::Null),
        ];
        for (t, v, want) in cases {
            assert_eq!(cell_for_json_value(t, &v, n), want, "{t} {v}");
        }
    }

    #[test]
    fn short_human_duration_matches_kube() {
        let d = |s: i64| short_human_duration(chrono::TimeDelta::seconds(s));
        assert_eq!(d(-2), "<invalid>");
        assert_eq!(d(-1), "0s");
        assert_eq!(d(59), "59s");
        assert_eq!(d(60), "1m");
        assert_eq!(d(3599), "59m");
        assert_eq!(d(3600), "1h");
        assert_eq!(d(86400 * 2 + 5), "2d");
        assert_eq!(d(86400 * 365), "1y");
        assert_eq!(d(86400 * 800), "2y");
    }

    #[test]
    fn default_columns_are_name_and_age() {
        let cols = printer_columns_for_version(&Value::Null);
        let defs = column_definitions(&cols);
        assert_eq!(
            defs,
            json!([
                {"name": "Name", "type": "string", "format": "name", "description": NAME_COLUMN_DESCRIPTION, "priority": 0},
                {"name": "Age", "type": "date", "format": "", "description": AGE_COLUMN_DESCRIPTION, "priority": 0}
            ])
        );
    }

    #[test]
    fn crd_columns_replace_age_and_default_description() {
        let cols = printer_columns_for_version(&json!([
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size", "priority": 1},
            {"name": "Ready", "type": "boolean", "jsonPath": ".status.ready", "description": "is it ready"}
        ]));
        let defs = column_definitions(&cols);
        assert_eq!(defs.as_array().map(Vec::len), Some(3));
        assert_eq!(
            defs[1],
            json!({"name": "Size", "type": "integer", "format": "", "description": "Custom resource definition column (in JSONPath format): .spec.size", "priority": 1})
        );
        assert_eq!(defs[2]["description"], "is it ready");
    }

    #[test]
    fn list_table_shape_and_metadata() {
        let objs = vec![json!({
            "apiVersion": "crud.example.com/v1", "kind": "Widget",
            "metadata": {"name": "w1", "namespace": "default", "resourceVersion": "7",
                          "creationTimestamp": "2024-01-01T23:59:00Z", "labels": {"a": "b"}},
            "spec": {"size": 5}
        })];
        let cols = printer_columns_for_version(&json!([
            {"name": "Size", "type": "integer", "jsonPath": ".spec.size"},
            {"name": "Missing", "type": "string", "jsonPath": ".spec.nope"},
            {"name": "Age", "type": "date", "jsonPath": ".metadata.creationTimestamp"}
        ]));
        let t = table_with_options(
            &objs,
            &cols,
            &TableOptions::default(),
            &json!({"resourceVersion": "9", "continue": ""}),
            now(),
        );
        assert_eq!(t["kind"], "Table");
        assert_eq!(t["apiVersion"], "meta.k8s.io/v1");
        assert_eq!(t["metadata"], json!({"resourceVersion": "9"}));
        assert_eq!(t["rows"][0]["cells"], json!(["w1", 5, null, "1m"]));
        assert_eq!(
            t["rows"][0]["object"],
            json!({"kind": "PartialObjectMetadata", "apiVersion": "meta.k8s.io/v1",
                   "metadata": {"name": "w1", "namespace": "default", "resourceVersion": "7",
                                "creationTimestamp": "2024-01-01T23:59:00Z", "labels": {"a": "b"}}})
        );
        let none = TableOptions {
            include_object: IncludeObject::None,
            no_headers: true,
            ..TableOptions::default()
        };
        let t = table_with_options(&objs, &cols, &none, &json!({}), now());
        assert_eq!(t["columnDefinitions"], Value::Null);
        assert_eq!(t["rows"][0]["object"], Value::Null);
        let full = TableOptions {
            include_object: IncludeObject::Object,
            ..TableOptions::default()
        };
        let t = table_with_options(&objs, &cols, &full, &json!({"resourceVersion": "7"}), now());
        assert_eq!(t["rows"][0]["object"], objs[0]);
        assert_eq!(t["metadata"], json!({"resourceVersion": "7"}));
        let empty = table_for_objects(&[], &cols, IncludeObject::Metadata, json!({}));
        assert_eq!(empty["rows"], json!([]));
        // No columns: kube's default Name and Age.
        let t = table_with_options(&objs, &[], &TableOptions::default(), &json!({}), now());
        assert_eq!(t["columnDefinitions"][1]["name"], "Age");
        assert_eq!(t["rows"][0]["cells"], json!(["w1", "1m"]));
    }

    #[test]
    fn include_object_values() {
        assert_eq!(IncludeObject::parse(None), Ok(IncludeObject::Metadata));
        assert_eq!(
            IncludeObject::parse(Some("Object")),
            Ok(IncludeObject::Object)
        );
        assert_eq!(IncludeObject::parse(Some("None")), Ok(IncludeObject::None));
        assert_eq!(
            IncludeObject::parse(Some("all")),
            Err(TableError::IncludeObject("all".to_string()))
        );
    }

    #[test]
    fn string_cells_print_like_go() {
        let obj = json!({"metadata": {"name": "x"}, "spec": {
            "s": "text", "i": 7, "f": 0.5, "big": 1.0e6, "b": false, "n": null,
            "m": {"z": "<a&b>", "a": 1}
        }});
        let cols = vec![
            col("s", "string", ".spec.s"),
            col("i", "string", ".spec.i"),
            col("f", "string", ".spec.f"),
            col("big", "string", ".spec.big"),
            col("b", "string", ".spec.b"),
            col("n", "string", ".spec.n"),
            col("m", "string", ".spec.m"),
        ];
        let row = table_row(&obj, &cols, &TableOptions::default(), now());
        assert_eq!(
            row["cells"],
            json!([
                "x",
                "text",
                "7",
                "0.5",
                "1e+06",
                "false",
                "<no value>",
                "{\"a\":1,\"z\":\"\\u003ca\\u0026b\\u003e\"}"
            ])
        );
    }

    #[test]
    fn conditions_filter_column() {
        let obj = json!({"metadata": {"name": "x"}, "status": {"conditions": [
            {"type": "Synced", "status": "False"},
            {"type": "Ready", "status": "True", "observedGeneration": 3}
        ]}});
        let c = col(
            "Ready",
            "string",
            ".status.conditions[?(@.type==\"Ready\")].status",
        );
        assert_eq!(cell_for_column(&obj, &c, now()), json!("True"));
        let c = col(
            "Gen",
            "integer",
            ".status.conditions[?(@.observedGeneration>=2)].observedGeneration",
        );
        assert_eq!(cell_for_column(&obj, &c, now()), json!(3));
        let c = col(
            "Has",
            "string",
            ".status.conditions[?(@.observedGeneration)].type",
        );
        assert_eq!(cell_for_column(&obj, &c, now()), json!("Ready"));
        // Comparing an int field with a string literal is an error: the cell is null.
        let c = col(
            "Bad",
            "string",
            ".status.conditions[?(@.observedGeneration==\"3\")].type",
        );
        assert_eq!(cell_for_column(&obj, &c, now()), Value::Null);
    }

    #[test]
    fn jsonpath_indexing_and_errors() {
        let v = json!({"a": [1, 2, 3], "m": {"x.y": 9}, "n": null});
        let find = |p: &str| {
            jsonpath::parse(p)
                .unwrap()
                .find(&v)
                .map(|r| r.into_iter().cloned().collect::<Vec<_>>())
        };
        assert_eq!(find(".a[-1]"), Ok(vec![json!(3)]));
        assert_eq!(find(".a[0:2]"), Ok(vec![json!(1), json!(2)]));
        assert_eq!(find(".a[::2]"), Ok(vec![json!(1), json!(3)]));
        assert_eq!(find(".m['x.y']"), Ok(vec![json!(9)]));
        assert_eq!(find("{.m.x\\.y}"), Ok(vec![json!(9)]));
        assert_eq!(find(".missing.deeper"), Ok(vec![]));
        assert_eq!(find(".n.deeper"), Ok(vec![]));
        assert!(find(".a[5]").is_err());
        assert!(find(".m[0]").is_err());
        assert_eq!(find("$.m.*"), Ok(vec![json!(9)]));
    }

    #[test]
    fn scale_columns() {
        let cols = scale_printer_columns(true, true);
        let names: Vec<&str> = cols.iter().map(|c| c.name.as_str()).collect();
        assert_eq!(names, vec!["Desired", "Available", "Age"]);
        assert_eq!(cols[0].json_path, ".spec.replicas");
    }
}
