//! The etcd backend: the `Storage` contract over etcd's v3 gRPC API, as kube-apiserver
//! uses it. Keys and values are stored as given (the layers above build kube's key
//! layout and JSON values); `mod_revision` is the `resourceVersion`.
//!
//! Writes are single transactions comparing `mod_revision` (creates compare
//! `create_revision` with 0), so no update is lost. Every call has a deadline: when etcd
//! is down calls fail fast with `Unavailable` (or `Timeout` when it does not answer),
//! and the lazily connected channels reconnect on their own once etcd is back.
//!
//! Calls go to one member at a time; the moment a call to it fails or times out (or a
//! watch on it goes silent) later calls go to the next member, with a warning naming
//! both, so a hung member costs one request timeout and a dead follower nothing (a
//! write a follower forwarded to a leader that just died gets no answer from etcd: it
//! costs one request timeout too). Errors say
//! what is known of the outcome: `Unavailable` (503 with `Retry-After`) only when etcd
//! certainly did not act on the request, `OutcomeUnknown` (500) or `Timeout` (504) when
//! a write may have been applied; see `EtcdStorage::call`. A watch
//! is one gRPC stream; when the connection drops it yields one error and ends, and the
//! caller re-watches from its last revision. Idle watches ask etcd for progress
//! (`WatchProgressRequest`) every `progress_interval`; etcd before 3.4.25 / 3.5.8 may
//! answer ahead of events still queued for the watch (etcd-io/etcd#15220), so there an
//! answer only shows the watch alive and progress comes from etcd's periodic
//! notifications, which travel with the events (`learn_progress_order`).
//!
//! The client is generated at build time from `proto/etcd/*.proto` (see `build.rs`).

use std::collections::VecDeque;
use std::future::Future;
use std::path::PathBuf;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use futures::StreamExt;
use tokio::sync::mpsc;
use tokio::time::{Instant, Interval, MissedTickBehavior};
use tokio_stream::wrappers::ReceiverStream;
use tonic::transport::{Certificate, Channel, ClientTlsConfig, Endpoint, Identity};

use super::{
    Event, EventKind, KeyValue, ListOptions, ListResult, Revision, Storage, StorageError,
    WatchItem, WatchStream,
};

/// The client generated from etcd's API subset in `proto/etcd/`.
#[allow(clippy::all, clippy::pedantic, missing_docs, unreachable_pub)]
mod pb {
    pub mod mvccpb {
        tonic::include_proto!("mvccpb");
    }
    pub mod etcdserverpb {
        tonic::include_proto!("etcdserverpb");
    }
}

use pb::etcdserverpb::{
    compare::{CompareResult, CompareTarget, TargetUnion},
    kv_client::KvClient,
    maintenance_client::MaintenanceClient,
    request_op, response_op,
    watch_client::WatchClient,
    watch_request::RequestUnion,
    CompactionRequest, Compare, DeleteRangeRequest, PutRequest, RangeRequest, RequestOp,
    StatusRequest, TxnRequest, TxnResponse, WatchCreateRequest, WatchProgressRequest, WatchRequest,
    WatchResponse,
};
use pb::mvccpb::event::EventType;

/// Deadline of each etcd call by default.
pub const DEFAULT_REQUEST_TIMEOUT: Duration = Duration::from_secs(5);
/// How often an idle watch asks etcd for progress by default.
pub const DEFAULT_PROGRESS_INTERVAL: Duration = Duration::from_secs(1);

/// How often an HTTP/2 ping checks a connection to etcd: just above etcd's default
/// `--grpc-keepalive-min-time` (5 s), the most often etcd lets a client ping.
const KEEPALIVE_INTERVAL: Duration = Duration::from_secs(6);
/// How long a ping may go unanswered before the connection is dropped.
const KEEPALIVE_TIMEOUT: Duration = Duration::from_secs(2);
/// How long one attempt of a write or a one-key read waits for a member before the
/// call moves to the next: a member that lost its leader holds such a request until
/// its own timeout (7 s in etcd) while the cluster elects another within about a
/// second, and a hung member never answers. Lists keep the whole request timeout.
const ATTEMPT_TIMEOUT: Duration = Duration::from_secs(2);
/// How long `ready` waits for etcd before answering from the last known state.
pub const READY_ANSWER: Duration = Duration::from_millis(50);

/// How to reach etcd.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EtcdConfig {
    /// Client URLs (kube's `--etcd-servers`), e.g. `http://127.0.0.1:2379`; `https://`
    /// ones use TLS; a bare `host:port` means `http://host:port`.
    pub endpoints: Vec<String>,
    /// TLS files for `https://` endpoints.
    pub tls: Option<EtcdTls>,
    /// Deadline of each call, connecting included.
    pub request_timeout: Duration,
    /// How often an idle watch asks etcd for progress (`WatchItem::Progress`).
    pub progress_interval: Duration,
}

impl EtcdConfig {
    /// A config for these endpoints with the default timeouts and no TLS files.
    pub fn new(endpoints: Vec<String>) -> Self {
        EtcdConfig {
            endpoints,
            tls: None,
            request_timeout: DEFAULT_REQUEST_TIMEOUT,
            progress_interval: DEFAULT_PROGRESS_INTERVAL,
        }
    }
}

/// TLS files, as kube-apiserver's `--etcd-cafile`, `--etcd-certfile`, `--etcd-keyfile`.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct EtcdTls {
    /// PEM CA bundle that signed etcd's serving certificate; the system roots when unset.
    pub ca_file: Option<PathBuf>,
    /// PEM client certificate (with `key_file`) for etcd's client-cert authentication.
    pub cert_file: Option<PathBuf>,
    /// PEM private key of `cert_file`.
    pub key_file: Option<PathBuf>,
}

/// The etcd backend; clones share the connections.
#[derive(Clone)]
pub struct EtcdStorage {
    shared: Arc<Shared>,
}

