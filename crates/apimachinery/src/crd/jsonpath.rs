//! `selectableFields`: kube's `ValidFieldPath` walked over the written schema (split by
//! the one JSON path tokenizer, `cel::fieldpath::tokenize`) and the checks of each
//! selectable field.

use super::{str_of, MAX_SELECTABLE_FIELDS};
use crate::cel::fieldpath::tokenize;
use crate::field::{Error, ErrorList, Path};
use crate::schema::props::JSONSchemaProps;
use serde_json::{json, Value};

pub(super) fn validate_selectable_fields(
    fields: &Value,
    schema: &Value,
    fld: &Path,
    errs: &mut ErrorList,
) {
    let props = match JSONSchemaProps::from_value(schema) {
        Ok(p) => p,
        Err(e) => {
            errs.push(Error::invalid(
                &Path::new("spec").child("schema.openAPIV3Schema"),
                json!(""),
                e.to_string(),
            ));
            return;
        }
    };
    let mut unique: Vec<String> = Vec::new();
    for (i, f) in fields
        .as_array()
        .map(Vec::as_slice)
        .unwrap_or_default()
        .iter()
        .enumerate()
    {
        let jp_path = fld.index(i).child("jsonPath");
        let json_path = str_of(f.get("jsonPath"));
        if json_path.is_empty() {
            errs.push(Error::required(&jp_path, ""));
            continue;
        }
        let (path, root, found) = match valid_field_path(json_path, &props) {
            Ok(found) => found,
            Err(e) => {
                errs.push(Error::invalid(
                    &jp_path,
                    json!(json_path),
                    format!("is an invalid path: {e}"),
                ));
                continue;
            }
        };
        if root == "metadata" {
            errs.push(Error::invalid(
                &jp_path,
                json!(json_path),
                "must not point to fields in metadata",
            ));
        }
        let allowed = found
            .and_then(|s| s.type_.as_deref())
            .is_some_and(|t| matches!(t, "string" | "boolean" | "integer"));
        if !allowed {
            errs.push(Error::invalid(
                &jp_path,
                json!(json_path),
                "must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
            ));
        }
        if unique.contains(&path) {
            errs.push(Error::duplicate(&jp_path, json!(json_path)));
        } else {
            unique.push(path);
        }
    }
    if unique.len() as i64 > MAX_SELECTABLE_FIELDS {
        errs.push(Error::too_many(
            fld,
            unique.len() as i64,
            MAX_SELECTABLE_FIELDS,
        ));
    }
}

/// Kube's `ValidFieldPath` without array notation: walks `.a.b['c']` through
/// `properties` / `additionalProperties`, returning the rendered path, its first
/// element and the schema found.
fn valid_field_path<'a>(
    json_path: &str,
    schema: &'a JSONSchemaProps,
) -> Result<(String, String, Option<&'a JSONSchemaProps>), String> {
    let tokens = tokenize(json_path);
    let mut current = Some(schema);
    let mut path: Option<Path> = None;
    let mut root = String::new();
    let mut it = tokens.into_iter();
    while let Some(tok) = it.next() {
        let name = match tok.as_str() {
            "[" => {
                let quoted = it.next().ok_or("unexpected end of JSON path")?;
                if quoted.len() < 2 || !quoted.starts_with('\'') || !quoted.ends_with('\'') {
                    return Err(format!("expected single quoted string but got {quoted}"));
                }
                let name = unescape_single_quote(&quoted[1..quoted.len() - 1]);
                let close = it.next().ok_or("unexpected end of JSON path")?;
                if close != "]" {
                    // Kube resolves the name before checking the bracket; the error is
                    // the same either way for an unknown name.
                    let s = current.ok_or("does not refer to a valid field")?;
                    step(s, &name, &mut path, &mut root, &mut current)?;
                    return Err(format!("expected ] but got {close}"));
                }
                name
            }
            "." => it.next().ok_or("unexpected end of JSON path")?,
            other => return Err(format!("expected [ or . but got: {other}")),
        };
        let s = current.ok_or("does not refer to a valid field")?;
        step(s, &name, &mut path, &mut root, &mut current)?;
    }
    Ok((
        path.map(|p| p.to_string()).unwrap_or_default(),
        root,
        current,
    ))
}

fn step<'a>(
    s: &'a JSONSchemaProps,
    name: &str,
    path: &mut Option<Path>,
    root: &mut String,
    current: &mut Option<&'a JSONSchemaProps>,
) -> Result<(), String> {
    let has_props = s.properties.as_ref().is_some_and(|p| !p.is_empty());
    if path.is_none() {
        *root = name.to_string();
    }
    if has_props {
        *path = Some(match path.take() {
            None => Path::new(name),
            Some(p) => p.child(name),
        });
        let child = s
            .properties
            .as_ref()
            .and_then(|p| p.get(name))
            .ok_or("does not refer to a valid field")?;
        *current = Some(child);
    } else if s.additional_properties.is_some() {
        *path = Some(match path.take() {
            None => Path::root().key(name),
            Some(p) => p.key(name),
        });
        *current = s.additional_properties_schema();
    } else {
        return Err("does not refer to a valid field".into());
    }
    Ok(())
}

fn unescape_single_quote(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    let mut chars = s.chars();
    while let Some(c) = chars.next() {
        if c == '\\' {
            match chars.next() {
                Some('n') => out.push('\n'),
                Some('t') => out.push('\t'),
                Some(other) => out.push(other),
                None => out.push('\\'),
            }
        } else {
            out.push(c);
        }
    }
    out
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::crd::tests::{created, messages, widget_crd};
    use crate::crd::validate_crd;

    #[test]
    fn selectable_fields() {
        let mut crd = widget_crd();
        crd["spec"]["versions"][0]["selectableFields"] = json!([
            {"jsonPath": ".spec.color"}, {"jsonPath": ".spec['color']"}, {"jsonPath": ".spec.nested"},
            {"jsonPath": ".spec.missing"}, {"jsonPath": ".spec.labels.foo"}, {"jsonPath": "spec.size"}, {}
        ]);
        assert_eq!(
            messages(&validate_crd(&created(crd))),
            vec![
                "spec.selectableFields[1].jsonPath: Duplicate value: \".spec['color']\"",
                "spec.selectableFields[2].jsonPath: Invalid value: \".spec.nested\": must point to a field of type string, boolean or integer. Enum string fields and strings with formats are allowed.",
                "spec.selectableFields[3].jsonPath: Invalid value: \".spec.missing\": is an invalid path: does not refer to a valid field",
                "spec.selectableFields[5].jsonPath: Invalid value: \"spec.size\": is an invalid path: expected [ or . but got: spec",
                "spec.selectableFields[6].jsonPath: Required value",
            ]
        );
        let mut crd = widget_crd();
        let spec_props = &mut crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]
            ["spec"]["properties"];
        let mut fields = Vec::new();
        for i in 0..9 {
            spec_props[format!("f{i}")] = json!({"type": "string"});
            fields.push(json!({"jsonPath": format!(".spec.f{i}")}));
        }
        crd["spec"]["versions"][0]["selectableFields"] = json!(fields);
        assert_eq!(
            messages(&validate_crd(&created(crd))),
            vec!["spec.selectableFields: Too many: 9: must have at most 8 items"]
        );
    }
}
