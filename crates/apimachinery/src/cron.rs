//! CronJob schedules as kube reads them (robfig/cron's standard parser): five fields
//! (minute, hour, day of month, month, day of week) with `*`, `?`, lists, ranges,
//! steps and month and weekday names, or a descriptor (`@yearly`, `@monthly`,
//! `@weekly`, `@daily`, `@midnight`, `@hourly`); times in UTC. A day of month and a
//! day of week both restricted match either, as cron's.

use chrono::{DateTime, Datelike, Duration, Timelike, Utc};

/// Why a schedule does not parse, in robfig/cron's words.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[error("{0}")]
pub struct ScheduleError(String);

/// A parsed schedule: the allowed values of each field as bit sets.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Schedule {
    minutes: u64,
    hours: u64,
    days: u64,
    months: u64,
    weekdays: u64,
    /// Whether day of month or day of week was `*`/`?` (then only the other counts).
    any_day: bool,
    any_weekday: bool,
}

const MONTHS: [&str; 12] = [
    "jan", "feb", "mar", "apr", "may", "jun", "jul", "aug", "sep", "oct", "nov", "dec",
];
const WEEKDAYS: [&str; 7] = ["sun", "mon", "tue", "wed", "thu", "fri", "sat"];

fn value(s: &str, names: &[&str], offset: u32) -> Result<u32, String> {
    let lower = s.to_ascii_lowercase();
    if let Some(i) = names.iter().position(|n| *n == lower) {
        return Ok(i as u32 + offset);
    }
    s.parse::<u32>().map_err(|_| {
        format!("failed to parse int from {s}: strconv.Atoi: parsing \"{s}\": invalid syntax")
    })
}

/// One field (`0-30/5,45`) within `min..=max`.
fn field(
    spec: &str,
    min: u32,
    max: u32,
    names: &[&str],
    offset: u32,
) -> Result<(u64, bool), String> {
    let mut bits = 0u64;
    let mut star = false;
    for part in spec.split(',') {
        let (range, step) = match part.split_once('/') {
            Some((r, s)) => (r, Some(s)),
            None => (part, None),
        };
        let (lo, hi, is_star) = if range == "*" || range == "?" {
            (min, max, true)
        } else if let Some((a, b)) = range.split_once('-') {
            (value(a, names, offset)?, value(b, names, offset)?, false)
        } else {
            let v = value(range, names, offset)?;
            (v, if step.is_some() { max } else { v }, false)
        };
        star |= is_star && step.is_none();
        let step = match step {
            Some(s) => s.parse::<u32>().map_err(|_| {
                format!(
                    "failed to parse int from {s}: strconv.Atoi: parsing \"{s}\": invalid syntax"
                )
            })?,
            None => 1,
        };
        if lo < min {
            return Err(format!(
                "beginning of range ({lo}) below minimum ({min}): {part}"
            ));
        }
        if hi > max {
            return Err(format!("end of range ({hi}) above maximum ({max}): {part}"));
        }
        if lo > hi {
            return Err(format!(
                "beginning of range ({lo}) beyond end of range ({hi}): {part}"
            ));
        }
        if step == 0 {
            return Err(format!("step of range should be a positive number: {part}"));
        }
        let mut v = lo;
        while v <= hi {
            bits |= 1 << v;
            v += step;
        }
    }
    Ok((bits, star))
}

impl Schedule {
    /// Parse a CronJob's `schedule`; the error is robfig/cron's text.
    pub fn parse(spec: &str) -> Result<Schedule, ScheduleError> {
        Schedule::parse_fields(spec).map_err(ScheduleError)
    }

    fn parse_fields(spec: &str) -> Result<Schedule, String> {
        let spec = spec.trim();
        let expanded = match spec {
            "@yearly" | "@annually" => "0 0 1 1 *",
            "@monthly" => "0 0 1 * *",
            "@weekly" => "0 0 * * 0",
            "@daily" | "@midnight" => "0 0 * * *",
            "@hourly" => "0 * * * *",
            s if s.starts_with('@') => return Err(format!("unrecognized descriptor: {s}")),
            s => s,
        };
        let fields: Vec<&str> = expanded.split_whitespace().collect();
        if fields.len() != 5 {
            return Err(format!(
                "expected exactly 5 fields, found {}: [{}]",
                fields.len(),
                fields.join(" ")
            ));
        }
        let (minutes, _) = field(fields[0], 0, 59, &[], 0)?;
        let (hours, _) = field(fields[1], 0, 23, &[], 0)?;
        let (days, any_day) = field(fields[2], 1, 31, &[], 0)?;
        let (months, _) = field(fields[3], 1, 12, &MONTHS, 1)?;
        let (mut weekdays, any_weekday) = field(fields[4], 0, 7, &WEEKDAYS, 0)?;
        if weekdays & (1 << 7) != 0 {
            weekdays |= 1; // 7 is Sunday too
        }
        Ok(Schedule {
            minutes,
            hours,
            days,
            months,
            weekdays,
            any_day,
            any_weekday,
        })
    }