struct Shared {
    endpoints: Vec<String>,
    /// One lazily connected channel per endpoint.
    channels: Vec<Channel>,
    /// The endpoint calls go to; moves on to the next when one fails or times out.
    current: AtomicUsize,
    request_timeout: Duration,
    progress_interval: Duration,
    /// The outcome of the latest call or watch opened: what `ready` answers while a
    /// probe of etcd is slow.
    health: std::sync::Mutex<Result<(), StorageError>>,
    /// Whether a readiness probe is in flight (at most one at a time).
    probing: AtomicBool,
    /// Whether etcd answers progress requests in order with events (3.4.25, 3.5.8 and
    /// later; etcd-io/etcd#15220). False until its version is known: until then, and on
    /// older etcd, a requested progress report only shows the watch is alive.
    requested_progress_in_order: AtomicBool,
}

impl std::fmt::Debug for EtcdStorage {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("EtcdStorage")
            .field("endpoints", &self.shared.endpoints)
            .field("request_timeout", &self.shared.request_timeout)
            .finish()
    }
}

impl EtcdStorage {
    /// Prepares connections to etcd without waiting for it: an etcd that is down now
    /// makes calls fail with `Unavailable` until it is up. Fails only on a bad config
    /// (no or malformed endpoints, unreadable TLS files) with `StorageError::Internal`.
    pub async fn connect(config: EtcdConfig) -> Result<Self, StorageError> {
        if config.endpoints.is_empty() {
            return Err(config_error("no etcd endpoints given".to_owned()));
        }
        let tls = match &config.tls {
            Some(files) => Some(tls_config(files)?),
            None => None,
        };
        let request_timeout = config.request_timeout.max(Duration::from_millis(1));
        let mut endpoints = Vec::new();
        let mut channels = Vec::new();
        for raw in &config.endpoints {
            let url = if raw.contains("://") {
                raw.clone()
            } else {
                format!("http://{raw}")
            };
            let mut endpoint = Endpoint::from_shared(url.clone())
                .map_err(|e| config_error(format!("invalid etcd endpoint {raw:?}: {e}")))?
                .connect_timeout(request_timeout)
                .tcp_nodelay(true)
                // Pings find a dead connection under an idle watch; a closed socket is
                // noticed at once anyway, and a hung member is left after one call times
                // out (`leave`). etcd's server closes connections that ping more often
                // than its `--grpc-keepalive-min-time` (5 s by default).
                .http2_keep_alive_interval(KEEPALIVE_INTERVAL)
                .keep_alive_timeout(KEEPALIVE_TIMEOUT.min(request_timeout))
                .keep_alive_while_idle(true);
            if url.starts_with("https://") {
                let tls = tls
                    .clone()
                    .unwrap_or_else(|| ClientTlsConfig::new().with_native_roots());
                endpoint = endpoint
                    .tls_config(tls)
                    .map_err(|e| config_error(format!("etcd TLS for {raw:?}: {e}")))?;
            }
            channels.push(endpoint.connect_lazy());
            endpoints.push(url);
        }
        let storage = EtcdStorage {
            shared: Arc::new(Shared {
                endpoints,
                channels,
                current: AtomicUsize::new(0),
                request_timeout,
                progress_interval: config.progress_interval.max(Duration::from_millis(10)),
                health: std::sync::Mutex::new(Err(StorageError::Unavailable(
                    "etcd not reached yet".to_owned(),
                ))),
                probing: AtomicBool::new(false),
                requested_progress_in_order: AtomicBool::new(false),
            }),
        };
        tokio::spawn(learn_progress_order(storage.clone()));
        Ok(storage)
    }

    /// Compacts etcd's history up to `revision` (etcd's compact, as kube-apiserver's
    /// compactor does): older revisions become unreadable. Compacting at or below the
    /// current compact revision does nothing.
    pub async fn compact(&self, revision: Revision) -> Result<(), StorageError> {
        // Logical compaction, as kube's compactor: older revisions are unreadable at once,
        // and etcd frees the space in the background.
        let request = CompactionRequest {
            revision,
            physical: false,
        };
        let result = self
            // Compacting twice is harmless: another member may be asked.
            .call("compact", true, false, |channel| async move {
                kv_client(channel).compact(with_leader(request)).await
            })
            .await;
        match result {
            Ok(_) | Err(StorageError::Compacted { .. }) => Ok(()),
            Err(StorageError::FutureRevision { .. }) => Err(StorageError::FutureRevision {
                requested: revision,
                current: self.current_revision().await.unwrap_or(0),
            }),
            Err(err) => Err(err),
        }
    }

    /// Compacts every `interval` up to the revision that was current one interval
    /// before (kube-apiserver's `--etcd-compaction-interval`, 5 min there), so etcd's
    /// history stays bounded while watches and paginated lists keep at least `interval`
    /// of it. Runs until the future is dropped; failures are logged and retried.
    pub async fn run_compactor(self, interval: Duration) {
        let mut ticker = tokio::time::interval(interval.max(Duration::from_millis(10)));
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let mut previous: Option<Revision> = None;
        loop {
            ticker.tick().await;
            if let Some(revision) = previous {
                if let Err(err) = self.compact(revision).await {
                    tracing::warn!("etcd compaction to revision {revision} failed: {err}");
                }
            }
            match self.current_revision().await {
                Ok(revision) => previous = Some(revision),
                Err(err) => tracing::warn!("etcd compaction: reading the revision failed: {err}"),
            }
        }
    }

    /// The version etcd reports (`Maintenance.Status`), e.g. `3.5.17`.
    pub async fn server_version(&self) -> Result<String, StorageError> {
        let status = self
            .call("status", true, true, |channel| async move {
                MaintenanceClient::new(channel)
                    .status(with_leader(StatusRequest {}))
                    .await
            })
            .await?;
        Ok(status.version)
    }

