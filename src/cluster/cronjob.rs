//! kube's CronJob controller (`pkg/controller/cronjob`), on the server's [`Clock`]: at
//! each scheduled time (`apimachinery::cron`, UTC) a Job named
//! `<cronjob>-<minutes since the epoch>` from the job template, owned by the CronJob and
//! annotated with `batch.kubernetes.io/cronjob-scheduled-timestamp`; missed times
//! collapse into the latest (within `startingDeadlineSeconds`); `concurrencyPolicy`
//! `Forbid` skips a time while a Job runs, `Replace` deletes the running ones; `suspend`
//! stops it; finished Jobs beyond `successfulJobsHistoryLimit` and
//! `failedJobsHistoryLimit` are deleted. Status as kube's: `active`,
//! `lastScheduleTime`, `lastSuccessfulTime`. Tests advance the clock
//! (`TestServer::clock`, `/debug/crd-apiserver/clock`) to fire schedules.
//!
//! Simplified: `spec.timeZone` other than UTC is not applied (the schedule is read in
//! UTC).

use super::client::Client;
use super::informer::Informer;
use super::objects::{
    condition, controller_ref, int_at, is_deleting, name, namespace, owned_by, str_at, uid,
};
use super::{Informers, Reconcile};
use crate::apiserver::clock::Clock;
use crate::apiserver::ApiServer;
use apimachinery::cron::Schedule;
use chrono::{DateTime, Utc};
use serde_json::{json, Map, Value};
use std::sync::Arc;
use std::time::Duration;
use tokio::sync::watch;

/// The annotation with the time a Job was scheduled for.
pub const SCHEDULED: &str = "batch.kubernetes.io/cronjob-scheduled-timestamp";

fn rfc3339(t: DateTime<Utc>) -> String {
    t.format("%Y-%m-%dT%H:%M:%SZ").to_string()
}

fn parse_time(s: &str) -> Option<DateTime<Utc>> {
    DateTime::parse_from_rfc3339(s)
        .ok()
        .map(|t| t.with_timezone(&Utc))
}

/// Whether a Job finished, and whether it succeeded.
fn finished(job: &Value) -> Option<bool> {
    let is = |t: &str| condition(job, t).is_some_and(|c| str_at(c, "/status") == "True");
    if is("Complete") {
        Some(true)
    } else if is("Failed") {
        Some(false)
    } else {
        None
    }
}

/// The Job `cronjob` runs for `scheduled`.
pub fn job_for(cronjob: &Value, scheduled: DateTime<Utc>) -> Value {
    let template = cronjob
        .pointer("/spec/jobTemplate")
        .cloned()
        .unwrap_or(json!({}));
    let mut meta = Map::new();
    meta.insert(
        "name".into(),
        json!(format!("{}-{}", name(cronjob), scheduled.timestamp() / 60)),
    );
    meta.insert("namespace".into(), json!(namespace(cronjob)));
    if let Some(l) = template.pointer("/metadata/labels") {
        meta.insert("labels".into(), l.clone());
    }
    let mut annotations: Map<String, Value> = template
        .pointer("/metadata/annotations")
        .and_then(Value::as_object)
        .cloned()
        .unwrap_or_default();
    annotations.insert(SCHEDULED.into(), json!(rfc3339(scheduled)));
    meta.insert("annotations".into(), Value::Object(annotations));
    meta.insert("ownerReferences".into(), json!([controller_ref(cronjob)]));
    json!({
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": meta,
        "spec": template.get("spec").cloned().unwrap_or(json!({})),
    })
}

fn job_ref(job: &Value) -> Value {
    json!({
        "apiVersion": "batch/v1", "kind": "Job", "name": name(job),
        "namespace": namespace(job), "uid": uid(job),
        "resourceVersion": str_at(job, "/metadata/resourceVersion"),
    })
}

struct CronJobController {
    client: Client,
    clock: Clock,
    cronjobs: Arc<Informer>,
    jobs: Arc<Informer>,
}

impl CronJobController {
    async fn delete_job(&self, job: &Value) -> bool {
        super::delete_object(
            &self.client,
            &self.jobs,
            "batch/v1",
            "jobs",
            job,
            Some("Background"),
        )
        .await
    }