    fn day_matches(&self, t: &DateTime<Utc>) -> bool {
        let dom = self.days & (1 << t.day()) != 0;
        let dow = self.weekdays & (1 << t.weekday().num_days_from_sunday()) != 0;
        if self.any_day || self.any_weekday {
            dom && dow
        } else {
            dom || dow
        }
    }

    fn matches(&self, t: &DateTime<Utc>) -> bool {
        self.minutes & (1 << t.minute()) != 0
            && self.hours & (1 << t.hour()) != 0
            && self.months & (1 << t.month()) != 0
            && self.day_matches(t)
    }

    /// The first scheduled time strictly after `after` (searched up to five years).
    pub fn next(&self, after: DateTime<Utc>) -> Option<DateTime<Utc>> {
        let start = after.with_second(0)?.with_nanosecond(0)? + Duration::minutes(1);
        let mut t = start;
        let limit = start + Duration::days(5 * 366);
        while t <= limit {
            if self.months & (1 << t.month()) == 0 || !self.day_matches(&t) {
                t = (t + Duration::days(1)).with_hour(0)?.with_minute(0)?;
                continue;
            }
            if self.hours & (1 << t.hour()) == 0 {
                t = (t + Duration::hours(1)).with_minute(0)?;
                continue;
            }
            if self.matches(&t) {
                return Some(t);
            }
            t += Duration::minutes(1);
        }
        None
    }

    /// The latest scheduled time in `(after, until]` and how many there were.
    pub fn last_between(
        &self,
        after: DateTime<Utc>,
        until: DateTime<Utc>,
    ) -> (Option<DateTime<Utc>>, usize) {
        let mut last = None;
        let mut count = 0;
        let mut t = after;
        while let Some(n) = self.next(t) {
            if n > until {
                break;
            }
            last = Some(n);
            count += 1;
            t = n;
            if count > 1000 {
                break;
            }
        }
        (last, count)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn at(s: &str) -> DateTime<Utc> {
        DateTime::parse_from_rfc3339(s)
            .expect("time")
            .with_timezone(&Utc)
    }

    #[test]
    fn next_times_follow_the_fields() {
        let every5 = Schedule::parse("*/5 * * * *").expect("valid");
        assert_eq!(
            every5.next(at("2026-01-01T10:02:30Z")),
            Some(at("2026-01-01T10:05:00Z"))
        );
        let hourly = Schedule::parse("@hourly").expect("valid");
        assert_eq!(
            hourly.next(at("2026-01-01T10:00:00Z")),
            Some(at("2026-01-01T11:00:00Z"))
        );
        let monday_nine = Schedule::parse("0 9 * * MON").expect("valid");
        // 2026-01-01 is a Thursday: the next Monday is the 5th.
        assert_eq!(
            monday_nine.next(at("2026-01-01T00:00:00Z")),
            Some(at("2026-01-05T09:00:00Z"))
        );
        let first_or_friday = Schedule::parse("0 0 1 * 5").expect("valid");
        assert_eq!(
            first_or_friday.next(at("2026-01-01T00:00:00Z")),
            Some(at("2026-01-02T00:00:00Z"))
        );
        let (last, count) =
            every5.last_between(at("2026-01-01T10:00:00Z"), at("2026-01-01T10:17:00Z"));
        assert_eq!((last, count), (Some(at("2026-01-01T10:15:00Z")), 3));
    }

    #[test]
    fn bad_schedules_are_refused_in_robfig_words() {
        assert_eq!(
            Schedule::parse("* * *").unwrap_err().to_string(),
            "expected exactly 5 fields, found 3: [* * *]"
        );
        assert_eq!(
            Schedule::parse("61 * * * *").unwrap_err().to_string(),
            "end of range (61) above maximum (59): 61"
        );
        assert_eq!(
            Schedule::parse("@every").unwrap_err().to_string(),
            "unrecognized descriptor: @every"
        );
    }
}