    /// Runs one unary call under the request deadline on the member in use, and on the
    /// next ones while it may move on. Whichever way a call fails, later calls go to
    /// another member at once (`leave`): a hung member costs one request timeout, not
    /// the HTTP/2 keepalive's.
    ///
    /// The error says what is known of the outcome (see `storage_status`):
    /// - `Unavailable` only when no attempt was processed: no connection could be made
    ///   (as etcd's own client judges a mutation safe to retry), or etcd refused it
    ///   before acting (`no leader`, `too many requests`). Reads (`read`), which change
    ///   nothing, also move on after any other failure of a member and end `Unavailable`.
    /// - `OutcomeUnknown` for a write that reached etcd and then failed (the connection
    ///   broke with it in flight, etcd's `request timed out`); it is not re-sent here.
    /// - `Timeout` when the deadline passed, naming the member that was asked.
    ///
    /// A `bounded` call on a cluster gives each member [`ATTEMPT_TIMEOUT`] of its
    /// deadline: a read then moves on to the next member, a write ends `OutcomeUnknown`
    /// (the caller sends it once more; its compare makes a second application
    /// impossible, and finding its own bytes stored tells it the first one applied).
    async fn call<T, F, Fut>(
        &self,
        what: &str,
        read: bool,
        bounded: bool,
        call: F,
    ) -> Result<T, StorageError>
    where
        F: Fn(Channel) -> Fut,
        Fut: Future<Output = Result<tonic::Response<T>, tonic::Status>>,
    {
        let deadline = Instant::now() + self.shared.request_timeout;
        let mut last = None;
        for _ in 0..self.shared.channels.len() {
            let (index, channel) = self.channel();
            // With one member there is nowhere else to go: it has the whole deadline.
            let attempt_deadline = if bounded && self.shared.channels.len() > 1 {
                deadline.min(Instant::now() + ATTEMPT_TIMEOUT)
            } else {
                deadline
            };
            let status = match tokio::time::timeout_at(attempt_deadline, call(channel)).await {
                Ok(Ok(response)) => {
                    self.record(Ok(()));
                    return Ok(response.into_inner());
                }
                Ok(Err(status)) => status,
                Err(_) if attempt_deadline < deadline => {
                    let error = self.timeout(index, what, ATTEMPT_TIMEOUT);
                    self.leave(index, &error);
                    if !read {
                        return Err(StorageError::OutcomeUnknown(error.to_string()));
                    }
                    last = Some(error);
                    continue;
                }
                Err(_) => {
                    let error = self.timeout(index, what, self.shared.request_timeout);
                    self.leave(index, &error);
                    return Err(error);
                }
            };
            let message = match status_error(&status) {
                StorageError::Unavailable(message) => {
                    format!("etcd {}: {message}", self.shared.endpoints[index])
                }
                other => return Err(other),
            };
            let error = if read || not_processed(&status) {
                StorageError::Unavailable(message)
            } else {
                StorageError::OutcomeUnknown(message)
            };
            self.leave(index, &error);
            if let StorageError::OutcomeUnknown(_) = error {
                return Err(error);
            }
            last = Some(error);
        }
        Err(last.unwrap_or_else(|| StorageError::Unavailable("no etcd endpoint".to_owned())))
    }

    fn timeout(&self, index: usize, what: &str, waited: Duration) -> StorageError {
        StorageError::Timeout(format!(
            "etcd {} did not answer {what} within {waited:?}",
            self.shared.endpoints[index]
        ))
    }

    /// Records the failure of member `index` and sends later calls to the next member,
    /// unless another call already moved on; logs the move.
    fn leave(&self, index: usize, error: &StorageError) {
        self.record(Err(error.clone()));
        let count = self.shared.channels.len();
        if count < 2 {
            return;
        }
        let next = (index + 1) % count;
        let moved = self
            .shared
            .current
            .compare_exchange(index, next, Ordering::Relaxed, Ordering::Relaxed)
            .is_ok();
        if moved {
            tracing::warn!(
                from = %self.shared.endpoints[index],
                to = %self.shared.endpoints[next],
                %error,
                "etcd: moving to another member"
            );
        }
    }

    fn channel(&self) -> (usize, Channel) {
        let index = self.shared.current.load(Ordering::Relaxed) % self.shared.channels.len();
        (index, self.shared.channels[index].clone())
    }

    /// Keeps the outcome of the latest call as the last known health (`ready`).
    fn record(&self, outcome: Result<(), StorageError>) {
        if let Ok(mut health) = self.shared.health.lock() {
            *health = outcome;
        }
    }

    fn last_known_health(&self) -> Result<(), StorageError> {
        match self.shared.health.lock() {
            Ok(health) => health.clone(),
            Err(_) => Err(StorageError::Internal(
                "etcd health state poisoned".to_owned(),
            )),
        }
    }

    /// A range; `bounded` for one key (see `call`).
    async fn range(
        &self,
        request: RangeRequest,
        bounded: bool,
    ) -> Result<pb::etcdserverpb::RangeResponse, StorageError> {
        self.call("range", true, bounded, |channel| {
            let request = request.clone();
            async move { kv_client(channel).range(with_leader(request)).await }
        })
        .await
    }

    async fn txn(&self, request: TxnRequest) -> Result<TxnResponse, StorageError> {
        // `read: false`: a write that reached etcd is not sent again here.
        self.call("txn", false, true, |channel| {
            let request = request.clone();
            async move { kv_client(channel).txn(with_leader(request)).await }
        })
        .await
    }

    /// A conditional write whose outcome etcd may not have told (the connection to the
    /// member broke with it in flight, or etcd timed it out: applied or not): sent once
    /// more, to the next member. Its compare then fails if the first one was applied,
    /// which the caller recognises by finding its own bytes stored.
    /// `true` with the response when it is the second attempt's. When the second
    /// attempt is not processed either, the outcome stays unknown: never `Unavailable`,
    /// since the first may have been applied.
    async fn txn_once_more_if_unknown(
        &self,
        request: TxnRequest,
    ) -> Result<(TxnResponse, bool), StorageError> {
        match self.txn(request.clone()).await {
            Err(StorageError::OutcomeUnknown(first)) => {
                tracing::debug!(error = %first, "etcd write outcome unknown; sending it again");
                match self.txn(request).await {
                    Ok(response) => Ok((response, true)),
                    Err(StorageError::Unavailable(second)) => Err(StorageError::OutcomeUnknown(
                        format!("{first}; sent again: {second}"),
                    )),
                    Err(err) => Err(err),
                }
            }
            other => Ok((other?, false)),
        }
    }

