//! kube's Job controller (`pkg/controller/job`): pods from the template up to
//! `parallelism` while completions remain (`Indexed` jobs one per index, with kube's
//! index annotation, label and hostname), every pod carrying the
//! `batch.kubernetes.io/job-tracking` finalizer until the Job has counted it (kube's
//! `uncountedTerminatedPods` protocol), and the end as kube reports it:
//! `SuccessCriteriaMet` then `Complete` (`CompletionsReached`), or `FailureTarget` then
//! `Failed` (`BackoffLimitExceeded`, `DeadlineExceeded`), remaining pods deleted.
//! With `ttl-after-finished` on, a finished Job with `ttlSecondsAfterFinished` is
//! deleted when its time has come.
//!
//! Simplified: a failed pod is replaced at once (kube backs off from 10 s), and
//! `podFailurePolicy` and `successPolicy` rules are not applied.

use super::client::Client;
use super::informer::Informer;
use super::objects::{
    condition, int_at, is_deleting, name, namespace, owned_by, path_of, pod_is_ready,
    pod_is_terminal, seconds_since, str_at, uid,
};
use super::{Informers, Reconcile};
use crate::apiserver::ApiServer;
use serde_json::{json, Map, Value};
use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The finalizer that keeps a Job's pod until the Job has counted it.
pub const TRACKING: &str = "batch.kubernetes.io/job-tracking";
/// The completion index of an Indexed Job's pod (annotation and label).
pub const INDEX: &str = "batch.kubernetes.io/job-completion-index";

fn cond(type_: &str, reason: &str, message: &str, now: &str) -> Value {
    json!({
        "type": type_, "status": "True", "lastProbeTime": now, "lastTransitionTime": now,
        "reason": reason, "message": message,
    })
}

fn has_condition(job: &Value, type_: &str) -> bool {
    condition(job, type_).is_some_and(|c| str_at(c, "/status") == "True")
}

/// Whether the Job has finished (`Complete` or `Failed`).
pub fn finished(job: &Value) -> bool {
    has_condition(job, "Complete") || has_condition(job, "Failed")
}

fn has_tracking(pod: &Value) -> bool {
    pod.pointer("/metadata/finalizers")
        .and_then(Value::as_array)
        .is_some_and(|f| f.iter().any(|x| x.as_str() == Some(TRACKING)))
}

fn index_of(pod: &Value) -> Option<i64> {
    pod.pointer("/metadata/annotations")
        .and_then(|a| a.get(INDEX))
        .and_then(Value::as_str)
        .and_then(|i| i.parse().ok())
}

/// The pod of `job`'s template (`index`: an Indexed Job's completion index).
pub fn pod_for(job: &Value, index: Option<i64>) -> Value {
    let template = job.pointer("/spec/template").cloned().unwrap_or(json!({}));
    let mut pod = super::replicaset::pod_from_template(job, &template);
    let meta = &mut pod["metadata"];
    let mut finalizers: Vec<Value> = meta
        .get("finalizers")
        .and_then(Value::as_array)
        .cloned()
        .unwrap_or_default();
    finalizers.push(json!(TRACKING));
    meta["finalizers"] = json!(finalizers);
    if let Some(i) = index {
        meta["generateName"] = json!(format!("{}-{i}-", name(job)));
        meta["annotations"][INDEX] = json!(i.to_string());
        meta["labels"][INDEX] = json!(i.to_string());
        if pod.pointer("/spec/hostname").is_none() {
            pod["spec"]["hostname"] = json!(format!("{}-{i}", name(job)));
        }
    }
    pod
}

/// `1,3-5` for the indexes `{1, 3, 4, 5}` (kube's interval notation).
pub fn intervals(indexes: &BTreeSet<i64>) -> String {
    let mut out: Vec<String> = Vec::new();
    let mut iter = indexes.iter().copied().peekable();
    while let Some(start) = iter.next() {
        let mut end = start;
        while iter.peek() == Some(&(end + 1)) {
            end += 1;
            iter.next();
        }
        out.push(if end > start {
            format!("{start}-{end}")
        } else {
            start.to_string()
        });
    }
    out.join(",")
}