    /// One pass over one CronJob: `(ok, when to look again)`.
    async fn sync(&self, cj: &Value, jobs: &[Arc<Value>]) -> (bool, Option<Duration>) {
        let Ok(schedule) = Schedule::parse(str_at(cj, "/spec/schedule")) else {
            return (true, None);
        };
        let now = self.clock.now();
        let mut ok = true;
        let owned: Vec<&Value> = owned_by(cj, jobs);
        let mut active: Vec<&Value> = owned
            .iter()
            .copied()
            .filter(|j| finished(j).is_none() && !is_deleting(j))
            .collect();
        // History limits: the oldest finished Jobs beyond them go.
        for (succeeded, limit) in [
            (true, int_at(cj, "/spec/successfulJobsHistoryLimit", 3)),
            (false, int_at(cj, "/spec/failedJobsHistoryLimit", 1)),
        ] {
            let mut done: Vec<&Value> = owned
                .iter()
                .copied()
                .filter(|j| finished(j) == Some(succeeded) && !is_deleting(j))
                .collect();
            done.sort_by_key(|j| str_at(j, "/metadata/creationTimestamp").to_string());
            let extra = done.len().saturating_sub(limit.max(0) as usize);
            for j in done.into_iter().take(extra) {
                ok &= self.delete_job(j).await;
            }
        }
        let mut status: Map<String, Value> = cj
            .get("status")
            .and_then(Value::as_object)
            .cloned()
            .unwrap_or_default();
        let last_success = owned
            .iter()
            .filter(|j| finished(j) == Some(true))
            .filter_map(|j| j.pointer("/status/completionTime").and_then(Value::as_str))
            .max()
            .map(str::to_string);
        if let Some(t) = last_success {
            status.insert("lastSuccessfulTime".into(), json!(t));
        }
        let suspended = cj.pointer("/spec/suspend").and_then(Value::as_bool) == Some(true);
        let mut created: Option<Value> = None;
        if !suspended {
            let mut earliest = status
                .get("lastScheduleTime")
                .and_then(Value::as_str)
                .and_then(parse_time)
                .or_else(|| parse_time(str_at(cj, "/metadata/creationTimestamp")))
                .unwrap_or(now);
            if let Some(deadline) = cj
                .pointer("/spec/startingDeadlineSeconds")
                .and_then(Value::as_i64)
            {
                earliest = earliest.max(now - chrono::Duration::seconds(deadline));
            }
            let (scheduled, _missed) = schedule.last_between(earliest, now);
            if let Some(at) = scheduled {
                let job = job_for(cj, at);
                let exists = owned
                    .iter()
                    .any(|j| name(j) == str_at(&job, "/metadata/name"));
                let policy = str_at(cj, "/spec/concurrencyPolicy");
                if exists {
                    status.insert("lastScheduleTime".into(), json!(rfc3339(at)));
                } else if policy == "Forbid" && !active.is_empty() {
                    // Skipped: the time passes while a Job runs.
                } else {
                    if policy == "Replace" {
                        for j in &active {
                            ok &= self.delete_job(j).await;
                        }
                        active.clear();
                    }
                    let path = format!("/apis/batch/v1/namespaces/{}/jobs", namespace(cj));
                    match self.client.create(&path, &job).await {
                        Ok(j) => {
                            self.jobs.observe(&j);
                            status.insert("lastScheduleTime".into(), json!(rfc3339(at)));
                            created = Some(j);
                        }
                        Err(e) if e.reason == "AlreadyExists" => {
                            status.insert("lastScheduleTime".into(), json!(rfc3339(at)));
                        }
                        Err(_) => ok = false,
                    }
                }
            }
        }
        let mut refs: Vec<Value> = active.iter().map(|j| job_ref(j)).collect();
        if let Some(j) = &created {
            refs.push(job_ref(j));
        }
        if refs.is_empty() {
            status.remove("active");
        } else {
            status.insert("active".into(), json!(refs));
        }
        let status = Value::Object(status);
        ok &= super::write_status(
            &self.client,
            &self.cronjobs,
            "batch/v1",
            "cronjobs",
            cj,
            status,
        )
        .await;
        let next = schedule
            .next(now)
            .and_then(|n| (n - now).to_std().ok())
            .map(|d| d.max(Duration::from_millis(10)));
        (ok, next)
    }
}

impl Reconcile for CronJobController {
    async fn reconcile(&mut self) -> Option<Duration> {
        let jobs = self.jobs.list();
        let mut again: Option<Duration> = None;
        let mut soon = |d: Duration| again = Some(again.map_or(d, |a: Duration| a.min(d)));
        for cj in self.cronjobs.list() {
            if is_deleting(&cj) {
                continue;
            }
            let (ok, next) = self.sync(&cj, &jobs).await;
            if !ok {
                soon(Duration::from_millis(200));
            }
            if let Some(n) = next {
                soon(n);
            }
        }
        again
    }
}

/// Start the CronJob controller.
pub fn start(api: &Arc<ApiServer>, informers: &Informers, stop: watch::Receiver<bool>) {
    let cronjobs = informers.of("/apis/batch/v1/cronjobs");
    let jobs = informers.of("/apis/batch/v1/jobs");
    let controller = CronJobController {
        client: Client::service_account(api, "cronjob-controller"),
        clock: api.clock.clone(),
        cronjobs: cronjobs.clone(),
        jobs: jobs.clone(),
    };
    super::spawn_controller(vec![cronjobs, jobs], &api.clock, stop, controller);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_scheduled_job_is_named_by_its_minute_and_annotated() {
        let cj = json!({
            "apiVersion": "batch/v1", "kind": "CronJob",
            "metadata": {"name": "backup", "namespace": "default", "uid": "c1"},
            "spec": {"schedule": "0 * * * *", "jobTemplate": {
                "metadata": {"labels": {"app": "backup"}},
                "spec": {"template": {"spec": {"restartPolicy": "OnFailure", "containers": []}}}}},
        });
        let at = parse_time("2026-01-01T10:00:00Z").expect("time");
        let job = job_for(&cj, at);
        assert_eq!(
            job["metadata"]["name"],
            format!("backup-{}", at.timestamp() / 60)
        );
        assert_eq!(
            job["metadata"]["annotations"][SCHEDULED],
            "2026-01-01T10:00:00Z"
        );
        assert_eq!(job["metadata"]["labels"]["app"], "backup");
        assert_eq!(job["metadata"]["ownerReferences"][0]["kind"], "CronJob");
        assert_eq!(
            job["spec"]["template"]["spec"]["restartPolicy"],
            "OnFailure"
        );
    }
}