    /// Runs `write` on the existing `key` in one transaction if every compare holds;
    /// returns the new store revision and the write's response, or the error of the
    /// failed compare (judged from the key's current value, read in the same transaction).
    async fn write_if(
        &self,
        key: &str,
        compares: Vec<Compare>,
        write: RequestOp,
    ) -> Result<(Revision, Option<response_op::Response>), WriteFailure> {
        let (response, retried) = self
            .txn_once_more_if_unknown(TxnRequest {
                compare: compares,
                success: vec![write],
                failure: vec![get(key)],
            })
            .await
            .map_err(WriteFailure::Storage)?;
        if !response.succeeded {
            return Err(WriteFailure::Compare(
                failed_compare(key, response),
                retried,
            ));
        }
        let revision = header_revision(response.header.as_ref()).map_err(WriteFailure::Storage)?;
        Ok((revision, first_response(response)))
    }

    /// The oldest revision etcd still keeps, learnt from the compact revision etcd
    /// reports to a watch started at `requested` (its range errors do not carry it).
    async fn compacted_after(&self, requested: Revision) -> Revision {
        let fallback = requested + 1;
        let Ok((mut watch, _)) = self.open_watch("/", None, requested).await else {
            return fallback;
        };
        let deadline = Instant::now() + self.shared.request_timeout;
        loop {
            match tokio::time::timeout_at(deadline, watch.responses.message()).await {
                Ok(Ok(Some(response))) if response.compact_revision > 0 => {
                    return response.compact_revision
                }
                Ok(Ok(Some(response))) if response.canceled || !response.events.is_empty() => {
                    return fallback
                }
                Ok(Ok(Some(_))) => continue,
                _ => return fallback,
            }
        }
    }

    /// Opens one watch stream from `start` (inclusive, 0 = now), trying the other
    /// endpoints while one is unavailable; returns it with the store revision at creation.
    async fn open_watch(
        &self,
        key: &str,
        range_end: Option<Vec<u8>>,
        start: Revision,
    ) -> Result<(OpenWatch, Revision), StorageError> {
        let create = WatchCreateRequest {
            // etcd has no empty key; `\0` is the smallest one.
            key: if key.is_empty() {
                vec![0]
            } else {
                key.as_bytes().to_vec()
            },
            range_end: range_end.unwrap_or_default(),
            start_revision: start,
            progress_notify: true,
            prev_kv: true,
            ..WatchCreateRequest::default()
        };
        let deadline = Instant::now() + self.shared.request_timeout;
        let mut last = None;
        for _ in 0..self.shared.channels.len() {
            let (index, channel) = self.channel();
            let error = match tokio::time::timeout_at(deadline, open_watch(channel, create.clone()))
                .await
            {
                Ok(Ok((mut opened, revision))) => {
                    self.record(Ok(()));
                    opened.member = index;
                    return Ok((opened, revision));
                }
                Ok(Err(status)) => match status_error(&status) {
                    StorageError::Unavailable(message) => StorageError::Unavailable(format!(
                        "etcd {}: {message}",
                        self.shared.endpoints[index]
                    )),
                    other => return Err(other),
                },
                Err(_) => {
                    let error = self.timeout(index, "a watch", self.shared.request_timeout);
                    self.leave(index, &error);
                    return Err(error);
                }
            };
            // Opening a watch changes nothing: another member may be asked.
            self.leave(index, &error);
            last = Some(error);
        }
        Err(last.unwrap_or_else(|| StorageError::Unavailable("no etcd endpoint".to_owned())))
    }
}

/// Opens one watch stream on `channel` and waits for etcd to confirm it.
async fn open_watch(
    channel: Channel,
    create: WatchCreateRequest,
) -> Result<(OpenWatch, Revision), tonic::Status> {
    let (requests, receiver) = mpsc::channel(4);
    let create = WatchRequest {
        request_union: Some(RequestUnion::CreateRequest(create)),
    };
    // The queue is empty and its receiver alive, so this cannot fail.
    let _ = requests.try_send(create);
    let mut responses = watch_client(channel)
        .watch(with_leader(ReceiverStream::new(receiver)))
        .await?
        .into_inner();
    loop {
        match responses.message().await? {
            Some(response) if response.created => {
                let revision = response.header.as_ref().map_or(0, |h| h.revision);
                return Ok((
                    OpenWatch {
                        responses,
                        requests,
                        member: 0,
                    },
                    revision,
                ));
            }
            Some(_) => continue,
            None => return Err(tonic::Status::unavailable("etcd closed the watch stream")),
        }
    }
}

/// etcd answers up to its own limits (a list can be far larger than tonic's default
/// 4 MiB), like etcd's Go client, which accepts any size.
fn kv_client(channel: Channel) -> KvClient<Channel> {
    KvClient::new(channel).max_decoding_message_size(usize::MAX)
}

fn watch_client(channel: Channel) -> WatchClient<Channel> {
    WatchClient::new(channel).max_decoding_message_size(usize::MAX)
}

/// A watch stream etcd confirmed: its responses and the sender of further requests.
struct OpenWatch {
    responses: tonic::Streaming<WatchResponse>,
    requests: mpsc::Sender<WatchRequest>,
    /// The index of the member it is open on.
    member: usize,
}

#[async_trait]
impl Storage for EtcdStorage {
    async fn get(&self, key: &str) -> Result<Option<KeyValue>, StorageError> {
        let response = self
            .range(
                RangeRequest {
                    key: key.as_bytes().to_vec(),
                    ..RangeRequest::default()
                },
                true,
            )
            .await?;
        Ok(response.kvs.into_iter().next().map(key_value))
    }

