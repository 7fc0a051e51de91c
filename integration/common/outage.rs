//! Writers, updaters and etcd-alone putters for the fault tests and the outage benchmark: what
//! a client saw while etcd members were killed, frozen or short of a quorum.

use super::Http;
use serde_json::Value;
use std::thread;
use std::time::{Duration, Instant};

/// The outcome of one create by [`Writers`].
pub struct WriteOutcome {
    pub name: String,
    pub status: u16,
    pub retry_after: Option<String>,
    pub done: Instant,
}

/// Threads creating objects `writer{writer}-{i}` in `collection` one after another
/// until stopped, each body made by `body(name)`.
pub struct Writers {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<thread::JoinHandle<Vec<WriteOutcome>>>,
}

impl Writers {
    pub fn start(http: &Http, collection: &str, count: usize, body: fn(&str) -> Value) -> Writers {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..count)
            .map(|writer| {
                let (http, stop, collection) = (http.clone(), stop.clone(), collection.to_owned());
                thread::spawn(move || {
                    let mut outcomes = Vec::new();
                    let mut i = 0;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let name = format!("writer{writer}-{i}");
                        i += 1;
                        let response = http.send_json("POST", &collection, &body(&name));
                        outcomes.push(WriteOutcome {
                            name,
                            status: response.status,
                            retry_after: response.header("Retry-After"),
                            done: Instant::now(),
                        });
                        if response.status != 201 {
                            thread::sleep(Duration::from_millis(20));
                        }
                    }
                    outcomes
                })
            })
            .collect();
        Writers { stop, threads }
    }

    pub fn finish(self) -> Vec<WriteOutcome> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut all: Vec<WriteOutcome> = self
            .threads
            .into_iter()
            .flat_map(|t| t.join().expect("writer thread"))
            .collect();
        all.sort_by_key(|o| o.done);
        all
    }
}

/// The longest time between two successful writes (the issue's "longest time with no
/// successful write").
pub fn longest_gap(outcomes: &[WriteOutcome]) -> Duration {
    let done: Vec<Instant> = outcomes
        .iter()
        .filter(|o| o.status == 201)
        .map(|o| o.done)
        .collect();
    longest_pause(&done)
}

/// The longest time between two of `times` (sorted).
pub fn longest_pause(times: &[Instant]) -> Duration {
    times
        .windows(2)
        .map(|w| w[1] - w[0])
        .max()
        .unwrap_or_default()
}

/// What one updater did: the object it owned, the last value of its counter a PUT
/// acknowledged, and every PUT's status.
pub struct UpdateOutcome {
    pub path: String,
    pub acknowledged: u64,
    pub statuses: Vec<u16>,
}

/// Threads each owning one object, `updater{i}` in `collection` (created first from
/// `body(name)`), and updating it read-modify-write until stopped: GET, its label `n`
/// one higher, PUT with the resourceVersion read. A failed PUT is read again, so one
/// applied despite its error is counted on from.
pub struct Updaters {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<thread::JoinHandle<UpdateOutcome>>,
}

impl Updaters {
    pub fn start(http: &Http, collection: &str, count: usize, body: fn(&str) -> Value) -> Updaters {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..count)
            .map(|updater| {
                let name = format!("updater{updater}");
                let created = http.send_json("POST", collection, &body(&name));
                assert_eq!(created.status, 201, "{}", created.text());
                let path = format!("{collection}/{name}");
                let (http, stop) = (http.clone(), stop.clone());
                thread::spawn(move || {
                    let (mut acknowledged, mut statuses) = (0, Vec::new());
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let read = http.get(&path);
                        let Some(mut object) = read.json().filter(|_| read.status == 200) else {
                            thread::sleep(Duration::from_millis(20));
                            continue;
                        };
                        let next = counter(&object) + 1;
                        object["metadata"]["labels"] = serde_json::json!({"n": next.to_string()});
                        let put = http.send_json("PUT", &path, &object);
                        statuses.push(put.status);
                        if put.status == 200 {
                            acknowledged = next;
                        } else {
                            thread::sleep(Duration::from_millis(20));
                        }
                    }
                    UpdateOutcome {
                        path,
                        acknowledged,
                        statuses,
                    }
                })
            })
            .collect();
        Updaters { stop, threads }
    }

    pub fn finish(self) -> Vec<UpdateOutcome> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        self.threads
            .into_iter()
            .map(|t| t.join().expect("updater thread"))
            .collect()
    }
}

/// The counter an updater keeps in the object's label `n` (0 when absent).
pub fn counter(object: &Value) -> u64 {
    object["metadata"]["labels"]["n"]
        .as_str()
        .and_then(|n| n.parse().ok())
        .unwrap_or(0)
}

/// etcd's own availability as a client of the whole cluster sees it: threads putting
/// keys through the members' JSON gateways (each put to the members in turn, each try
/// given `try_for`), recording when each put succeeded.
pub struct EtcdPutters {
    stop: std::sync::Arc<std::sync::atomic::AtomicBool>,
    threads: Vec<thread::JoinHandle<Vec<Instant>>>,
}

impl EtcdPutters {
    pub fn start(urls: &[String], count: usize, try_for: Duration) -> EtcdPutters {
        let stop = std::sync::Arc::new(std::sync::atomic::AtomicBool::new(false));
        let threads = (0..count)
            .map(|putter| {
                let (urls, stop) = (urls.to_vec(), stop.clone());
                thread::spawn(move || {
                    let agent: ureq::Agent = ureq::Agent::config_builder()
                        .http_status_as_error(false)
                        .timeout_global(Some(try_for))
                        .proxy(None)
                        .build()
                        .into();
                    let mut done = Vec::new();
                    let mut i = 0usize;
                    while !stop.load(std::sync::atomic::Ordering::Relaxed) {
                        let url = &urls[i % urls.len()];
                        i += 1;
                        let body = serde_json::json!({
                            "key": super::base64_text(format!("/alone/{putter}/{i}").as_bytes()),
                            "value": super::base64_text(b"x"),
                        });
                        let ok = agent
                            .post(&format!("{url}/v3/kv/put"))
                            .header("Content-Type", "application/json")
                            .send(body.to_string())
                            .is_ok_and(|r| r.status() == 200);
                        if ok {
                            done.push(Instant::now());
                        } else {
                            thread::sleep(Duration::from_millis(10));
                        }
                    }
                    done
                })
            })
            .collect();
        EtcdPutters { stop, threads }
    }

    pub fn finish(self) -> Vec<Instant> {
        self.stop.store(true, std::sync::atomic::Ordering::Relaxed);
        let mut all: Vec<Instant> = self
            .threads
            .into_iter()
            .flat_map(|t| t.join().expect("putter thread"))
            .collect();
        all.sort();
        all
    }
}