fn parse_intervals(s: &str) -> BTreeSet<i64> {
    let mut out = BTreeSet::new();
    for part in s.split(',').filter(|p| !p.is_empty()) {
        match part.split_once('-') {
            Some((a, b)) => {
                if let (Ok(a), Ok(b)) = (a.parse::<i64>(), b.parse::<i64>()) {
                    out.extend(a..=b.min(a + 100_000));
                }
            }
            None => {
                if let Ok(i) = part.parse() {
                    out.insert(i);
                }
            }
        }
    }
    out
}

struct JobController {
    client: Client,
    clock: crate::apiserver::clock::Clock,
    jobs: Arc<Informer>,
    pods: Arc<Informer>,
    ttl_after_finished: bool,
}

impl JobController {
    async fn remove_tracking(&self, pod: &Value) -> bool {
        let kept: Vec<Value> = pod
            .pointer("/metadata/finalizers")
            .and_then(Value::as_array)
            .map(|f| {
                f.iter()
                    .filter(|x| x.as_str() != Some(TRACKING))
                    .cloned()
                    .collect()
            })
            .unwrap_or_default();
        let value = if kept.is_empty() {
            Value::Null
        } else {
            json!(kept)
        };
        let patch = json!({"metadata": {"finalizers": value, "resourceVersion": str_at(pod, "/metadata/resourceVersion")}});
        match self
            .client
            .merge_patch(&path_of("v1", "pods", pod), &patch)
            .await
        {
            Ok(p) => {
                self.pods.observe(&p);
                true
            }
            Err(e) => e.is_not_found(),
        }
    }

    async fn delete_pod(&self, pod: &Value) -> bool {
        super::delete_object(&self.client, &self.pods, "v1", "pods", pod, None).await
    }

    /// One pass over one Job; `Some(delay)` to pass again.
    async fn sync(&self, job: &Value, pods: &[Arc<Value>]) -> Option<Duration> {
        let owned: Vec<&Value> = owned_by(job, pods);
        let now = crate::rest::object::now();
        let mut status: Map<String, Value> = job
            .get("status")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let mut retry = false;
        let indexed = str_at(job, "/spec/completionMode") == "Indexed";
        let completions = job.pointer("/spec/completions").and_then(Value::as_i64);
        let parallelism = int_at(job, "/spec/parallelism", 1).max(0);
        let backoff_limit = int_at(job, "/spec/backoffLimit", 6);
        let suspended = job.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);