    async fn list(&self, prefix: &str, opts: &ListOptions) -> Result<ListResult, StorageError> {
        let start = match &opts.start_after {
            // The smallest key after `after` is `after` followed by a zero byte.
            Some(after) if after.as_str() >= prefix => {
                let mut key = after.as_bytes().to_vec();
                key.push(0);
                key
            }
            // etcd has no empty key and refuses it as a range start.
            _ if prefix.is_empty() => vec![0],
            _ => prefix.as_bytes().to_vec(),
        };
        let request = RangeRequest {
            key: start,
            range_end: prefix_end(prefix),
            limit: opts.limit.max(0),
            revision: opts.revision.max(0),
            ..RangeRequest::default()
        };
        let response = match self.range(request, false).await {
            Ok(response) => response,
            Err(StorageError::Compacted { .. }) => {
                let requested = opts.revision;
                return Err(StorageError::Compacted {
                    requested,
                    compacted: self.compacted_after(requested).await,
                });
            }
            Err(StorageError::FutureRevision { .. }) => {
                return Err(StorageError::FutureRevision {
                    requested: opts.revision,
                    current: self.current_revision().await.unwrap_or(0),
                })
            }
            Err(err) => return Err(err),
        };
        let revision = if opts.revision > 0 {
            opts.revision
        } else {
            header_revision(response.header.as_ref())?
        };
        let returned = i64::try_from(response.kvs.len()).unwrap_or(i64::MAX);
        Ok(ListResult {
            items: response.kvs.into_iter().map(key_value).collect(),
            revision,
            remaining: (response.count - returned).max(0),
        })
    }

    async fn create(&self, key: &str, value: Vec<u8>) -> Result<KeyValue, StorageError> {
        let (response, retried) = self
            .txn_once_more_if_unknown(TxnRequest {
                compare: vec![compare(
                    key,
                    CompareTarget::Create,
                    CompareResult::Equal,
                    TargetUnion::CreateRevision(0),
                )],
                success: vec![put(key, value.clone())],
                failure: vec![get(key)],
            })
            .await?;
        if !response.succeeded {
            // Sent twice and our own bytes are there: the first attempt created it.
            return match failed_compare(key, response) {
                StorageError::Conflict {
                    current: Some(kv), ..
                } if retried && kv.value == value => Ok(*kv),
                _ => Err(StorageError::AlreadyExists(key.to_owned())),
            };
        }
        let revision = header_revision(response.header.as_ref())?;
        Ok(KeyValue {
            key: key.to_owned(),
            value: value.into(),
            create_revision: revision,
            mod_revision: revision,
        })
    }

    async fn update(
        &self,
        key: &str,
        value: Vec<u8>,
        expected: Revision,
    ) -> Result<KeyValue, StorageError> {
        let compares = vec![exists(key), mod_revision_is(key, expected)];
        let (revision, response) = match self.write_if(key, compares, put(key, value.clone())).await
        {
            // Sent twice and our own bytes are there: the first attempt wrote them.
            Err(WriteFailure::Compare(
                StorageError::Conflict {
                    current: Some(kv), ..
                },
                true,
            )) if kv.value == value => return Ok(*kv),
            Err(e) => return Err(e.into()),
            Ok(r) => r,
        };
        let previous = match response {
            Some(response_op::Response::ResponsePut(put)) => put.prev_kv,
            _ => None,
        };
        let previous = previous.ok_or_else(|| missing_previous(key))?;
        Ok(KeyValue {
            key: key.to_owned(),
            value: value.into(),
            create_revision: previous.create_revision,
            mod_revision: revision,
        })
    }

    async fn delete(
        &self,
        key: &str,
        expected: Option<Revision>,
    ) -> Result<KeyValue, StorageError> {
        let mut compares = vec![exists(key)];
        compares.extend(expected.map(|expected| mod_revision_is(key, expected)));
        let delete = RequestOp {
            request: Some(request_op::Request::RequestDeleteRange(
                DeleteRangeRequest {
                    key: key.as_bytes().to_vec(),
                    prev_kv: true,
                    ..DeleteRangeRequest::default()
                },
            )),
        };
        // Sent twice after an unknown outcome, a delete that happened the first time
        // finds nothing the second: NotFound, as for a delete racing another.
        let (revision, response) = self.write_if(key, compares, delete).await?;
        let previous = match response {
            Some(response_op::Response::ResponseDeleteRange(deleted)) => {
                deleted.prev_kvs.into_iter().next()
            }
            _ => None,
        };
        let previous = previous.ok_or_else(|| missing_previous(key))?;
        Ok(KeyValue {
            mod_revision: revision,
            ..key_value(previous)
        })
    }

    async fn watch(&self, prefix: &str, after: Revision) -> Result<WatchStream, StorageError> {
        let after = after.max(0);
        // etcd's start revision is inclusive; 0 means from now.
        let start = if after == 0 { 0 } else { after + 1 };
        let (open, current) = self
            .open_watch(prefix, Some(prefix_end(prefix)), start)
            .await?;
        if after > current {
            return Err(StorageError::FutureRevision {
                requested: after,
                current,
            });
        }
        let mut ticker = tokio::time::interval_at(
            Instant::now() + self.shared.progress_interval,
            self.shared.progress_interval,
        );
        ticker.set_missed_tick_behavior(MissedTickBehavior::Delay);
        let watcher = Watcher {
            storage: self.clone(),
            open,
            seen: if after == 0 { current } else { after },
            pending: VecDeque::new(),
            ticker,
            unanswered_since: None,
            timeout: self.shared.request_timeout,
            ended: false,
        };
        let stream = futures::stream::unfold(watcher, |mut watcher| async move {
            let item = watcher.next_item().await?;
            Some((item, watcher))
        });
        Ok(stream.boxed())
    }

    async fn current_revision(&self) -> Result<Revision, StorageError> {
        let response = self
            .range(
                RangeRequest {
                    key: b"/".to_vec(),
                    count_only: true,
                    ..RangeRequest::default()
                },
                true,
            )
            .await?;
        header_revision(response.header.as_ref())
    }

