//! `?watch=true`: a stream of `ADDED`/`MODIFIED`/`DELETED`/`BOOKMARK`/`ERROR` events,
//! one JSON object per line, or (built-in kinds, protobuf asked for) length-prefixed
//! protobuf `WatchEvent` frames, as kube sends them.

use super::read::{list_options, partial_metadata};
use crate::apiserver::ApiServer;
use crate::codec::protobuf;
use crate::http::negotiate::Output;
use crate::http::response::Body;
use crate::http::ApiRequest;
use crate::rest::watch::WatchEvent;
use crate::rest::{object, ResourceKind};
use crate::status::Status;
use bytes::Bytes;
use futures::{FutureExt, StreamExt};
use http::{header, Response, StatusCode};
use http_body_util::{BodyExt, StreamBody};
use hyper::body::Frame;
use rand::Rng;
use serde_json::{json, Value};
use std::convert::Infallible;
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;

/// How often a BOOKMARK is sent to a watcher that asked for them and saw no events.
pub const BOOKMARK_INTERVAL: Duration = Duration::from_secs(1);

/// kube's default watch timeout: a random time between 30 and 60 minutes.
fn default_timeout() -> Duration {
    Duration::from_secs(rand::rng().random_range(1800..3600))
}

struct Watcher {
    kind: Arc<dyn ResourceKind>,
    output: Output,
    sent_headers: bool,
    include_object: Option<String>,
    /// Frames are protobuf `WatchEvent`s.
    protobuf: bool,
}

impl Watcher {
    fn event(&mut self, ty: &str, obj: &Value) -> Bytes {
        let object = match self.output {
            Output::Table(v) => {
                let include = crate::table::IncludeObject::parse(self.include_object.as_deref())
                    .unwrap_or_default();
                let meta = json!({"resourceVersion": object::meta_str(obj, "resourceVersion")});
                let mut t = match self.kind.strategy().builtin_printer() {
                    Some(p) => {
                        let options = crate::table::TableOptions {
                            include_object: include,
                            ..Default::default()
                        };
                        let objs = std::slice::from_ref(obj);
                        crate::table::builtin_table(objs, p, &options, &meta, chrono::Utc::now())
                    }
                    None => crate::table::table_for_objects(
                        std::slice::from_ref(obj),
                        &self.kind.strategy().printer_columns(),
                        include,
                        meta,
                    ),
                };
                if let Some(m) = t.as_object_mut() {
                    m.insert("apiVersion".into(), json!(v.api_version()));
                    if self.sent_headers {
                        m.insert("columnDefinitions".into(), Value::Null);
                    }
                }
                self.sent_headers = true;
                t
            }
            Output::PartialMetadata(v, _) => partial_metadata(obj, v),
            _ => obj.clone(),
        };
        if self.protobuf {
            return protobuf_frame(ty, &object);
        }
        let object = serde_json::to_vec(&object).unwrap_or_default();
        crate::rest::watch_objects::event_line(ty, &object)
    }

    /// Whether events go out as the object itself (no Table or metadata-only form):
    /// then a shared object's JSON line or protobuf frame is sent as it was made.
    fn plain(&self) -> bool {
        !matches!(self.output, Output::Table(_) | Output::PartialMetadata(..))
    }

    /// A BOOKMARK: an empty object of the kind at `rv`, transformed as every event of
    /// this watch is (metadata-only and Table watchers get their own form of it).
    fn bookmark(&mut self, rv: i64, initial_events_end: bool) -> Bytes {
        let d = self.kind.descriptor();
        let mut meta = json!({"resourceVersion": rv.to_string()});
        // Typed objects' ObjectMeta always prints creationTimestamp (null when zero);
        // custom resources are unstructured and have none.
        if super::is_builtin(self.kind.as_ref()) {
            meta["creationTimestamp"] = Value::Null;
        }
        if initial_events_end {
            meta["annotations"] = json!({"k8s.io/initial-events-end": "true"});
        }
        let obj = json!({"kind": d.kind, "apiVersion": d.api_version(), "metadata": meta});
        self.event("BOOKMARK", &obj)
    }
}

fn protobuf_frame(ty: &str, object: &Value) -> Bytes {
    let object = protobuf::encode(object).unwrap_or_default();
    Bytes::from(protobuf::watch_frame(ty, &object))
}

