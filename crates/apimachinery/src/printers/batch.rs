//! Printers of `batch` kinds: Jobs and CronJobs.

use super::{
    age, array_at, at, bool_ptr, col, containers_and_images, format_label_selector, int_at, name,
    since, str_at, Doc, KindPrinter, AGE, CONTAINERS, IMAGES, NAME,
};
use crate::table::human_duration;
use chrono::{DateTime, Utc};
use serde_json::{json, Value};

/// The `-o wide` Selector column of Jobs and CronJobs (the Job spec's selector doc).
const JOB_SELECTOR: super::Column = super::wide(
    "Selector",
    "string",
    Doc::Field("batch.v1.JobSpec", "selector"),
);

pub(super) const JOB: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col("Status", "string", Doc::Text("Status of the job.")),
        col(
            "Completions",
            "string",
            Doc::Field("batch.v1.JobStatus", "succeeded"),
        ),
        col(
            "Duration",
            "string",
            Doc::Text("Time required to complete the job."),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        JOB_SELECTOR,
    ],
    cells: job_cells,
};

/// Whether the job has a condition of this type, and it is true (the first one of the
/// type decides, as kube's `hasJobCondition`).
fn job_condition(job: &Value, type_: &str) -> bool {
    array_at(job, "/status/conditions")
        .iter()
        .find(|c| str_at(c, "/type") == type_)
        .is_some_and(|c| str_at(c, "/status") == "True")
}

/// kube's job STATUS: the first of these conditions that holds, `Terminating` while
/// deleting, else `Running`.
fn job_status(job: &Value) -> &'static str {
    if job_condition(job, "Complete") {
        "Complete"
    } else if job_condition(job, "Failed") {
        "Failed"
    } else if at(job, "/metadata/deletionTimestamp").is_string() {
        "Terminating"
    } else if job_condition(job, "Suspended") {
        "Suspended"
    } else if job_condition(job, "FailureTarget") {
        "FailureTarget"
    } else if job_condition(job, "SuccessCriteriaMet") {
        "SuccessCriteriaMet"
    } else {
        "Running"
    }
}

fn parse_time(v: &Value) -> Option<DateTime<Utc>> {
    v.as_str()
        .and_then(|t| DateTime::parse_from_rfc3339(t).ok())
        .map(|t| t.with_timezone(&Utc))
}

fn job_cells(job: &Value, now: DateTime<Utc>) -> Vec<Value> {
    let succeeded = int_at(job, "/status/succeeded");
    let completions = match at(job, "/spec/completions").as_i64() {
        Some(c) => format!("{succeeded}/{c}"),
        None => match int_at(job, "/spec/parallelism") {
            p if p > 1 => format!("{succeeded}/1 of {p}"),
            _ => format!("{succeeded}/1"),
        },
    };
    let duration = match (
        parse_time(at(job, "/status/startTime")),
        parse_time(at(job, "/status/completionTime")),
    ) {
        (None, _) => String::new(),
        (Some(start), None) => human_duration(now.signed_duration_since(start)),
        (Some(start), Some(end)) => human_duration(end.signed_duration_since(start)),
    };
    let (names, images) = containers_and_images(array_at(job, "/spec/template/spec/containers"));
    vec![
        name(job),
        json!(job_status(job)),
        json!(completions),
        json!(duration),
        age(job, now),
        names,
        images,
        json!(format_label_selector(at(job, "/spec/selector"))),
    ]
}

pub(super) const CRON_JOB: KindPrinter = KindPrinter {
    columns: &[
        NAME,
        col(
            "Schedule",
            "string",
            Doc::Field("batch.v1.CronJobSpec", "schedule"),
        ),
        col(
            "Timezone",
            "string",
            Doc::Field("batch.v1.CronJobSpec", "timeZone"),
        ),
        col(
            "Suspend",
            "boolean",
            Doc::Field("batch.v1.CronJobSpec", "suspend"),
        ),
        col(
            "Active",
            "integer",
            Doc::Field("batch.v1.CronJobStatus", "active"),
        ),
        col(
            "Last Schedule",
            "string",
            Doc::Field("batch.v1.CronJobStatus", "lastScheduleTime"),
        ),
        AGE,
        CONTAINERS,
        IMAGES,
        JOB_SELECTOR,
    ],
    cells: |cj, now| {
        let last = if at(cj, "/status/lastScheduleTime").is_string() {
            since(cj, "/status/lastScheduleTime", now)
        } else {
            "<none>".to_string()
        };
        let time_zone = match at(cj, "/spec/timeZone").as_str() {
            Some(tz) => tz.to_string(),
            None => "<none>".to_string(),
        };
        let (names, images) = containers_and_images(array_at(
            cj,
            "/spec/jobTemplate/spec/template/spec/containers",
        ));
        vec![
            name(cj),
            json!(str_at(cj, "/spec/schedule")),
            json!(time_zone),
            json!(bool_ptr(at(cj, "/spec/suspend"))),
            json!(array_at(cj, "/status/active").len()),
            json!(last),
            age(cj, now),
            names,
            images,
            json!(format_label_selector(at(
                cj,
                "/spec/jobTemplate/spec/selector"
            ))),
        ]
    },
};