    /// Probes etcd with a linearizable read (it needs a leader and a quorum, like
    /// kube's etcd check), but answers within [`READY_ANSWER`] whatever etcd does: a
    /// probe that takes longer goes on in the background, and the answer is the last
    /// known state (the outcome of the latest call), so health endpoints never hang on
    /// a hung member.
    async fn ready(&self) -> Result<(), StorageError> {
        if self.shared.probing.swap(true, Ordering::AcqRel) {
            return self.last_known_health();
        }
        let storage = self.clone();
        let probe = tokio::spawn(async move {
            let outcome = storage.current_revision().await.map(|_| ());
            storage.shared.probing.store(false, Ordering::Release);
            outcome
        });
        match tokio::time::timeout(READY_ANSWER, probe).await {
            Ok(Ok(outcome)) => outcome,
            _ => self.last_known_health(),
        }
    }
}

/// The state of one watch stream.
struct Watcher {
    /// Told when the member fails the watch, so later calls go elsewhere.
    storage: EtcdStorage,
    open: OpenWatch,
    /// Every change up to this revision under the prefix was sent.
    seen: Revision,
    /// Items of a response not handed out yet.
    pending: VecDeque<WatchItem>,
    /// When to ask etcd for progress.
    ticker: Interval,
    /// Since when a progress request has gone unanswered (nothing received since).
    unanswered_since: Option<Instant>,
    timeout: Duration,
    ended: bool,
}

impl Watcher {
    /// The next item; one error then `None` when etcd or the connection ends the watch.
    async fn next_item(&mut self) -> Option<Result<WatchItem, StorageError>> {
        loop {
            if let Some(item) = self.pending.pop_front() {
                return Some(Ok(item));
            }
            if self.ended {
                return None;
            }
            tokio::select! {
                // Read what etcd already sent before judging it silent.
                biased;
                received = self.open.responses.message() => {
                    self.unanswered_since = None;
                    let outcome = match received {
                        Ok(Some(response)) => self.take(response),
                        Ok(None) => Err(StorageError::Unavailable(
                            "etcd closed the watch stream".to_owned(),
                        )),
                        Err(status) => Err(status_error(&status)),
                    };
                    if let Err(err) = outcome {
                        self.ended = true;
                        if let StorageError::Unavailable(_) = err {
                            self.storage.leave(self.open.member, &err);
                        }
                        return Some(Err(err));
                    }
                }
                _ = self.ticker.tick() => {
                    let now = Instant::now();
                    match self.unanswered_since {
                        Some(since) if now - since > self.timeout => {
                            self.ended = true;
                            let member = self.open.member;
                            let err = StorageError::Timeout(format!(
                                "etcd {} sent nothing on a watch for {:?}",
                                self.storage.shared.endpoints[member],
                                now - since
                            ));
                            // A silent member is likely hung: leave it now.
                            self.storage.leave(member, &err);
                            return Some(Err(err));
                        }
                        Some(_) => {}
                        None => self.unanswered_since = Some(now),
                    }
                    let progress = WatchRequest {
                        request_union: Some(RequestUnion::ProgressRequest(WatchProgressRequest {})),
                    };
                    // A full queue already holds a progress request.
                    let _ = self.open.requests.try_send(progress);
                }
            }
        }
    }

    /// Queues the items of one response; an error when etcd cancelled the watch.
    fn take(&mut self, response: WatchResponse) -> Result<(), StorageError> {
        if response.canceled {
            if response.compact_revision > 0 {
                // Also sent to a watcher that fell behind a compaction.
                return Err(StorageError::Compacted {
                    requested: self.seen,
                    compacted: response.compact_revision,
                });
            }
            return Err(StorageError::Internal(format!(
                "etcd cancelled the watch: {}",
                response.cancel_reason
            )));
        }
        if response.created {
            return Ok(());
        }
        if response.events.is_empty() {
            // The answer to a progress request (watch id -1, as etcd marks answers to
            // the whole stream) from an etcd that may send it ahead of events still
            // queued: it shows the watch is alive, nothing more.
            if response.watch_id == -1
                && !self
                    .storage
                    .shared
                    .requested_progress_in_order
                    .load(Ordering::Acquire)
            {
                return Ok(());
            }
            // A progress notification: no more events at or below this revision.
            let revision = response.header.as_ref().map_or(0, |h| h.revision);
            self.seen = self.seen.max(revision);
            self.pending.push_back(WatchItem::Progress(self.seen));
            return Ok(());
        }
        for event in response.events {
            let Some(kv) = event.kv else {
                continue;
            };
            self.seen = self.seen.max(kv.mod_revision);
            let prev = event.prev_kv.map(key_value);
            let event = if event.r#type == EventType::Delete as i32 {
                // etcd's delete event carries only the key and the delete revision.
                let (value, create_revision) =
                    prev.as_ref().map_or((bytes::Bytes::new(), 0), |p| {
                        (p.value.clone(), p.create_revision)
                    });
                Event {
                    kind: EventKind::Delete,
                    kv: KeyValue {
                        key: key_string(kv.key),
                        value,
                        create_revision,
                        mod_revision: kv.mod_revision,
                    },
                    prev,
                }
            } else {
                let kind = if kv.create_revision == kv.mod_revision {
                    EventKind::Create
                } else {
                    EventKind::Modify
                };
                Event {
                    kind,
                    kv: key_value(kv),
                    prev,
                }
            };
            self.pending.push_back(WatchItem::Event(event));
        }
        Ok(())
    }
}