fn error_event(s: &Status, protobuf: bool) -> Bytes {
    if protobuf {
        return protobuf_frame("ERROR", &s.to_json());
    }
    // `type` first and the Status in kube's field order, as kube writes the event.
    #[derive(serde::Serialize)]
    struct ErrorEvent<'a> {
        r#type: &'static str,
        object: &'a Status,
    }
    let mut b = serde_json::to_vec(&ErrorEvent {
        r#type: "ERROR",
        object: s,
    })
    .unwrap_or_default();
    b.push(b'\n');
    Bytes::from(b)
}

/// Bytes of events a watcher gathers into one write when several are ready at once.
const BATCH_BYTES: usize = 64 * 1024;

/// Batches queued for a watch's connection: with at most about [`BATCH_BYTES`] each,
/// what a client that stops reading costs the server beyond its connection's buffers
/// (the events themselves wait in the storage watch cache's shared window).
const QUEUED_BATCHES: usize = 2;

/// How long a watch's queue may stay full before the watch is closed (kube closes a
/// watcher it cannot keep up with): its client resumes from the last event it got, a
/// revision still in the watch cache's window.
pub const SLOW_WATCHER: Duration = Duration::from_secs(5);

/// A watch's position and what it sends for each event of the store's stream.
struct Framing {
    watcher: Watcher,
    bookmarks: bool,
    /// The revision the watcher has seen up to (what a BOOKMARK carries).
    last_rv: i64,
    last_bookmark: Instant,
}

/// What a store event becomes on the wire.
enum Framed {
    /// Nothing (a change the selectors hide, no bookmark due).
    Skip,
    /// These bytes.
    Send(Bytes),
    /// These bytes, and the watch ends (an error).
    Last(Bytes),
}

impl Framing {
    fn frame(&mut self, ev: WatchEvent) -> Framed {
        let watcher = &mut self.watcher;
        match &ev {
            WatchEvent::Added(o) | WatchEvent::Modified(o) | WatchEvent::Deleted(o) => {
                self.last_rv = self.last_rv.max(o.revision());
                let shared = match (watcher.plain(), watcher.protobuf) {
                    (false, _) => None,
                    (true, false) => o.json_line(ev.type_name()),
                    (true, true) => o.shared_frame(ev.type_name(), protobuf_frame),
                };
                Framed::Send(match shared {
                    Some(line) => line,
                    None => watcher.event(ev.type_name(), o.value()),
                })
            }
            WatchEvent::Progress(rev) => {
                self.last_rv = self.last_rv.max(*rev);
                if !self.bookmarks || self.last_bookmark.elapsed() < BOOKMARK_INTERVAL {
                    return Framed::Skip;
                }
                self.last_bookmark = Instant::now();
                Framed::Send(watcher.bookmark(self.last_rv, false))
            }
            WatchEvent::Error(s) => Framed::Last(error_event(s, watcher.protobuf)),
        }
    }
}

