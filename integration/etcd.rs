//! The etcd backend against a real etcd: the storage contract, compaction, and faults
//! (etcd down at start-up, stopped and restarted, hung). Each test starts its own etcd
//! on loopback ports with a fresh data directory; the binary is `ETCD_BIN` or
//! `/usr/bin/etcd` (Debian's `etcd-server`), and a missing binary fails the test.

mod common;

use std::time::Duration;

use common::{free_port, Etcd, EtcdCluster};

use crd_apiserver::storage::etcd::{EtcdConfig, EtcdStorage, EtcdTls};
use crd_apiserver::storage::{contract, Storage, StorageError, WatchItem};
use futures::StreamExt;
use tokio::time::Instant;

/// The per-call deadline the fault tests use, short to keep them quick.
const REQUEST_TIMEOUT: Duration = Duration::from_secs(2);

/// The backend's config for `etcd`, with the short deadlines the fault tests use.
fn config(etcd: &Etcd) -> EtcdConfig {
    EtcdConfig {
        request_timeout: REQUEST_TIMEOUT,
        progress_interval: Duration::from_millis(100),
        ..EtcdConfig::new(vec![etcd.url()])
    }
}

/// Waits until the store answers, failing after 30 s.
async fn wait_ready(store: &EtcdStorage) {
    let deadline = Instant::now() + Duration::from_secs(30);
    loop {
        match store.ready().await {
            Ok(()) => return,
            Err(err) if Instant::now() > deadline => panic!("etcd not ready after 30 s: {err}"),
            Err(_) => tokio::time::sleep(Duration::from_millis(100)).await,
        }
    }
}

async fn started() -> (Etcd, EtcdStorage) {
    let etcd = Etcd::start();
    let store = EtcdStorage::connect(config(&etcd)).await.expect("connect");
    wait_ready(&store).await;
    (etcd, store)
}