/// Learns from etcd's version whether its answers to progress requests keep order with
/// events (3.4.25, 3.5.8 and later), retrying while etcd cannot be asked; warns once
/// when they do not. On such an etcd a watch reports progress only from etcd's own
/// periodic notifications, which travel with the events.
async fn learn_progress_order(storage: EtcdStorage) {
    let mut wait = Duration::from_millis(200);
    let version = loop {
        match storage.server_version().await {
            Ok(version) => break version,
            Err(_) if Arc::strong_count(&storage.shared) > 1 => {
                tokio::time::sleep(wait).await;
                wait = (wait * 2).min(Duration::from_secs(30));
            }
            // Nothing else holds the storage: nobody watches.
            Err(_) => return,
        }
    };
    if progress_in_order(&version) {
        storage
            .shared
            .requested_progress_in_order
            .store(true, Ordering::Release);
    } else {
        tracing::warn!(
            "etcd {version} may answer a watch progress request ahead of events \
             (etcd-io/etcd#15220), so idle watches report progress only at etcd's \
             --experimental-watch-progress-notify-interval (10m by default); etcd 3.4.25, \
             3.5.8 or later answers in order"
        );
    }
}

/// Whether etcd `version` answers progress requests in order with events.
fn progress_in_order(version: &str) -> bool {
    let numbers: Vec<u64> = version
        .split('.')
        .map(|part| {
            let digits: String = part.chars().take_while(char::is_ascii_digit).collect();
            digits.parse().unwrap_or(0)
        })
        .collect();
    let (major, minor, patch) = match numbers[..] {
        [major, minor, patch, ..] => (major, minor, patch),
        _ => return false,
    };
    (major, minor) > (3, 5)
        || (major, minor) == (3, 5) && patch >= 8
        || (major, minor) == (3, 4) && patch >= 25
}

/// Adds etcd's require-leader metadata, so a member cut off from its leader fails the
/// call (and ends watches) with `Unavailable` instead of serving or waiting.
fn with_leader<T>(message: T) -> tonic::Request<T> {
    let mut request = tonic::Request::new(message);
    request.metadata_mut().insert(
        "hasleader",
        tonic::metadata::MetadataValue::from_static("true"),
    );
    request
}

/// Maps a gRPC failure to the storage error the handlers turn into a kube `Status`.
fn status_error(status: &tonic::Status) -> StorageError {
    use tonic::Code;
    let message = status.message();
    match status.code() {
        Code::OutOfRange if message.contains("required revision has been compacted") => {
            // The caller knows the requested revision; etcd's error does not say.
            StorageError::Compacted {
                requested: 0,
                compacted: 0,
            }
        }
        // The caller knows the requested revision and asks for the current one.
        Code::OutOfRange if message.contains("future revision") => StorageError::FutureRevision {
            requested: 0,
            current: 0,
        },
        Code::DeadlineExceeded => StorageError::Timeout(message.to_owned()),
        Code::InvalidArgument if message.contains("request is too large") => {
            StorageError::TooLarge(super::REQUEST_TOO_LARGE.into())
        }
        // gRPC's own send limit, hit before etcd sees the request.
        Code::ResourceExhausted if message.contains("larger than max") => {
            StorageError::TooLarge(super::REQUEST_TOO_LARGE.into())
        }
        Code::Unavailable | Code::Cancelled => StorageError::Unavailable(describe(status)),
        // Refused before being processed, like `no leader`.
        Code::ResourceExhausted if message == "etcdserver: too many requests" => {
            StorageError::Unavailable(describe(status))
        }
        // Errors raised in this process (connection lost mid-call) carry their cause;
        // errors etcd sent do not.
        _ if std::error::Error::source(status).is_some() => {
            StorageError::Unavailable(describe(status))
        }
        _ => StorageError::Internal(format!("etcd: {message}")),
    }
}

/// Whether etcd certainly did not act on a failed call: it never reached etcd
/// (`never_sent`), or etcd refused it before processing it: a member without a leader
/// fails calls carrying `hasleader` in its interceptor, and an overloaded one refuses
/// new proposals. Anything else etcd or the connection reports may follow a write
/// that was applied (`etcdserver: request timed out`, a stream reset mid-call).
fn not_processed(status: &tonic::Status) -> bool {
    let from_etcd = std::error::Error::source(status).is_none();
    never_sent(status)
        || from_etcd
            && matches!(
                (status.code(), status.message()),
                (tonic::Code::Unavailable, "etcdserver: no leader")
                    | (
                        tonic::Code::ResourceExhausted,
                        "etcdserver: too many requests"
                    )
            )
}

/// Whether a failed call never reached etcd: the channel could not connect (refused,
/// unreachable, DNS, connect timeout), so nothing was sent and a write may go to
/// another member.
fn never_sent(status: &tonic::Status) -> bool {
    if status.code() != tonic::Code::Unavailable {
        return false;
    }
    let mut source = std::error::Error::source(status);
    while let Some(cause) = source {
        if let Some(io) = cause.downcast_ref::<std::io::Error>() {
            use std::io::ErrorKind::*;
            if matches!(
                io.kind(),
                ConnectionRefused | HostUnreachable | NetworkUnreachable | AddrNotAvailable
            ) {
                return true;
            }
        }
        // hyper's connector names every failure before the socket is connected so.
        let text = cause.to_string();
        if text.starts_with("tcp connect error") || text.starts_with("dns error") {
            return true;
        }
        source = cause.source();
    }
    false
}

/// The message of a status with its cause chain, e.g. `tcp connect error: Connection refused`.
fn describe(status: &tonic::Status) -> String {
    let mut text = status.message().to_owned();
    let mut source = std::error::Error::source(status);
    while let Some(cause) = source {
        let cause_text = cause.to_string();
        if !text.contains(&cause_text) {
            text.push_str(": ");
            text.push_str(&cause_text);
        }
        source = cause.source();
    }
    text
}

fn config_error(message: String) -> StorageError {
    StorageError::Internal(message)
}

/// Reads the TLS files into a tonic TLS config.
fn tls_config(files: &EtcdTls) -> Result<ClientTlsConfig, StorageError> {
    let read = |path: &PathBuf, what: &str| {
        std::fs::read(path)
            .map_err(|e| config_error(format!("reading etcd {what} {}: {e}", path.display())))
    };
    let mut tls = ClientTlsConfig::new();
    tls = match &files.ca_file {
        Some(path) => tls.ca_certificate(Certificate::from_pem(read(path, "CA file")?)),
        None => tls.with_native_roots(),
    };
    match (&files.cert_file, &files.key_file) {
        (Some(cert), Some(key)) => {
            tls = tls.identity(Identity::from_pem(
                read(cert, "certificate file")?,
                read(key, "key file")?,
            ));
        }
        (None, None) => {}
        _ => {
            return Err(config_error(
                "an etcd client certificate needs both a certificate file and a key file"
                    .to_owned(),
            ))
        }
    }
    Ok(tls)
}

