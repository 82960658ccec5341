//! The watches that wait for DRA use start only once the gate opens: before, they do not
//! even connect. The API server here is an address nothing listens on, so a watch that starts
//! says at once that it cannot connect.

use futures::StreamExt;
use std::time::Duration;
use wlmap_kube::live::DraGate;
use wlmap_kube::{Kind, WatchEvent, watch_stream_gated};

#[test]
fn a_watch_behind_the_dra_gate_starts_once_it_opens() {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime");
    rt.block_on(async {
        let config = kube::Config::new("http://127.0.0.1:9".parse().expect("url"));
        let client = kube::Client::try_from(config).expect("client");
        let slices = Kind::new(
            "resource.k8s.io",
            "v1",
            "ResourceSlice",
            "resourceslices",
            false,
        );
        let claims = Kind::new(
            "resource.k8s.io",
            "v1",
            "ResourceClaim",
            "resourceclaims",
            true,
        );
        let gate = DraGate::default();
        let mut stream = watch_stream_gated(
            &client,
            "http://127.0.0.1:9",
            &[claims, slices],
            None,
            Some(&gate),
        );
        // The claims' watch starts and fails to connect; the slices' does not start.
        let index = |e: &WatchEvent| match e {
            WatchEvent::Relisting(i)
            | WatchEvent::Applied(i, _)
            | WatchEvent::Deleted(i, _)
            | WatchEvent::Listed(i)
            | WatchEvent::Failed(i, _) => *i,
        };
        let mut slices_seen = false;
        loop {
            let e = stream.next().await.expect("an event");
            slices_seen |= index(&e) == 1;
            if matches!(e, WatchEvent::Failed(0, _)) {
                break;
            }
        }
        let mut of_slices = async || loop {
            if let Some(e) = stream.next().await
                && index(&e) == 1
            {
                return e;
            }
        };
        let early = tokio::time::timeout(Duration::from_secs(3), of_slices()).await;
        assert!(
            !slices_seen && early.is_err(),
            "the slices' watch waits behind the closed gate: {early:?}"
        );
        gate.open();
        let e = tokio::time::timeout(Duration::from_secs(30), of_slices())
            .await
            .expect("the slices' watch starts once the gate opens");
        assert_eq!(index(&e), 1, "{e:?}");
    });
}
