//! What a delete does per kind, as kube's registry decides it: graceful deletion
//! (pods), the garbage collector's finalizers (`orphan`, `foregroundDeletion`) from
//! `propagationPolicy` and the kind's default policy, and whether the answer is the
//! deleted object or a `Status` (kube's `ReturnDeletedObject`). Data and pure
//! functions; `order::delete` applies them.

use crate::object;
use crate::write::{DeleteOptions, Descriptor};
use serde_json::Value;

/// The finalizer of an orphaning delete.
pub const ORPHAN: &str = "orphan";
/// The finalizer of a foreground delete.
pub const FOREGROUND: &str = "foregroundDeletion";

/// Kinds whose delete answers the object rather than a `Status`.
const RETURNS_DELETED_OBJECT: &[(&str, &str)] = &[
    ("", "namespaces"),
    ("", "persistentvolumes"),
    ("", "persistentvolumeclaims"),
    ("", "pods"),
    ("", "podtemplates"),
    ("", "resourcequotas"),
    ("", "services"),
    ("", "serviceaccounts"),
    ("resource.k8s.io", "deviceclasses"),
    ("resource.k8s.io", "devicetaintrules"),
    ("resource.k8s.io", "resourceclaims"),
    ("resource.k8s.io", "resourceclaimtemplates"),
    ("resource.k8s.io", "resourcepoolstatusrequests"),
    ("resource.k8s.io", "resourceslices"),
    ("storage.k8s.io", "csidrivers"),
    ("storage.k8s.io", "csinodes"),
    ("storage.k8s.io", "storageclasses"),
    ("storage.k8s.io", "volumeattachments"),
    ("storage.k8s.io", "volumeattributesclasses"),
];

/// Whether a delete of this kind answers the deleted object (else a `Status`).
pub fn returns_deleted_object(d: &Descriptor) -> bool {
    RETURNS_DELETED_OBJECT.contains(&(d.gr.group.as_str(), d.gr.resource.as_str()))
}

/// What the garbage collector does with dependents when a delete says nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum GcPolicy {
    /// Dependents are deleted in the background (most kinds).
    DeleteDependents,
    /// Dependents are orphaned (batch/v1 Jobs, for compatibility).
    OrphanDependents,
    /// The kind takes no part in garbage collection (Events).
    Unsupported,
}

/// The kind's default policy (kube's `DefaultGarbageCollectionPolicy`).
pub fn default_gc_policy(d: &Descriptor) -> GcPolicy {
    match (
        d.gr.group.as_str(),
        d.gr.resource.as_str(),
        d.version.as_str(),
    ) {
        ("batch", "jobs", "v1") => GcPolicy::OrphanDependents,
        ("", "events", _) | ("events.k8s.io", "events", _) => GcPolicy::Unsupported,
        _ => GcPolicy::DeleteDependents,
    }
}

/// The warning kube gives on a delete of a batch/v1 Job that names no policy.
pub fn warning(d: &Descriptor, opts: &DeleteOptions) -> Option<&'static str> {
    (default_gc_policy(d) == GcPolicy::OrphanDependents
        && opts.propagation_policy.is_none()
        && opts.orphan_dependents.is_none())
    .then_some("child pods are preserved by default when jobs are deleted; set propagationPolicy=Background to remove them or set propagationPolicy=Orphan to suppress this warning")
}

/// The object's finalizers once the delete's garbage-collection choice is made
/// (kube's `deletionFinalizersForGarbageCollection`): `Some` when they change.
pub fn gc_finalizers(d: &Descriptor, obj: &Value, opts: &DeleteOptions) -> Option<Vec<String>> {
    let policy = default_gc_policy(d);
    if policy == GcPolicy::Unsupported {
        return None;
    }
    let current = object::finalizers(obj);
    let has = |f: &str| current.iter().any(|x| x == f);
    let explicit = opts
        .orphan_dependents
        .map(|o| if o { ORPHAN } else { "" })
        .or(match opts.propagation_policy.as_deref() {
            Some("Orphan") => Some(ORPHAN),
            Some("Foreground") => Some(FOREGROUND),
            Some(_) => Some(""),
            None => None,
        });
    // An explicit choice wins, then a finalizer already there, then the kind's default.
    let chosen = explicit.unwrap_or_else(|| {
        let in_object = current
            .iter()
            .find(|f| *f == ORPHAN || *f == FOREGROUND)
            .map(String::as_str);
        match in_object {
            Some(ORPHAN) => ORPHAN,
            Some(_) => FOREGROUND,
            None if policy == GcPolicy::OrphanDependents => ORPHAN,
            None => "",
        }
    });
    let mut next: Vec<String> = current
        .iter()
        .filter(|f| *f != ORPHAN && *f != FOREGROUND)
        .cloned()
        .collect();
    if !chosen.is_empty() {
        next.push(chosen.to_string());
    }
    let same = next.len() == current.len() && next.iter().all(|f| has(f));
    (!same).then_some(next)
}