        // Count the pods that finished: uncounted first, then counted once their
        // finalizer is gone (kube's two-step protocol).
        let mut uncounted_succeeded: BTreeSet<String> = uncounted(&status, "succeeded");
        let mut uncounted_failed: BTreeSet<String> = uncounted(&status, "failed");
        let mut succeeded = status.get("succeeded").and_then(Value::as_i64).unwrap_or(0);
        let mut failed = status.get("failed").and_then(Value::as_i64).unwrap_or(0);
        let mut completed_indexes = parse_intervals(
            status
                .get("completedIndexes")
                .and_then(Value::as_str)
                .unwrap_or(""),
        );
        let ending_before = status
            .get("conditions")
            .and_then(Value::as_array)
            .is_some_and(|cs| {
                cs.iter()
                    .any(|c| matches!(str_at(c, "/type"), "SuccessCriteriaMet" | "FailureTarget"))
            });
        for pod in owned
            .iter()
            .filter(|p| pod_is_terminal(p) && has_tracking(p))
        {
            if ending_before && is_deleting(pod) {
                // Stopped by the Job itself as it ends: not counted.
                continue;
            }
            let set = if str_at(pod, "/status/phase") == "Succeeded" {
                &mut uncounted_succeeded
            } else {
                &mut uncounted_failed
            };
            set.insert(uid(pod).to_string());
        }
        let tracked: BTreeSet<&str> = owned
            .iter()
            .filter(|p| has_tracking(p))
            .map(|p| uid(p))
            .collect();
        let recorded_uncounted =
            uncounted(&status, "succeeded").len() + uncounted(&status, "failed").len();
        if recorded_uncounted < uncounted_succeeded.len() + uncounted_failed.len() {
            // Step 1: record them as uncounted before their finalizers go.
            status.insert(
                "uncountedTerminatedPods".into(),
                uncounted_json(&uncounted_succeeded, &uncounted_failed),
            );
            return self.write_status(job, status).await;
        }
        for pod in owned.iter().filter(|p| {
            has_tracking(p)
                && (uncounted_succeeded.contains(uid(p)) || uncounted_failed.contains(uid(p)))
        }) {
            retry |= !self.remove_tracking(pod).await;
        }
        // Step 3: what no longer carries the finalizer is counted.
        for u in uncounted_succeeded.clone() {
            if !tracked.contains(u.as_str()) {
                uncounted_succeeded.remove(&u);
                succeeded += 1;
                if let Some(i) = owned.iter().find(|p| uid(p) == u).and_then(|p| index_of(p)) {
                    completed_indexes.insert(i);
                }
            }
        }
        for u in uncounted_failed.clone() {
            if !tracked.contains(u.as_str()) {
                uncounted_failed.remove(&u);
                failed += 1;
            }
        }
        if indexed {
            succeeded = succeeded.max(completed_indexes.len() as i64);
        }
        let active: Vec<&Value> = owned
            .iter()
            .copied()
            .filter(|p| !pod_is_terminal(p) && !is_deleting(p))
            .collect();
        let terminating = owned
            .iter()
            .filter(|p| is_deleting(p) && !pod_is_terminal(p))
            .count();
        let mut conditions: Vec<Value> = status
            .get("conditions")
            .and_then(Value::as_array)
            .cloned()
            .unwrap_or_default();
        let has = |cs: &[Value], t: &str| cs.iter().any(|c| str_at(c, "/type") == t);
        let done_target =
            has(&conditions, "SuccessCriteriaMet") || has(&conditions, "FailureTarget");
        // Finished pods count from the moment they are seen, counted or not yet.
        let succeeded_seen = succeeded + uncounted_succeeded.len() as i64;
        let failed_seen = failed + uncounted_failed.len() as i64;
        let mut indexes_seen = completed_indexes.clone();
        indexes_seen.extend(
            owned
                .iter()
                .filter(|p| uncounted_succeeded.contains(uid(p)))
                .filter_map(|p| index_of(p)),
        );
        let complete = if indexed {
            completions.is_some_and(|c| indexes_seen.len() as i64 >= c)
        } else {
            match completions {
                Some(c) => succeeded_seen >= c,
                // A work queue: done when one pod succeeded and none is left running.
                None => succeeded_seen > 0 && active.is_empty(),
            }
        };
        let deadline = job
            .pointer("/spec/activeDeadlineSeconds")
            .and_then(Value::as_i64)
            .zip(
                status
                    .get("startTime")
                    .and_then(Value::as_str)
                    .and_then(|t| seconds_since(t, self.clock.now())),
            )
            .is_some_and(|(limit, since)| since >= limit);
        if !done_target {
            if complete {
                conditions.push(cond(
                    "SuccessCriteriaMet",
                    "CompletionsReached",
                    "Reached expected number of succeeded pods",
                    &now,
                ));
            } else if failed_seen > backoff_limit {
                conditions.push(cond(
                    "FailureTarget",
                    "BackoffLimitExceeded",
                    "Job has reached the specified backoff limit",
                    &now,
                ));
            } else if deadline {
                conditions.push(cond(
                    "FailureTarget",
                    "DeadlineExceeded",
                    "Job was active longer than specified deadline",
                    &now,
                ));
            }
        }
        let ending = has(&conditions, "SuccessCriteriaMet") || has(&conditions, "FailureTarget");
        if ending || suspended {
            for pod in &active {
                retry |= !self.delete_pod(pod).await;
            }
            // What is deleted now does not count: it need not wait for the Job.
            for pod in owned.iter().filter(|p| {
                is_deleting(p)
                    && has_tracking(p)
                    && !uncounted_succeeded.contains(uid(p))
                    && !uncounted_failed.contains(uid(p))
            }) {
                retry |= !self.remove_tracking(pod).await;
            }
        } else if !finished(job) {
            retry |= !self
                .create_pods(
                    job,
                    &active,
                    succeeded_seen,
                    completions,
                    parallelism,
                    indexed,
                    &indexes_seen,
                )
                .await;
            if status.get("startTime").is_none() {
                status.insert("startTime".into(), json!(now));
            }
        }
        // The end, once every pod has stopped.
        let stopped = active.is_empty()
            && terminating == 0
            && uncounted_succeeded.is_empty()
            && uncounted_failed.is_empty();
        if ending && stopped && !finished(job) {
            if let Some(target) = conditions
                .iter()
                .find(|c| matches!(str_at(c, "/type"), "SuccessCriteriaMet" | "FailureTarget"))
                .cloned()
            {
                let (t, reason, message) = if str_at(&target, "/type") == "SuccessCriteriaMet" {
                    status.insert("completionTime".into(), json!(now));
                    (
                        "Complete",
                        str_at(&target, "/reason").to_string(),
                        str_at(&target, "/message").to_string(),
                    )
                } else {
                    (
                        "Failed",
                        str_at(&target, "/reason").to_string(),
                        str_at(&target, "/message").to_string(),
                    )
                };
                conditions.push(cond(t, &reason, &message, &now));
            }
        }
        let set_count = |s: &mut Map<String, Value>, k: &str, n: i64| {
            if n > 0 {
                s.insert(k.into(), json!(n));
            } else {
                s.remove(k);
            }
        };
        let active_now = if ending || suspended {
            0
        } else {
            active.len() as i64
        };
        set_count(&mut status, "active", active_now);
        set_count(&mut status, "succeeded", succeeded);
        set_count(&mut status, "failed", failed);
        status.insert(
            "ready".into(),
            json!(active.iter().filter(|p| pod_is_ready(p)).count()),
        );
        status.insert("terminating".into(), json!(terminating));
        status.insert(
            "uncountedTerminatedPods".into(),
            uncounted_json(&uncounted_succeeded, &uncounted_failed),
        );
        if indexed && !completed_indexes.is_empty() {
            status.insert(
                "completedIndexes".into(),
                json!(intervals(&completed_indexes)),
            );
        }
        if !conditions.is_empty() {
            status.insert("conditions".into(), json!(conditions));
        }
        let mut again = self.write_status(job, status).await;
        if retry {
            again = Some(Duration::from_millis(200));
        }
        if let Some(limit) = job
            .pointer("/spec/activeDeadlineSeconds")
            .and_then(Value::as_i64)
        {
            if !finished(job) {
                again = again.or(Some(Duration::from_secs(limit.clamp(1, 60) as u64)));
            }
        }
        again
    }

    #[allow(clippy::too_many_arguments)]
    async fn create_pods(
        &self,
        job: &Value,
        active: &[&Value],
        succeeded: i64,
        completions: Option<i64>,
        parallelism: i64,
        indexed: bool,
        completed: &BTreeSet<i64>,
    ) -> bool {
        let path = format!("/api/v1/namespaces/{}/pods", namespace(job));
        let mut ok = true;
        if indexed {
            let running: BTreeSet<i64> = active.iter().filter_map(|p| index_of(p)).collect();
            let total = completions.unwrap_or(0);
            let mut room = parallelism - active.len() as i64;
            for i in 0..total {
                if room <= 0 {
                    break;
                }
                if completed.contains(&i) || running.contains(&i) {
                    continue;
                }
                match self.client.create(&path, &pod_for(job, Some(i))).await {
                    Ok(p) => self.pods.observe(&p),
                    Err(_) => ok = false,
                }
                room -= 1;
            }
            return ok;
        }
        let remaining = match completions {
            Some(c) => (c - succeeded).max(0),
            None if succeeded > 0 => 0,
            None => parallelism,
        };
        let want = parallelism.min(remaining) - active.len() as i64;
        for _ in 0..want.clamp(0, 500) {
            match self.client.create(&path, &pod_for(job, None)).await {
                Ok(p) => self.pods.observe(&p),
                Err(_) => {
                    ok = false;
                    break;
                }
            }
        }
        ok
    }

    async fn write_status(&self, job: &Value, status: Map<String, Value>) -> Option<Duration> {
        let status = Value::Object(status);
        let written =
            super::write_status(&self.client, &self.jobs, "batch/v1", "jobs", job, status).await;
        (!written).then_some(Duration::from_millis(100))
    }

    /// ttl-after-finished: delete a finished Job whose time has come; when to look again.
    async fn expire(&self, job: &Value) -> Option<Duration> {
        let ttl = job
            .pointer("/spec/ttlSecondsAfterFinished")
            .and_then(Value::as_i64)?;
        let done = ["Complete", "Failed"]
            .iter()
            .filter_map(|t| condition(job, t))
            .map(|c| str_at(c, "/lastTransitionTime"))
            .find(|t| !t.is_empty())?;
        let since = seconds_since(done, self.clock.now()).unwrap_or(0);
        if since < ttl {
            return Some(Duration::from_secs((ttl - since).max(1) as u64));
        }
        let opts = json!({"propagationPolicy": "Background", "preconditions": {"uid": uid(job)}});
        match self
            .client
            .delete(&path_of("batch/v1", "jobs", job), &opts)
            .await
        {
            Ok(_) => None,
            Err(e) if e.is_not_found() => None,
            Err(_) => Some(Duration::from_millis(200)),
        }
    }
}