/// Serve a watch.
pub async fn watch(
    api: &Arc<ApiServer>,
    req: &ApiRequest,
    kind: &dyn ResourceKind,
) -> Result<Response<Body>, Status> {
    if let Output::PartialMetadata(_, true) = req.output {
        return Err(super::partial_metadata_form_mismatch(kind, true));
    }
    let d = kind.descriptor();
    let protobuf = matches!(req.output, Output::Protobuf(_))
        && protobuf::is_registered(&d.api_version(), &d.kind);
    if req.output == Output::Protobuf(false) && !protobuf {
        return Err(Status::not_acceptable(
            crate::http::negotiate::NOT_ACCEPTABLE,
        ));
    }
    let mut opts = list_options(req)?;
    super::read::check_field_labels(kind, &opts)?;
    if !req.info.name().is_empty() {
        // Legacy `/watch/.../{name}`: a watch of one object.
        let sel = format!("metadata.name={}", req.info.name());
        opts.fields = Some(
            crate::selector::fields::parse(&sel).map_err(|e| Status::bad_request(e.to_string()))?,
        );
    }
    // As kube: 0 (or none) is the server's default, a negative timeout ends at once.
    let timeout = match req.param_i64("timeoutSeconds")? {
        Some(t) if t > 0 => Duration::from_secs(t as u64),
        Some(t) if t < 0 => Duration::ZERO,
        _ => default_timeout(),
    };
    super::read::not_older_than(api, req).await?;
    let bookmarks = req.param_bool("allowWatchBookmarks");
    let send_initial = req.param_bool("sendInitialEvents");
    let rv = req.param("resourceVersion").unwrap_or("").to_string();
    let resolved = api.resolve(req.info.group(), req.info.version(), req.info.resource())?;
    let kind_arc: Arc<dyn ResourceKind> = match resolved {
        crate::apiserver::Resolved::Custom(k) => k,
        crate::apiserver::Resolved::Builtin(k) => k,
    };
    let namespace = req.info.namespace().to_string();
    // Initial state: without a resourceVersion (or "0"), kube first sends the current
    // objects as ADDED; with one, only changes after it.
    let (initial, start_rv) = if rv.is_empty() || rv == "0" || send_initial {
        // At `resourceVersion=0` any recent state will do, at `N` one at least as new
        // (the watch cache may serve both); without one, the current state.
        let mut all = opts.clone();
        all.limit = 0;
        all.continue_token = None;
        all.resource_version = Some(rv.clone()).filter(|rv| !rv.is_empty());
        all.resource_version_match = all
            .resource_version
            .as_ref()
            .filter(|rv| *rv != "0")
            .map(|_| "NotOlderThan".to_owned());
        let page = api.store.list(kind, &namespace, &all).await?;
        (page.items, page.resource_version)
    } else {
        (Vec::new(), object::parse_resource_version(&rv)?)
    };
    let stream = api
        .store
        .watch(kind_arc.clone(), &namespace, opts, start_rv)
        .await;
    let (tx, rx) = mpsc::channel::<Bytes>(QUEUED_BATCHES);
    let mut watcher = Watcher {
        kind: kind_arc,
        output: req.output,
        sent_headers: false,
        include_object: req.param("includeObject").map(String::from),
        protobuf,
    };
    tokio::spawn(async move {
        // One timer for the whole watch (a new one per event would be registered with
        // and removed from the runtime's timer wheel every time).
        let deadline = tokio::time::sleep(timeout);
        tokio::pin!(deadline);
        for obj in &initial {
            let ev = watcher.event("ADDED", obj);
            if tx.send(ev).await.is_err() {
                return;
            }
        }
        if send_initial && bookmarks && tx.send(watcher.bookmark(start_rv, true)).await.is_err() {
            return;
        }
        let mut stream = stream;
        let mut framing = Framing {
            watcher,
            bookmarks,
            last_rv: start_rv,
            last_bookmark: Instant::now(),
        };
        loop {
            let ev = tokio::select! {
                _ = &mut deadline => return,
                _ = tx.closed() => return,
                ev = stream.next() => ev,
            };
            let Some(ev) = ev else { return };
            let (mut out, mut end) = match framing.frame(ev) {
                Framed::Skip => continue,
                Framed::Send(b) => (b, false),
                Framed::Last(b) => (b, true),
            };
            // What the stream has ready now goes out with it, in one write (kube's
            // watchers flush once their queue is empty): a watcher behind the writers
            // catches up in fewer, larger writes instead of one per event.
            let mut batch: Option<Vec<u8>> = None;
            while !end && batch.as_ref().map_or(out.len(), Vec::len) < BATCH_BYTES {
                let Some(next) = stream.next().now_or_never() else {
                    break;
                };
                let more = match next.map(|ev| framing.frame(ev)) {
                    None => {
                        end = true;
                        continue;
                    }
                    Some(Framed::Skip) => continue,
                    Some(Framed::Send(b)) => b,
                    Some(Framed::Last(b)) => {
                        end = true;
                        b
                    }
                };
                batch
                    .get_or_insert_with(|| out.to_vec())
                    .extend_from_slice(&more);
            }
            if let Some(batch) = batch {
                out = Bytes::from(batch);
            }
            // No timer while the client keeps up.
            match tx.try_send(out) {
                Ok(()) => {}
                Err(mpsc::error::TrySendError::Full(out)) => {
                    match tokio::time::timeout(SLOW_WATCHER, tx.send(out)).await {
                        Ok(Ok(())) => {}
                        Ok(Err(_)) => return,
                        Err(_) => {
                            tracing::info!(
                                resource = %framing.watcher.kind.descriptor().gr,
                                "closing a watch whose client read nothing for {SLOW_WATCHER:?}"
                            );
                            return;
                        }
                    }
                }
                Err(mpsc::error::TrySendError::Closed(_)) => return,
            }
            if end {
                return;
            }
        }
    });
    let body = BodyExt::boxed(StreamBody::new(
        tokio_stream::wrappers::ReceiverStream::new(rx)
            .map(|b| Ok::<_, Infallible>(Frame::data(b))),
    ));
    Response::builder()
        .status(StatusCode::OK)
        .header(
            header::CONTENT_TYPE,
            if protobuf {
                protobuf::WATCH_MEDIA_TYPE
            } else {
                "application/json"
            },
        )
        .header("Cache-Control", "no-cache, private")
        .body(body)
        .map_err(|e| Status::internal(e.to_string()))
}