/// Graceful deletion (kube's `CheckGracefulDelete`): the grace period a delete of
/// `obj` gets, `None` for kinds deleted at once. Pods: the requested period, else
/// the pod's `terminationGracePeriodSeconds`; 0 when unscheduled or finished.
pub fn grace_period(d: &Descriptor, obj: &Value, requested: Option<i64>) -> Option<i64> {
    if (d.gr.group.as_str(), d.gr.resource.as_str()) != ("", "pods") {
        return None;
    }
    let mut period = requested.unwrap_or_else(|| {
        obj.pointer("/spec/terminationGracePeriodSeconds")
            .and_then(Value::as_i64)
            .unwrap_or(0)
    });
    let unscheduled = obj
        .pointer("/spec/nodeName")
        .and_then(Value::as_str)
        .is_none_or(str::is_empty);
    let finished = matches!(
        obj.pointer("/status/phase").and_then(Value::as_str),
        Some("Failed" | "Succeeded")
    );
    if unscheduled || finished {
        period = 0;
    }
    Some(if period < 0 { 1 } else { period })
}

/// Mark `obj` deleted as of `now` + `period` seconds, bumping its generation the
/// first time (kube's `BeforeDelete` and `markAsDeleting`).
pub fn mark_deleting(obj: &mut Value, period: i64) {
    let first = !object::is_terminating(obj);
    let at = chrono::Utc::now() + chrono::Duration::seconds(period);
    let m = object::meta_mut(obj);
    if first {
        if let Some(g) = m
            .get("generation")
            .and_then(Value::as_i64)
            .filter(|g| *g > 0)
        {
            m.insert("generation".into(), Value::from(g + 1));
        }
    }
    let keep = !first
        && m.get("deletionTimestamp")
            .and_then(Value::as_str)
            .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
            .is_some_and(|t| t <= at);
    if !keep {
        m.insert(
            "deletionTimestamp".into(),
            Value::from(at.format("%Y-%m-%dT%H:%M:%SZ").to_string()),
        );
    }
    m.insert("deletionGracePeriodSeconds".into(), Value::from(period));
}

/// Shorten a pending graceful deletion from `current` to `period` seconds: the
/// deletion moves earlier, never into the past (a graceful one then keeps 1 s).
pub fn shorten_grace(obj: &mut Value, current: i64, mut period: i64) {
    let now = chrono::Utc::now();
    let m = object::meta_mut(obj);
    let was = m
        .get("deletionTimestamp")
        .and_then(Value::as_str)
        .and_then(|t| chrono::DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&chrono::Utc))
        .unwrap_or(now);
    let mut at = was - chrono::Duration::seconds(current) + chrono::Duration::seconds(period);
    if at < now {
        at = now;
        if period != 0 {
            period = 1;
        }
    }
    m.insert(
        "deletionTimestamp".into(),
        Value::from(at.format("%Y-%m-%dT%H:%M:%SZ").to_string()),
    );
    m.insert("deletionGracePeriodSeconds".into(), Value::from(period));
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    fn descriptor(group: &str, resource: &str, version: &str) -> Descriptor {
        Descriptor {
            gr: crate::status::GroupResource::new(group, resource),
            version: version.into(),
            kind: String::new(),
            list_kind: String::new(),
            singular: String::new(),
            namespaced: true,
            key_root: String::new(),
            status_subresource: false,
            has_generation: false,
        }
    }

    #[test]
    fn jobs_orphan_by_default_and_an_explicit_policy_wins() {
        let job = descriptor("batch", "jobs", "v1");
        let obj = json!({"metadata": {"finalizers": ["x"]}});
        let opts = DeleteOptions::default();
        assert_eq!(
            gc_finalizers(&job, &obj, &opts),
            Some(vec!["x".into(), ORPHAN.into()])
        );
        assert!(warning(&job, &opts).is_some());
        let background = DeleteOptions {
            propagation_policy: Some("Background".into()),
            ..Default::default()
        };
        assert_eq!(gc_finalizers(&job, &obj, &background), None);
        let cm = descriptor("", "configmaps", "v1");
        let fg = DeleteOptions {
            propagation_policy: Some("Foreground".into()),
            ..Default::default()
        };
        assert_eq!(
            gc_finalizers(&cm, &json!({}), &fg),
            Some(vec![FOREGROUND.into()])
        );
        assert_eq!(gc_finalizers(&cm, &json!({}), &opts), None);
        let events = descriptor("", "events", "v1");
        assert_eq!(gc_finalizers(&events, &json!({}), &fg), None);
    }

    #[test]
    fn unscheduled_pods_go_at_once_and_others_get_their_grace() {
        let pods = descriptor("", "pods", "v1");
        let pod = json!({"spec": {"terminationGracePeriodSeconds": 30}});
        assert_eq!(grace_period(&pods, &pod, None), Some(0));
        let scheduled = json!({"spec": {"nodeName": "n", "terminationGracePeriodSeconds": 30}});
        assert_eq!(grace_period(&pods, &scheduled, None), Some(30));
        assert_eq!(grace_period(&pods, &scheduled, Some(-5)), Some(1));
        assert_eq!(
            grace_period(&descriptor("", "configmaps", "v1"), &pod, None),
            None
        );
    }
}