fn is_outage<T>(result: &Result<T, StorageError>) -> bool {
    matches!(
        result,
        Err(StorageError::Unavailable(_)) | Err(StorageError::Timeout(_))
    )
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contract_run_all_against_etcd() {
    let (_etcd, store) = started().await;
    contract::run_all(&store).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn contract_compaction_against_etcd() {
    let (_etcd, store) = started().await;
    let compactor = store.clone();
    contract::compaction(&store, &contract::unique_prefix(), |revision| async move {
        compactor.compact(revision).await
    })
    .await
    .unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn revisions_follow_etcd() {
    let (_etcd, store) = started().await;
    // A fresh etcd is at revision 1; the first write gets revision 2.
    assert_eq!(store.current_revision().await.unwrap(), 1);
    let a = store.create("/k/a", b"1".to_vec()).await.unwrap();
    assert_eq!((a.create_revision, a.mod_revision), (2, 2));
    let deleted = store.delete("/k/a", None).await.unwrap();
    assert_eq!((deleted.create_revision, deleted.mod_revision), (2, 3));
    // Failed writes do not consume a revision.
    assert!(store.update("/k/a", b"3".to_vec(), 2).await.is_err());
    assert_eq!(store.current_revision().await.unwrap(), 3);
    assert_eq!(
        store.watch("/k/", 4).await.err(),
        Some(StorageError::FutureRevision {
            requested: 4,
            current: 3
        })
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_down_at_start_up_then_up() {
    let mut etcd = Etcd::stopped();
    let store = EtcdStorage::connect(config(&etcd))
        .await
        .expect("connecting never waits for etcd");
    let started = Instant::now();
    let result = store.ready().await;
    assert!(is_outage(&result), "ready with etcd down gave {result:?}");
    let result = store.get("/k/a").await;
    assert!(is_outage(&result), "get with etcd down gave {result:?}");
    assert!(started.elapsed() <= REQUEST_TIMEOUT * 2 + Duration::from_secs(1));
    etcd.restart();
    wait_ready(&store).await;
    store.create("/k/a", b"1".to_vec()).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn etcd_down_then_up() {
    let (mut etcd, store) = started().await;
    let kept = store.create("/k/kept", b"v".to_vec()).await.unwrap();
    let mut watch = store.watch("/k/", kept.mod_revision).await.unwrap();

    etcd.stop();
    for _ in 0..3 {
        let started = Instant::now();
        let result = store.get(&kept.key).await;
        assert!(is_outage(&result), "get with etcd down gave {result:?}");
        assert!(
            started.elapsed() <= REQUEST_TIMEOUT + Duration::from_secs(1),
            "took {:?}",
            started.elapsed()
        );
    }
    let result = store.create("/k/new", b"v".to_vec()).await;
    assert!(is_outage(&result), "create with etcd down gave {result:?}");
    let result = store.ready().await;
    assert!(is_outage(&result), "ready with etcd down gave {result:?}");
    let result = store.watch("/k/", 0).await.map(|_| ());
    assert!(is_outage(&result), "watch with etcd down gave {result:?}");

    // The open watch reports the lost connection once, then ends.
    let rest = tokio::time::timeout(Duration::from_secs(10), async {
        let mut items = Vec::new();
        while let Some(item) = watch.next().await {
            items.push(item);
        }
        items
    })
    .await
    .expect("the watch ends when etcd is gone");
    let errors: Vec<_> = rest.iter().filter(|item| item.is_err()).collect();
    assert_eq!(errors.len(), 1, "items after the outage: {rest:?}");
    assert!(is_outage(&Err::<(), _>(errors[0].clone().unwrap_err())));
    assert!(rest
        .iter()
        .all(|item| matches!(item, Ok(WatchItem::Progress(_)) | Err(_))));

    etcd.restart();
    wait_ready(&store).await;
    assert_eq!(store.get(&kept.key).await.unwrap(), Some(kept.clone()));
    let mut watch = store.watch("/k/", kept.mod_revision).await.unwrap();
    let created = store.create("/k/new", b"v".to_vec()).await.unwrap();
    assert_eq!(contract::next_event(&mut watch).await.unwrap().kv, created);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn hung_etcd_times_out_then_recovers() {
    let (etcd, store) = started().await;
    let kept = store.create("/k/kept", b"v".to_vec()).await.unwrap();
    let mut watch = store.watch("/k/", 0).await.unwrap();
    assert!(matches!(
        contract::next_progress(&mut watch).await,
        Ok(revision) if revision >= kept.mod_revision
    ));

    etcd.signal("STOP");
    let started = Instant::now();
    let result = store.get(&kept.key).await;
    assert!(
        matches!(result, Err(StorageError::Timeout(_))),
        "get from a hung etcd gave {result:?}"
    );
    assert!(started.elapsed() <= REQUEST_TIMEOUT + Duration::from_secs(1));
    // The silent watch gives up too instead of hanging.
    let ended = tokio::time::timeout(REQUEST_TIMEOUT * 3, async {
        loop {
            match watch.next().await {
                Some(Ok(_)) => continue,
                other => return other,
            }
        }
    })
    .await
    .expect("a silent watch ends");
    assert!(
        matches!(ended, Some(Err(StorageError::Timeout(_)))),
        "got {ended:?}"
    );

    etcd.signal("CONT");
    wait_ready(&store).await;
    assert_eq!(store.get(&kept.key).await.unwrap(), Some(kept));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn tls_with_client_certificate() {
    let etcd = Etcd::start_tls();
    let files = etcd.tls().expect("TLS files");
    let with_tls = |cert: bool| EtcdConfig {
        tls: Some(EtcdTls {
            ca_file: Some(files.ca.clone()),
            cert_file: cert.then(|| files.client_cert.clone()),
            key_file: cert.then(|| files.client_key.clone()),
        }),
        ..config(&etcd)
    };
    let store = EtcdStorage::connect(with_tls(true)).await.expect("connect");
    wait_ready(&store).await;
    let prefix = contract::unique_prefix();
    contract::create_and_get(&store, &format!("{prefix}create/"))
        .await
        .unwrap();
    contract::watch_live_from_now(&store, &format!("{prefix}live/"))
        .await
        .unwrap();

    // etcd refuses a client without a certificate: an error, not a hang.
    let anonymous = EtcdStorage::connect(with_tls(false))
        .await
        .expect("connect");
    let result = anonymous.get("/k/a").await;
    assert!(
        is_outage(&result),
        "get without a client certificate gave {result:?}"
    );

    // A missing half of the client identity is a configuration error.
    let half = EtcdConfig {
        tls: Some(EtcdTls {
            key_file: None,
            ..with_tls(true).tls.expect("TLS config")
        }),
        ..config(&etcd)
    };
    assert!(matches!(
        EtcdStorage::connect(half).await,
        Err(StorageError::Internal(_))
    ));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn reads_move_on_to_a_live_endpoint() {
    let (etcd, _) = started().await;
    let dead = format!("http://127.0.0.1:{}", free_port());
    let store = EtcdStorage::connect(EtcdConfig {
        endpoints: vec![dead, etcd.url()],
        ..config(&etcd)
    })
    .await
    .expect("connect");
    // The first endpoint refuses connections: the read goes on to the second one,
    // and later calls, writes included, stay there.
    assert_eq!(store.get("/k/a").await, Ok(None));
    store.create("/k/a", b"1".to_vec()).await.unwrap();
    contract::run_all(&store).await.unwrap();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_larger_than_grpc_default_message_size() {
    let (_etcd, store) = started().await;
    // Six values of 1 MiB (etcd takes up to 1.5 MiB a request) make a 6 MiB answer,
    // above tonic's default 4 MiB limit.
    let value = vec![b'x'; 1 << 20];
    for i in 0..6 {
        store
            .create(&format!("/big/{i}"), value.clone())
            .await
            .unwrap();
    }
    let list = store
        .list("/big/", &crd_apiserver::storage::ListOptions::default())
        .await
        .unwrap();
    assert_eq!(list.items.len(), 6);
    assert!(list.items.iter().all(|kv| kv.value == value));
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_edges_of_the_key_range() {
    let (_etcd, store) = started().await;
    let a = store.create("/k/a", b"a".to_vec()).await.unwrap();
    store.create("/z", b"z".to_vec()).await.unwrap();
    let after = |key: &str| crd_apiserver::storage::ListOptions {
        start_after: Some(key.to_owned()),
        ..Default::default()
    };
    // A start past the prefix's range finds nothing; one before it starts at the prefix.
    let past = store.list("/k/", &after("/y")).await.unwrap();
    assert_eq!((past.items.len(), past.remaining), (0, 0));
    let before = store.list("/k/", &after("/a")).await.unwrap();
    assert_eq!(before.items, vec![a.clone()]);
    // The empty prefix covers every key.
    let all = store.list("", &Default::default()).await.unwrap();
    assert_eq!(all.items.len(), 2);
    let limited = store
        .list(
            "",
            &crd_apiserver::storage::ListOptions {
                limit: 1,
                ..Default::default()
            },
        )
        .await
        .unwrap();
    assert_eq!((limited.items, limited.remaining), (vec![a], 1));
    // So does the empty prefix watch every key.
    let mut everything = store.watch("", 0).await.unwrap();
    let b = store.create("/b", b"b".to_vec()).await.unwrap();
    assert_eq!(contract::next_event(&mut everything).await.unwrap().kv, b);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn compactor_keeps_one_interval_of_history() {
    let (_etcd, store) = started().await;
    let first = store.create("/k/a", b"1".to_vec()).await.unwrap();
    let second = store
        .update("/k/a", b"2".to_vec(), first.mod_revision)
        .await
        .unwrap();
    let compactor = tokio::spawn(store.clone().run_compactor(Duration::from_millis(200)));
    let at_first = crd_apiserver::storage::ListOptions {
        revision: first.mod_revision,
        ..Default::default()
    };
    // The first tick notes the revision, the second compacts to it.
    let deadline = Instant::now() + Duration::from_secs(10);
    loop {
        match store.list("/k/", &at_first).await {
            Err(StorageError::Compacted {
                requested,
                compacted,
            }) => {
                assert_eq!(requested, first.mod_revision);
                assert_eq!(compacted, second.mod_revision);
                break;
            }
            Ok(_) if Instant::now() < deadline => {
                tokio::time::sleep(Duration::from_millis(50)).await
            }
            other => panic!("history was not compacted: {other:?}"),
        }
    }
    compactor.abort();
    // The latest revision stays readable.
    let latest = crd_apiserver::storage::ListOptions {
        revision: second.mod_revision,
        ..Default::default()
    };
    assert_eq!(
        store.list("/k/", &latest).await.unwrap().items,
        vec![second]
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_hung_member_is_left_after_one_timeout() {
    let cluster = EtcdCluster::start(3);
    // Member 0, which the store talks to first, follows: freezing it needs no election,
    // so what is measured is the store's own move.
    cluster.make_leader(1);
    let store = EtcdStorage::connect(EtcdConfig {
        request_timeout: REQUEST_TIMEOUT,
        progress_interval: Duration::from_millis(100),
        ..EtcdConfig::new(cluster.members.iter().map(Etcd::url).collect())
    })
    .await
    .expect("connect");
    wait_ready(&store).await;
    let kept = store.create("/k/kept", b"v".to_vec()).await.unwrap();

    cluster.members[0].signal("STOP");
    // The call in flight on the hung member times out, naming that member.
    let result = store.get(&kept.key).await;
    match &result {
        Err(StorageError::Timeout(message)) => {
            assert!(message.contains(&cluster.members[0].url()), "{message}")
        }
        other => panic!("get from a hung member gave {other:?}"),
    }
    // Health answers at once (here from the member moved to).
    let started = Instant::now();
    store.ready().await.expect("ready on another member");
    assert!(started.elapsed() < Duration::from_millis(500));
    // The very next calls go to another member and succeed without waiting.
    let started = Instant::now();
    assert_eq!(store.get(&kept.key).await.unwrap(), Some(kept.clone()));
    store.create("/k/after", b"v".to_vec()).await.unwrap();
    assert!(
        started.elapsed() < Duration::from_secs(1),
        "took {:?} after leaving the hung member",
        started.elapsed()
    );
    store.ready().await.expect("ready on the other members");
    cluster.members[0].signal("CONT");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_write_broken_in_flight_is_outcome_unknown_and_an_unsent_one_unavailable() {
    let (mut etcd, store) = started().await;
    etcd.signal("STOP");
    let write = {
        let store = store.clone();
        tokio::spawn(async move { store.create("/k/broken", b"v".to_vec()).await })
    };
    tokio::time::sleep(Duration::from_millis(500)).await;
    etcd.stop();
    let result = write.await.expect("join");
    assert!(
        matches!(result, Err(StorageError::OutcomeUnknown(_))),
        "a write broken in flight gave {result:?}"
    );
    // Nothing listens: the write is certainly not applied.
    let result = store.create("/k/unsent", b"v".to_vec()).await;
    assert!(
        matches!(result, Err(StorageError::Unavailable(_))),
        "a write with etcd down gave {result:?}"
    );
    etcd.restart();
    wait_ready(&store).await;
    assert_eq!(store.get("/k/unsent").await.unwrap(), None);
}

/// Issue 24's bug: etcd before 3.4.25 / 3.5.8 answers a progress request on a side
/// channel that can overtake events still queued for the watch, so its revision may run
/// ahead of them (etcd-io/etcd#15220). A watch must never report progress past an event
/// it has not yet yielded: a client resuming from that progress would skip the event.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn watch_progress_never_runs_ahead_of_an_event() {
    let etcd = Etcd::start();
    let store = EtcdStorage::connect(EtcdConfig {
        request_timeout: REQUEST_TIMEOUT,
        progress_interval: Duration::from_millis(5),
        ..EtcdConfig::new(vec![etcd.url()])
    })
    .await
    .expect("connect");
    wait_ready(&store).await;
    let writers: Vec<_> = (0..8)
        .map(|w| {
            let store = store.clone();
            tokio::spawn(async move {
                let stop = Instant::now() + Duration::from_secs(6);
                let mut i = 0u64;
                while Instant::now() < stop {
                    // Half the writes land under the watched prefix, half beside it.
                    let prefix = if i.is_multiple_of(2) { "/w/" } else { "/x/" };
                    store
                        .create(&format!("{prefix}{w}-{i}"), vec![b'v'; 200])
                        .await
                        .expect("create");
                    i += 1;
                }
                i
            })
        })
        .collect();
    let mut watches = Vec::new();
    for _ in 0..4 {
        watches.push(store.watch("/w/", 0).await.expect("watch"));
    }
    let readers: Vec<_> = watches
        .into_iter()
        .map(|mut watch| {
            tokio::spawn(async move {
                let stop = Instant::now() + Duration::from_secs(7);
                let (mut progress, mut events, mut progresses, mut ahead) =
                    (0, 0u64, 0u64, Vec::new());
                while let Ok(Some(item)) = tokio::time::timeout_at(stop, watch.next()).await {
                    match item.expect("watch item") {
                        WatchItem::Progress(rev) => {
                            progresses += 1;
                            progress = progress.max(rev);
                        }
                        WatchItem::Event(ev) => {
                            events += 1;
                            if ev.kv.mod_revision <= progress {
                                ahead.push((progress, ev.kv.mod_revision));
                            }
                        }
                    }
                }
                (events, progresses, ahead)
            })
        })
        .collect();
    let mut written = 0;
    for w in writers {
        written += w.await.expect("writer");
    }
    for r in readers {
        let (events, progresses, ahead) = r.await.expect("reader");
        assert!(
            events > 0 && progresses > 0,
            "{events} events, {progresses} progress reports"
        );
        assert!(
            ahead.is_empty(),
            "of {written} writes, {events} events seen and {progresses} progress reports: \
             {} events came after progress past them, e.g. (progress, event) {:?}",
            ahead.len(),
            &ahead[..ahead.len().min(5)]
        );
    }
}