/// The end of the range of keys starting with `prefix` (etcd's prefix range end);
/// `\0` (every key) when no such end exists.
fn prefix_end(prefix: &str) -> Vec<u8> {
    let mut end = prefix.as_bytes().to_vec();
    while let Some(last) = end.pop() {
        if last < 0xff {
            end.push(last + 1);
            return end;
        }
    }
    vec![0]
}

fn header_revision(
    header: Option<&pb::etcdserverpb::ResponseHeader>,
) -> Result<Revision, StorageError> {
    header
        .map(|h| h.revision)
        .filter(|&r| r > 0)
        .ok_or_else(|| StorageError::Internal("etcd response without a revision".to_owned()))
}

fn key_string(key: Vec<u8>) -> String {
    String::from_utf8(key).unwrap_or_else(|e| String::from_utf8_lossy(e.as_bytes()).into_owned())
}

fn key_value(kv: pb::mvccpb::KeyValue) -> KeyValue {
    KeyValue {
        key: key_string(kv.key),
        value: kv.value.into(),
        create_revision: kv.create_revision,
        mod_revision: kv.mod_revision,
    }
}

fn compare(key: &str, target: CompareTarget, result: CompareResult, value: TargetUnion) -> Compare {
    Compare {
        result: result as i32,
        target: target as i32,
        key: key.as_bytes().to_vec(),
        target_union: Some(value),
    }
}

/// The key exists (a live key has version >= 1).
fn exists(key: &str) -> Compare {
    compare(
        key,
        CompareTarget::Version,
        CompareResult::Greater,
        TargetUnion::Version(0),
    )
}

fn mod_revision_is(key: &str, expected: Revision) -> Compare {
    compare(
        key,
        CompareTarget::Mod,
        CompareResult::Equal,
        TargetUnion::ModRevision(expected),
    )
}

fn missing_previous(key: &str) -> StorageError {
    StorageError::Internal(format!("etcd returned no previous value of {key}"))
}

fn put(key: &str, value: Vec<u8>) -> RequestOp {
    RequestOp {
        request: Some(request_op::Request::RequestPut(PutRequest {
            key: key.as_bytes().to_vec(),
            value,
            prev_kv: true,
            ..PutRequest::default()
        })),
    }
}

fn get(key: &str) -> RequestOp {
    RequestOp {
        request: Some(request_op::Request::RequestRange(RangeRequest {
            key: key.as_bytes().to_vec(),
            ..RangeRequest::default()
        })),
    }
}

fn first_response(response: TxnResponse) -> Option<response_op::Response> {
    response.responses.into_iter().next()?.response
}

/// The error of a write whose compare failed: the key is gone, or it changed (with
/// its current value, read in the same transaction).
/// Why a conditional write failed: storage, or a compare (with whether the write had
/// been sent twice).
enum WriteFailure {
    Storage(StorageError),
    Compare(StorageError, bool),
}

impl From<WriteFailure> for StorageError {
    fn from(f: WriteFailure) -> Self {
        match f {
            WriteFailure::Storage(e) | WriteFailure::Compare(e, _) => e,
        }
    }
}

fn failed_compare(key: &str, response: TxnResponse) -> StorageError {
    let current = match first_response(response) {
        Some(response_op::Response::ResponseRange(range)) => range.kvs.into_iter().next(),
        _ => None,
    };
    match current {
        None => StorageError::NotFound(key.to_owned()),
        Some(kv) => StorageError::Conflict {
            key: key.to_owned(),
            current: Some(Box::new(key_value(kv))),
        },
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn progress_answers_are_in_order_from_the_releases_that_fixed_etcd_15220() {
        for ordered in [
            "3.4.25",
            "3.4.31",
            "3.5.8",
            "3.5.21",
            "3.6.0",
            "4.0.0",
            "3.5.8-rc.0",
        ] {
            assert!(progress_in_order(ordered), "{ordered}");
        }
        for early in [
            "3.4.23", "3.4.24", "3.5.0", "3.5.7", "3.3.27", "3.4", "", "unknown",
        ] {
            assert!(!progress_in_order(early), "{early}");
        }
    }

    #[test]
    fn prefix_end_increments_the_last_byte_below_ff() {
        assert_eq!(prefix_end("/registry/"), b"/registry0".to_vec());
        assert_eq!(prefix_end("a\u{7f}"), b"a\x80".to_vec());
        assert_eq!(prefix_end(""), vec![0]);
    }

    #[tokio::test]
    async fn a_refused_connection_counts_as_never_sent() {
        // A port that was just free: nothing listens there.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .and_then(|l| l.local_addr())
            .map(|a| a.port())
            .expect("a free port");
        let channel = Endpoint::from_shared(format!("http://127.0.0.1:{port}"))
            .expect("endpoint")
            .connect_lazy();
        let status = kv_client(channel)
            .range(RangeRequest::default())
            .await
            .expect_err("nothing listens");
        assert_eq!(status.code(), tonic::Code::Unavailable);
        assert!(never_sent(&status), "{}", describe(&status));
        assert!(not_processed(&status));
        // An error etcd itself sent is not one; only the refusals before processing
        // count as not processed.
        assert!(!never_sent(&tonic::Status::unavailable(
            "etcdserver: leader changed"
        )));
        assert!(not_processed(&tonic::Status::unavailable(
            "etcdserver: no leader"
        )));
        assert!(not_processed(&tonic::Status::resource_exhausted(
            "etcdserver: too many requests"
        )));
        assert!(!not_processed(&tonic::Status::unavailable(
            "etcdserver: request timed out"
        )));
    }
}