fn uncounted(status: &Map<String, Value>, which: &str) -> BTreeSet<String> {
    let list = status
        .get("uncountedTerminatedPods")
        .and_then(|u| u.get(which));
    crate::object::strings(list).into_iter().collect()
}

fn uncounted_json(succeeded: &BTreeSet<String>, failed: &BTreeSet<String>) -> Value {
    let mut m = Map::new();
    if !succeeded.is_empty() {
        m.insert("succeeded".into(), json!(succeeded));
    }
    if !failed.is_empty() {
        m.insert("failed".into(), json!(failed));
    }
    Value::Object(m)
}

impl Reconcile for JobController {
    async fn reconcile(&mut self) -> Option<Duration> {
        let pods = self.pods.list();
        let mut again: Option<Duration> = None;
        for job in self.jobs.list() {
            if is_deleting(&job) {
                continue;
            }
            let mut next = if finished(&job) {
                // Pods of a finished Job may still carry the finalizer.
                let mut retry = false;
                for pod in owned_by(&job, &pods)
                    .into_iter()
                    .filter(|p| has_tracking(p) && pod_is_terminal(p))
                {
                    retry |= !self.remove_tracking(pod).await;
                }
                retry.then_some(Duration::from_millis(200))
            } else {
                self.sync(&job, &pods).await
            };
            if self.ttl_after_finished && finished(&job) {
                if let Some(d) = self.expire(&job).await {
                    next = Some(next.map_or(d, |n| n.min(d)));
                }
            }
            if let Some(d) = next {
                again = Some(again.map_or(d, |a| a.min(d)));
            }
        }
        again
    }
}

/// Start the Job controller (`ttl_after_finished`: also kube's ttl-after-finished).
pub fn start(
    api: &Arc<ApiServer>,
    informers: &Informers,
    ttl_after_finished: bool,
    stop: watch::Receiver<bool>,
) {
    let jobs = informers.of("/apis/batch/v1/jobs");
    let pods = informers.of("/api/v1/pods");
    let controller = JobController {
        client: Client::service_account(api, "job-controller"),
        clock: api.clock.clone(),
        jobs: jobs.clone(),
        pods: pods.clone(),
        ttl_after_finished,
    };
    super::spawn_controller(vec![jobs, pods], &api.clock, stop, controller);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn indexes_are_written_as_kube_intervals() {
        let set: BTreeSet<i64> = [0, 1, 2, 4, 6, 7].into_iter().collect();
        assert_eq!(intervals(&set), "0-2,4,6-7");
        assert_eq!(parse_intervals("0-2,4,6-7"), set);
        assert_eq!(intervals(&BTreeSet::new()), "");
    }

    #[test]
    fn an_indexed_pod_carries_its_index_and_the_tracking_finalizer() {
        let job = json!({
            "apiVersion": "batch/v1", "kind": "Job",
            "metadata": {"name": "pi", "namespace": "default", "uid": "j1"},
            "spec": {"template": {"metadata": {"labels": {"job-name": "pi"}},
                                  "spec": {"restartPolicy": "Never", "containers": []}}},
        });
        let pod = pod_for(&job, Some(2));
        assert_eq!(pod["metadata"]["generateName"], "pi-2-");
        assert_eq!(pod["metadata"]["finalizers"], json!([TRACKING]));
        assert_eq!(pod["metadata"]["annotations"][INDEX], "2");
        assert_eq!(pod["metadata"]["labels"][INDEX], "2");
        assert_eq!(pod["spec"]["hostname"], "pi-2");
        let plain = pod_for(&job, None);
        assert_eq!(plain["metadata"]["generateName"], "pi-");
        assert!(plain["metadata"].get("annotations").is_none());
    }
}
